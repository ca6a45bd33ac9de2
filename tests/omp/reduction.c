/* Reductions: + * min max && || ^ & | on int, long and double (values
 * chosen so that every result is exact in any order), on parallel, on
 * worksharing loops of each schedule, on combined parallel for, sections,
 * nowait loops, several variables in one clause, array sections, team
 * sizes 1 to 5, and reductions in nested regions. */
#include "omptest.h"

#define N 10000
#define PRAGMA(x) _Pragma(#x)

static long tri(long n) { return n * (n - 1) / 2; }

/* One loop with every operator over i in [0, N). */
#define ALL_OPS_LOOP(SCHED)                                                                        \
  do {                                                                                             \
    int isum = 0, iprod = 1, imin = 1 << 30, imax = -(1 << 30), iand = 1, ior = 0;                 \
    int ixor = 0, ibitand = -1, ibitor = 0, inone = 1;                                             \
    long lsum = 0, lprod = 1, lmin = 1L << 60, lmax = -(1L << 60), lxor = 0;                       \
    double dsum = 0, dprod = 1, dmin = 1e300, dmax = -1e300;                                       \
    PRAGMA(omp parallel for SCHED reduction(+ : isum, lsum, dsum)                       \
           reduction(* : iprod, lprod, dprod) reduction(min : imin, lmin, dmin)          \
           reduction(max : imax, lmax, dmax) reduction(&& : iand, inone) reduction(|| : ior)\
           reduction(^ : ixor, lxor) reduction(& : ibitand) reduction(| : ibitor))                 \
    for (int i = 0; i < N; i++) {                                                                  \
      isum += i;                                                                                   \
      lsum += (long)i * i * i;                                                                     \
      dsum += (double)i * 0.5;                                                                     \
      if (i % 500 == 7) iprod *= 2;                                                                \
      if (i % 300 == 1) lprod *= 3;                                                                \
      if (i % 1000 == 3) dprod *= (i % 2000 == 3) ? 4.0 : 0.5;                                     \
      if (i - 5000 < imin) imin = i - 5000;                                                        \
      if ((long)i * 1000003 % 99991 > lmax) lmax = (long)i * 1000003 % 99991;                      \
      if ((long)i * 7919 % 10007 < lmin) lmin = (long)i * 7919 % 10007;                            \
      if (i * 3 > imax) imax = i * 3;                                                              \
      if ((double)i / 4 - 17.25 < dmin) dmin = (double)i / 4 - 17.25;                              \
      if ((double)(i % 777) * 1.5 > dmax) dmax = (double)(i % 777) * 1.5;                          \
      iand = iand && (i != 9999 || 1);                                                             \
      inone = inone && (i != 4321);                                                                \
      ior = ior || (i == 6543);                                                                    \
      ixor ^= i * 2654435761u;                                                                     \
      lxor ^= (long)i << (i % 40);                                                                 \
      ibitand &= ~(1 << (i % 29)) | (i < 9000 ? -1 : 0);                                           \
      ibitor |= (i % 1000 == 0) ? (1 << (i / 1000)) : 0;                                           \
    }                                                                                              \
    printf(                                                                                        \
        "%-28s isum %d lsum %ld dsum %.1f iprod %d lprod %ld dprod %g imin %d lmin %ld "           \
        "dmin %.2f imax %d lmax %ld dmax %.1f and %d or %d ixor %d lxor %ld bitand %d bitor %d\n", \
        #SCHED, isum, lsum, dsum, iprod, lprod, dprod, imin, lmin, dmin, imax, lmax, dmax, iand,   \
        ior, ixor, lxor, ibitand, ibitor);                                                         \
    CHECK_EQ(isum, tri(N));                                                                        \
    CHECK_EQ(dsum, tri(N) * 0.5);                                                                  \
    CHECK_EQ(imin, -5000);                                                                         \
    CHECK_EQ(imax, 3 * (N - 1));                                                                   \
    CHECK_EQ(iprod, 1 << 20);                                                                      \
    CHECK(dmin == -17.25 && dmax == 776 * 1.5);                                                    \
    CHECK(iand == 1 && ior == 1);                                                                  \
    CHECK_EQ(lmin, 0);                                                                             \
    CHECK_EQ(ibitor, (1 << 10) - 1);                                                               \
    CHECK_EQ(lsum, lsum_ref);                                                                      \
    CHECK_EQ(lprod, lprod_ref);                                                                    \
    CHECK(dprod == dprod_ref);                                                                     \
    CHECK_EQ(lmax, lmax_ref);                                                                      \
    CHECK_EQ(ixor, ixor_ref);                                                                      \
    CHECK_EQ(lxor, lxor_ref);                                                                      \
    CHECK_EQ(ibitand, ibitand_ref);                                                                \
    CHECK_EQ(inone, 0);                                                                            \
  } while (0)

int main(void) {
  /* Reference values computed serially, for the operators whose result
   * is not written out above. */
  long lsum_ref = 0, lprod_ref = 1, lmax_ref = -(1L << 60), lxor_ref = 0;
  int ixor_ref = 0, ibitand_ref = -1;
  double dprod_ref = 1;
  for (int i = 0; i < N; i++) {
    lsum_ref += (long)i * i * i;
    if (i % 300 == 1) lprod_ref *= 3;
    if (i % 1000 == 3) dprod_ref *= (i % 2000 == 3) ? 4.0 : 0.5;
    if ((long)i * 1000003 % 99991 > lmax_ref) lmax_ref = (long)i * 1000003 % 99991;
    ixor_ref ^= i * 2654435761u;
    lxor_ref ^= (long)i << (i % 40);
    ibitand_ref &= ~(1 << (i % 29)) | (i < 9000 ? -1 : 0);
  }
  printf("serial: lsum %ld lprod %ld dprod %g lmax %ld ixor %d lxor %ld bitand %d\n", lsum_ref,
         lprod_ref, dprod_ref, lmax_ref, ixor_ref, lxor_ref, ibitand_ref);

  ALL_OPS_LOOP(schedule(static));
  ALL_OPS_LOOP(schedule(static, 7));
  ALL_OPS_LOOP(schedule(dynamic, 13));
  ALL_OPS_LOOP(schedule(guided));
  ALL_OPS_LOOP(schedule(runtime));
  ALL_OPS_LOOP(num_threads(5));
  ALL_OPS_LOOP(num_threads(1));

  /* Reduction on a parallel region: every member contributes. */
  for (int k = 1; k <= 5; k++) {
    long s = 0, p = 1;
    int mn = 1000, mx = -1, all = 1, any = 0, x = 0;
    double d = 0;
#pragma omp parallel num_threads(k) reduction(+ : s, d) reduction(* : p) reduction(min : mn) \
    reduction(max : mx) reduction(&& : all) reduction(|| : any) reduction(^ : x)
    {
      int t = omp_get_thread_num();
      s += t + 1;
      d += 0.25 * (t + 1);
      p *= t + 1;
      mn = t < mn ? t : mn;
      mx = t > mx ? t : mx;
      all = all && t < k;
      any = any || t == k - 1;
      x ^= 1 << t;
    }
    long fact = 1;
    for (int i = 2; i <= k; i++) fact *= i;
    printf(
        "parallel num_threads(%d): sum %ld dsum %.2f prod %ld min %d max %d and %d or %d xor %d\n",
        k, s, d, p, mn, mx, all, any, x);
    CHECK_EQ(s, k * (k + 1) / 2);
    CHECK_EQ(p, fact);
    CHECK_EQ(mn, 0);
    CHECK_EQ(mx, k - 1);
    CHECK(all == 1 && any == 1);
    CHECK_EQ(x, (1 << k) - 1);
  }

  /* Worksharing loops with reductions inside one region, one of them
   * nowait (its result is complete after the next barrier). */
  {
    long a = 0, b = 0;
    double c = 1;
#pragma omp parallel
    {
      for (int r = 0; r < 20; r++) {
#pragma omp for schedule(dynamic, 3) reduction(+ : a) nowait
        for (int i = 0; i < 1000; i++) a += i;
#pragma omp for schedule(guided, 2) reduction(max : b)
        for (int i = 0; i < 1000; i++) b = (long)((i * 37) % 1001) > b ? (i * 37) % 1001 : b;
      }
#pragma omp for reduction(* : c)
      for (int i = 0; i < 64; i++) c *= (i % 2) ? 2.0 : 1.0;
    }
    printf("worksharing in a region: %ld %ld %g\n", a, b, c);
    CHECK_EQ(a, 20 * tri(1000));
    CHECK_EQ((long)c, 1L << 32);
  }

  /* Sections with a reduction. */
  {
    int s = 0;
    long p = 1;
#pragma omp parallel sections reduction(+ : s) reduction(* : p)
    {
#pragma omp section
      {
        s += 1;
        p *= 2;
      }
#pragma omp section
      {
        s += 10;
        p *= 3;
      }
#pragma omp section
      {
        s += 100;
        p *= 5;
      }
#pragma omp section
      {
        s += 1000;
        p *= 7;
      }
    }
    printf("sections: %d %ld\n", s, p);
    CHECK_EQ(s, 1111);
    CHECK_EQ(p, 210);
  }

  /* Array section reduction. */
  {
    long hist[8] = {0};
#pragma omp parallel for reduction(+ : hist [0:8]) schedule(static, 5)
    for (int i = 0; i < N; i++) hist[(i * 7) % 8] += i;
    long tot = 0;
    printf("array reduction:");
    for (int j = 0; j < 8; j++) {
      printf(" %ld", hist[j]);
      tot += hist[j];
    }
    printf("\n");
    CHECK_EQ(tot, tri(N));
  }

  /* Nested regions, each level reducing into the one outside. */
  omp_set_max_active_levels(2);
  {
    long s = 0;
#pragma omp parallel num_threads(3) reduction(+ : s)
    {
      long inner = 0;
#pragma omp parallel for num_threads(2) reduction(+ : inner)
      for (int i = 0; i < 100; i++) inner += i;
      s += inner;
    }
    printf("nested: %ld\n", s);
    CHECK_EQ(s, 3 * tri(100));
  }
  return omptest_finish("reduction");
}
