/* Drop-in test: set*id calls change the credentials of the whole process,
 * every OS thread of it (Linux keeps them per thread; glibc signals every
 * thread). Threads parked in a condition wait meanwhile, threads created
 * after, and the caller itself must all see the new ids; each thread reads
 * its OS thread's ids from /proc/thread-self/status. As root the test
 * changes the real, effective and saved group ids and the supplementary
 * groups; otherwise it sets the ids it already has (which must still
 * succeed everywhere).
 *
 * A plain pthread program (docs/dropin.md, section 8), run natively and
 * under libito-pthread.so; both.sh compares the outputs. */
#define _GNU_SOURCE
#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DROPIN_PROG "setxid"
#include "dropin.h"

#define N 8
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int go, bad;

/* The "Gid:" line of the calling OS thread: real, effective, saved, fs. */
static void my_gids(char *out, size_t len) {
  FILE *f = fopen("/proc/thread-self/status", "r");
  if (!f) FAIL("open /proc/thread-self/status");
  char line[256];
  out[0] = 0;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "Gid:", 4)) snprintf(out, len, "%s", line);
  fclose(f);
}

static char want[256];

static void *waiter(void *p) {
  (void)p;
  pthread_mutex_lock(&m);
  while (!go) pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
  char g[256];
  my_gids(g, sizeof g);
  if (strcmp(g, want)) __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
  return NULL;
}

static void *changer(void *p) {
  gid_t gid = *(gid_t *)p;
  if (setresgid(gid, gid, gid)) FAIL("setresgid");
  if (geteuid() == 0) {
    gid_t groups[2] = {gid, gid + 1};
    if (setgroups(2, groups)) FAIL("setgroups");
  }
  if (setegid(gid)) FAIL("setegid");
  return NULL;
}

int main(void) {
  gid_t gid = geteuid() == 0 ? 4321 : getgid();
  pthread_t t[N + 1];
  for (int i = 0; i < N; i++)
    if (pthread_create(&t[i], NULL, waiter, NULL)) FAIL("pthread_create");
  /* a thread changes the ids while the others wait */
  if (pthread_create(&t[N], NULL, changer, &gid)) FAIL("pthread_create");
  pthread_join(t[N], NULL);
  snprintf(want, sizeof want, "Gid:\t%u\t%u\t%u\t%u\n", gid, gid, gid, gid);
  char mine[256];
  my_gids(mine, sizeof mine);
  pthread_mutex_lock(&m);
  go = 1;
  pthread_cond_broadcast(&c);
  pthread_mutex_unlock(&m);
  for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
  /* and threads created afterwards */
  for (int i = 0; i < N; i++) pthread_create(&t[i], NULL, waiter, NULL);
  for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
  int ngroups = getgroups(0, NULL);
  printf("main thread %s; %d threads with other ids; %d supplementary groups\n",
         strcmp(mine, want) ? "has other ids" : "has the new ids", bad,
         geteuid() == 0 ? ngroups : 2);
  return 0;
}
