/* Installed-library check: lightweight threads through the C API. */
#include <ito/ito.h>

#include <stdint.h>
#include <stdio.h>

static void *square(void *arg) {
  uintptr_t x = (uintptr_t)arg;
  return (void *)(x * x);
}

int main(void) {
  enum { N = 64 };
  ito_thread_t t[N];
  for (uintptr_t i = 0; i < N; i++) {
    int rc = ito_create(square, (void *)i, &t[i]);
    if (rc != 0) {
      fprintf(stderr, "ito_create: error %d\n", rc);
      return 1;
    }
  }
  uintptr_t sum = 0;
  for (int i = 0; i < N; i++) {
    void *r = NULL;
    int rc = ito_join(t[i], &r);
    if (rc != 0) {
      fprintf(stderr, "ito_join: error %d\n", rc);
      return 1;
    }
    sum += (uintptr_t)r;
  }
  /* 0^2 + 1^2 + ... + 63^2 */
  printf("ito consumer c: sum=%lu\n", (unsigned long)sum);
  return sum == 85344 ? 0 : 1;
}
