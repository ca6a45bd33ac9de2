/* CPU time per lightweight thread (invariant in cpuclock.h). */
#include "cpuclock.h"

#include "fiber.h"
#include "monitor.h"
#include "os.h"
#include "sched.h"
#include "thread.h"
#include "worker.h"

int ito__cpuclock_on;

/* The CPU time of OS thread tid (0: this one), 0 if it cannot be read. */
static long long os_thread_cpu_ns(int tid) {
  long long ns = ito__os_cpu_ns(tid);
  return ns < 0 ? 0 : ns;
}

void ito__cpu_enter(worker *w, fiber *f) {
  ithread *next = f ? f->thread : NULL, *prev = w->on_cpu;
  if (next == prev) return;
  long long now = os_thread_cpu_ns(0);
  if (prev) __atomic_add_fetch(&prev->cpu_ns, now - prev->cpu_in, __ATOMIC_RELAXED);
  if (next) STORE_RLX(&next->cpu_in, now);
  STORE_REL(&w->on_cpu, next);
}

void ito__cpuclock_enable(void) {
  if (__atomic_exchange_n(&ito__cpuclock_on, 1, __ATOMIC_ACQ_REL)) return;
  worker *w = cur_worker();
  ithread *t = running_thread(w);
  if (t) {
    STORE_RLX(&t->cpu_in, os_thread_cpu_ns(0));
    STORE_REL(&w->on_cpu, t);
  }
}

long long ito__thread_cpu_ns(ithread *t) {
  long long sum = LOAD_RLX(&t->cpu_ns);
  worker *here = cur_worker();
  if (here && LOAD_ACQ(&here->on_cpu) == t) return sum + os_thread_cpu_ns(0) - LOAD_RLX(&t->cpu_in);
  int n = LOAD_ACQ(&ito__nslots);
  for (int i = 0; i < n; i++) { /* running elsewhere: its slice so far, from that OS thread */
    worker *w = ito__workers[i];
    if (w && LOAD_ACQ(&w->on_cpu) == t && w->os_tid) {
      long long d = os_thread_cpu_ns(w->os_tid) - LOAD_RLX(&t->cpu_in);
      return sum + (d > 0 ? d : 0);
    }
  }
  return sum;
}
