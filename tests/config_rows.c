/* Prints every configuration row the runtime and the drop-in libraries
 * read, one name a line, after loading the libraries named on the command
 * line (their constructors register their rows). config_readme.sh holds
 * the list against README.md's table. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

#include "../src/dropin/ito_dropin.h"

static void print_row(const struct ito_cfg *r, void *arg) {
  (void)arg;
  printf("%s\n", r->name);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!dlopen(argv[i], RTLD_NOW | RTLD_GLOBAL)) {
      fprintf(stderr, "config_rows: %s\n", dlerror());
      return 1;
    }
  ito__dropin_config_each(print_row, NULL);
  return 0;
}
