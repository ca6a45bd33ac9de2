/* critical (unnamed: GOMP_critical_start/end; named:
 * GOMP_critical_name_start/end, several names, nested different names),
 * atomic update/capture/read/write on int, long, unsigned long long,
 * float and double (lock-free builtins) and on long double
 * (GOMP_atomic_start/end), and barrier (GOMP_barrier): counters
 * must come out exact, capture must hand out distinct tickets, barrier
 * phases must not overlap. */
#include "omptest.h"

#define ITERS 20000

int main(void) {
  int nthr = 1;
#pragma omp parallel
#pragma omp single
  nthr = omp_get_num_threads();

  /* critical: plain increments, so a broken mutual exclusion loses some. */
  {
    long c0 = 0, ca = 0, cb = 0, cnest = 0;
    volatile int inside_a = 0, overlap = 0;
#pragma omp parallel
    for (int i = 0; i < ITERS; i++) {
#pragma omp critical
      c0++;
#pragma omp critical(alpha)
      {
        if (inside_a++) overlap = 1;
        ca += 2;
        inside_a--;
      }
#pragma omp critical(beta)
      {
        cb += 3;
#pragma omp critical(gamma)
        cnest++;
      }
    }
    printf("critical: unnamed %ld, alpha %ld, beta %ld, beta+gamma %ld, overlap %d\n", c0, ca, cb,
           cnest, overlap);
    CHECK_EQ(c0, (long)ITERS * nthr);
    CHECK_EQ(ca, 2L * ITERS * nthr);
    CHECK_EQ(cb, 3L * ITERS * nthr);
    CHECK_EQ(cnest, (long)ITERS * nthr);
    CHECK_EQ(overlap, 0);
  }

  /* A critical region with non-atomic compound work: a linked list. */
  {
    struct node {
      int v;
      struct node *next;
    };
    static struct node pool[4 * 5000];
    struct node *head = NULL;
    int used = 0;
#pragma omp parallel num_threads(4)
    for (int i = 0; i < 5000; i++) {
#pragma omp critical(list)
      {
        struct node *nd = &pool[used++];
        nd->v = i;
        nd->next = head;
        head = nd;
      }
    }
    long len = 0, sum = 0;
    for (struct node *p = head; p; p = p->next) len++, sum += p->v;
    printf("critical list: length %ld sum %ld\n", len, sum);
    CHECK_EQ(len, 20000);
    CHECK_EQ(sum, 4L * 4999 * 5000 / 2);
  }

  /* atomic update, all types. */
  {
    int ai = 0;
    long al = 0;
    unsigned long long au = 0;
    float af = 0;
    double ad = 0;
    long double ald = 0;
    int amin = 1 << 30, aand = -1, aor = 0, axor = 0;
#pragma omp parallel
    for (int i = 0; i < ITERS; i++) {
#pragma omp atomic
      ai++;
#pragma omp atomic update
      al += i;
#pragma omp atomic
      au += 1ULL << 33;
#pragma omp atomic
      af += 0.5f;
#pragma omp atomic
      ad += 0.25;
#pragma omp atomic
      ald += 2.0L;
#pragma omp atomic
      aand &= ~(1 << (i % 16));
#pragma omp atomic
      aor |= 1 << (i % 20);
#pragma omp atomic
      axor ^= i * 7 + 3;
      (void)amin;
    }
    printf(
        "atomic update: int %d long %ld ull %llu float %.1f double %.2f long double %.1Lf "
        "and %d or %d xor %d\n",
        ai, al, au, af, ad, ald, aand, aor, axor);
    CHECK_EQ(ai, ITERS * nthr);
    CHECK_EQ(al, (long)nthr * ITERS * (ITERS - 1) / 2);
    CHECK(au == (unsigned long long)nthr * ITERS << 33);
    CHECK(af == 0.5f * ITERS * nthr); /* exact below 2^24 */
    CHECK(ad == 0.25 * ITERS * nthr);
    CHECK(ald == 2.0L * ITERS * nthr);
    CHECK_EQ(aand, ~0xffff);
    CHECK_EQ(aor, (1 << 20) - 1);
    int x0 = 0;
    for (int i = 0; i < ITERS; i++) x0 ^= i * 7 + 3;
    CHECK_EQ(axor, (nthr % 2) ? x0 : 0);
  }

  /* atomic capture: distinct tickets, in every form. */
  {
    static int tickets[4][64 * 2000];
    int c1 = 0, c2 = 0, c3 = 0;
    long c4 = 1000;
    int per = 2000;
    int total = 0;
#pragma omp parallel
    {
#pragma omp single
      total = omp_get_num_threads() * per;
      for (int i = 0; i < per; i++) {
        int v;
#pragma omp atomic capture
        v = c1++;
        tickets[0][v] = 1;
#pragma omp atomic capture
        v = ++c2;
        tickets[1][v - 1] = 1;
#pragma omp atomic capture
        {
          v = c3;
          c3 += 2;
        }
        tickets[2][v / 2] = 1;
        long w;
#pragma omp atomic capture
        {
          c4 -= 1;
          w = c4;
        }
        tickets[3][999 - w] = 1;
      }
    }
    int missing = 0;
    for (int k = 0; k < 4; k++)
      for (int i = 0; i < total; i++) missing += tickets[k][i] != 1;
    printf("atomic capture: %d tickets x 4 forms, %d missing; final %d %d %d %ld\n", total, missing,
           c1, c2, c3, c4);
    CHECK_EQ(missing, 0);
    CHECK_EQ(c1, total);
    CHECK_EQ(c3, 2 * total);
    CHECK_EQ(c4, 1000 - total);
  }

  /* atomic read and write: a value published with atomic write is read
   * whole (no torn long/double). */
  {
    long shared_l = 0;
    double shared_d = 0;
    int torn = 0;
#pragma omp parallel num_threads(4)
    {
      int t = omp_get_thread_num();
      for (int i = 0; i < ITERS; i++) {
        if (t % 2) {
#pragma omp atomic write
          shared_l = (i % 2) ? -1L : 0x0123456789abcdefL;
#pragma omp atomic write
          shared_d = (i % 2) ? 1.0 / 3 : 2.0 / 3;
        } else {
          long v;
          double d;
#pragma omp atomic read
          v = shared_l;
#pragma omp atomic read
          d = shared_d;
          if (v != 0 && v != -1L && v != 0x0123456789abcdefL) AINC(&torn);
          if (d != 0 && d != 1.0 / 3 && d != 2.0 / 3) AINC(&torn);
        }
      }
    }
    printf("atomic read/write: %d torn values\n", torn);
    CHECK_EQ(torn, 0);
  }

  /* barrier: in phase k every thread adds 1; after the barrier everyone
   * must see k * nthreads. */
  {
    int counter = 0, wrong = 0, n = 0;
#pragma omp parallel shared(counter, wrong, n)
    {
#pragma omp single
      n = omp_get_num_threads();
      for (int k = 1; k <= 2000; k++) {
        AINC(&counter);
#pragma omp barrier
        if (ALOAD(&counter) != k * n) AINC(&wrong);
#pragma omp barrier
      }
    }
    printf("barrier: 2000 phases, %d wrong observations\n", wrong);
    CHECK_EQ(wrong, 0);
  }
  return omptest_finish("sync");
}
