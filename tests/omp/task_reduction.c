/* Task reductions (GOMP_taskgroup_reduction_register/unregister,
 * GOMP_task_reduction_remap, GOMP_parallel_reductions, work-sharing
 * reductions with the task modifier, taskloop reductions): taskgroup
 * task_reduction with in_reduction tasks, nested taskgroups with tasks in
 * both, tasks that make in_reduction tasks and wait for them (a tree),
 * undeferred in_reduction tasks, taskloop reduction and taskloop
 * in_reduction, parallel/for/sections reduction(task, ...), operators whose
 * identity is not zero, an orphaned taskgroup outside any region, and task
 * scheduling constraint 2: a task that waits for its child while holding a
 * lock (critical, an OpenMP lock) beside more siblings than the team has
 * threads, each wanting that lock (only the child may run in the waiting
 * task's place: a sibling that did would wait for the lock for ever, in a
 * team of 1 too). Each task
 * adds many small steps to its copy, so two tasks on one copy at once lose
 * updates and the sums come out wrong. */
#include "omptest.h"

#include <time.h>

#define STEPS 2000

/* adds v to *r in STEPS small steps: a copy shared by two tasks at once
 * shows as a lost update */
static void slow_add(long *r, long v) {
  long per = v / STEPS, rest = v - per * STEPS;
  for (int k = 0; k < STEPS; k++) {
    long x = *(volatile long *)r;
    *(volatile long *)r = x + per;
  }
  *r += rest;
}

static long tree_sum;

static void tree(int depth, long base) {
  if (depth == 0) {
#pragma omp task in_reduction(+ : tree_sum)
    slow_add(&tree_sum, base);
    return;
  }
  for (int k = 0; k < 3; k++) {
#pragma omp task in_reduction(+ : tree_sum)
    {
      slow_add(&tree_sum, 1);
      tree(depth - 1, base * 3 + k);
#pragma omp taskwait
    }
  }
}

int main(void) {
  /* 1. taskgroup task_reduction, in_reduction tasks from a single. */
  {
    long r = 0, want = 0;
    for (int i = 0; i < 200; i++) want += (long)i * STEPS;
#pragma omp parallel
#pragma omp single
#pragma omp taskgroup task_reduction(+ : r)
    for (int i = 0; i < 200; i++) {
#pragma omp task in_reduction(+ : r)
      slow_add(&r, (long)i * STEPS);
    }
    CHECK_EQ(r, want);
    printf("taskgroup: %ld\n", r);
  }

  /* 2. Nested taskgroups: tasks in the inner one reduce into both. */
  {
    long a = 5, b = 0;
#pragma omp parallel
#pragma omp single
#pragma omp taskgroup task_reduction(+ : a)
    {
      for (int i = 0; i < 50; i++) {
#pragma omp task in_reduction(+ : a)
        slow_add(&a, STEPS);
      }
#pragma omp taskgroup task_reduction(+ : b)
      for (int i = 0; i < 50; i++) {
#pragma omp task in_reduction(+ : a, b)
        {
          slow_add(&a, 2 * STEPS);
          slow_add(&b, 3 * STEPS);
        }
      }
      CHECK_EQ(b, 150L * STEPS); /* the inner group is over */
    }
    CHECK_EQ(a, 5 + 150L * STEPS);
    printf("nested: a=%ld b=%ld\n", a, b);
  }

  /* 3. A tree: in_reduction tasks make in_reduction tasks and wait. */
  {
    tree_sum = 0;
#pragma omp parallel
#pragma omp single
#pragma omp taskgroup task_reduction(+ : tree_sum)
    tree(4, 0);
    long want = 3 + 9 + 27 + 81;                         /* the inner tasks' ones */
    for (long leaf = 0; leaf < 81; leaf++) want += leaf; /* one leaf task per depth-1 task */
    CHECK_EQ(tree_sum, want);
    printf("tree: %ld\n", tree_sum);
  }

  /* 4. Undeferred in_reduction tasks (if(0)) beside deferred ones. */
  {
    long r = 0;
#pragma omp parallel
#pragma omp single
#pragma omp taskgroup task_reduction(+ : r)
    for (int i = 0; i < 100; i++) {
#pragma omp task in_reduction(+ : r) if (i % 2)
      slow_add(&r, STEPS);
    }
    CHECK_EQ(r, 100L * STEPS);
    printf("undeferred: %ld\n", r);
  }

  /* 5. taskloop reduction, and taskloop in_reduction inside a taskgroup. */
  {
    long t = 0, u = 7;
#pragma omp parallel
#pragma omp single
    {
#pragma omp taskloop reduction(+ : t) num_tasks(16)
      for (int i = 0; i < 1000; i++) t += i;
#pragma omp taskgroup task_reduction(+ : u)
      {
#pragma omp taskloop in_reduction(+ : u) nogroup grainsize(10)
        for (int i = 0; i < 1000; i++) u += 2 * i;
#pragma omp task in_reduction(+ : u)
        slow_add(&u, STEPS);
      }
    }
    CHECK_EQ(t, 499500);
    CHECK_EQ(u, 7 + 999000 + STEPS);
    long e = 3;
#pragma omp parallel
#pragma omp single
#pragma omp taskloop reduction(+ : e)
    for (int i = 5; i < 5; i++) e += i; /* no iterations: nothing registered */
    CHECK_EQ(e, 3);
    printf("taskloop: t=%ld u=%ld e=%ld\n", t, u, e);
  }

  /* 6. parallel reduction(task, ...): members add to their own copy, tasks
   * of every member to leased ones. */
  {
    long r = 0;
    int n = 0;
#pragma omp parallel reduction(task, + : r)
    {
#pragma omp single
      n = omp_get_num_threads();
      slow_add(&r, 1000 * STEPS);
      for (int i = 0; i < 20; i++) {
#pragma omp task in_reduction(+ : r)
        slow_add(&r, STEPS);
      }
    }
    CHECK_EQ(r, (long)n * (1000 * STEPS + 20 * STEPS));
    printf("parallel: %ld per thread\n", r / n);
  }

  /* 7. for and sections with reduction(task, ...). */
  {
    long s = 0, q = 0;
#pragma omp parallel
    {
#pragma omp for reduction(task, + : s) schedule(dynamic, 3)
      for (int i = 0; i < 60; i++) {
        s += i;
#pragma omp task in_reduction(+ : s)
        slow_add(&s, STEPS);
      }
#pragma omp sections reduction(task, + : q)
      {
#pragma omp section
        {
#pragma omp task in_reduction(+ : q)
          slow_add(&q, 2 * STEPS);
        }
#pragma omp section
        {
          q += 1;
#pragma omp task in_reduction(+ : q)
          slow_add(&q, 3 * STEPS);
        }
      }
    }
    CHECK_EQ(s, 1770 + 60L * STEPS);
    CHECK_EQ(q, 1 + 5L * STEPS);
    printf("for: %ld sections: %ld\n", s, q);
  }

  /* 7b. scope with reduction(task, ...). */
  {
    long r = 0;
    int n = 0;
#pragma omp parallel
    {
#pragma omp single
      n = omp_get_num_threads();
#pragma omp scope reduction(task, + : r)
      {
        r += 10;
#pragma omp task in_reduction(+ : r)
        slow_add(&r, STEPS);
      }
    }
    CHECK_EQ(r, (long)n * (10 + STEPS));
    printf("scope: %ld per thread\n", r / n);
  }

  /* 8. Identities that are not zero: *, max, min, & and |. */
  {
    long p = 3, mx = -5, mn = 1000;
    unsigned long band = ~0UL, bor = 0;
#pragma omp parallel
#pragma omp single
#pragma omp taskgroup task_reduction(* : p) task_reduction(max : mx) task_reduction(min : mn) \
    task_reduction(& : band) task_reduction(| : bor)
    for (int i = 1; i <= 12; i++) {
#pragma omp task in_reduction(* : p) in_reduction(max : mx) in_reduction(min : mn) \
    in_reduction(& : band) in_reduction(| : bor)
      {
        p *= (i % 3) + 1;
        if (i * 7 % 13 > mx) mx = i * 7 % 13;
        if (i * 5 % 11 + 3 < mn) mn = i * 5 % 11 + 3;
        band &= ~(1UL << i);
        bor |= 1UL << (2 * i);
      }
    }
    printf("ops: p=%ld max=%ld min=%ld and=%lx or=%lx\n", p, mx, mn, band, bor);
  }

  /* 10. Task scheduling constraint 2: the task that holds the lock and
   *     waits for its child lends its copy to that child only. */
  for (int use_lock = 0; use_lock < 2; use_lock++) {
    long s = 0;
    int n = 0;
    omp_lock_t lk;
    omp_init_lock(&lk);
#pragma omp parallel
#pragma omp single
    {
      n = omp_get_num_threads();
#pragma omp taskgroup task_reduction(+ : s)
      {
#pragma omp task in_reduction(+ : s)
        {
          s++;
          if (use_lock)
            omp_set_lock(&lk);
          else {
#pragma omp critical(tsc2)
            {
#pragma omp task in_reduction(+ : s)
              s++;
              /* (the siblings reach the lock meanwhile, most runs) */
              nanosleep(&(struct timespec){0, 20 * 1000000L}, NULL);
#pragma omp taskwait
            }
          }
          if (use_lock) {
#pragma omp task in_reduction(+ : s)
            s++;
            nanosleep(&(struct timespec){0, 20 * 1000000L}, NULL);
#pragma omp taskwait
            omp_unset_lock(&lk);
          }
        }
        for (int i = 0; i < n; i++) {
#pragma omp task in_reduction(+ : s)
          {
            s++;
            if (use_lock) {
              omp_set_lock(&lk);
              s++;
              omp_unset_lock(&lk);
            } else {
#pragma omp critical(tsc2)
              s++;
            }
          }
        }
      }
    }
    omp_destroy_lock(&lk);
    CHECK_EQ(s, 2 + 2L * n);
    printf("constraint 2 (%s): %s\n", use_lock ? "lock" : "critical",
           s == 2 + 2L * n ? "every task ran" : "wrong sum");
  }

  /* 9. An orphaned taskgroup: no parallel region at all. */
  {
    long r = 1;
#pragma omp taskgroup task_reduction(+ : r)
    for (int i = 0; i < 30; i++) {
#pragma omp task in_reduction(+ : r)
      slow_add(&r, STEPS);
    }
    CHECK_EQ(r, 1 + 30L * STEPS);
    printf("orphaned: %ld\n", r);
  }

  return omptest_finish("task_reduction");
}
