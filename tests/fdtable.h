/* The descriptor table, for tests that fill it: the highest descriptor
 * open now (the directory's own left out), or -1 when /proc/self/fd
 * cannot be read. */
#ifndef ITO_TESTS_FDTABLE_H
#define ITO_TESTS_FDTABLE_H

#include <dirent.h>
#include <stdlib.h>

static inline int fdtable_highest(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  int self = dirfd(d), hi = 2;
  struct dirent *e;
  while ((e = readdir(d))) {
    int fd = e->d_name[0] == '.' ? -1 : atoi(e->d_name);
    if (fd != self && fd > hi) hi = fd;
  }
  closedir(d);
  return hi;
}

#endif
