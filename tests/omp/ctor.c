/* OpenMP called from constructors: of a library the program is linked
 * with (whose constructor runs before the preloaded libito-omp.so's), of
 * the program itself, and of a library loaded with dlopen from the
 * program's constructor (before any region of main) and from main (with
 * the runtime running). Each prints the ICVs it finds and runs a region
 * (ctor_probe.h); main then prints what they left. Compared with libgomp
 * (compare.sh), also with libito-pthread.so preloaded before and after. */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctor_probe.h"

static char lib_path[PATH_MAX];

/* ctor_lib's dlopen build, beside the program */
static void find_lib(void) {
  ssize_t n = readlink("/proc/self/exe", lib_path, sizeof lib_path - 1);
  if (n <= 0) {
    fprintf(stderr, "ctor: cannot read /proc/self/exe\n");
    exit(1);
  }
  lib_path[n] = 0;
  char *slash = strrchr(lib_path, '/');
  snprintf(slash + 1, sizeof lib_path - (size_t)(slash + 1 - lib_path), "libompctor_dl.so");
}

/* Loads the library (its constructor runs the probe), calls into it,
 * unloads it. */
static void load(const char *when) {
  void *h = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "ctor: dlopen %s: %s\n", lib_path, dlerror());
    exit(1);
  }
  int (*answer)(void) = (int (*)(void))dlsym(h, "ctor_lib_answer");
  printf("%s: library's region team %d\n", when, answer ? answer() : -1);
  fflush(stdout);
  dlclose(h);
}

__attribute__((constructor)) static void prog_ctor(void) {
  find_lib();
  ctor_probe("program constructor", 2);
  load("program constructor");
}

int ctor_lib_answer(void);

int main(void) {
  printf("main: max %d\n", omp_get_max_threads());
  load("main");
  printf("main: max %d\n", omp_get_max_threads());
  int n = 0;
#pragma omp parallel reduction(+ : n)
  n++;
  printf("main: team %d, linked library's team %d\n", n, ctor_lib_answer());
  load("main, again");
  return 0;
}
