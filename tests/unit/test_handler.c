/* A call into ito from a signal handler that interrupted its thread inside
 * ito (docs/api.md, "Where a call may be made"): the handler waits for a
 * lock its own thread holds. The runtime cannot take the lock back, but
 * after a long wait it says what happened, in one line, once.
 *
 * The child holds the keys' lock as ito's own code would (the lock the
 * fork handlers take), then raises a signal whose handler calls
 * ito_key_create; the parent reads the child's stderr until the line
 * comes (bounded generously: the runtime says it after 10 s of waiting),
 * then ends the child. In Debug and sanitizer builds the lock order's
 * check (src/core/base.h) sees the lock taken again by its holder at once,
 * says so and aborts. */
#define _GNU_SOURCE
#include "../../src/core/forkpart.h"
#include "../../src/core/thread.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "../child.h"

static void handler(int sig) {
  (void)sig;
  ito_key_t k;
  ito_key_create(&k, NULL); /* waits for ever: main holds the lock */
}

static void child(void *arg) {
  (void)arg;
  CHECK_EQ(ito_init(), 0);
  signal(SIGUSR1, handler);
  /* main is inside ito, holding the keys' lock (rank 15, docs/locks.md) */
  const struct ito_fork_part *keys = ito__fork_part_ranked(15);
  CHECK(keys != NULL);
  keys->lock(1);
  raise(SIGUSR1);
  _exit(3); /* never: the handler does not return */
}

int main(void) {
  int err;
  pid_t pid = child_start(child, NULL, &err);
  char buf[2048];
  size_t k = 0;
#if ITO_ASSERTS
  const char *want = "ito: lock order (docs/locks.md): taken again by its holder";
#else
  const char *want = "ito: a thread has waited 10 s for a lock of the runtime (in ";
#endif
  char *line = NULL;
  /* up to 300 s (the report comes after 10 s of waiting), or the child's end */
  for (int waited = 0; waited < 300 && !line; waited++) {
    struct pollfd pf = {err, POLLIN, 0};
    int r = poll(&pf, 1, 1000);
    if (r < 0 && errno == EINTR) continue;
    CHECK(r >= 0);
    if (r == 0) continue;
    ssize_t n = read(err, buf + k, sizeof buf - 1 - k);
    if (n <= 0) break; /* the child ended */
    k += (size_t)n;
    buf[k] = 0;
    line = strstr(buf, want);
    if (line && !strchr(line, '\n')) line = NULL; /* the whole line first */
  }
  if (!line || !ITO_ASSERTS) kill(pid, SIGKILL); /* (with the check, the child aborts) */
  int st;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  if (!line) {
    fprintf(stderr, "no report of the lock waited for; the child's stderr: \"%s\"\n", buf);
    CHECK(0);
  }
  char *end = strchr(line, '\n');
  *end = 0;
#if ITO_ASSERTS
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
#else
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL); /* it was still waiting */
  CHECK(strstr(line, "async-signal-safe") != NULL);
#endif
  printf("%s\nhandler: a call into ito from a handler that interrupted ito is reported: OK\n",
         line);
  return 0;
}
