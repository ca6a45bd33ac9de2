/* Constructs and calls whose entry points libito-omp does not implement:
 *   unimpl offload     GOMP_offload_register_ver (what a program with
 *                      offload code calls from its constructor)
 *   unimpl detach      #pragma omp task detach(event) -> GOMP_task with an event
 * Under libgomp both run and the program prints "ran" and exits 0. Under
 * libito-omp the call must stop the program with a message naming the
 * entry point (unimpl.sh checks it): falling through to libgomp's
 * implementation would mix two runtimes. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

/* libgomp's registration of a program's offload images (gcc calls it from
 * a constructor of programs built with an offload target) */
void GOMP_offload_register_ver(unsigned version, const void *host_table, int target_type,
                               const void *target_data);
void GOMP_offload_unregister_ver(unsigned version, const void *host_table, int target_type,
                                 const void *target_data);

int main(int argc, char **argv) {
  int x = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: unimpl offload|detach\n");
    return 2;
  }
  if (!strcmp(argv[1], "offload")) {
    /* an image for a device type that is not there: recorded, never loaded */
    static const void *table[4];
    static const char data[16];
    GOMP_offload_register_ver(1u << 16, table, 5 /* GOMP_DEVICE_NVIDIA_PTX */, data);
    GOMP_offload_unregister_ver(1u << 16, table, 5, data);
    x = 42;
  } else if (!strcmp(argv[1], "detach")) {
    omp_event_handle_t ev;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
#pragma omp task detach(ev) shared(x)
      x = 41;
      omp_fulfill_event(ev);
    }
    x++;
  } else {
    fprintf(stderr, "unimpl: unknown case %s\n", argv[1]);
    return 2;
  }
  printf("%s ran: %d\n", argv[1], x);
  return x == 42 ? 0 : 1;
}
