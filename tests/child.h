/* Runs a function in a child process with its stderr caught: for tests
 * whose subject ends the process (an abort, an exit) or writes its
 * messages there. C11, Linux. */
#ifndef ITO_TESTS_CHILD_H
#define ITO_TESTS_CHILD_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* Starts fn(arg) in a child whose stderr goes into a pipe, and returns
 * its pid with *err_fd the pipe's reading end; the child exits 0 if fn
 * returns. */
static inline pid_t child_start(void (*fn)(void *), void *arg, int *err_fd) {
  int p[2];
  CHECK_EQ(pipe(p), 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(p[1], 2);
    close(p[0]);
    fn(arg);
    _exit(0);
  }
  close(p[1]);
  *err_fd = p[0];
  return pid;
}

/* fn(arg) in a child whose stderr goes into err (its first len-1 bytes,
 * NUL-terminated). Returns the child's wait status. */
static inline int child_run(void (*fn)(void *), void *arg, char *err, size_t len) {
  int fd;
  pid_t pid = child_start(fn, arg, &fd);
  size_t k = 0;
  ssize_t n;
  while (k + 1 < len && (n = read(fd, err + k, len - 1 - k)) > 0) k += (size_t)n;
  err[k] = 0;
  close(fd);
  int st;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  return st;
}

#endif
