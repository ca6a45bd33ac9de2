/* omp_lock_t and omp_nest_lock_t: init/set/unset/test/destroy. A lock
 * protects non-atomic counters; omp_test_lock returns 0 while another
 * thread holds the lock and 1 once it is free (sequenced with barriers so
 * the results are fixed); omp_test_nest_lock returns the new nesting
 * count to the owner and 0 to others; a nested lock taken recursively;
 * many locks in an array; init/destroy in a loop. */
#include "omptest.h"

#define ITERS 20000

static omp_nest_lock_t rec_lock;
static long rec_count;

static void recurse(int depth) {
  omp_set_nest_lock(&rec_lock);
  rec_count++;
  if (depth > 0) recurse(depth - 1);
  omp_unset_nest_lock(&rec_lock);
}

int main(void) {
  int nthr = 1;
#pragma omp parallel
#pragma omp single
  nthr = omp_get_num_threads();

  /* A simple lock around a plain counter. */
  {
    omp_lock_t l;
    omp_init_lock(&l);
    long counter = 0;
#pragma omp parallel
    for (int i = 0; i < ITERS; i++) {
      omp_set_lock(&l);
      counter++;
      omp_unset_lock(&l);
    }
    omp_destroy_lock(&l);
    printf("simple lock: %ld\n", counter);
    CHECK_EQ(counter, (long)ITERS * nthr);
  }

  /* omp_test_lock in a spin loop as the only way in. */
  {
    omp_lock_t l;
    omp_init_lock(&l);
    long counter = 0, failed_tries = 0;
#pragma omp parallel reduction(+ : failed_tries)
    for (int i = 0; i < 5000; i++) {
      while (!omp_test_lock(&l)) failed_tries++;
      counter++;
      omp_unset_lock(&l);
    }
    omp_destroy_lock(&l);
    printf("test_lock spin: %ld\n", counter);
    CHECK_EQ(counter, 5000L * nthr);
    (void)failed_tries;
  }

  /* Fixed outcomes of omp_test_lock / omp_test_nest_lock: thread 0 holds,
   * the others try, then thread 0 releases and the others try again. */
  {
    omp_lock_t l;
    omp_nest_lock_t nl;
    omp_init_lock(&l);
    omp_init_nest_lock(&nl);
    int held_ok = 0, held_fail = 0, free_ok = 0, nest_counts[3] = {0}, nest_other = 0;
    int free_nest = 0;
#pragma omp parallel num_threads(3)
    {
      int t = omp_get_thread_num();
      if (t == 0) {
        omp_set_lock(&l);
        nest_counts[0] = omp_test_nest_lock(&nl);
        nest_counts[1] = omp_test_nest_lock(&nl);
        omp_set_nest_lock(&nl);
        nest_counts[2] = omp_test_nest_lock(&nl); /* 4th level */
      }
#pragma omp barrier
      if (t != 0) {
        if (omp_test_lock(&l))
          AINC(&held_ok);
        else
          AINC(&held_fail);
        if (omp_test_nest_lock(&nl)) AINC(&nest_other);
      }
#pragma omp barrier
      if (t == 0) {
        omp_unset_lock(&l);
        for (int k = 0; k < 4; k++) omp_unset_nest_lock(&nl);
      }
#pragma omp barrier
      if (t == 1) {
        if (omp_test_lock(&l)) {
          AINC(&free_ok);
          omp_unset_lock(&l);
        }
        int c = omp_test_nest_lock(&nl);
        if (c == 1) {
          AINC(&free_nest);
          omp_unset_nest_lock(&nl);
        }
      }
    }
    omp_destroy_lock(&l);
    omp_destroy_nest_lock(&nl);
    printf("test_lock while held: %d succeeded, %d failed; after release: %d\n", held_ok, held_fail,
           free_ok);
    printf("test_nest_lock by the owner: %d %d %d; by others while held: %d; after release: %d\n",
           nest_counts[0], nest_counts[1], nest_counts[2], nest_other, free_nest);
    CHECK_EQ(held_ok, 0);
    CHECK_EQ(held_fail, 2);
    CHECK_EQ(free_ok, 1);
    CHECK(nest_counts[0] == 1 && nest_counts[1] == 2 && nest_counts[2] == 4);
    CHECK_EQ(nest_other, 0);
    CHECK_EQ(free_nest, 1);
  }

  /* A nested lock taken recursively by every thread. */
  {
    omp_init_nest_lock(&rec_lock);
    rec_count = 0;
#pragma omp parallel
    for (int i = 0; i < 2000; i++) recurse(i % 5);
    omp_destroy_nest_lock(&rec_lock);
    /* Per thread: sum over i of (i % 5 + 1) = 400 * 15. */
    printf("recursive nest lock: %ld\n", rec_count);
    CHECK_EQ(rec_count, 6000L * nthr);
  }

  /* An array of locks, one per bucket. */
  {
    enum { B = 16 };
    omp_lock_t locks[B];
    long buckets[B] = {0};
    for (int b = 0; b < B; b++) omp_init_lock(&locks[b]);
#pragma omp parallel for schedule(dynamic, 64)
    for (int i = 0; i < 100000; i++) {
      int b = (i * 7) % B;
      omp_set_lock(&locks[b]);
      buckets[b] += i;
      omp_unset_lock(&locks[b]);
    }
    long tot = 0;
    for (int b = 0; b < B; b++) {
      omp_destroy_lock(&locks[b]);
      tot += buckets[b];
    }
    printf("lock array: bucket 3 %ld, total %ld\n", buckets[3], tot);
    CHECK_EQ(tot, 100000L * 99999 / 2);
  }

  /* init/destroy many times, each lock used once by every thread. */
  {
    int total = 0;
    for (int r = 0; r < 300; r++) {
      omp_lock_t l;
      omp_nest_lock_t nl;
      omp_init_lock(&l);
      omp_init_nest_lock(&nl);
#pragma omp parallel num_threads(2)
      {
        omp_set_nest_lock(&nl);
        omp_set_lock(&l);
        total++;
        omp_unset_lock(&l);
        omp_unset_nest_lock(&nl);
      }
      omp_destroy_lock(&l);
      omp_destroy_nest_lock(&nl);
    }
    printf("300 init/destroy rounds: %d\n", total);
    CHECK_EQ(total, 600);
  }

  /* Outside a region: test_lock on a free and a held lock. */
  {
    omp_lock_t l;
    omp_init_lock(&l);
    int a = omp_test_lock(&l);
    omp_unset_lock(&l);
    omp_set_lock(&l);
    omp_unset_lock(&l);
    omp_destroy_lock(&l);
    omp_nest_lock_t nl;
    omp_init_nest_lock(&nl);
    int b = omp_test_nest_lock(&nl), c = omp_test_nest_lock(&nl);
    omp_unset_nest_lock(&nl);
    omp_unset_nest_lock(&nl);
    omp_destroy_nest_lock(&nl);
    printf("outside a region: test_lock %d, test_nest_lock %d %d\n", a, b, c);
    CHECK(a == 1 && b == 1 && c == 2);
  }
  return omptest_finish("locks");
}
