/* A traced task group's join (src/core/lazy.c, docs/hooks.md), white box:
 * the bias TG_TRACED arrives after the join began to wait. The fork
 * reports itself to the recorder (ito__fork_hook, which adds the bias)
 * after it has published its record, so a thief can take the continuation
 * and run it to the join first. The join must still be woken by the last
 * child, and must report itself, since the fork was reported.
 *
 * The interleaving is played step by step: a thread outside the workers
 * joins (its wait is a futex) the group as a thief left it (pending 2:
 * the joiner and the victim's child; stolen), and once it has counted
 * itself out, this thread plays the victim: the fork's report, then the
 * child's end. Before the fix, the join read the bias before it waited
 * and found none; the bias then kept the last child's count from reaching
 * 0, nobody woke the joiner, and test_hooks hung (1 run in 45 to 100
 * under ASan on a loaded machine). */
#define _GNU_SOURCE
#include "../../src/core/hooks.h"
#include "../../src/core/lazy.h"
#include "../../src/core/worker.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "../check.h"

static long counts[ITO_EV_KINDS];
static void record(const struct ito_event *e, void *arg) {
  (void)arg;
  CHECK(e->kind > 0 && e->kind < ITO_EV_KINDS);
  __atomic_add_fetch(&counts[e->kind], 1, __ATOMIC_RELAXED);
}

static ito_tg_t tg;
static char home_frame[64], other_frame[64];

static void *joiner(void *p) {
  (void)p;
  struct ito_rec rec;
  memset(&rec, 0, sizeof rec);
  ito__join_c(&tg, other_frame, &rec); /* not the home frame: stays on this stack */
  return NULL;
}

int main(void) {
  CHECK_EQ(ito__hooks_attach(record, NULL), 0);
  ito_tg_init_(&tg, home_frame);
  /* a thief took the record of the group's first fork before the victim
   * reported it: the split is counted, no bias yet */
  tg.pending = 2;
  tg.stolen = 1;

  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, joiner, NULL), 0);
  /* the continuation reached the join and counted itself out */
  while (__atomic_load_n(&tg.pending, __ATOMIC_ACQUIRE) != 1) sched_yield();
  CHECK(tg.waiter != NULL);

  worker *victim = calloc(1, sizeof *victim);
  CHECK(victim);
  victim->id = 0;
  ito__fork_hook(&tg, victim, NULL, 0); /* the victim reports its fork: the bias */
  CHECK_EQ(counts[ITO_EV_SPAWN], 1);
  ito__tg_child_done(&tg); /* its child ends: the last one */
  /* the last child took the waiter to wake it */
  CHECK(__atomic_load_n(&tg.waiter, __ATOMIC_ACQUIRE) == NULL);

  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK_EQ(tg.pending, 1); /* the bias is gone */
  CHECK_EQ(counts[ITO_EV_JOIN], 1);
  printf("trace_join: the bias came while the joiner waited: woken, join reported\n");
  free(victim);
  puts("test_trace_join: OK");
  return 0;
}
