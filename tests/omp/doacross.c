/* Doacross loops (ordered(n) with depend(sink: ...) and depend(source)):
 * GOMP_loop_doacross_*_start, GOMP_loop_ull_doacross_*_start,
 * GOMP_doacross_post/wait and their ull forms. Every loop is a recurrence
 * whose value depends on the order being honoured: each iteration combines
 * the values of the iterations it names in depend(sink) with a function
 * that does not commute, and checks (acquire loads of per-cell flags) that
 * they were done before its wait returned. The printed checksums must equal
 * the sequential ones, and the counts of cells found not done must be 0.
 * Schedules static, static with chunks, dynamic, guided and runtime;
 * 1-D, 2-D and ordered(3) collapse(2); ascending and descending loops with
 * strides other than 1; unsigned long long loops (ascending: see ull_loops); sinks several
 * iterations back and diagonal ones; more members than workers (num_threads(5) under 1 or 2
 * workers); loops back to back with nowait (more than the ring of work shares); orphaned loops;
 * lastprivate(conditional:) (the generic GOMP_loop_doacross_start with shared scratch memory). */
#include "omptest.h"

#define PRAGMA(x) _Pragma(#x)

/* A step of a recurrence that does not commute in its arguments. */
static long mix(long a, long b, long i) {
  unsigned long x = (unsigned long)a * 1103515245UL + (unsigned long)b * 2654435761UL +
                    (unsigned long)i * 40503UL;
  x ^= x >> 17;
  return (long)(x % 1000000007UL);
}

/* Some work between the wait and the post, so members overlap. */
static long spin(long i) {
  volatile long s = 0;
  for (long k = 0; k < 10 + i % 13; k++) s += k;
  return s;
}

/* ---- 1-D: v[i] = mix(v[i - 1], v[i - 3], i) ---------------------------------------- */
#define N1 300
static long v1[N1], want1;
static unsigned char d1[N1];

static long sum1(void) {
  long s = 0;
  for (int i = 0; i < N1; i++) s = mix(s, v1[i], i);
  return s;
}

static void reset1(void) {
  memset(v1, 0, sizeof v1);
  memset(d1, 0, sizeof d1);
}

static long at1(long i, int *bad) {
  if (i < 0) return 7;
  if (!ALOAD(&d1[i])) AINC(bad);
  return v1[i];
}

#define ONE_D(CLAUSES)                                                 \
  do {                                                                 \
    int bad = 0;                                                       \
    reset1();                                                          \
    PRAGMA(omp parallel for ordered(1) CLAUSES)                        \
    for (long i = 0; i < N1; i++) {                                    \
      PRAGMA(omp ordered depend(sink : i - 1) depend(sink : i - 3))    \
      v1[i] = mix(at1(i - 1, &bad), at1(i - 3, &bad), i);              \
      spin(i);                                                         \
      ASTORE(&d1[i], 1);                                               \
      PRAGMA(omp ordered depend(source))                               \
    }                                                                  \
    long s = sum1();                                                   \
    printf("1-D %-28s checksum %ld, %d not done\n", #CLAUSES, s, bad); \
    CHECK_EQ(s, want1);                                                \
    CHECK_EQ(bad, 0);                                                  \
  } while (0)

/* ---- 2-D wavefront: g[i][j] = mix(g[i-1][j], g[i][j-1]) ------------------------------ */
#define NI 18
#define NJ 12
static long g[NI][NJ], want2, want2d;
static unsigned char gd[NI][NJ];

static long sum2(void) {
  long s = 0;
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) s = mix(s, g[i][j], i * NJ + j);
  return s;
}

static void reset2(void) {
  memset(g, 0, sizeof g);
  memset(gd, 0, sizeof gd);
}

static long at2(int i, int j, int *bad) {
  if (i < 0 || j < 0 || i >= NI || j >= NJ) return i + 2 * j + 3;
  if (!ALOAD(&gd[i][j])) AINC(bad);
  return g[i][j];
}

/* sinks (i - 1, j) and (i, j - 1) */
#define TWO_D(CLAUSES)                                                       \
  do {                                                                       \
    int bad = 0;                                                             \
    reset2();                                                                \
    PRAGMA(omp parallel for ordered(2) CLAUSES)                              \
    for (int i = 0; i < NI; i++)                                             \
      for (int j = 0; j < NJ; j++) {                                         \
        PRAGMA(omp ordered depend(sink : i - 1, j) depend(sink : i, j - 1))  \
        g[i][j] = mix(at2(i - 1, j, &bad), at2(i, j - 1, &bad), i * NJ + j); \
        spin(j);                                                             \
        ASTORE(&gd[i][j], 1);                                                \
        PRAGMA(omp ordered depend(source))                                   \
      }                                                                      \
    long s = sum2();                                                         \
    printf("2-D %-28s checksum %ld, %d not done\n", #CLAUSES, s, bad);       \
    CHECK_EQ(s, want2);                                                      \
    CHECK_EQ(bad, 0);                                                        \
  } while (0)

/* a diagonal sink: (i - 1, j + 1), which implies (i - 1, j) */
#define TWO_D_DIAG(CLAUSES)                                                     \
  do {                                                                          \
    int bad = 0;                                                                \
    reset2();                                                                   \
    PRAGMA(omp parallel for ordered(2) CLAUSES)                                 \
    for (int i = 0; i < NI; i++)                                                \
      for (int j = 0; j < NJ; j++) {                                            \
        PRAGMA(omp ordered depend(sink : i - 1, j + 1))                         \
        long d = j + 1 < NJ ? at2(i - 1, j + 1, &bad) : 5;                      \
        g[i][j] = mix(mix(at2(i - 1, j, &bad), d, j), at2(i, j - 1, &bad), i);  \
        ASTORE(&gd[i][j], 1);                                                   \
        PRAGMA(omp ordered depend(source))                                      \
      }                                                                         \
    long s = sum2();                                                            \
    printf("2-D diagonal %-19s checksum %ld, %d not done\n", #CLAUSES, s, bad); \
    CHECK_EQ(s, want2d);                                                        \
    CHECK_EQ(bad, 0);                                                           \
  } while (0)

static void seq(void) {
  reset1();
  for (long i = 0; i < N1; i++) {
    int bad = 0;
    v1[i] = mix(at1(i - 1, &bad), at1(i - 3, &bad), i);
    d1[i] = 1;
  }
  want1 = sum1();
  reset2();
  int bad = 0;
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) {
      g[i][j] = mix(at2(i - 1, j, &bad), at2(i, j - 1, &bad), i * NJ + j);
      gd[i][j] = 1;
    }
  want2 = sum2();
  reset2();
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) {
      long d = j + 1 < NJ ? at2(i - 1, j + 1, &bad) : 5;
      g[i][j] = mix(mix(at2(i - 1, j, &bad), d, j), at2(i, j - 1, &bad), i);
      gd[i][j] = 1;
    }
  want2d = sum2();
}

/* Descending loops with strides: i from NI - 1 down by 1 (sink i + 1), j
 * from 3 * NJ - 1 down by 3 (sink j + 3). Cell (i, j / 3). */
static void descending(const char *what) {
  int bad = 0;
  reset2();
#pragma omp parallel for ordered(2) schedule(dynamic, 3)
  for (int i = NI - 1; i >= 0; i--)
    for (int j = 3 * NJ - 1; j >= 0; j -= 3) {
#pragma omp ordered depend(sink : i + 1, j) depend(sink : i, j + 3)
      int c = j / 3;
      g[i][c] = mix(at2(i + 1, c, &bad), at2(i, c + 1, &bad), i * NJ + c);
      ASTORE(&gd[i][c], 1);
#pragma omp ordered depend(source)
    }
  long s = sum2();
  /* sequentially (at2's values outside the grid) */
  static long h[NI][NJ];
  for (int i = NI - 1; i >= 0; i--)
    for (int c = NJ - 1; c >= 0; c--)
      h[i][c] = mix(i + 1 < NI ? h[i + 1][c] : i + 1 + 2 * c + 3,
                    c + 1 < NJ ? h[i][c + 1] : i + 2 * (c + 1) + 3, i * NJ + c);
  memcpy(g, h, sizeof g);
  long w = sum2();
  printf("%s checksum %ld, %d not done\n", what, s, bad);
  CHECK_EQ(s, w);
  CHECK_EQ(bad, 0);
}

/* Step 2 downwards in the first loop, the sink two iterations back (i + 4). */
static void descending_1d(void) {
  int bad = 0;
  reset1();
#pragma omp parallel for ordered(1) schedule(static, 2)
  for (long i = 2 * N1 - 1; i > 0; i -= 2) {
#pragma omp ordered depend(sink : i + 4)
    long c = i / 2;
    v1[c] = mix(c + 2 < N1 ? at1(c + 2, &bad) : 11, c, i);
    ASTORE(&d1[c], 1);
#pragma omp ordered depend(source)
  }
  long s = sum1();
  static long h[N1];
  for (long c = N1 - 1; c >= 0; c--) h[c] = mix(c + 2 < N1 ? h[c + 2] : 11, c, 2 * c + 1);
  memcpy(v1, h, sizeof v1);
  long w = sum1();
  printf("1-D descending step 2 (sink i + 4) checksum %ld, %d not done\n", s, bad);
  CHECK_EQ(s, w);
  CHECK_EQ(bad, 0);
}

/* unsigned long long loops across 2^63: gcc calls the ull entry points. */
static volatile unsigned long long base = 1ULL << 63;
static void ull_loops(void) {
  unsigned long long b = base;
  int bad = 0;
  reset1();
#pragma omp parallel for ordered(1) schedule(guided, 2)
  for (unsigned long long u = b - 100; u < b - 100 + N1; u++) {
#pragma omp ordered depend(sink : u - 1) depend(sink : u - 3)
    long i = (long)(u - (b - 100));
    v1[i] = mix(at1(i - 1, &bad), at1(i - 3, &bad), i);
    ASTORE(&d1[i], 1);
#pragma omp ordered depend(source)
  }
  long s = sum1();
  printf("1-D ull ascending across 2^63 checksum %ld, %d not done\n", s, bad);
  CHECK_EQ(s, want1);
  CHECK_EQ(bad, 0);

  bad = 0;
  reset2();
#pragma omp parallel for ordered(2) schedule(static, 1)
  for (unsigned long long u = b - 6; u < b - 6 + 3 * NI; u += 3)
    for (unsigned long long w = b - 7; w < b - 7 + NJ; w++) {
#pragma omp ordered depend(sink : u - 3, w) depend(sink : u, w - 1)
      int i = (int)((u - (b - 6)) / 3), j = (int)(w - (b - 7));
      g[i][j] = mix(at2(i - 1, j, &bad), at2(i, j - 1, &bad), i * NJ + j);
      ASTORE(&gd[i][j], 1);
#pragma omp ordered depend(source)
    }
  s = sum2();
  printf("2-D ull step 3 across 2^63 checksum %ld, %d not done\n", s, bad);
  CHECK_EQ(s, want2);
  CHECK_EQ(bad, 0);

  /* dynamic and runtime. (No descending ull loops: gcc 12 turns the sink
   * u + 1 of a descending unsigned loop into the iteration after, not the
   * one before, so they hang under libgomp too.) */
  for (int rt = 0; rt < 2; rt++) {
    bad = 0;
    reset1();
    if (rt) {
#pragma omp parallel for ordered(1) schedule(runtime)
      for (unsigned long long u = b - 50; u < b - 50 + N1; u++) {
#pragma omp ordered depend(sink : u - 1) depend(sink : u - 3)
        long i = (long)(u - (b - 50));
        v1[i] = mix(at1(i - 1, &bad), at1(i - 3, &bad), i);
        ASTORE(&d1[i], 1);
#pragma omp ordered depend(source)
      }
    } else {
#pragma omp parallel for ordered(1) schedule(dynamic, 6)
      for (unsigned long long u = b - 50; u < b - 50 + N1; u++) {
#pragma omp ordered depend(sink : u - 1) depend(sink : u - 3)
        long i = (long)(u - (b - 50));
        v1[i] = mix(at1(i - 1, &bad), at1(i - 3, &bad), i);
        ASTORE(&d1[i], 1);
#pragma omp ordered depend(source)
      }
    }
    s = sum1();
    printf("1-D ull %s checksum %ld, %d not done\n", rt ? "runtime" : "dynamic,6", s, bad);
    CHECK_EQ(s, want1);
    CHECK_EQ(bad, 0);
  }
}

/* ordered(3) collapse(2): the first two loops are shared as one. */
#define C3 6
static void collapsed(void) {
  int bad = 0;
  reset2();
#pragma omp parallel for ordered(3) collapse(2) schedule(dynamic)
  for (int i = 0; i < NI / C3; i++)
    for (int k = 0; k < C3; k++)
      for (int j = 0; j < NJ; j++) {
#pragma omp ordered depend(sink                                                      \
                           : i, k - 1, j) depend(sink                                \
                                                 : i - 1, k + 5, j) /* k + C3 - 1 */ \
    depend(sink                                                                      \
           : i, k, j - 1)
        int r = i * C3 + k;
        g[r][j] = mix(at2(r - 1, j, &bad), at2(r, j - 1, &bad), r * NJ + j);
        ASTORE(&gd[r][j], 1);
#pragma omp ordered depend(source)
      }
  long s = sum2();
  printf("ordered(3) collapse(2) checksum %ld, %d not done\n", s, bad);
  CHECK_EQ(s, want2);
  CHECK_EQ(bad, 0);
}

/* Work shares back to back with nowait, more of them than the team's ring
 * of slots, in one region; and an orphaned one (a team of one). */
static void orphan(int *bad) {
#pragma omp for ordered(1) schedule(dynamic, 7) nowait
  for (long i = 0; i < N1; i++) {
#pragma omp ordered depend(sink : i - 1) depend(sink : i - 3)
    v1[i] = mix(at1(i - 1, bad), at1(i - 3, bad), i);
    ASTORE(&d1[i], 1);
#pragma omp ordered depend(source)
  }
}

static void many(void) {
  int bad = 0;
  long sums[12];
#pragma omp parallel num_threads(3)
  for (int r = 0; r < 12; r++) {
#pragma omp single
    reset1();
    /* (the single's barrier orders the reset before the loop) */
#pragma omp for ordered(1) schedule(static, 25) nowait
    for (long i = 0; i < N1 / 4; i++) {
#pragma omp ordered depend(sink : i - 1) depend(sink : i - 3)
      v1[i] = mix(at1(i - 1, &bad), at1(i - 3, &bad), i + r);
      ASTORE(&d1[i], 1);
#pragma omp ordered depend(source)
    }
#pragma omp barrier
#pragma omp single
    {
      long s = 0;
      for (int i = 0; i < N1 / 4; i++) s = mix(s, v1[i], i);
      sums[r] = s;
    }
  }
  long s = 0, w = 0;
  for (int r = 0; r < 12; r++) s = mix(s, sums[r], r);
  for (int r = 0; r < 12; r++) {  /* sequentially */
    long h[3] = {7, 7, 7}, t = 0; /* v[i - 3], v[i - 2], v[i - 1] */
    for (long i = 0; i < N1 / 4; i++) {
      long x = mix(h[2], h[0], i + r);
      h[0] = h[1], h[1] = h[2], h[2] = x;
      t = mix(t, x, i);
    }
    w = mix(w, t, r);
  }
  printf("12 loops back to back checksum %ld, %d not done\n", s, bad);
  CHECK_EQ(s, w);
  CHECK_EQ(bad, 0);

  bad = 0;
  reset1();
  orphan(&bad);
  printf("orphaned checksum %ld, %d not done\n", sum1(), bad);
  CHECK_EQ(sum1(), want1);
  reset1();
#pragma omp parallel num_threads(5)
  orphan(&bad);
  printf("orphaned in a team of 5 checksum %ld, %d not done\n", sum1(), bad);
  CHECK_EQ(sum1(), want1);
  CHECK_EQ(bad, 0);
}

/* lastprivate(conditional:) makes gcc call GOMP_loop_doacross_start with
 * shared scratch memory. */
static long cond_last;
static void conditional_loop(int *bad) {
#pragma omp for ordered(1) schedule(dynamic, 3) lastprivate(conditional : cond_last)
  for (int i = 0; i < N1; i++) {
#pragma omp ordered depend(sink : i - 1)
    v1[i] = mix(at1(i - 1, bad), 1, i);
    if (v1[i] % 7 == 0) cond_last = i;
    ASTORE(&d1[i], 1);
#pragma omp ordered depend(source)
  }
}

static void conditional(void) {
  int bad = 0;
  cond_last = -1;
  reset1();
#pragma omp parallel
  conditional_loop(&bad);
  long last = cond_last;
  long want = -1, p = 7;
  for (long i = 0; i < N1; i++) {
    p = mix(p, 1, i);
    if (p % 7 == 0) want = i;
  }
  printf("lastprivate(conditional:) last %ld, checksum %ld, %d not done\n", last, sum1(), bad);
  CHECK_EQ(last, want);
  CHECK_EQ(bad, 0);
}

int main(void) {
  seq();
  ONE_D(schedule(static));
  ONE_D(schedule(static, 1));
  ONE_D(schedule(static, 3));
  ONE_D(schedule(dynamic));
  ONE_D(schedule(dynamic, 4));
  ONE_D(schedule(guided));
  ONE_D(schedule(guided, 3));
  ONE_D(schedule(runtime));
  ONE_D(schedule(auto));
  ONE_D(schedule(static, 16) num_threads(5));
  ONE_D(schedule(dynamic, 2) num_threads(5));
  TWO_D(schedule(static));
  TWO_D(schedule(static, 1));
  TWO_D(schedule(dynamic, 2));
  TWO_D(schedule(guided));
  TWO_D(schedule(runtime));
  TWO_D(schedule(guided, 2) num_threads(5));
  TWO_D_DIAG(schedule(static, 2));
  TWO_D_DIAG(schedule(dynamic));
  TWO_D_DIAG(schedule(guided) num_threads(4));
  descending("2-D descending dynamic,3");
  descending_1d();
  ull_loops();
  collapsed();
  many();
  conditional();
  return omptest_finish("doacross");
}
