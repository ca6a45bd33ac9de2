/* Task dependences (GOMP_task with depend): every task takes a ticket
 * (atomic capture) when it runs, and the tickets must respect the graph.
 *  - an inout chain of 4000 tasks on one variable runs in creation order;
 *  - out -> 10 x in -> out, 300 times: every reader after the first
 *    writer and before the second;
 *  - diamonds A -> {B, C} -> D, 500 of them over distinct variables;
 *  - a 40 x 40 wavefront over an array (in: up, left; out: self) whose
 *    result equals the serial computation;
 *  - depend on array sections and on several variables at once;
 *  - an undeferred task (if(0)) with depend waits for its predecessor;
 *  - independent chains created by different threads of the team;
 *  - depend(out) after depend(in) (anti-dependence). */
#include "omptest.h"

static int ticket;
static int take(void) { return __atomic_fetch_add(&ticket, 1, __ATOMIC_SEQ_CST); }

static void busy(int n) {
  volatile int s = 0;
  for (int k = 0; k < n; k++) s += k;
}

int main(void) {
  /* 1. inout chain. */
  {
    enum { C = 4000 };
    static int order[C];
    int x = 0, pos = 0;
#pragma omp parallel
#pragma omp single
    for (int i = 0; i < C; i++) {
#pragma omp task depend(inout : x) shared(x, pos)
      {
        order[pos++] = i;
        x++;
      }
    }
    int bad = 0;
    for (int i = 0; i < C; i++) bad += order[i] != i;
    printf("inout chain: %d tasks, %d out of order, x = %d\n", pos, bad, x);
    CHECK_EQ(pos, C);
    CHECK_EQ(bad, 0);
  }

  /* 2. writer -> readers -> writer. */
  {
    enum { R = 300, K = 10 };
    static int w1[R], w2[R], rd[R][K];
    int x = 0, bad = 0;
    ticket = 0;
#pragma omp parallel
#pragma omp single
    for (int r = 0; r < R; r++) {
#pragma omp task depend(out : x) shared(x)
      {
        busy(300);
        w1[r] = take();
        x = r;
      }
      for (int k = 0; k < K; k++) {
#pragma omp task depend(in : x) shared(x, bad)
        {
          if (x != r) AINC(&bad);
          rd[r][k] = take();
          busy(100);
        }
      }
#pragma omp task depend(out : x) shared(x)
      {
        w2[r] = take();
        x = -1;
      }
    }
    int order_bad = 0;
    for (int r = 0; r < R; r++)
      for (int k = 0; k < K; k++) order_bad += !(w1[r] < rd[r][k] && rd[r][k] < w2[r]);
    for (int r = 1; r < R; r++) order_bad += !(w2[r - 1] < w1[r]);
    printf("writer/readers/writer: %d rounds, %d readers saw a wrong value, %d out of order\n", R,
           bad, order_bad);
    CHECK_EQ(bad, 0);
    CHECK_EQ(order_bad, 0);
  }

  /* 3. Diamonds over distinct variables, created by every thread. */
  {
    enum { D = 500 };
    static int ta[D], tb[D], tc[D], td[D];
    static int va[D], vb[D], vc[D], vd[D];
    ticket = 0;
#pragma omp parallel
#pragma omp for schedule(dynamic, 5)
    for (int d = 0; d < D; d++) {
#pragma omp task depend(out : va[d], vb[d])
      {
        busy(200);
        ta[d] = take();
        va[d] = d;
        vb[d] = 2 * d;
      }
#pragma omp task depend(in : va[d]) depend(out : vc[d])
      {
        tb[d] = take();
        vc[d] = va[d] + 1;
      }
#pragma omp task depend(in : vb[d]) depend(out : vd[d])
      {
        busy(50);
        tc[d] = take();
        vd[d] = vb[d] + 1;
      }
#pragma omp task depend(in : vc[d], vd[d])
      {
        td[d] = take();
        vd[d] += vc[d];
      }
    }
    int bad = 0;
    long sum = 0;
    for (int d = 0; d < D; d++) {
      bad += !(ta[d] < tb[d] && ta[d] < tc[d] && tb[d] < td[d] && tc[d] < td[d]);
      bad += vd[d] != 3 * d + 2;
      sum += vd[d];
    }
    printf("diamonds: %d, %d wrong, sum %ld\n", D, bad, sum);
    CHECK_EQ(bad, 0);
  }

  /* 4. Wavefront: cell(i,j) = cell(i-1,j) + cell(i,j-1) mod 1000003. */
  {
    enum { W = 40 };
    static long g[W][W], ref[W][W];
    for (int i = 0; i < W; i++)
      for (int j = 0; j < W; j++) {
        g[i][j] = -1;
        ref[i][j] = (i == 0 || j == 0) ? 1 : (ref[i - 1][j] + ref[i][j - 1]) % 1000003;
      }
#pragma omp parallel
#pragma omp single
    for (int i = 0; i < W; i++)
      for (int j = 0; j < W; j++) {
        if (i == 0 || j == 0) {
#pragma omp task depend(out : g[i][j])
          g[i][j] = 1;
        } else {
#pragma omp task depend(in : g[i - 1][j], g[i][j - 1]) depend(out : g[i][j])
          g[i][j] = (g[i - 1][j] + g[i][j - 1]) % 1000003;
        }
      }
    int bad = 0;
    for (int i = 0; i < W; i++)
      for (int j = 0; j < W; j++) bad += g[i][j] != ref[i][j];
    printf("wavefront %dx%d: corner %ld, %d wrong cells\n", W, W, g[W - 1][W - 1], bad);
    CHECK_EQ(bad, 0);
  }

  /* 4b. The wavefront again, 100 times with a small grid: one thread creates
   * while the others finish predecessors, so a task's last predecessor often
   * completes while its creator is still adding its edges (a lost start
   * once hung here one run in ten). */
  {
    enum { V = 16 };
    static long h[V][V];
    int wrong = 0;
    for (int rep = 0; rep < 100; rep++) {
#pragma omp parallel
#pragma omp single
      for (int i = 0; i < V; i++)
        for (int j = 0; j < V; j++) {
          if (i == 0 || j == 0) {
#pragma omp task depend(out : h[i][j])
            h[i][j] = 1;
          } else {
#pragma omp task depend(in : h[i - 1][j], h[i][j - 1]) depend(out : h[i][j])
            h[i][j] = (h[i - 1][j] + h[i][j - 1]) % 1000003;
          }
        }
      long want = 1;
      for (int k = 1; k <= V - 1; k++) want = want * (V - 1 + k) / k; /* C(2V-2, V-1) */
      if (h[V - 1][V - 1] != want % 1000003) wrong++;
    }
    printf("wavefront %dx%d, 100 times: %d wrong corners\n", V, V, wrong);
    CHECK_EQ(wrong, 0);
  }

  /* 5. Array sections: out on a[0:8] then in on a[0:8] (same start). */
  {
    int a[8] = {0};
    long sum = 0;
    int bad = 0;
#pragma omp parallel
#pragma omp single
    for (int r = 0; r < 200; r++) {
#pragma omp task depend(out : a [0:8]) shared(a)
      {
        busy(100);
        for (int k = 0; k < 8; k++) a[k] = r + k;
      }
#pragma omp task depend(in : a [0:8]) shared(a, sum, bad)
      {
        long s = 0;
        for (int k = 0; k < 8; k++) s += a[k];
        if (s != 8L * r + 28) AINC(&bad);
#pragma omp atomic
        sum += s;
      }
    }
    printf("array sections: sum %ld, %d wrong\n", sum, bad);
    CHECK_EQ(bad, 0);
  }

  /* 6. if(0) with depend: the undeferred task waits for its predecessor. */
  {
    int bad = 0;
#pragma omp parallel
#pragma omp single
    for (int r = 0; r < 200; r++) {
      int x = 0;
#pragma omp task depend(out : x) shared(x)
      {
        busy(2000);
        x = r + 1;
      }
#pragma omp task if (0) depend(in : x) shared(x, bad)
      {
        if (x != r + 1) bad++;
      }
      /* and the undeferred task has completed here */
#pragma omp taskwait
    }
    printf("if(0) with depend: %d saw the value before the writer ran\n", bad);
    CHECK_EQ(bad, 0);
  }

  /* 7. Anti-dependence: out after in waits for the readers. */
  {
    int x = 7, bad = 0;
#pragma omp parallel
#pragma omp single
    for (int r = 0; r < 300; r++) {
      for (int k = 0; k < 4; k++) {
#pragma omp task depend(in : x) shared(x, bad)
        {
          busy(200);
          if (x != 7 + r) AINC(&bad);
        }
      }
#pragma omp task depend(out : x) shared(x)
      x = 8 + r;
    }
    printf("anti-dependences: x = %d, %d readers saw a later value\n", x, bad);
    CHECK_EQ(x, 307);
    CHECK_EQ(bad, 0);
  }

  /* 8. Independent chains from every thread at once. */
  {
    int bad = 0, n = 0;
    static int last[64];
#pragma omp parallel shared(bad, n)
    {
      int t = omp_get_thread_num();
#pragma omp single
      n = omp_get_num_threads();
      int x = -1;
      for (int i = 0; i < 1000; i++) {
#pragma omp task depend(inout : x) shared(x, bad)
        {
          if (x != i - 1) AINC(&bad);
          x = i;
        }
      }
#pragma omp taskwait
      if (t < 64) last[t] = x;
    }
    int wrong_last = 0;
    for (int t = 0; t < n && t < 64; t++) wrong_last += last[t] != 999;
    printf("per-thread chains: %d out of order, %d wrong final values\n", bad, wrong_last);
    CHECK_EQ(bad, 0);
    CHECK_EQ(wrong_last, 0);
  }
  return omptest_finish("depend");
}
