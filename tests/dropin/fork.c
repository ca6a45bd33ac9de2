/* fork in a threaded program, as natively: the child has one thread, the
 * one that forked. From a thread other than main while others sleep, wait
 * on a condition variable and read a pipe, the child creates threads,
 * joins them, passes data through a pipe between its threads (parking
 * reads), sleeps, wakes the parent's condition variable (whose waiter does
 * not exist in the child) and ends when its last thread returns, with
 * status 0. From main, the same, ending with exit. The program's
 * pthread_atfork handlers run in order around both. Output is
 * deterministic; both.sh compares it with the native run. */
#define _GNU_SOURCE
#define DROPIN_PROG "fork"
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dropin.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int go, ghost_ran;
static int parent_pipe[2];
static long counter;
static char log_[256];

static void note(const char *s) { /* (one buffer, printed by the process that owns it) */
  strncat(log_, s, sizeof log_ - strlen(log_) - 1);
}
static void prep(void) { note("prepare "); }
static void parent(void) { note("parent "); }
static void child(void) { note("child "); }

static void *cond_waiter(void *p) {
  (void)p;
  pthread_mutex_lock(&m);
  while (!go) pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
  ghost_ran = 1; /* in the parent only: in a child this thread does not exist */
  return NULL;
}

static void *sleeper(void *p) {
  (void)p;
  usleep(300000);
  return NULL;
}

static void *pipe_reader(void *p) {
  (void)p;
  char ch;
  if (read(parent_pipe[0], &ch, 1) != 1) FAIL("parent pipe read");
  return NULL;
}

static int kid_pipe[2];
static void *adder(void *p) {
  (void)p;
  for (int i = 0; i < 50000; i++) {
    pthread_mutex_lock(&m);
    counter++;
    pthread_mutex_unlock(&m);
  }
  return NULL;
}
static void *kid_writer(void *p) {
  (void)p;
  usleep(20000);
  if (write(kid_pipe[1], "hello", 5) != 5) FAIL("child write");
  return NULL;
}

/* What a child does with its one thread. */
static void child_work(const char *who) {
  printf("%s child: atfork %s\n", who, log_);
  counter = 0;
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    if (pthread_create(&t[i], NULL, adder, NULL)) FAIL("child pthread_create");
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  if (pipe(kid_pipe)) FAIL("child pipe");
  pthread_t w;
  pthread_create(&w, NULL, kid_writer, NULL);
  char buf[8] = {0};
  ssize_t n = read(kid_pipe[0], buf, 5); /* parks until the writer writes */
  pthread_join(w, NULL);
  usleep(10000);
  /* the parent's waiter is not here: waking it wakes nobody */
  pthread_mutex_lock(&m);
  go = 1;
  pthread_cond_broadcast(&c);
  pthread_mutex_unlock(&m);
  usleep(20000);
  printf("%s child: counter %ld, read %zd '%s', the parent's waiter ran: %s\n", who, counter, n,
         buf, ghost_ran ? "yes" : "no");
  fflush(stdout);
}

static void *forker(void *p) {
  (void)p;
  log_[0] = 0;
  pid_t k = fork();
  if (k < 0) FAIL("fork");
  if (k == 0) {
    child_work("thread's");
    return NULL; /* the child's last thread: the child exits with 0 */
  }
  int st;
  waitpid(k, &st, 0);
  printf("thread's fork: parent atfork %s, child %s\n", log_,
         WIFEXITED(st) ? (WEXITSTATUS(st) == 0 ? "exited 0" : "exited nonzero") : "killed");
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  pthread_atfork(prep, parent, child);
  if (pipe(parent_pipe)) FAIL("pipe");
  pthread_t cw, sl, rd, f;
  pthread_create(&cw, NULL, cond_waiter, NULL);
  pthread_create(&sl, NULL, sleeper, NULL);
  pthread_create(&rd, NULL, pipe_reader, NULL);
  usleep(50000);
  pthread_create(&f, NULL, forker, NULL);
  pthread_join(f, NULL);

  log_[0] = 0;
  pid_t k = fork();
  if (k == 0) {
    child_work("main's");
    exit(0);
  }
  int st;
  waitpid(k, &st, 0);
  printf("main's fork: parent atfork %s, child %s\n", log_,
         WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "exited 0" : "failed");
  if (write(parent_pipe[1], "x", 1) != 1) FAIL("write");
  pthread_mutex_lock(&m);
  go = 1;
  pthread_cond_broadcast(&c);
  pthread_mutex_unlock(&m);
  pthread_join(cw, NULL);
  pthread_join(sl, NULL);
  pthread_join(rd, NULL);
  printf("parent: its waiter ran: %s\n", ghost_ran ? "yes" : "no");
  return 0;
}
