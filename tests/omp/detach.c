/* Tasks with detach (GOMP_task with an event, omp_fulfill_event): a
 * detached task is complete only once its code has ended and its event is
 * fulfilled, whoever fulfills it: its creator after creating it, another
 * task, a thread outside OpenMP, the task itself. taskwait, taskgroup,
 * barriers and dependences wait for completion; an undeferred (if(0))
 * detached task whose code fulfills its own event. */
#include "omptest.h"

#include <pthread.h>
#include <unistd.h>

static int step; /* the order of events, under the atomic helpers */
static int order[8];

static void mark(int what) { order[AINC(&step)] = what; }

static void *late_fulfill(void *arg) {
  /* after the task's own mark (a loaded machine may run the task later
   * than 50 ms from now), then 50 ms more: taskwait is waiting by then,
   * most likely; 1 2 3 whenever it started to */
  while (ALOAD(&step) < 1) usleep(1000);
  usleep(50000);
  mark(2);
  omp_fulfill_event(*(omp_event_handle_t *)arg);
  return NULL;
}

int main(void) {
  /* 1. Fulfilled by a thread outside OpenMP, 50 ms later: taskwait waits. */
  {
    step = 0;
    omp_event_handle_t ev;
    pthread_t th;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
#pragma omp task detach(ev)
      mark(1);
      pthread_create(&th, NULL, late_fulfill, &ev);
#pragma omp taskwait
      mark(3);
    }
    pthread_join(th, NULL);
    printf("outside thread: %d %d %d\n", order[0], order[1], order[2]);
  }

  /* 2. A dependent task starts only once the detached one is complete. */
  {
    int x = 0, seen = -1;
    omp_event_handle_t ev;
#pragma omp parallel
#pragma omp single
    {
#pragma omp task detach(ev) depend(out : x) shared(x)
      x = 1;
#pragma omp task depend(in : x) shared(x, seen)
      seen = ALOAD(&x) * 10 + ALOAD(&step);
      usleep(20000);
      ASTORE(&step, 7);
      omp_fulfill_event(ev);
    }
    CHECK_EQ(seen, 17);
    printf("dependence: %d\n", seen);
  }

  /* 3. 64 detached tasks fulfilled by another task in reverse order; the
   * taskgroup ends when all are. */
  {
    omp_event_handle_t evs[64];
    int done[64] = {0}, fulfilled = 0;
#pragma omp parallel
#pragma omp single
    {
#pragma omp taskgroup
      {
        for (int i = 0; i < 64; i++) {
          omp_event_handle_t e;
#pragma omp task detach(e) shared(done)
          AINC(&done[i]);
          evs[i] = e;
        }
#pragma omp task shared(evs, fulfilled)
        for (int i = 63; i >= 0; i--) {
          omp_fulfill_event(evs[i]);
          AINC(&fulfilled);
        }
      }
      CHECK_EQ(ALOAD(&fulfilled), 64);
    }
    CHECK_EQ(omptest_all_eq(done, 64, 1), -1);
    printf("taskgroup: %d fulfilled\n", fulfilled);
  }

  /* 4. The task fulfills its own event, read through memory (the task's
   * own copy of the handle was taken before the runtime set it): an
   * undeferred one ten times, and a deferred one. */
  {
    int n = 0;
    omp_event_handle_t own_ev, own_ev2;
    omp_event_handle_t *pe = &own_ev, *pe2 = &own_ev2;
#pragma omp parallel
#pragma omp single
    {
      for (int i = 0; i < 10; i++) {
#pragma omp task detach(own_ev) shared(n) if (0)
        {
          AINC(&n);
          omp_fulfill_event(*(volatile omp_event_handle_t *)pe);
        }
      }
#pragma omp task detach(own_ev2) shared(n)
      {
        AINC(&n);
        omp_fulfill_event(*(volatile omp_event_handle_t *)pe2);
      }
#pragma omp taskwait
      CHECK_EQ(ALOAD(&n), 11);
    }
    printf("own: %d\n", n);
  }

  /* 5. The barrier at the end of a region waits for detached tasks that
   * every member made and fulfills after a delay. */
  {
    int total = 0, members = 0;
#pragma omp parallel reduction(+ : members)
    {
      omp_event_handle_t e;
#pragma omp task detach(e) shared(total)
      AINC(&total);
      usleep(10000);
      omp_fulfill_event(e);
      members += 1;
    }
    CHECK_EQ(total, members);
    printf("barrier: all %s\n", total == members ? "complete" : "NOT complete");
  }
  return omptest_finish("detach");
}
