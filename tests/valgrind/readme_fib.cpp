// The C++ example of README.md, as it is there, with a main that runs it
// on two workers: memcheck must find nothing in it (stolen continuations
// resume on fresh stacks; tests/valgrind/memcheck.sh).
#include <ito/ito.hpp>

#include <cstdio>

long fib(int n) {
  if (n < 2) return n;
  long a, b;
  ito::task_group tg;
  tg.run([&] { a = fib(n - 1); });
  b = fib(n - 2);
  tg.wait();
  return a + b;
}

int main() {
  long r = fib(22);
  std::printf("fib(22) = %ld\n", r);
  return r == 17711 ? 0 : 1;
}
