/* Drop-in test: a program with its own allocator, as programs linked
 * with jemalloc or tcmalloc have. Its malloc sets itself up on the first
 * call, the way jemalloc does: a lock taken with pthread_mutex_trylock and
 * sched_yield, pthread_once, a key, a read of a /proc file. The first call
 * comes from the dynamic linker or libc before main, possibly while
 * libito-pthread.so resolves libc's functions; every pthread and I/O call
 * the allocator makes then must reach libc (or the shim, once it is set
 * up) without setting the shim up again.
 *
 * A plain pthread program (docs/dropin.md, section 8), run natively and
 * under libito-pthread.so; both.sh compares the outputs. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define DROPIN_PROG "ownalloc"
#include "dropin.h"

/* ---- the allocator: a bump arena under one mutex ----------------------------------------- */

#define ARENA (256u << 20)
static char *arena;
static size_t used;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static volatile int ready, inits, once_runs;
static long overcommit = -1;
static __thread int in_init;

static void once_fn(void) { once_runs++; }

static void set_up(void) {
  if (ready || in_init) return;
  in_init = 1;
  /* jemalloc's malloc_init_hard: a trylock loop that yields */
  while (pthread_mutex_trylock(&init_lock) != 0) sched_yield();
  if (!ready) {
    void *p = mmap(NULL, ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) _exit(3);
    arena = p;
    pthread_once(&once, once_fn);
    if (pthread_key_create(&key, NULL) != 0) _exit(4);
    int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      char c;
      if (read(fd, &c, 1) == 1) overcommit = c - '0';
      close(fd);
    }
    inits++;
    ready = 1;
  }
  pthread_mutex_unlock(&init_lock);
  in_init = 0;
}

struct hdr {
  size_t size;
  size_t pad;
};

static void *bump(size_t size, size_t align) {
  set_up();
  if (!arena) return NULL; /* a call made by the set-up itself before the arena exists */
  if (align < sizeof(struct hdr)) align = sizeof(struct hdr);
  pthread_mutex_lock(&lock);
  size_t at = (used + sizeof(struct hdr) + align - 1) & ~(align - 1);
  if (at + size > ARENA) {
    pthread_mutex_unlock(&lock);
    errno = ENOMEM;
    return NULL;
  }
  used = at + size;
  pthread_mutex_unlock(&lock);
  struct hdr *h = (struct hdr *)(arena + at) - 1;
  h->size = size;
  return arena + at;
}

static size_t size_of(void *p) { return ((struct hdr *)p - 1)->size; }

void *malloc(size_t n) { return bump(n, 16); }
void free(void *p) { (void)p; }
void *calloc(size_t a, size_t b) {
  if (b && a > SIZE_MAX / b) return NULL;
  void *p = bump(a * b, 16);
  if (p) memset(p, 0, a * b);
  return p;
}
void *realloc(void *p, size_t n) {
  void *q = bump(n, 16);
  if (q && p) memcpy(q, p, size_of(p) < n ? size_of(p) : n);
  return q;
}
void *memalign(size_t align, size_t n) { return bump(n, align); }
void *aligned_alloc(size_t align, size_t n) { return bump(n, align); }
int posix_memalign(void **out, size_t align, size_t n) {
  void *p = bump(n, align);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
void *valloc(size_t n) { return bump(n, 4096); }
void *pvalloc(size_t n) { return bump((n + 4095) & ~(size_t)4095, 4096); }
size_t malloc_usable_size(void *p) { return p ? size_of(p) : 0; }

/* ---- the program ------------------------------------------------------------------------- */

#define THREADS 8
#define ROUNDS 2000

static void *work(void *arg) {
  long id = (long)arg, sum = 0;
  if (pthread_setspecific(key, (void *)(id + 1))) FAIL("pthread_setspecific");
  for (int i = 0; i < ROUNDS; i++) {
    char *s = malloc(32);
    if (!s) FAIL("malloc in thread %ld", id);
    snprintf(s, 32, "%ld:%d", id, i);
    sum += (long)strlen(s);
    free(s);
  }
  if (pthread_getspecific(key) != (void *)(id + 1)) FAIL("key value lost in thread %ld", id);
  return (void *)sum;
}

int main(void) {
  /* preloaded, the allocator was set up before main, while the shim
   * resolved libc's functions; natively, by this call */
  free(malloc(1));
  printf("set up %d time(s), once ran %d time(s), overcommit %s\n", inits, once_runs,
         overcommit >= 0 ? "read" : "unread");
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++)
    if (pthread_create(&t[i], NULL, work, (void *)i)) FAIL("pthread_create %ld", i);
  long total = 0;
  for (int i = 0; i < THREADS; i++) {
    void *r;
    if (pthread_join(t[i], &r)) FAIL("pthread_join %d", i);
    total += (long)r;
  }
  printf("threads %d, characters %ld\n", THREADS, total);
  return 0;
}
