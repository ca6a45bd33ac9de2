/* Scan and lastprivate(conditional:): the work-sharing starts that take a
 * mem argument (GOMP_loop_start, GOMP_loop_ordered_start,
 * GOMP_loop_ull_ordered_start, GOMP_sections2_start) and hand every member
 * of the work share the same block of zeroed scratch memory.
 *
 * gcc 12 lowers a loop with reduction(inscan, ...) to GOMP_loop_start with
 * a request of omp_get_num_threads() * sizeof the variables: every member
 * runs its static block of the first phase, stores its partial result in
 * its element, and after barriers reads the combined results of the
 * members before it for the second phase (gcc accepts no schedule clause
 * with inscan). Inclusive and exclusive prefix sums over int, long and
 * double (sums of multiples of 1/4, exact), max and a user-defined
 * reduction, two variables in one scan, an unsigned long long loop,
 * parallel for, for, for simd and parallel for simd, orphaned loops (also
 * outside any region: a team of one), nested teams, 10 scan loops in one
 * region (more than the ring of work shares), teams of 1, 2, 3, 5 and 8
 * (more members than workers) and loops shorter than the team. Every element is compared
 * with the sequential prefix.
 *
 * lastprivate(conditional: v) on a variable the construct does not
 * privatise from an enclosing one (here a global in orphaned constructs)
 * keeps the largest iteration number (from 1) that assigned v in 8 bytes of
 * that memory, 0 at first: each member compares its own under
 * GOMP_atomic_start and copies its v out if larger. The value must be the
 * one the sequentially last assigning iteration stored, whatever member ran
 * it. Loops with static (gcc computes the blocks itself), static with
 * chunks and nowait, dynamic, guided, runtime, ordered (with an ordered
 * region), unsigned long long ordered guided, collapse(2), with a task
 * reduction (reductions and mem in the same start); 12 such loops back to
 * back with nowait; sections, orphaned and in parallel sections. */
#include "omptest.h"

#define N 1000
static int a[N];
static long ref[N + 1]; /* ref[i]: the sum of a[0 .. i) */

static const int sizes[] = {0, 1, 7, 100, N};
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])
static const int teams[] = {1, 2, 3, 5, 8};
#define NTEAMS (int)(sizeof teams / sizeof teams[0])

static void init(void) {
  unsigned long x = 12345;
  for (int i = 0; i < N; i++) {
    x = x * 6364136223846793005UL + 1442695040888963407UL;
    a[i] = (int)((x >> 33) % 201) - 100;
  }
  for (int i = 0; i < N; i++) ref[i + 1] = ref[i] + a[i];
}

/* A position-weighted checksum of an array of results. */
static long csum(const long *v, int n) {
  unsigned long s = 0; /* wraps: unsigned */
  for (int i = 0; i < n; i++) s = s * 31 + (unsigned long)v[i] + (unsigned long)i;
  return (long)s;
}

/* ---- prefix sums ----------------------------------------------------------------- */

static long bl[N];
static int bi[N];
static double bd[N];

/* int, inclusive, parallel for */
static int incl_int(int nt, int n) {
  int x = 0, bad = 0;
#pragma omp parallel for num_threads(nt) reduction(inscan, + : x)
  for (int i = 0; i < n; i++) {
    x += a[i];
#pragma omp scan inclusive(x)
    bi[i] = x;
  }
  for (int i = 0; i < n; i++) bad += bi[i] != ref[i + 1];
  return bad + (x != ref[n]);
}

/* long, exclusive, for in a parallel region */
static int excl_long(int nt, int n) {
  long x = 0;
  int bad = 0;
#pragma omp parallel num_threads(nt)
#pragma omp for reduction(inscan, + : x)
  for (int i = 0; i < n; i++) {
    bl[i] = x;
#pragma omp scan exclusive(x)
    x += a[i];
  }
  for (int i = 0; i < n; i++) bad += bl[i] != ref[i];
  return bad + (x != ref[n]);
}

/* double, inclusive, for simd; starts from a value other than 0 */
static int incl_double(int nt, int n) {
  double x = 0.5;
  int bad = 0;
#pragma omp parallel num_threads(nt)
#pragma omp for simd reduction(inscan, + : x)
  for (int i = 0; i < n; i++) {
    x += a[i] * 0.25;
#pragma omp scan inclusive(x)
    bd[i] = x;
  }
  for (int i = 0; i < n; i++) bad += bd[i] != 0.5 + ref[i + 1] * 0.25;
  return bad + (x != 0.5 + ref[n] * 0.25);
}

/* double, exclusive, parallel for simd */
static int excl_double(int nt, int n) {
  double x = 0;
  int bad = 0;
#pragma omp parallel for simd num_threads(nt) reduction(inscan, + : x)
  for (int i = 0; i < n; i++) {
    bd[i] = x;
#pragma omp scan exclusive(x)
    x += a[i] * 0.125;
  }
  for (int i = 0; i < n; i++) bad += bd[i] != ref[i] * 0.125;
  return bad + (x != ref[n] * 0.125);
}

/* max, inclusive: the running maximum */
static int incl_max(int nt, int n) {
  int x = -1000, bad = 0, m = -1000;
#pragma omp parallel for num_threads(nt) reduction(inscan, max : x)
  for (int i = 0; i < n; i++) {
    x = x > a[i] ? x : a[i];
#pragma omp scan inclusive(x)
    bi[i] = x;
  }
  for (int i = 0; i < n; i++) {
    m = m > a[i] ? m : a[i];
    bad += bi[i] != m;
  }
  return bad + (x != m);
}

/* a user-defined reduction: the running minimum and maximum, exclusive */
struct range {
  int lo, hi;
};
#pragma omp declare reduction(rng                                                             \
                              : struct range                                                  \
                              : omp_out.lo = omp_in.lo < omp_out.lo ? omp_in.lo : omp_out.lo, \
                                omp_out.hi = omp_in.hi > omp_out.hi ? omp_in.hi : omp_out.hi) \
    initializer(omp_priv = (struct range){1000, -1000})
static struct range br[N];

static void rng_add(struct range *r, int v) {
  if (v < r->lo) r->lo = v;
  if (v > r->hi) r->hi = v;
}

static int excl_udr(int nt, int n) {
  struct range x = {1000, -1000}, s = {1000, -1000};
  int bad = 0;
#pragma omp parallel for num_threads(nt) reduction(inscan, rng : x)
  for (int i = 0; i < n; i++) {
    br[i] = x;
#pragma omp scan exclusive(x)
    rng_add(&x, a[i]);
  }
  for (int i = 0; i < n; i++) {
    bad += br[i].lo != s.lo || br[i].hi != s.hi;
    rng_add(&s, a[i]);
  }
  return bad + (x.lo != s.lo || x.hi != s.hi);
}

/* two variables in one scan, inclusive */
static int incl_two(int nt, int n) {
  long x = 0;
  double y = 0;
  int bad = 0;
#pragma omp parallel for num_threads(nt) reduction(inscan, + : x, y)
  for (int i = 0; i < n; i++) {
    x += a[i];
    y += a[i] * 0.5;
#pragma omp scan inclusive(x, y)
    {
      bl[i] = x;
      bd[i] = y;
    }
  }
  for (int i = 0; i < n; i++) bad += bl[i] != ref[i + 1] || bd[i] != ref[i + 1] * 0.5;
  return bad + (x != ref[n]) + (y != ref[n] * 0.5);
}

/* unsigned long long loop, exclusive (not with no iteration: gcc 12's code
 * for such a loop then faults under libgomp as under ito) */
static int excl_ull(int nt, int n) {
  long x = 0;
  int bad = 0;
  if (n == 0) return 0;
#pragma omp parallel for num_threads(nt) reduction(inscan, + : x)
  for (unsigned long long i = 0; i < (unsigned long long)n; i++) {
    bl[i] = x;
#pragma omp scan exclusive(x)
    x += a[i];
  }
  for (int i = 0; i < n; i++) bad += bl[i] != ref[i];
  return bad + (x != ref[n]);
}

/* orphaned: the binding team is the caller's (a team of one outside any
 * region); the result goes to *out */
static long ox;

static void orphan_scan(int n) {
#pragma omp for reduction(inscan, + : ox)
  for (int i = 0; i < n; i++) {
    ox += a[i];
#pragma omp scan inclusive(ox)
    bl[i] = ox;
  }
}

static int orphaned(int nt, int n) {
  int bad = 0;
  ox = 0;
  if (nt == 1) {
    orphan_scan(n);
  } else {
#pragma omp parallel num_threads(nt)
    orphan_scan(n);
  }
  for (int i = 0; i < n; i++) bad += bl[i] != ref[i + 1];
  return bad + (ox != ref[n]);
}

/* 10 scan loops in one region, alternately inclusive and exclusive, each
 * over a different stretch */
static long many[10][N];

static int ten_loops(int nt, int n) {
  int bad = 0;
  long x;
#pragma omp parallel num_threads(nt)
  for (int k = 0; k < 10; k++) {
    /* never a negative trip count: gcc 12 sizes its scan buffer from it
     * (malloc of -8 bytes, which AddressSanitizer stops) */
    int m = n - k > 0 ? n - k : 0;
#pragma omp single
    x = 0;
    if (k % 2) {
#pragma omp for reduction(inscan, + : x)
      for (int i = 0; i < m; i++) {
        x += a[i + k];
#pragma omp scan inclusive(x)
        many[k][i] = x;
      }
    } else {
#pragma omp for reduction(inscan, + : x)
      for (int i = 0; i < m; i++) {
        many[k][i] = x;
#pragma omp scan exclusive(x)
        x += a[i + k];
      }
    }
  }
  for (int k = 0; k < 10; k++)
    for (int i = 0; i < n - k; i++)
      bad += many[k][i] != (k % 2 ? ref[i + k + 1] : ref[i + k]) - ref[k];
  return bad;
}

/* nested: an outer team of 2 whose members each run a team of nt scanning
 * half of the array */
static long nest_out[2][N];

static int nested(int nt, int n) {
  int bad = 0;
#pragma omp parallel num_threads(2)
  {
    int h = omp_get_thread_num(), lo = h * (n / 2), len = h ? n - n / 2 : n / 2;
    long x = 0;
#pragma omp parallel for num_threads(nt) reduction(inscan, + : x)
    for (int i = 0; i < len; i++) {
      x += a[lo + i];
#pragma omp scan inclusive(x)
      nest_out[h][i] = x;
    }
  }
  for (int i = 0; i < n / 2; i++) bad += nest_out[0][i] != ref[i + 1];
  for (int i = 0; i < n - n / 2; i++) bad += nest_out[1][i] != ref[n / 2 + i + 1] - ref[n / 2];
  return bad;
}

static void run_scan(const char *what, int (*fn)(int, int)) {
  int bad = 0;
  for (int t = 0; t < NTEAMS; t++)
    for (int s = 0; s < NSIZES; s++) {
      int b = fn(teams[t], sizes[s]);
      if (b) fprintf(stderr, "%s: team of %d, n = %d: %d wrong\n", what, teams[t], sizes[s], b);
      bad += b;
    }
  CHECK_EQ(bad, 0);
  printf("scan %-24s %d wrong\n", what, bad);
}

/* ---- lastprivate(conditional:) ------------------------------------------------------ */

static long g;     /* the variable of the orphaned loops */
static long gs;    /* a task reduction */
static long gord;  /* an ordered region's sequence */
static int round_; /* changes which iterations assign */

static int cond(long i) { return (a[i % N] + round_ + i / N) % 7 == 0; }
static long val(long i) { return i * 3 + round_; }

/* Some work, so that members overlap. */
static void delay(int units) {
  for (volatile int k = 0; k < units * 100; k++) {
  }
}

/* cond(i) in a loop of n: one iteration near the end is slow, so that the
 * member that runs it comes to the copy-out last, after the member that
 * ran the last iteration that assigned (with two workers or more) */
static int hit(long i, long n) {
  if (i == n - n / 8 - 1) delay(20000);
  return cond(i);
}

/* The value of g after n iterations that assign where cond holds, starting
 * from g0. */
static long expect(long n, long g0) {
  long v = g0;
  for (long i = 0; i < n; i++)
    if (cond(i)) v = val(i);
  return v;
}

#define PRAGMA(x) _Pragma(#x)
#define LPC_LOOP(name, CLAUSES)                         \
  static void name(int n) {                             \
    PRAGMA(omp for lastprivate(conditional: g) CLAUSES) \
    for (int i = 0; i < n; i++)                         \
      if (hit(i, n)) g = val(i);                        \
  }
LPC_LOOP(lpc_static, )
LPC_LOOP(lpc_static3, schedule(static, 3) nowait)
LPC_LOOP(lpc_dynamic, schedule(dynamic, 2))
LPC_LOOP(lpc_guided, schedule(guided))
LPC_LOOP(lpc_runtime, schedule(runtime))

static void lpc_ordered(int n) {
#pragma omp for lastprivate(conditional : g) ordered schedule(dynamic, 3)
  for (int i = 0; i < n; i++) {
    if (hit(i, n)) g = val(i);
#pragma omp ordered
    gord = (gord * 7 + i) % 1000003;
  }
}

static void lpc_ull(int n) {
#pragma omp for lastprivate(conditional : g) ordered schedule(guided, 2)
  for (unsigned long long i = 0; i < (unsigned long long)n; i++)
    if (hit((long)i, n)) g = val((long)i);
}

/* collapse(2): iteration (i, j) is number i * 10 + j */
static void lpc_collapse(int n) {
#pragma omp for lastprivate(conditional : g) collapse(2) schedule(dynamic, 4)
  for (int i = 0; i < n / 10; i++)
    for (int j = 0; j < 10; j++)
      if (hit(i * 10 + j, n)) g = val(i * 10 + j);
}

static void lpc_task_red(int n) {
#pragma omp for reduction(task, + : gs) lastprivate(conditional : g) schedule(dynamic, 5)
  for (int i = 0; i < n; i++) {
#pragma omp task in_reduction(+ : gs)
    gs += a[i];
    if (hit(i, n)) g = val(i);
  }
}

static void run_lpc(const char *what, void (*fn)(int)) {
  int bad = 0;
  long sum = 0;
  for (int t = 0; t < NTEAMS; t++)
    for (int s = 0; s < NSIZES; s++)
      for (round_ = 0; round_ < 2; round_++) {
        int n = sizes[s];
        g = -5;
        gs = 0;
        gord = 0;
#pragma omp parallel num_threads(teams[t])
        fn(n);
        /* (collapse(2) runs n / 10 rows of 10) */
        long want = expect(fn == lpc_collapse ? n / 10 * 10 : n, -5);
        if (g != want) {
          if (bad < 5)
            fprintf(stderr, "%s: team of %d, n = %d, round %d: %ld, not %ld\n", what, teams[t], n,
                    round_, g, want);
          bad++;
        }
        if (fn == lpc_task_red) bad += gs != ref[n];
        if (fn == lpc_ordered) {
          long o = 0;
          for (int i = 0; i < n; i++) o = (o * 7 + i) % 1000003;
          bad += gord != o;
        }
        sum += g;
      }
  CHECK_EQ(bad, 0);
  printf("lastprivate(conditional:) %-12s sum %ld, %d wrong\n", what, sum, bad);
}

/* 12 loops back to back with nowait (more than the ring of work shares),
 * each with its own variable */
static long gk[12];
#define LPC_K(k)                                                               \
  static long g##k;                                                            \
  static void lpc_k##k(int n) {                                                \
    PRAGMA(omp for lastprivate(conditional: g##k) schedule(dynamic, 3) nowait) \
    for (int i = 0; i < n; i++)                                                \
      if (hit(i + k, n)) g##k = val(i + k);                                    \
  }                                                                            \
  static void lpc_k##k(int n) /* (declared again: a use ends with ;) */
LPC_K(0);
LPC_K(1);
LPC_K(2);
LPC_K(3);
LPC_K(4);
LPC_K(5);
LPC_K(6);
LPC_K(7);
LPC_K(8);
LPC_K(9);
LPC_K(10);
LPC_K(11);

static void lpc_nowait(void) {
  int bad = 0;
  long sum = 0;
  for (int t = 0; t < NTEAMS; t++)
    for (round_ = 0; round_ < 3; round_++) {
      g0 = g1 = g2 = g3 = g4 = g5 = g6 = g7 = g8 = g9 = g10 = g11 = -1;
#pragma omp parallel num_threads(teams[t])
      {
        lpc_k0(N);
        lpc_k1(N);
        lpc_k2(N);
        lpc_k3(N);
        lpc_k4(N);
        lpc_k5(N);
        lpc_k6(N);
        lpc_k7(N);
        lpc_k8(N);
        lpc_k9(N);
        lpc_k10(N);
        lpc_k11(N);
      }
      long got[12] = {g0, g1, g2, g3, g4, g5, g6, g7, g8, g9, g10, g11};
      for (int k = 0; k < 12; k++) {
        long want = -1;
        for (int i = 0; i < N; i++)
          if (cond(i + k)) want = val(i + k);
        bad += got[k] != want;
        gk[k] = got[k];
      }
      sum = (long)((unsigned long)sum + (unsigned long)csum(gk, 12));
    }
  CHECK_EQ(bad, 0);
  printf("lastprivate(conditional:) 12 loops nowait checksum %ld, %d wrong\n", sum, bad);
}

/* sections: the lexically last section that assigned wins (the first is
 * slow, so its member comes to the copy-out last) */
static long gsec;

static void sec_orphan(int mask) {
#pragma omp sections lastprivate(conditional : gsec)
  {
#pragma omp section
    {
      delay(20000);
      if (mask & 1) gsec = 10;
    }
#pragma omp section
    if (mask & 2) gsec = 20;
#pragma omp section
    if (mask & 4) gsec = 30;
#pragma omp section
    if (mask & 8) gsec = 40;
#pragma omp section
    if (mask & 16) gsec = 50;
  }
}

static void lpc_sections(void) {
  int bad = 0;
  long sum = 0;
  for (int t = 0; t < NTEAMS; t++)
    for (int mask = 0; mask < 32; mask += 3) {
      long want = -1;
      for (int k = 0; k < 5; k++)
        if (mask & (1 << k)) want = 10 * (k + 1);
      gsec = -1;
#pragma omp parallel num_threads(teams[t])
      sec_orphan(mask);
      bad += gsec != want;
      sum += gsec;
      long x = -1;
#pragma omp parallel sections num_threads(teams[t]) lastprivate(conditional : x)
      {
#pragma omp section
        {
          delay(20000);
          if (mask & 16) x = 1;
        }
#pragma omp section
        if (mask & 8) x = 2;
#pragma omp section
        if (mask & 4) x = 3;
#pragma omp section
        if (mask & 2) x = 4;
#pragma omp section
        if (mask & 1) x = 5;
      }
      long want2 = -1;
      for (int k = 4; k >= 0; k--)
        if (mask & (1 << k)) want2 = 5 - k;
      bad += x != want2;
      sum += x;
    }
  /* outside any region: a team of one */
  gsec = -1;
  sec_orphan(6);
  bad += gsec != 30;
  CHECK_EQ(bad, 0);
  printf("lastprivate(conditional:) sections sum %ld, %d wrong\n", sum, bad);
}

int main(void) {
  init();
  run_scan("int inclusive", incl_int);
  run_scan("long exclusive", excl_long);
  run_scan("double inclusive simd", incl_double);
  run_scan("double exclusive simd", excl_double);
  run_scan("max inclusive", incl_max);
  run_scan("user-defined exclusive", excl_udr);
  run_scan("long+double inclusive", incl_two);
  run_scan("ull exclusive", excl_ull);
  run_scan("orphaned", orphaned);
  run_scan("10 loops", ten_loops);
  run_scan("nested", nested);
  run_lpc("static", lpc_static);
  run_lpc("static,3", lpc_static3);
  run_lpc("dynamic,2", lpc_dynamic);
  run_lpc("guided", lpc_guided);
  run_lpc("runtime", lpc_runtime);
  run_lpc("ordered", lpc_ordered);
  run_lpc("ull", lpc_ull);
  run_lpc("collapse(2)", lpc_collapse);
  run_lpc("task red", lpc_task_red);
  lpc_nowait();
  lpc_sections();
  return omptest_finish("scan");
}
