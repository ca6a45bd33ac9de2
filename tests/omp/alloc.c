/* Memory allocators: traits (valid and not), pools and each fallback,
 * alignment, calloc, realloc, omp_free with omp_null_allocator, the
 * default allocator ICV, the allocate clause (GOMP_alloc), and many
 * threads taking blocks from one pool.
 *
 * A pool counts what the runtime takes from the system for a block: the
 * size asked for plus gcc's 32-byte header (plus alignment padding), so
 * the counts below are the same under libgomp and libito-omp only if both
 * account for a block the same way.
 *
 * "alloc abort" allocates past an abort_fb pool: the program must stop
 * with an out-of-memory message (alloc_abort.sh). */
#include "omptest.h"

#include <stdint.h>

#define HDR 32 /* gcc's block header */

static omp_allocator_handle_t make(int n, omp_alloctrait_t *t) {
  return omp_init_allocator(omp_default_mem_space, n, t);
}

static int aligned(const void *p, uintptr_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

static void invalid_traits(void) {
  static const struct {
    const char *what;
    omp_memspace_handle_t ms;
    omp_alloctrait_t t;
  } cases[] = {
      {"sync_hint=2", omp_default_mem_space, {omp_atk_sync_hint, 2}},
      {"sync_hint=private", omp_default_mem_space, {omp_atk_sync_hint, omp_atv_private}},
      {"sync_hint=default", omp_default_mem_space, {omp_atk_sync_hint, omp_atv_default}},
      {"alignment=3", omp_default_mem_space, {omp_atk_alignment, 3}},
      {"alignment=0", omp_default_mem_space, {omp_atk_alignment, 0}},
      {"alignment=1", omp_default_mem_space, {omp_atk_alignment, 1}},
      {"alignment=4096", omp_default_mem_space, {omp_atk_alignment, 4096}},
      {"alignment=default", omp_default_mem_space, {omp_atk_alignment, omp_atv_default}},
      {"access=99", omp_default_mem_space, {omp_atk_access, 99}},
      {"access=thread", omp_default_mem_space, {omp_atk_access, omp_atv_thread}},
      {"access=true", omp_default_mem_space, {omp_atk_access, omp_atv_true}},
      {"pool_size=default", omp_default_mem_space, {omp_atk_pool_size, omp_atv_default}},
      {"pool_size=0", omp_default_mem_space, {omp_atk_pool_size, 0}},
      {"fallback=99", omp_default_mem_space, {omp_atk_fallback, 99}},
      {"fallback=contended", omp_default_mem_space, {omp_atk_fallback, omp_atv_contended}},
      {"fallback=abort_fb", omp_default_mem_space, {omp_atk_fallback, omp_atv_abort_fb}},
      {"fb_data=large_cap", omp_default_mem_space, {omp_atk_fb_data, omp_large_cap_mem_alloc}},
      {"pinned=true", omp_default_mem_space, {omp_atk_pinned, omp_atv_true}},
      {"pinned=false", omp_default_mem_space, {omp_atk_pinned, omp_atv_false}},
      {"pinned=2", omp_default_mem_space, {omp_atk_pinned, 2}},
      {"partition=blocked", omp_default_mem_space, {omp_atk_partition, omp_atv_blocked}},
      {"partition=all", omp_default_mem_space, {omp_atk_partition, omp_atv_all}},
      {"key=0", omp_default_mem_space, {(omp_alloctrait_key_t)0, 1}},
      {"key=99", omp_default_mem_space, {(omp_alloctrait_key_t)99, 1}},
      {"space=large_cap", omp_large_cap_mem_space, {omp_atk_alignment, 16}},
      {"space=const", omp_const_mem_space, {omp_atk_alignment, 16}},
      {"space=high_bw", omp_high_bw_mem_space, {omp_atk_alignment, 16}},
      {"space=low_lat", omp_low_lat_mem_space, {omp_atk_alignment, 16}},
      {"space=5", (omp_memspace_handle_t)5, {omp_atk_alignment, 16}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    omp_alloctrait_t t = cases[i].t;
    omp_allocator_handle_t a = omp_init_allocator(cases[i].ms, 1, &t);
    int ok = a != omp_null_allocator;
    if (ok) {
      void *p = omp_alloc(100, a);
      CHECK(p != NULL);
      omp_free(p, a);
      omp_destroy_allocator(a);
    }
    printf("trait %s: %s\n", cases[i].what, ok ? "allocator" : "omp_null_allocator");
  }
  /* several traits, one bad: the whole call fails */
  omp_alloctrait_t t3[] = {
      {omp_atk_alignment, 64}, {omp_atk_pool_size, 4096}, {omp_atk_fallback, 42}};
  omp_allocator_handle_t a3 = make(3, t3), a0 = make(0, NULL);
  printf("three traits, one bad: %s\n", a3 == omp_null_allocator ? "null" : "allocator");
  printf("no traits: %s\n", a0 == omp_null_allocator ? "null" : "allocator");
  omp_destroy_allocator(a3);
  omp_destroy_allocator(a0);
}

/* Blocks of size bytes taken from a until it returns NULL (at most max). */
static int fill(omp_allocator_handle_t a, size_t size, void **keep, int max) {
  int n = 0;
  while (n < max && (keep[n] = omp_alloc(size, a)) != NULL) n++;
  return n;
}

static void pools(void) {
  void *keep[64];
  /* null_fb: NULL once the pool is used up; a freed block's room comes back */
  omp_alloctrait_t tn[] = {{omp_atk_pool_size, 1024}, {omp_atk_fallback, omp_atv_null_fb}};
  omp_allocator_handle_t an = make(2, tn);
  int n = fill(an, 256, keep, 64);
  printf("null_fb: %d blocks of 256 in a pool of 1024\n", n);
  CHECK_EQ(n, 1024 / (256 + HDR));
  omp_free(keep[0], an);
  keep[0] = omp_alloc(256, an);
  printf("null_fb: after a free: %s\n", keep[0] ? "allocated" : "NULL");
  printf("null_fb: bigger than the pool: %s\n", omp_alloc(2000, an) ? "allocated" : "NULL");
  printf("null_fb: omp_alloc(0): %s\n", omp_alloc(0, an) ? "allocated" : "NULL");
  for (int i = 0; i < n; i++) omp_free(keep[i], an);
  /* the whole pool, header included, fits again */
  void *all = omp_alloc(1024 - HDR, an);
  printf("null_fb: whole pool after freeing all: %s\n", all ? "allocated" : "NULL");
  printf("null_fb: one byte more: %s\n", omp_alloc(1, an) ? "allocated" : "NULL");
  omp_free(all, omp_null_allocator);
  omp_destroy_allocator(an);

  /* default_mem_fb: beyond the pool from default memory, which the pool does not count */
  omp_alloctrait_t td[] = {{omp_atk_pool_size, 512}, {omp_atk_fallback, omp_atv_default_mem_fb}};
  omp_allocator_handle_t ad = make(2, td);
  void *big = omp_alloc(4096, ad);
  printf("default_mem_fb: 4096 from a pool of 512: %s\n", big ? "allocated" : "NULL");
  n = fill(ad, 100, keep, 10);
  printf("default_mem_fb: then %d blocks of 100 (all of them)\n", n);
  omp_free(big, omp_null_allocator);
  for (int i = 0; i < n; i++) omp_free(keep[i], omp_null_allocator);
  /* the default fallback is default_mem_fb */
  omp_alloctrait_t tdd[] = {{omp_atk_pool_size, 64}};
  omp_allocator_handle_t add = make(1, tdd);
  void *q = omp_alloc(1000, add);
  printf("no fallback trait: 1000 from a pool of 64: %s\n", q ? "allocated" : "NULL");
  omp_free(q, add);
  omp_destroy_allocator(add);
  omp_destroy_allocator(ad);

  /* allocator_fb: a chain of two pools, the last with null_fb */
  omp_alloctrait_t t2[] = {{omp_atk_pool_size, 600}, {omp_atk_fallback, omp_atv_null_fb}};
  omp_allocator_handle_t a2 = make(2, t2);
  omp_alloctrait_t t1[] = {
      {omp_atk_pool_size, 300}, {omp_atk_fallback, omp_atv_allocator_fb}, {omp_atk_fb_data, a2}};
  omp_allocator_handle_t a1 = make(3, t1);
  n = fill(a1, 200, keep, 64);
  printf("allocator_fb: %d blocks of 200 from pools of 300 then 600\n", n);
  CHECK_EQ(n, 300 / (200 + HDR) + 600 / (200 + HDR));
  /* freeing the first block (a1's) makes room in a1 only */
  omp_free(keep[0], omp_null_allocator);
  keep[0] = omp_alloc(200, a1);
  printf("allocator_fb: after freeing the first: %s\n", keep[0] ? "allocated" : "NULL");
  printf("allocator_fb: a2 alone: %s\n", omp_alloc(200, a2) ? "allocated" : "NULL");
  for (int i = 0; i < n; i++) omp_free(keep[i], a1);
  printf("allocator_fb: a2 after freeing: %s\n", (q = omp_alloc(500, a2)) ? "allocated" : "NULL");
  omp_free(q, a2);
  omp_destroy_allocator(a1);
  omp_destroy_allocator(a2);
}

static void alignment(void) {
  omp_alloctrait_t t64[] = {{omp_atk_alignment, 64}};
  omp_allocator_handle_t a64 = make(1, t64);
  int ok = 1;
  for (int i = 0; i < 20; i++) {
    void *p = omp_alloc(8 + i * 13, a64), *q = omp_aligned_alloc(256, 8 + i, a64),
         *r = omp_aligned_alloc(16, 8 + i, a64),
         *s = omp_aligned_alloc(128, 24, omp_default_mem_alloc),
         *u = omp_aligned_calloc(512, 3, 8, a64);
    ok &= aligned(p, 64) && aligned(q, 256) && aligned(r, 64) && aligned(s, 128) && aligned(u, 512);
    omp_free(p, a64);
    omp_free(q, a64);
    omp_free(r, omp_null_allocator);
    omp_free(s, omp_default_mem_alloc);
    omp_free(u, a64);
  }
  printf("alignment: allocator's and call's combined: %s\n", ok ? "ok" : "WRONG");
  /* padding counts in the pool: 64-aligned blocks of 64 take 64 + 32 + 56 */
  omp_alloctrait_t tp[] = {
      {omp_atk_alignment, 64}, {omp_atk_pool_size, 1000}, {omp_atk_fallback, omp_atv_null_fb}};
  omp_allocator_handle_t ap = make(3, tp);
  void *keep[32];
  int n = fill(ap, 64, keep, 32);
  printf("alignment: %d aligned blocks of 64 in a pool of 1000\n", n);
  for (int i = 0; i < n; i++) omp_free(keep[i], ap);
  /* the fallback to default memory of a pool with alignment */
  omp_alloctrait_t tf[] = {{omp_atk_alignment, 128}, {omp_atk_pool_size, 100}};
  omp_allocator_handle_t af = make(2, tf);
  void *f = omp_aligned_alloc(32, 1000, af);
  printf("alignment: default_mem_fb block: %s, 32-aligned %d\n", f ? "allocated" : "NULL",
         f && aligned(f, 32));
  omp_free(f, af);
  omp_destroy_allocator(af);
  omp_destroy_allocator(ap);
  omp_destroy_allocator(a64);
}

static void calloc_zeroes(void) {
  omp_alloctrait_t t[] = {{omp_atk_alignment, 32}, {omp_atk_pool_size, 1 << 20}};
  omp_allocator_handle_t a = make(2, t);
  int bad = 0;
  for (int round = 0; round < 8; round++) {
    size_t n = 1000 + (size_t)round * 77;
    /* dirty memory of that size first, so calloc cannot get clean pages only */
    unsigned char *d = omp_alloc(n * 4, a);
    memset(d, 0xAB, n * 4);
    omp_free(d, a);
    unsigned char *p = round & 1 ? omp_calloc(n, 4, a) : omp_aligned_calloc(64, n, 4, a);
    for (size_t i = 0; i < n * 4; i++) bad += p[i] != 0;
    bad += !aligned(p, round & 1 ? 32 : 64);
    omp_free(p, a);
  }
  printf("calloc: zeroed and aligned: %s\n", bad ? "WRONG" : "ok");
  printf("calloc: zero elements: %s\n", omp_calloc(0, 8, a) ? "allocated" : "NULL");
  volatile size_t huge = SIZE_MAX / 2; /* (gcc warns about a constant) */
  printf("calloc: overflow: %s\n",
         omp_calloc(huge, 4, omp_default_mem_alloc) ? "allocated" : "NULL");
  omp_destroy_allocator(a);
}

static int same_ints(const int *p, int n, int base) {
  for (int i = 0; i < n; i++)
    if (p[i] != base + i) return 0;
  return 1;
}

static void reallocs(void) {
  omp_alloctrait_t tp[] = {{omp_atk_pool_size, 4096}, {omp_atk_fallback, omp_atv_null_fb}};
  omp_allocator_handle_t ap = make(2, tp);
  omp_alloctrait_t t64[] = {{omp_atk_alignment, 64}};
  omp_allocator_handle_t a64 = make(1, t64);
  int *p = omp_realloc(NULL, 100 * sizeof(int), ap, omp_null_allocator);
  for (int i = 0; i < 100; i++) p[i] = 7 + i;
  p = omp_realloc(p, 200 * sizeof(int), ap, ap);
  printf("realloc: grown in the pool keeps contents: %d\n", same_ints(p, 100, 7));
  p = omp_realloc(p, 50 * sizeof(int), omp_null_allocator, ap);
  printf("realloc: shrunk keeps contents: %d\n", same_ints(p, 50, 7));
  /* beyond the pool with null_fb: NULL, and the block is still there */
  int *q = omp_realloc(p, 5000, ap, ap);
  printf("realloc: beyond the pool: %s, old block intact %d\n", q ? "allocated" : "NULL",
         same_ints(p, 50, 7));
  /* to another allocator: its alignment, contents kept, the pool given back */
  p = omp_realloc(p, 300 * sizeof(int), a64, omp_null_allocator);
  printf("realloc: moved to a 64-aligned allocator: aligned %d, contents %d\n", aligned(p, 64),
         same_ints(p, 50, 7));
  void *whole = omp_alloc(4096 - HDR, ap);
  printf("realloc: pool free again after the move: %s\n", whole ? "allocated" : "NULL");
  omp_free(whole, ap);
  /* omp_null_allocator keeps the block's allocator (and its alignment) */
  for (int i = 0; i < 300; i++) p[i] = 3 * i;
  p = omp_realloc(p, 1000 * sizeof(int), omp_null_allocator, omp_null_allocator);
  int ok = aligned(p, 64);
  for (int i = 0; i < 300; i++) ok &= p[i] == 3 * i;
  printf("realloc: null allocator keeps the block's: %d\n", ok);
  printf("realloc: to size 0: %s\n", omp_realloc(p, 0, a64, a64) ? "a block" : "NULL");
  /* back and forth between the pool and default memory */
  int *r = omp_alloc(10 * sizeof(int), omp_default_mem_alloc);
  for (int i = 0; i < 10; i++) r[i] = 40 + i;
  r = omp_realloc(r, 20 * sizeof(int), ap, omp_default_mem_alloc);
  printf("realloc: into the pool: %d\n", same_ints(r, 10, 40));
  r = omp_realloc(r, 30 * sizeof(int), omp_default_mem_alloc, ap);
  printf("realloc: out of the pool: %d\n", same_ints(r, 10, 40));
  omp_free(r, omp_null_allocator);
  whole = omp_alloc(4096 - HDR, ap);
  printf("realloc: pool whole at the end: %s\n", whole ? "allocated" : "NULL");
  omp_free(whole, ap);
  omp_destroy_allocator(ap);
  omp_destroy_allocator(a64);
}

static void free_null(void) {
  omp_alloctrait_t tp[] = {{omp_atk_pool_size, 2048}, {omp_atk_fallback, omp_atv_null_fb}};
  omp_allocator_handle_t ap = make(2, tp);
  int ok = 1;
  for (int i = 0; i < 50; i++) {
    void *p = omp_alloc(2048 - HDR, ap);
    ok &= p != NULL;
    omp_free(p, omp_null_allocator); /* the header says which pool */
  }
  omp_free(NULL, ap);
  printf("free with omp_null_allocator returns to the pool: %d\n", ok);
  omp_destroy_allocator(ap);
}

/* Threads take blocks of one pool until it is empty: the total only
 * depends on the pool. */
static void many_threads(void) {
  enum { POOL = 64 * 1024, SIZE = 100 };
  omp_alloctrait_t tp[] = {{omp_atk_pool_size, POOL},
                           {omp_atk_fallback, omp_atv_null_fb},
                           {omp_atk_sync_hint, omp_atv_contended}};
  omp_allocator_handle_t ap = make(3, tp);
  for (int round = 0; round < 3; round++) {
    long total = 0;
#pragma omp parallel reduction(+ : total)
    {
      void **keep = malloc(sizeof(void *) * (POOL / (SIZE + HDR) + 1));
      int n = 0;
      while ((keep[n] = omp_alloc(SIZE, ap)) != NULL) {
        memset(keep[n], n & 0xff, SIZE);
        n++;
      }
#pragma omp barrier
      for (int i = 0; i < n; i++) {
        CHECK_EQ(((unsigned char *)keep[i])[SIZE - 1], i & 0xff);
        omp_free(keep[i], i & 1 ? ap : omp_null_allocator);
      }
      free(keep);
      total += n;
    }
    void *whole = omp_alloc(POOL - HDR, ap);
    printf("threads: round %d: %ld blocks of %d from a pool of %d, pool whole after: %s\n", round,
           total, SIZE, POOL, whole ? "yes" : "no");
    CHECK_EQ(total, POOL / (SIZE + HDR));
    omp_free(whole, ap);
  }
  omp_destroy_allocator(ap);
}

static void default_allocator(void) {
  omp_allocator_handle_t start = omp_get_default_allocator();
  printf("default allocator at start: %d\n", (int)start);
  omp_alloctrait_t t[] = {
      {omp_atk_alignment, 128}, {omp_atk_pool_size, 1000}, {omp_atk_fallback, omp_atv_null_fb}};
  omp_allocator_handle_t a = make(3, t);
  omp_set_default_allocator(a);
  int same = omp_get_default_allocator() == a;
  /* omp_null_allocator means the default one: this pool and alignment */
  void *p = omp_alloc(500, omp_null_allocator);
  void *q = omp_alloc(500, omp_null_allocator);
  printf("default allocator set: %d, block aligned %d, second block %s\n", same, aligned(p, 128),
         q ? "allocated" : "NULL");
  omp_free(p, omp_null_allocator);
  omp_free(q, omp_null_allocator);
  omp_set_default_allocator(omp_const_mem_alloc);
  int inherited = 0, own = 0;
#pragma omp parallel reduction(+ : inherited, own)
  {
    inherited += omp_get_default_allocator() == omp_const_mem_alloc;
    omp_set_default_allocator(omp_get_thread_num() & 1 ? omp_low_lat_mem_alloc
                                                       : omp_large_cap_mem_alloc);
#pragma omp barrier
    own += omp_get_default_allocator() ==
           (omp_get_thread_num() & 1 ? omp_low_lat_mem_alloc : omp_large_cap_mem_alloc);
  }
  printf("default allocator: inherited by %d members, own kept by %d\n",
         inherited == omp_get_max_threads(), own == omp_get_max_threads());
  printf("default allocator after the region: %d\n", (int)omp_get_default_allocator());
  omp_set_default_allocator(omp_null_allocator);
  printf("default allocator set to null: %d\n", (int)omp_get_default_allocator());
  omp_set_default_allocator(start);
  omp_destroy_allocator(a);
}

/* The allocate clause: gcc calls GOMP_alloc and GOMP_free with the allocator. */
static void allocate_clause(void) {
  omp_alloctrait_t t[] = {{omp_atk_alignment, 256}, {omp_atk_pool_size, 1 << 16}};
  omp_allocator_handle_t a = make(2, t);
  int x = 5, bad = 0;
  double y = 1.5;
#pragma omp parallel firstprivate(x, y) allocate(a : x, y) reduction(+ : bad)
  {
    bad += !aligned(&x, 256) || !aligned(&y, 256) || x != 5 || y != 1.5;
#pragma omp task firstprivate(x) allocate(a : x) shared(bad)
    {
      if (!aligned(&x, 256) || x != 5) __atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
    }
#pragma omp taskwait
  }
  printf("allocate clause: private copies from the allocator: %s\n", bad ? "WRONG" : "ok");
  void *whole = omp_alloc((1 << 16) - HDR, a);
  printf("allocate clause: pool whole after: %s\n", whole ? "yes" : "no");
  omp_free(whole, a);
  omp_destroy_allocator(a);
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "abort")) {
    omp_alloctrait_t t[] = {{omp_atk_pool_size, 1024}, {omp_atk_fallback, omp_atv_abort_fb}};
    omp_allocator_handle_t a = make(2, t);
    void *p = omp_alloc(512, a);
    printf("first block: %s\n", p ? "allocated" : "NULL");
    fflush(stdout);
    void *q = omp_alloc(2048, a);
    printf("survived the abort_fb allocation: %p\n", q);
    return 0;
  }
  invalid_traits();
  pools();
  alignment();
  calloc_zeroes();
  reallocs();
  free_null();
  many_threads();
  default_allocator();
  allocate_clause();
  return omptest_finish("alloc");
}
