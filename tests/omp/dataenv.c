/* Data-sharing clauses: private (uninitialised, per thread), firstprivate
 * (initialised from the original, per thread, on parallel, for and
 * sections), lastprivate (the sequentially last iteration or section, on
 * every schedule and with collapse(2)), copyprivate (single broadcasting
 * ints, doubles, a struct and an array), shared variables updated under a
 * critical section, default(none). */
#include "omptest.h"

#define MAXT 64

struct big {
  int a[16];
  double d;
  char name[24];
};

#define LASTPRIV(SCHED)                                                                    \
  do {                                                                                     \
    int last = -1, lasti = -1;                                                             \
    long lastsq = -1;                                                                      \
    _Pragma("omp parallel") {                                                              \
      PRAGMA(omp for SCHED lastprivate(last, lastsq))                                      \
      for (int i = 0; i < 1000; i++) {                                                     \
        last = i;                                                                          \
        lastsq = (long)i * i;                                                              \
      }                                                                                    \
    }                                                                                      \
    int i;                                                                                 \
    PRAGMA(omp parallel for SCHED lastprivate(i))                                          \
    for (i = 3; i < 700; i += 7) lasti = 0;                                                \
    printf("lastprivate %-22s %d %ld, loop variable after %d\n", #SCHED, last, lastsq, i); \
    CHECK_EQ(last, 999);                                                                   \
    CHECK_EQ(lastsq, 999L * 999);                                                          \
    CHECK_EQ(i, 703);                                                                      \
    (void)lasti;                                                                           \
  } while (0)
#define PRAGMA(x) _Pragma(#x)

int main(void) {
  /* private: each thread has its own copy; the original is unchanged. */
  {
    int p = 42, bad = 0;
#pragma omp parallel private(p) shared(bad)
    {
      p = omp_get_thread_num() * 1000;
      for (int k = 0; k < 100; k++) {
        p++;
#pragma omp barrier
      }
      if (p != omp_get_thread_num() * 1000 + 100) AINC(&bad);
    }
    printf("private: original %d, members with a wrong copy %d\n", p, bad);
    CHECK_EQ(p, 42);
    CHECK_EQ(bad, 0);
  }

  /* firstprivate: copies start from the original value. */
  {
    int f = 7, bad = 0, total = 0;
    struct big b;
    memset(&b, 0, sizeof b);
    for (int i = 0; i < 16; i++) b.a[i] = i * i;
    b.d = 2.5;
    strcpy(b.name, "firstprivate");
#pragma omp parallel firstprivate(f, b) shared(bad, total)
    {
      if (f != 7 || b.a[15] != 225 || b.d != 2.5 || strcmp(b.name, "firstprivate")) AINC(&bad);
      f += omp_get_thread_num();
      b.a[0] = omp_get_thread_num();
#pragma omp barrier
      if (f != 7 + omp_get_thread_num() || b.a[0] != omp_get_thread_num()) AINC(&bad);
#pragma omp atomic
      total += f - 7;
    }
    int n = omp_get_max_threads();
    printf("firstprivate: original %d %d, wrong copies %d, sum of increments %d\n", f, b.a[0], bad,
           total);
    CHECK_EQ(f, 7);
    CHECK_EQ(b.a[0], 0);
    CHECK_EQ(bad, 0);
    CHECK_EQ(total, n * (n - 1) / 2);
  }

  /* firstprivate on a worksharing loop and on sections. */
  {
    int base = 100;
    long sum = 0;
#pragma omp parallel
    {
#pragma omp for firstprivate(base) reduction(+ : sum) schedule(dynamic, 4)
      for (int i = 0; i < 100; i++) sum += base + i;
    }
    int sec[4] = {0};
#pragma omp parallel sections firstprivate(base)
    {
#pragma omp section
      sec[0] = base;
#pragma omp section
      sec[1] = base + 1;
#pragma omp section
      sec[2] = base + 2;
#pragma omp section
      sec[3] = base + 3;
    }
    printf("firstprivate on for: %ld; on sections: %d %d %d %d\n", sum, sec[0], sec[1], sec[2],
           sec[3]);
    CHECK_EQ(sum, 100 * 100 + 4950);
    CHECK(sec[0] == 100 && sec[1] == 101 && sec[2] == 102 && sec[3] == 103);
  }

  /* lastprivate on every schedule. */
  LASTPRIV(schedule(static));
  LASTPRIV(schedule(static, 1));
  LASTPRIV(schedule(static, 64));
  LASTPRIV(schedule(dynamic));
  LASTPRIV(schedule(dynamic, 50));
  LASTPRIV(schedule(guided));
  LASTPRIV(schedule(guided, 9));
  LASTPRIV(schedule(runtime));
  LASTPRIV(schedule(auto));

  /* lastprivate with collapse(2), a descending loop and sections. */
  {
    int li = -1, lj = -1, ld = -1, ls = -1;
#pragma omp parallel for collapse(2) lastprivate(li, lj) schedule(dynamic, 3)
    for (int i = 0; i < 13; i++)
      for (int j = 0; j < 7; j++) {
        li = i;
        lj = j;
      }
#pragma omp parallel for lastprivate(ld)
    for (int i = 500; i > -37; i -= 3) ld = i;
#pragma omp parallel sections lastprivate(ls)
    {
#pragma omp section
      ls = 1;
#pragma omp section
      ls = 2;
#pragma omp section
      ls = 3;
    }
    printf("lastprivate collapse(2): %d %d; descending: %d; sections: %d\n", li, lj, ld, ls);
    CHECK(li == 12 && lj == 6);
    CHECK_EQ(ld, -34);
    CHECK_EQ(ls, 3);
  }

  /* copyprivate: the value the single thread produced reaches all. */
  {
    int bad = 0, rounds = 0;
#pragma omp parallel shared(bad, rounds)
    {
      for (int r = 0; r < 200; r++) {
        int x;
        double d;
        struct big b;
        int arr[5];
#pragma omp single copyprivate(x, d, b, arr)
        {
          x = r * 3;
          d = r * 0.5;
          for (int i = 0; i < 16; i++) b.a[i] = r + i;
          b.d = -r;
          snprintf(b.name, sizeof b.name, "round %d", r);
          for (int i = 0; i < 5; i++) arr[i] = r * i;
          rounds++;
        }
        char want[24];
        snprintf(want, sizeof want, "round %d", r);
        if (x != r * 3 || d != r * 0.5 || b.a[15] != r + 15 || b.d != -r || strcmp(b.name, want) ||
            arr[4] != 4 * r)
          AINC(&bad);
      }
    }
    printf("copyprivate: %d singles, %d wrong copies\n", rounds, bad);
    CHECK_EQ(rounds, 200);
    CHECK_EQ(bad, 0);
  }

  /* default(none) with explicit clauses, shared updates in critical. */
  {
    int counter = 0, n = 0;
    const int step = 3;
#pragma omp parallel default(none) shared(counter, n) firstprivate(step)
    {
      for (int k = 0; k < 1000; k++) {
#pragma omp critical
        counter += step;
      }
#pragma omp single
      n = omp_get_num_threads();
    }
    printf("default(none): %d\n", counter);
    CHECK_EQ(counter, 3000 * n);
  }
  return omptest_finish("dataenv");
}
