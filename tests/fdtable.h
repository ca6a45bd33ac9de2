/* The descriptor table, for tests that fill it or wait on it.
 * fdtable_highest: the highest descriptor open now (the directory's own
 * left out), or -1 when /proc/self/fd cannot be read.
 * fdtable_waited_on: whether a thread of this process waits on fd: an OS
 * thread inside a system call whose first argument is fd
 * (/proc/self/task/N/syscall; natively, or where the runtime makes the
 * plain blocking call), or an epoll instance of this process watching fd
 * (/proc/self/fdinfo; a thread parked by ito's I/O layer, which adds the
 * descriptor to its instance under the record's lock just before it
 * parks). A test that closes or replaces fd once this is true knows the
 * waiter has passed the point where it could still open the number's next
 * file. It is true for the time a non-blocking call on fd takes as well,
 * which gives the same guarantee; the caller polls it until true. -1 when
 * /proc cannot be read. */
#ifndef ITO_TESTS_FDTABLE_H
#define ITO_TESTS_FDTABLE_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Whether the first argument of the system call thread tid is in is fd. */
static inline int fdtable_task_in_call_on(const char *tid, int fd) {
  char path[300], line[256];
  snprintf(path, sizeof path, "/proc/self/task/%s/syscall", tid);
  FILE *f = fopen(path, "r");
  if (!f) return 0; /* the thread ended meanwhile */
  long nr = -1;
  unsigned long a0 = 0;
  int got = fgets(line, sizeof line, f) && sscanf(line, "%ld %lx", &nr, &a0) == 2;
  fclose(f);
  return got && nr >= 0 && a0 == (unsigned long)fd;
}

/* Whether the epoll instance at descriptor ep watches fd. */
static inline int fdtable_epoll_watches(int ep, int fd) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/self/fd/%d", ep);
  ssize_t k = readlink(path, line, sizeof line - 1);
  if (k <= 0) return 0;
  line[k] = 0;
  if (strcmp(line, "anon_inode:[eventpoll]") != 0) return 0;
  snprintf(path, sizeof path, "/proc/self/fdinfo/%d", ep);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int found = 0, tfd;
  while (!found && fgets(line, sizeof line, f))
    found = sscanf(line, "tfd: %d", &tfd) == 1 && tfd == fd;
  fclose(f);
  return found;
}

static inline int fdtable_waited_on(int fd) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  int found = 0;
  struct dirent *e;
  while (!found && (e = readdir(d)))
    if (e->d_name[0] != '.') found = fdtable_task_in_call_on(e->d_name, fd);
  closedir(d);
  if (found) return 1;
  if (!(d = opendir("/proc/self/fd"))) return -1;
  int self = dirfd(d);
  while (!found && (e = readdir(d))) {
    int ep = e->d_name[0] == '.' ? -1 : atoi(e->d_name);
    if (ep >= 0 && ep != self && ep != fd) found = fdtable_epoll_watches(ep, fd);
  }
  closedir(d);
  return found;
}

/* Until a thread waits on fd, calling nap between looks: 1, or -1 when
 * /proc cannot be read. */
static inline int fdtable_wait_for_waiter(int fd, void (*nap)(void)) {
  int r;
  while ((r = fdtable_waited_on(fd)) == 0) nap();
  return r;
}

#endif
