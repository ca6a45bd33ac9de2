/* Quicksort with nested parallel sections: the nested-OpenMP paper
 * (docs/references.md), figure 14. Each call
 * partitions its range, asks for teams of two (omp_set_num_threads(2)) and
 * sorts the two parts in the two sections of a `parallel sections`, so
 * every level of the recursion is a nested parallel region; ranges below
 * the cut-off are sorted by the same quicksort without pragmas. Nesting is
 * up to the runtime's max-active-levels (run with OMP_MAX_ACTIVE_LEVELS
 * large: every level a team of two).
 *
 *   qsort_omp [n=16777216] [cutoff=10000] [reps=3]
 *
 * Input: n pseudo-random ints (splitmix64 of a fixed seed). serial_s is the
 * serial quicksort of the whole input, in the same binary. Checks that the
 * output is sorted and has the input's sum and sum of hashes (the same
 * multiset). CSV, one line per repetition:
 *   system,workers,n,cutoff,rep,serial_s,parallel_s,ratio,levels
 * levels: the deepest nesting of active parallel regions seen
 * (omp_get_active_level() at the cut-off). Exits 1 on a wrong result. */
#define _GNU_SOURCE /* dladdr, in omp_common.h */
#include "omp_common.h"

static long cutoff;
static int deepest; /* max omp_get_active_level() at a leaf; updated atomically */

static inline void swap_int(int *a, int *b) {
  int t = *a;
  *a = *b;
  *b = t;
}

/* Hoare partition of a[lo..hi] (inclusive, hi - lo >= 2) around the median
 * of three; returns p with a[lo..p] <= pivot <= a[p+1..hi], lo <= p < hi. */
static long partition(int *a, long lo, long hi) {
  long mid = lo + (hi - lo) / 2;
  if (a[mid] < a[lo]) swap_int(&a[mid], &a[lo]);
  if (a[hi] < a[lo]) swap_int(&a[hi], &a[lo]);
  if (a[hi] < a[mid]) swap_int(&a[hi], &a[mid]);
  int pivot = a[mid];
  long i = lo - 1, j = hi + 1;
  for (;;) {
    do i++;
    while (a[i] < pivot);
    do j--;
    while (a[j] > pivot);
    if (i >= j) return j;
    swap_int(&a[i], &a[j]);
  }
}

static void insertion_sort(int *a, long lo, long hi) {
  for (long i = lo + 1; i <= hi; i++) {
    int v = a[i];
    long j = i - 1;
    while (j >= lo && a[j] > v) {
      a[j + 1] = a[j];
      j--;
    }
    a[j + 1] = v;
  }
}

/* The serial quicksort: below the cut-off, and the baseline. */
static void quicksort_serial(int *a, long lo, long hi) {
  while (hi - lo >= 16) {
    long p = partition(a, lo, hi);
    if (p - lo < hi - p) { /* recurse on the smaller part */
      quicksort_serial(a, lo, p);
      lo = p + 1;
    } else {
      quicksort_serial(a, p + 1, hi);
      hi = p;
    }
  }
  insertion_sort(a, lo, hi);
}

/* Figure 14. */
static void quicksort_omp(int *a, long lo, long hi) {
  if (hi - lo + 1 < cutoff) {
    int lv = omp_get_active_level();
    int seen = __atomic_load_n(&deepest, __ATOMIC_RELAXED);
    while (lv > seen &&
           !__atomic_compare_exchange_n(&deepest, &seen, lv, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      ;
    quicksort_serial(a, lo, hi);
    return;
  }
  long p = partition(a, lo, hi);
  omp_set_num_threads(2);
#pragma omp parallel sections
  {
#pragma omp section
    quicksort_omp(a, lo, p);
#pragma omp section
    quicksort_omp(a, p + 1, hi);
  }
}

typedef struct {
  uint64_t sum, hsum;
} digest;

static digest digest_of(const int *a, long n) {
  digest d = {0, 0};
  for (long i = 0; i < n; i++) {
    d.sum += (uint64_t)(int64_t)a[i];
    d.hsum += ompb_mix((uint64_t)(uint32_t)a[i]);
  }
  return d;
}

static int check(const char *what, const int *a, long n, digest want) {
  for (long i = 1; i < n; i++)
    if (a[i - 1] > a[i]) {
      fprintf(stderr, "qsort_omp: WRONG ANSWER (%s): a[%ld] = %d > a[%ld] = %d\n", what, i - 1,
              a[i - 1], i, a[i]);
      return 0;
    }
  digest d = digest_of(a, n);
  if (d.sum != want.sum || d.hsum != want.hsum) {
    fprintf(stderr, "qsort_omp: WRONG ANSWER (%s): the output is not a permutation of the input\n",
            what);
    return 0;
  }
  return 1;
}

int main(int argc, char **argv) {
  const long n = bench_arg("qsort_omp", argc, argv, 1, 1L << 24, 1, 1L << 30);
  cutoff = bench_arg("qsort_omp", argc, argv, 2, 10000, 2, 1L << 30);
  const int reps = (int)bench_arg("qsort_omp", argc, argv, 3, 3, 1, 100000);
  const ompb_entry entries[] = {OMPB_ENTRY(GOMP_parallel_sections),
                                OMPB_ENTRY(GOMP_sections_next),
                                OMPB_ENTRY(GOMP_sections_end_nowait),
                                OMPB_ENTRY(omp_set_num_threads),
                                OMPB_ENTRY(omp_get_active_level),
                                OMPB_ENTRY(omp_get_max_threads),
                                OMPB_META_ENTRIES};
  const int nent = (int)(sizeof entries / sizeof entries[0]);
  const int workers = omp_get_max_threads(); /* OMP_NUM_THREADS, before the first call */

  int *input = malloc((size_t)n * sizeof *input);
  int *a = malloc((size_t)n * sizeof *a);
  if (!input || !a) {
    fprintf(stderr, "qsort_omp: out of memory for %ld ints\n", n);
    return 3;
  }
  for (long i = 0; i < n; i++) input[i] = (int)(uint32_t)ompb_mix(0x5EED0000ull + (uint64_t)i);
  const digest want = digest_of(input, n);

  /* warm-up on a prefix: starts the runtime's threads */
  long wn = n < (1L << 20) ? n : (1L << 20);
  memcpy(a, input, (size_t)wn * sizeof *a);
  quicksort_omp(a, 0, wn - 1);
  if (!check("warm-up", a, wn, digest_of(input, wn))) return 1;

  const char *sys = ompb_system(entries, nent);
  ompb_meta("omp_qsort", entries, nent, workers);
  printf("system,workers,n,cutoff,rep,serial_s,parallel_s,ratio,levels\n");
  fflush(stdout);

  for (int rep = 0; rep < reps; rep++) {
    memcpy(a, input, (size_t)n * sizeof *a);
    double t0 = ompb_now_s();
    quicksort_serial(a, 0, n - 1);
    double ts = ompb_now_s() - t0;
    if (!check("serial", a, n, want)) return 1;

    memcpy(a, input, (size_t)n * sizeof *a);
    __atomic_store_n(&deepest, 0, __ATOMIC_RELAXED);
    t0 = ompb_now_s();
    quicksort_omp(a, 0, n - 1);
    double tp = ompb_now_s() - t0;
    if (!check("parallel", a, n, want)) return 1;
    printf("%s,%d,%ld,%ld,%d,%.6f,%.6f,%.4f,%d\n", sys, workers, n, cutoff, rep, ts, tp,
           ts > 0 ? tp / ts : 0.0, __atomic_load_n(&deepest, __ATOMIC_RELAXED));
    fflush(stdout);
  }
  free(a);
  free(input);
  return 0;
}
