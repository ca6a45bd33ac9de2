/* The C example of README.md, as it is there: memcheck must find nothing
 * in it (tests/valgrind/memcheck.sh). */
#include <ito/ito.h>
#include <stdio.h>

static void *work(void *arg) { return (void *)((long)arg * 2); }

int main(void) {
  ito_thread_t t;
  void *r;
  ito_create(work, (void *)21, &t);
  ito_join(t, &r);
  printf("%ld\n", (long)r); /* 42 */
  return 0;
}
