/* teams on the host (GOMP_teams_reg), target regions without an offload
 * device (GOMP_target_ext's host fallback, with teams inside: GOMP_teams4),
 * target data constructs and their depend clauses, the device memory API
 * for the host device, and scope. Built with gcc 12 -fopenmp and no
 * offload target, so every target region runs on the host.
 *
 * OpenMP allows only some calls strictly inside a teams region, so the
 * queries there go through the small functions below. */
#include "omptest.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

__attribute__((noinline)) static int thread_limit(void) { return omp_get_thread_limit(); }
__attribute__((noinline)) static int max_threads(void) { return omp_get_max_threads(); }
__attribute__((noinline)) static int level(void) { return omp_get_level(); }

/* ---- host teams ------------------------------------------------------------------------ */

static void host_teams(void) {
  int seen[16] = {0}, nteams = 0, order_ok = 1, last = -1;
#pragma omp teams num_teams(4)
  {
    int t = omp_get_team_num();
    seen[t]++;
    nteams = omp_get_num_teams();
    /* gcc 12's runtime runs the teams one after another, in order */
    if (t != last + 1) order_ok = 0;
    last = t;
  }
  printf("teams num_teams(4): %d teams, each once %d, in order %d\n", nteams,
         seen[0] == 1 && seen[1] == 1 && seen[2] == 1 && seen[3] == 1, order_ok);

  int count = 0;
#pragma omp teams
  {
    count++;
    nteams = omp_get_num_teams();
  }
  printf("teams without num_teams: %d teams ran, omp_get_num_teams %d\n", count, nteams);
  printf("after teams: team %d of %d\n", omp_get_team_num(), omp_get_num_teams());

  /* thread_limit: a bound on the teams' parallel regions, for the region only */
  int limit = 0, members = 0, teamnum_ok = 1;
#pragma omp teams num_teams(2) thread_limit(2)
  {
    limit = thread_limit();
#pragma omp parallel num_threads(4) reduction(+ : members)
    {
      members++;
      if (omp_get_team_num() != omp_get_team_num() || omp_get_num_teams() != 2) teamnum_ok = 0;
    }
  }
  printf(
      "teams thread_limit(2): limit %d, %d members in 2 regions of num_threads(4), team "
      "numbers in the regions %d\n",
      limit, members, teamnum_ok);
  printf("after teams: thread limit %d\n", omp_get_thread_limit());

  /* each team's parallel region answers omp_get_team_num for its team */
  int sum_team = 0;
#pragma omp teams num_teams(3)
  {
#pragma omp parallel num_threads(2) reduction(+ : sum_team)
    {
      if (omp_get_thread_num() == 0) sum_team += omp_get_team_num() * 10 + omp_get_num_teams();
    }
  }
  printf("teams with parallel: sum %d\n", sum_team);

  /* the ICVs of the teams construct */
  printf("max teams %d, teams thread limit %d\n", omp_get_max_teams(),
         omp_get_teams_thread_limit());
  int old_teams = omp_get_max_teams(), old_tl = omp_get_teams_thread_limit();
  omp_set_num_teams(5);
  omp_set_teams_thread_limit(3);
  omp_set_num_teams(-1);          /* ignored */
  omp_set_teams_thread_limit(-2); /* ignored */
  count = 0;
  int mt = 0;
#pragma omp teams
  {
    count++;
    limit = thread_limit();
    mt = max_threads();
  }
  printf(
      "after omp_set_num_teams(5), omp_set_teams_thread_limit(3): %d teams, limit %d, "
      "max threads %d\n",
      count, limit, mt);
  omp_set_num_teams(old_teams);
  omp_set_teams_thread_limit(old_tl);

  /* teams distribute: the iterations split among the teams */
  long sum = 0;
  int per_team[8] = {0};
#pragma omp teams distribute num_teams(4) reduction(+ : sum)
  for (int i = 0; i < 1000; i++) {
    sum += i;
    per_team[omp_get_team_num()]++;
  }
  printf("teams distribute: sum %ld, per team %d %d %d %d\n", sum, per_team[0], per_team[1],
         per_team[2], per_team[3]);

  sum = 0;
#pragma omp teams distribute parallel for num_teams(3) reduction(+ : sum)
  for (int i = 0; i < 3000; i++) sum += i % 7;
  printf("teams distribute parallel for: sum %ld\n", sum);
}

/* ---- target regions ---------------------------------------------------------------------- */

static void target_regions(void) {
  int x = 1, on_host = 0;
#pragma omp target map(tofrom : x, on_host)
  {
    x += 41;
    on_host = omp_is_initial_device();
  }
  printf("target: x %d, on the initial device %d\n", x, on_host);

  /* firstprivate: the region gets a copy */
  int fp[4] = {1, 2, 3, 4}, seen = 0;
  double d = 2.5;
#pragma omp target firstprivate(fp, d) map(from : seen)
  {
    fp[0] += 100;
    d *= 2;
    seen = fp[0] + fp[3] + (int)d;
  }
  printf("target firstprivate: inside %d, outside %d %g\n", seen, fp[0], d);

  /* the region is a new initial task with the environment's ICVs */
  int saved_threads = omp_get_max_threads();
  omp_set_num_threads(saved_threads + 5);
  omp_set_dynamic(1);
  omp_set_default_allocator(omp_large_cap_mem_alloc);
  int lvl = -1, inpar = -1, tnum = -1, nthr = -1, dyn = -1, maxthr = 0, alloc_env = 0;
#pragma omp target map(from : lvl, inpar, tnum, nthr, dyn, maxthr, alloc_env)
  {
    lvl = omp_get_level();
    inpar = omp_in_parallel();
    tnum = omp_get_thread_num();
    nthr = omp_get_num_threads();
    dyn = omp_get_dynamic();
    maxthr = omp_get_max_threads();
    alloc_env = (int)omp_get_default_allocator();
  }
  omp_set_dynamic(0);
  omp_set_default_allocator(omp_default_mem_alloc);
  printf(
      "target ICVs: level %d, in parallel %d, thread %d of %d, dynamic %d, max threads "
      "the environment's %d, default allocator %d\n",
      lvl, inpar, tnum, nthr, dyn, maxthr == saved_threads, alloc_env);

  /* from every member of a team: each region on its own, at level 0, and a
   * parallel region inside it is an outermost one */
  int regions = 0, at_level0 = 0, inner_ok = 0;
#pragma omp parallel num_threads(3) reduction(+ : regions, at_level0, inner_ok)
  {
    int l = -1, inner_level = -1;
#pragma omp target map(from : l, inner_level)
    {
      l = omp_get_level();
#pragma omp parallel num_threads(2)
      {
#pragma omp master
        inner_level = omp_get_level();
      }
    }
    regions++;
    at_level0 += l == 0;
    inner_ok += inner_level == 1;
  }
  printf("target in parallel: %d regions, at level 0 %d, inner parallel at level 1 %d\n", regions,
         at_level0, inner_ok);
  omp_set_num_threads(saved_threads);

  /* target teams: the teams run one after another */
  int teams_ran = 0, teams_n = 0, team_sum = 0, tl = 0;
#pragma omp target teams num_teams(3) thread_limit(2) map(tofrom : teams_ran, teams_n, team_sum, tl)
  {
    teams_ran++;
    teams_n = omp_get_num_teams();
    team_sum += omp_get_team_num();
    tl = thread_limit();
  }
  printf(
      "target teams num_teams(3) thread_limit(2): %d ran, %d teams, team numbers sum %d, "
      "limit %d\n",
      teams_ran, teams_n, team_sum, tl);
  printf("after target teams: team %d of %d, thread limit %d\n", omp_get_team_num(),
         omp_get_num_teams(), omp_get_thread_limit());

  long sum = 0;
#pragma omp target teams distribute parallel for reduction(+ : sum) map(tofrom : sum)
  for (int i = 0; i < 10000; i++) sum += i;
  printf("target teams distribute parallel for: sum %ld\n", sum);

  /* target data and its nested target regions */
  int arr[100];
  for (int i = 0; i < 100; i++) arr[i] = i;
#pragma omp target data map(tofrom : arr)
  {
#pragma omp target map(tofrom : arr)
#pragma omp teams distribute parallel for
    for (int i = 0; i < 100; i++) arr[i] *= 2;
#pragma omp target update from(arr)
  }
  long s2 = 0;
  for (int i = 0; i < 100; i++) s2 += arr[i];
  printf("target data: sum %ld\n", s2);
#pragma omp target enter data map(to : arr)
#pragma omp target map(alloc : arr)
  arr[0] = -1;
#pragma omp target exit data map(from : arr)
  printf("target enter/exit data: arr[0] %d\n", arr[0]);
}

/* ---- nowait and depend ----------------------------------------------------------------------- */

static void depends(void) {
  int a = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp target nowait depend(out : a) map(tofrom : a)
    {
      usleep(20000);
      a = 1;
    }
#pragma omp task depend(inout : a) shared(a)
    a *= 10;
#pragma omp target nowait depend(inout : a) map(tofrom : a)
    a += 5;
#pragma omp taskwait
    printf("target nowait with depend: a %d\n", a);
  }

  /* a target nowait outside any region is a task: taskwait waits for it */
  int b = 0;
#pragma omp target nowait map(tofrom : b)
  {
    usleep(10000);
    b = 7;
  }
#pragma omp taskwait
  printf("target nowait, taskwait: b %d\n", b);

  /* the data constructs wait for their dependences (or are ordered by them) */
  int v = 0, w = 0, order_ok = 1;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp task depend(out : v) shared(v)
    {
      usleep(20000);
      v = 42;
    }
#pragma omp target update to(v) depend(in : v)
    if (v != 42) order_ok = 0;
#pragma omp task depend(out : w) shared(w)
    {
      usleep(20000);
      w = 1;
    }
#pragma omp target enter data map(to : w) depend(inout : w)
    if (w != 1) order_ok = 0;
#pragma omp task depend(out : w) shared(w)
    {
      usleep(20000);
      w = 2;
    }
#pragma omp target exit data map(from : w) depend(inout : w)
    if (w != 2) order_ok = 0;
      /* nowait: an empty task between the writer and the reader */
#pragma omp task depend(out : v) shared(v)
    {
      usleep(20000);
      v = 43;
    }
#pragma omp target update from(v) nowait depend(inout : v)
#pragma omp task depend(in : v) shared(v, order_ok)
    if (v != 43) order_ok = 0;
#pragma omp taskwait
  }
  printf("target update/enter/exit data honour depend: %d (v %d, w %d)\n", order_ok, v, w);
}

/* ---- the device API on the host -------------------------------------------------------------- */

static void device_api(void) {
  int host = omp_get_initial_device();
  printf("devices %d, initial device %d, device num %d, initial %d\n", omp_get_num_devices(), host,
         omp_get_device_num(), omp_is_initial_device());
  int dd = omp_get_default_device();
  omp_set_default_device(3);
  int dd3 = omp_get_default_device();
  omp_set_default_device(-5);
  printf("default device %d, set to 3: %d, set to -5: %d\n", dd, dd3, omp_get_default_device());
  omp_set_default_device(dd);

  int *p = omp_target_alloc(10 * sizeof(int), host);
  printf("target_alloc host: %s, device 1: %s\n", p ? "allocated" : "NULL",
         omp_target_alloc(16, 1) ? "allocated" : "NULL");
  int src[10];
  for (int i = 0; i < 10; i++) src[i] = i * i;
  int rc = omp_target_memcpy(p, src, 5 * sizeof(int), sizeof(int), 2 * sizeof(int), host, host);
  printf("target_memcpy: %d, p[1..5] %d %d %d %d %d; to device 1: %s\n", rc, p[1], p[2], p[3], p[4],
         p[5], omp_target_memcpy(p, src, 4, 0, 0, 1, host) == EINVAL ? "EINVAL" : "?");
  printf("target_is_present: host %d, device 1 %d, NULL %d\n", omp_target_is_present(p, host),
         omp_target_is_present(p, 1), omp_target_is_present(NULL, 1));
  omp_target_free(p, host);

  /* a 2x3 block of a 4x5 matrix into a 3x4 one */
  int m[4][5], out[3][4];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 5; j++) m[i][j] = 10 * i + j;
  memset(out, 0, sizeof out);
  size_t vol[2] = {2, 3}, doff[2] = {1, 1}, soff[2] = {2, 1}, ddim[2] = {3, 4}, sdim[2] = {4, 5};
  rc = omp_target_memcpy_rect(out, m, sizeof(int), 2, vol, doff, soff, ddim, sdim, host, host);
  printf("target_memcpy_rect: %d, rows %d %d %d %d | %d %d %d %d | %d %d %d %d\n", rc, out[0][0],
         out[0][1], out[0][2], out[0][3], out[1][0], out[1][1], out[1][2], out[1][3], out[2][0],
         out[2][1], out[2][2], out[2][3]);
  printf("target_memcpy_rect dimensions: %s\n",
         omp_target_memcpy_rect(NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, host, host) > 1000
             ? "many"
             : "few");
  int a = 0, b = 0;
  printf("associate_ptr: %s, disassociate_ptr: %s\n",
         omp_target_associate_ptr(&a, &b, sizeof a, 0, host) == EINVAL ? "EINVAL" : "?",
         omp_target_disassociate_ptr(&a, host) == EINVAL ? "EINVAL" : "?");
}

/* ---- scope ----------------------------------------------------------------------------------- */

static void scope(void) {
  int s = 0, n = 0;
  long total = 0;
#pragma omp parallel reduction(+ : n)
  {
    int x = -1;
    n++;
#pragma omp scope private(x) reduction(+ : s)
    {
      x = omp_get_thread_num();
      s += x + 1;
    }
#pragma omp scope reduction(+ : total) nowait
    total += 2;
#pragma omp barrier
    if (x != -1) s = -1000;
  }
  printf("scope: reduction %d for %d threads, nowait reduction %ld\n", s == n * (n + 1) / 2, n,
         total);
  (void)level;
}

int main(void) {
  host_teams();
  target_regions();
  depends();
  device_api();
  scope();
  return omptest_finish("target_teams");
}
