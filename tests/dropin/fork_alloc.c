/* Drop-in test: fork() in a program whose own allocator locks all its
 * mutexes in a pthread_atfork prepare handler, as jemalloc and glibc's
 * malloc do, while threads allocate. The program defines malloc and the
 * rest itself (so every allocation of the process, libc's and the
 * preloaded library's included, comes here): arenas with a mutex each,
 * set up at the first allocation the way jemalloc sets itself up: a key
 * for its per-thread state, pthread_setspecific, then its fork handlers;
 * a call back into the allocator during the set-up (from
 * pthread_setspecific, which glibc serves without memory for the first
 * keys) finds it half made and goes on with it. Had the library's
 * pthread_setspecific allocated, the handlers would be registered twice,
 * and the second prepare would wait for ever on the arenas the first one
 * locked (varnishd's manager hung at its first fork so, in jemalloc).
 *
 * Threads allocate and free in a loop while main, and then a thread,
 * fork 8 times each; each child allocates, makes a thread that allocates,
 * and exits with the number of prepare handlers its fork ran. A hang is
 * caught by a watchdog process, which kills the test after 40 s.
 *
 * A plain pthread program (docs/dropin.md, section 8), run natively and
 * under libito-pthread.so; both.sh compares the outputs. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DROPIN_PROG "fork_alloc"
#include "dropin.h"

/* ---- the program's allocator ----------------------------------------------------------- */

#define NARENA 8
#define ARENA_BYTES (32u << 20) /* bump memory per arena (untouched until used) */
#define SMALL 256               /* blocks up to this size are reused */
#define ALIGN 16

struct arena {
  pthread_mutex_t lock;
  size_t used;
  void *free_small; /* freed blocks of SMALL bytes, linked through their first word */
  _Alignas(ALIGN) char mem[ARENA_BYTES];
};
static struct arena arenas[NARENA] = {[0 ... NARENA - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER}};

/* a block: its size and arena before it */
struct head {
  size_t size;
  size_t arena;
};

static int init_done, key_made, tsd_set, prepares;
static pthread_key_t tsd_key;
static int tsd_value;
static unsigned next_arena;
static __thread int my_arena = -1;

static void prepare(void) {
  __atomic_add_fetch(&prepares, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < NARENA; i++) pthread_mutex_lock(&arenas[i].lock);
}
static void parent(void) {
  for (int i = NARENA - 1; i >= 0; i--) pthread_mutex_unlock(&arenas[i].lock);
}
static void child(void) { /* (glibc's malloc and jemalloc initialise them again) */
  for (int i = 0; i < NARENA; i++) pthread_mutex_init(&arenas[i].lock, NULL);
}

/* The set-up, jemalloc's way: each step once, but a call back into the
 * allocator from a step goes on with the steps after it. */
static void setup(void) {
  if (__atomic_load_n(&init_done, __ATOMIC_ACQUIRE)) return;
  if (!key_made) {
    key_made = 1;
    if (pthread_key_create(&tsd_key, NULL)) abort();
  }
  if (!tsd_set) {
    tsd_set = 1;
    if (pthread_setspecific(tsd_key, &tsd_value)) abort();
  }
  if (pthread_atfork(prepare, parent, child)) abort();
  __atomic_store_n(&init_done, 1, __ATOMIC_RELEASE);
}

static void *alloc(size_t size, size_t align) {
  setup();
  if (my_arena < 0) my_arena = (int)(__atomic_fetch_add(&next_arena, 1, __ATOMIC_RELAXED) % NARENA);
  if (align < ALIGN) align = ALIGN;
  if (size > ARENA_BYTES) {
    errno = ENOMEM;
    return NULL;
  }
  size_t a = (size_t)my_arena;
  struct arena *ar = &arenas[a];
  pthread_mutex_lock(&ar->lock);
  char *p = NULL;
  if (size <= SMALL && align == ALIGN && ar->free_small) {
    p = ar->free_small;
    ar->free_small = *(void **)p;
    memset(p, 0, SMALL);
  } else {
    size_t sz = size <= SMALL && align == ALIGN ? SMALL : size;
    uintptr_t base = (uintptr_t)ar->mem + ar->used + sizeof(struct head);
    uintptr_t q = (base + align - 1) & ~(uintptr_t)(align - 1);
    if (q + sz > (uintptr_t)ar->mem + ARENA_BYTES) {
      pthread_mutex_unlock(&ar->lock);
      errno = ENOMEM;
      return NULL;
    }
    ar->used = q + sz - (uintptr_t)ar->mem;
    p = (char *)q;
    ((struct head *)p)[-1] = (struct head){sz, a};
  }
  pthread_mutex_unlock(&ar->lock);
  return p;
}

void *malloc(size_t size) { return alloc(size, ALIGN); }
void *calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) {
    errno = ENOMEM;
    return NULL;
  }
  void *p = alloc(n * size, ALIGN);
  if (p) memset(p, 0, n * size);
  return p;
}
void free(void *p) {
  if (!p) return;
  struct head *h = (struct head *)p - 1;
  if (h->size != SMALL) return; /* (bump memory: kept) */
  struct arena *ar = &arenas[h->arena];
  pthread_mutex_lock(&ar->lock);
  *(void **)p = ar->free_small;
  ar->free_small = p;
  pthread_mutex_unlock(&ar->lock);
}
size_t malloc_usable_size(void *p) { return p ? ((struct head *)p - 1)->size : 0; }
void *realloc(void *p, size_t size) {
  if (!p) return malloc(size);
  size_t old = malloc_usable_size(p);
  if (size <= old) return p;
  void *q = malloc(size);
  if (q) {
    memcpy(q, p, old);
    free(p);
  }
  return q;
}
int posix_memalign(void **out, size_t align, size_t size) {
  if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
  void *p = alloc(size, align);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
void *aligned_alloc(size_t align, size_t size) { return alloc(size, align); }
void *memalign(size_t align, size_t size) { return alloc(size, align); }
void *valloc(size_t size) { return alloc(size, 4096); }
void *pvalloc(size_t size) { return alloc((size + 4095) & ~(size_t)4095, 4096); }

/* ---- the test ------------------------------------------------------------------------------ */

#define NWORK 6
#define NFORK 8

static int stop;

static void churn(int n) {
  void *keep[16] = {0};
  for (int i = 0; i < n; i++) {
    int k = i % 16;
    free(keep[k]);
    keep[k] = malloc((size_t)(16 + (i * 7) % 200));
    if (!keep[k]) abort();
  }
  for (int k = 0; k < 16; k++) free(keep[k]);
}

static void *worker(void *p) {
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) churn(100);
  return p;
}

static void *child_thread(void *p) {
  churn(1000);
  return p;
}

/* Forks NFORK times; each child works and exits with the number of
 * prepare handlers its fork ran (or 100 and more: it failed). */
static void forks(const char *who) {
  for (int i = 0; i < NFORK; i++) {
    int before = __atomic_load_n(&prepares, __ATOMIC_RELAXED);
    pid_t pid = fork();
    if (pid < 0) FAIL("fork");
    if (pid == 0) {
      int ran = __atomic_load_n(&prepares, __ATOMIC_RELAXED) - before;
      churn(1000);
      pthread_t t;
      if (pthread_create(&t, NULL, child_thread, NULL)) _exit(100);
      if (pthread_join(t, NULL)) _exit(101);
      char *s = malloc(64);
      snprintf(s, 64, "child %d", i);
      _exit(strcmp(s, "child") > 0 ? ran : 102);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid) FAIL("waitpid");
    if (!WIFEXITED(st)) FAIL("%s: child %d killed by signal %d", who, i, WTERMSIG(st));
    printf("%s: fork %d: prepare handlers run: %d\n", who, i, WEXITSTATUS(st));
  }
}

static void *forker(void *p) {
  forks("a thread");
  return p;
}

/* The watchdog: a shell (started with posix_spawn, which runs no fork
 * handlers) that kills this process if it has not ended, closing the
 * pipe, in 40 s. */
static void watchdog(void) {
  int p[2];
  if (pipe(p)) FAIL("pipe");
  char script[300];
  snprintf(script, sizeof script,
           "read -t 40 x; [ $? -gt 128 ] || exit 0; "
           "echo '" DROPIN_PROG ": FAILED: not done in 40 s (a fork hangs)' >&2; kill -9 %d",
           (int)getpid());
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[0], 0);
  posix_spawn_file_actions_addclose(&fa, p[1]);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  char *argv[] = {"bash", "-c", script, NULL};
  char *envp[] = {"PATH=/usr/bin:/bin", NULL}; /* (not preloaded) */
  pid_t pid;
  if (posix_spawn(&pid, "/bin/bash", &fa, NULL, argv, envp)) FAIL("posix_spawn bash");
  posix_spawn_file_actions_destroy(&fa);
  close(p[0]); /* (the write end closes when this process ends) */
  fcntl(p[1], F_SETFD, FD_CLOEXEC);
}

int main(void) {
  watchdog();
  free(malloc(1)); /* set up (if nothing did yet) */
  pthread_t w[NWORK], t;
  for (int i = 0; i < NWORK; i++)
    if (pthread_create(&w[i], NULL, worker, NULL)) FAIL("pthread_create");
  forks("main");
  if (pthread_create(&t, NULL, forker, NULL)) FAIL("pthread_create");
  pthread_join(t, NULL);
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < NWORK; i++) pthread_join(w[i], NULL);
  printf("done\n");
  return 0;
}
