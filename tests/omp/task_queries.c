/* omp_get_thread_num and the other team queries inside explicit tasks:
 * a task reports a member of the team it binds to (OpenMP: the thread
 * that runs it), an undeferred task the member that encountered it, a
 * final task's children likewise; level, team size, ancestors and
 * in_parallel are those of the binding team, in nested teams too, and in
 * detached tasks. Only what every conforming runtime answers is printed. */
#include "omptest.h"

static int bad_range, bad_team, bad_inline;

static void check_task(int n, int level, int creator, int undeferred) {
  int me = omp_get_thread_num();
  if (me < 0 || me >= n) AINC(&bad_range);
  if (omp_get_num_threads() != n || omp_get_level() != level || omp_get_team_size(level) != n ||
      omp_get_ancestor_thread_num(0) != 0 || omp_in_parallel() != (n > 1 || level > 1))
    AINC(&bad_team);
  if (undeferred && me != creator) AINC(&bad_inline);
}

int main(void) {
  /* 1. Tasks of every member, deferred and undeferred. */
  {
    int n = 0, tasks = 0;
#pragma omp parallel
    {
#pragma omp single
      n = omp_get_num_threads();
      int creator = omp_get_thread_num();
      for (int i = 0; i < 50; i++) {
#pragma omp task shared(tasks)
        {
          check_task(omp_get_num_threads(), 1, creator, 0);
          AINC(&tasks);
        }
#pragma omp task if (0) shared(tasks)
        {
          check_task(omp_get_num_threads(), 1, creator, 1);
          AINC(&tasks);
        }
      }
    }
    CHECK_EQ(tasks, 100 * n);
    printf("tasks: %d, out of range %d, team %d, undeferred %d\n", tasks / n, bad_range, bad_team,
           bad_inline);
  }

  /* 2. Children of a final task run undeferred in it. */
  {
    bad_range = bad_team = bad_inline = 0;
#pragma omp parallel
#pragma omp single
    {
#pragma omp task final(1)
      {
        int creator = omp_get_thread_num();
        for (int i = 0; i < 10; i++) {
#pragma omp task
          {
            CHECK(omp_in_final());
            check_task(omp_get_num_threads(), 1, creator, 1);
          }
        }
      }
    }
    printf("final: out of range %d, team %d, undeferred %d\n", bad_range, bad_team, bad_inline);
  }

  /* 3. Nested teams: a task reports its own (inner) team. */
  {
    bad_range = bad_team = bad_inline = 0;
    int outer_n = 0;
    omp_set_max_active_levels(2);
#pragma omp parallel num_threads(2)
    {
#pragma omp single
      outer_n = omp_get_num_threads();
#pragma omp parallel num_threads(3)
      {
        int n = omp_get_num_threads(), lvl = omp_get_level();
        int outer_me = omp_get_ancestor_thread_num(1);
#pragma omp task
        {
          check_task(n, lvl, 0, 0);
          if (omp_get_ancestor_thread_num(1) != outer_me) AINC(&bad_team);
        }
      }
    }
    omp_set_max_active_levels(1);
    printf("nested: outer %d, out of range %d, team %d\n", outer_n, bad_range, bad_team);
  }

  /* 4. A detached task. */
  {
    bad_range = bad_team = bad_inline = 0;
    int n = 0;
#pragma omp parallel
#pragma omp single
    {
      n = omp_get_num_threads();
      omp_event_handle_t ev;
#pragma omp task detach(ev)
      check_task(omp_get_num_threads(), 1, 0, 0);
      omp_fulfill_event(ev);
    }
    printf("detached: threads %d, out of range %d, team %d\n", n > 0, bad_range, bad_team);
  }

  /* 5. Outside any region: a task of the initial task is thread 0 of 1. */
  {
    int me = -1, nt = -1;
#pragma omp task shared(me, nt)
    {
      me = omp_get_thread_num();
      nt = omp_get_num_threads();
    }
#pragma omp taskwait
    printf("initial: %d of %d\n", me, nt);
  }
  return omptest_finish("task_queries");
}
