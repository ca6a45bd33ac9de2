/* Stack depth in a team member and in an explicit task, for overflow.sh:
 *
 *   overflow member|task KIB
 *
 * member 1 of a team of 2 (member 0 is the initial thread, on the
 * process's stack), or a task member 1 makes and waits for, recurses through frames of 1 KiB (each
 * written, below the guard page's size) until it has used KIB KiB of its
 * stack, or without end for KIB 0; prints the depth reached and exits 0.
 * Under libito-omp.so an unbounded recursion must stop the program with
 * ito's stack overflow message. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static __attribute__((noinline)) long down(long kib, long depth) {
  volatile char frame[1000];
  memset((char *)frame, (int)(depth & 0x7f), sizeof frame);
  if (kib && depth >= kib) return frame[depth % 1000];
  return down(kib, depth + 1) + frame[(depth * 7) % 1000]; /* (not a tail call) */
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "member") && strcmp(argv[1], "task"))) {
    fprintf(stderr, "usage: overflow member|task KIB\n");
    return 2;
  }
  int task = !strcmp(argv[1], "task");
  long kib = atol(argv[2]);
  long r = -1;
  int done = 0;
#pragma omp parallel num_threads(2) shared(r, done)
  {
    if (omp_get_thread_num() == 1) {
      if (task) {
#pragma omp task shared(r)
        r = down(kib, 0);
#pragma omp taskwait
      } else {
        r = down(kib, 0);
      }
      __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    } else {
      /* no scheduling point until member 1 is through: the task never
       * runs on the initial thread's process stack, which OMP_STACKSIZE
       * does not size */
      while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
      }
    }
  }
  printf("depth reached: %ld KiB (%ld)\n", kib, r);
  return 0;
}
