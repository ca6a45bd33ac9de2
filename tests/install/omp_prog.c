/* An OpenMP program for the install check: a team, a dynamic loop with a
 * reduction and a task tree; prints what any conforming runtime prints. */
#include <omp.h>
#include <stdio.h>

static long fib(int n) {
  long x, y;
  if (n < 2) return n;
#pragma omp task shared(x) firstprivate(n)
  x = fib(n - 1);
#pragma omp task shared(y) firstprivate(n)
  y = fib(n - 2);
#pragma omp taskwait
  return x + y;
}

int main(void) {
  long sum = 0, f = 0;
  int members = 0;
#pragma omp parallel num_threads(3) reduction(+ : members)
  members += 1;
#pragma omp parallel for schedule(dynamic, 7) reduction(+ : sum)
  for (int i = 0; i < 1000; i++) sum += i;
#pragma omp parallel
#pragma omp single
  f = fib(20);
  printf("omp prog: members=%d sum=%ld fib=%ld\n", members, sum, f);
  return 0;
}
