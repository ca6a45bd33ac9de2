/* Drop-in test: the set*id calls libc makes inside itself change the
 * credentials of every OS thread of the process, and return. initgroups
 * calls libc's own setgroups, ruserok its own seteuid (to read the local
 * user's ~/.rhosts, and back): neither reaches an interposed symbol, and
 * both go through glibc's broadcast to every thread it knows. Each is
 * called while threads spin (yielding), wait on a condition variable and
 * run outside the program's threads (one made with libc's own
 * pthread_create, found in libc.so.6 itself), three times: from main, from
 * a thread of the program's and from the outside thread. After each, every
 * OS thread in /proc/self/task must show the new supplementary groups and
 * ids. Then a child of fork (from main, and from a thread) makes threads
 * and calls initgroups from one of them and from the thread that forked.
 *
 * Needs root (it changes the process's groups): otherwise it says SKIPPED
 * and exits with 77. A call that never returns is caught by a watchdog
 * process, which kills the test after 40 s with a line on stderr.
 *
 * A plain pthread program (docs/dropin.md, section 8), run natively and
 * under libito-pthread.so; both.sh compares the outputs. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <grp.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DROPIN_PROG "setxid_libc"
#include "dropin.h"

#define NSPIN 6
#define NWAIT 4
#define NGROUPS 64

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int stop, outside_go, outside_done;

/* The watchdog: a child process that kills this one if it has not ended
 * (closed the pipe) in 40 s (the test takes about 1 s). */
static void watchdog(void) {
  int p[2];
  if (pipe(p)) FAIL("pipe");
  pid_t parent = getpid(), pid = fork();
  if (pid < 0) FAIL("fork");
  if (pid == 0) {
    close(p[1]);
    close(1);
    struct pollfd pf = {p[0], POLLIN, 0};
    if (poll(&pf, 1, 40000) == 0) {
      fprintf(stderr, DROPIN_PROG ": FAILED: a set*id call has not returned in 40 s\n");
      kill(parent, SIGKILL);
    }
    _exit(0);
  }
  close(p[0]); /* (the write end closes when this process ends) */
}

/* ---- what every OS thread must show ------------------------------------------------- */

static int cmp_gid(const void *a, const void *b) {
  gid_t x = *(const gid_t *)a, y = *(const gid_t *)b;
  return x < y ? -1 : x > y;
}

/* The "Groups:" line's ids, sorted; their number. */
static int parse_groups(const char *s, gid_t *g) {
  int n = 0;
  char *end;
  for (;;) {
    while (*s == ' ' || *s == '\t') s++;
    if (*s < '0' || *s > '9' || n == NGROUPS) break;
    g[n++] = (gid_t)strtoul(s, &end, 10);
    s = end;
  }
  qsort(g, (size_t)n, sizeof *g, cmp_gid);
  return n;
}

/* The OS threads of the process whose ids or groups differ from those
 * given (uid: real, effective, saved and fs the same; groups sorted). */
static int threads_differing(uid_t uid, const gid_t *want, int nwant) {
  DIR *d = opendir("/proc/self/task");
  if (!d) FAIL("opendir /proc/self/task");
  char uidline[64];
  snprintf(uidline, sizeof uidline, "Uid:\t%u\t%u\t%u\t%u\n", uid, uid, uid, uid);
  int bad = 0, seen = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char path[300], line[1024];
    snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue; /* (it ended meanwhile) */
    int ok_uid = 0, ok_groups = 0;
    while (fgets(line, sizeof line, f)) {
      if (!strncmp(line, "Uid:", 4)) ok_uid = !strcmp(line, uidline);
      if (!strncmp(line, "Groups:", 7)) {
        gid_t g[NGROUPS];
        int n = parse_groups(line + 7, g);
        ok_groups = n == nwant && !memcmp(g, want, (size_t)n * sizeof *g);
      }
    }
    fclose(f);
    seen++;
    if (!ok_uid || !ok_groups) bad++;
  }
  closedir(d);
  if (seen == 0) FAIL("no OS thread in /proc/self/task");
  return bad;
}

/* ---- the calls ----------------------------------------------------------------------------- */

/* initgroups with primary group g, then ruserok (whose seteuid goes to
 * nobody's id and back); then the check of every OS thread. */
static void calls(const char *who, gid_t g) {
  gid_t want[NGROUPS];
  int nwant = NGROUPS;
  if (getgrouplist("root", g, want, &nwant) < 0) FAIL("getgrouplist: more than %d groups", NGROUPS);
  qsort(want, (size_t)nwant, sizeof *want, cmp_gid);
  int r1 = initgroups("root", g);
  int bad1 = threads_differing(0, want, nwant);
  int r2 = ruserok("localhost", 0, "nobody", "nobody");
  int bad2 = threads_differing(0, want, nwant);
  printf(
      "%s: initgroups %d, %d OS threads without the new groups; ruserok %d, %d OS threads "
      "with other ids after it\n",
      who, r1, bad1, r2, bad2);
  fflush(stdout);
}

/* A child of fork, while the threads run: it makes threads of its own and
 * calls initgroups from one of them and from the thread that forked; its
 * exit status says how many of its OS threads lack the groups (or 100: a
 * call failed). */
static void *spinner(void *p);
static void *child_caller(void *p) {
  (void)p;
  gid_t want[NGROUPS];
  int nwant = NGROUPS;
  getgrouplist("root", 4301, want, &nwant);
  qsort(want, (size_t)nwant, sizeof *want, cmp_gid);
  if (initgroups("root", 4301)) return (void *)100L;
  return (void *)(long)threads_differing(0, want, nwant);
}
static void in_child(const char *who) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) FAIL("fork");
  if (pid == 0) {
    pthread_t sp[3], t;
    void *r;
    for (int i = 0; i < 3; i++)
      if (pthread_create(&sp[i], NULL, spinner, NULL)) _exit(101);
    if (pthread_create(&t, NULL, child_caller, NULL)) _exit(101);
    pthread_join(t, &r);
    int bad = (int)(long)r;
    gid_t want[NGROUPS];
    int nwant = NGROUPS;
    getgrouplist("root", 4302, want, &nwant);
    qsort(want, (size_t)nwant, sizeof *want, cmp_gid);
    if (initgroups("root", 4302)) _exit(100);
    bad += threads_differing(0, want, nwant);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 3; i++) pthread_join(sp[i], NULL);
    _exit(bad > 99 ? 99 : bad);
  }
  int st;
  if (waitpid(pid, &st, 0) != pid) FAIL("waitpid");
  if (WIFEXITED(st))
    printf("%s: the child of fork ended with status %d\n", who, WEXITSTATUS(st));
  else
    printf("%s: the child of fork was killed by signal %d\n", who, WTERMSIG(st));
}

static void *ito_forker(void *p) {
  in_child("a thread of the program's");
  return p;
}

static void *spinner(void *p) {
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) sched_yield();
  return p;
}

static void *waiter(void *p) {
  pthread_mutex_lock(&m);
  while (!stop) pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
  return p;
}

static void *ito_caller(void *p) {
  calls("a thread of the program's", 4202);
  return p;
}

static void *outside(void *p) {
  pthread_mutex_lock(&m);
  while (!outside_go) pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
  calls("a thread made by libc's own pthread_create", 4203);
  pthread_mutex_lock(&m);
  outside_done = 1;
  pthread_cond_broadcast(&c);
  while (!stop) pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
  return p;
}

int main(void) {
  if (geteuid() != 0) {
    printf("SKIPPED: not root (the test changes the process's groups)\n");
    return 77;
  }
  watchdog();
  /* libc's own pthread_create: the library's symbol, not the program's
   * (an interposer's) */
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  int (*libc_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
      libc ? (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
                 libc, "pthread_create")
           : NULL;
  int (*libc_join)(pthread_t, void **) =
      libc ? (int (*)(pthread_t, void **))dlsym(libc, "pthread_join") : NULL;
  if (!libc_create || !libc_join) FAIL("libc.so.6's pthread_create or pthread_join not found");
  pthread_t sp[NSPIN], wt[NWAIT], out, t;
  for (int i = 0; i < NSPIN; i++)
    if (pthread_create(&sp[i], NULL, spinner, NULL)) FAIL("pthread_create");
  for (int i = 0; i < NWAIT; i++)
    if (pthread_create(&wt[i], NULL, waiter, NULL)) FAIL("pthread_create");
  if (libc_create(&out, NULL, outside, NULL)) FAIL("libc's pthread_create");

  calls("main", 4201);
  if (pthread_create(&t, NULL, ito_caller, NULL)) FAIL("pthread_create");
  pthread_join(t, NULL);
  pthread_mutex_lock(&m);
  outside_go = 1;
  pthread_cond_broadcast(&c);
  while (!outside_done) pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
  calls("main, again", 4204);
  in_child("main");
  if (pthread_create(&t, NULL, ito_forker, NULL)) FAIL("pthread_create");
  pthread_join(t, NULL);

  pthread_mutex_lock(&m);
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&c);
  pthread_mutex_unlock(&m);
  for (int i = 0; i < NSPIN; i++) pthread_join(sp[i], NULL);
  for (int i = 0; i < NWAIT; i++) pthread_join(wt[i], NULL);
  if (libc_join(out, NULL)) FAIL("libc's pthread_join");
  gid_t want[NGROUPS];
  int nwant = NGROUPS;
  getgrouplist("root", 4204, want, &nwant);
  qsort(want, (size_t)nwant, sizeof *want, cmp_gid);
  printf("after the threads ended: %d OS threads without the groups\n",
         threads_differing(0, want, nwant));
  return 0;
}
