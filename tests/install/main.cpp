// Installed-library check: fork-join through the C++ API.
#include <ito/ito.hpp>

#include <cstdio>

static long fib(int n) {
  if (n < 2) return n;
  long a = 0, b = 0;
  ito::task_group tg;
  tg.run([&] { a = fib(n - 1); });
  b = fib(n - 2);
  tg.wait();
  return a + b;
}

int main() {
  long r = fib(20);
  std::printf("ito consumer c++: fib(20)=%ld\n", r);
  return r == 6765 ? 0 : 1;
}
