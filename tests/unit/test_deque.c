/* The work-stealing deque (src/core/deque.h), white box, linked against the
 * static library.
 *
 * 1. Every interleaving, step by step: an owner (pops, or the fork's take
 *    back of its own record) and one or two thieves run the deque's real
 *    step functions (dq_pop_begin, dq_pop_uncontended, ito__deque_conflict,
 *    dq_pop_take, dq_take_back_begin; dq_steal_claim, dq_steal_check,
 *    dq_steal_done, dq_steal_undo) in every order a depth-first search
 *    finds, under sequential consistency (the barriers order nothing more
 *    there). After each complete run: every entry was taken exactly once or
 *    is still between head and tail; a slot an owner's pop or a thief took
 *    is 0 again (invariant 2); the steal lock is free.
 * 2. Concurrency with the real barriers: an owner pushes and pops while two
 *    thieves steal, with membarrier (or fences where it is missing); every
 *    entry is taken exactly once. */
#define _GNU_SOURCE
#include "../../src/core/deque.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "../check.h"

/* ---- 1. interleavings ------------------------------------------------------------------ */

#define SLOTS 16
#define MAXE 8
enum { OP_POP, OP_TAKE_BACK };
enum { PC_START = 0, PC_CHECK, PC_CONFLICT, PC_TAKE, PC_DONE };
enum { TPC_LOOK = 0, TPC_CLAIM, TPC_CHECK, TPC_FINISH, TPC_DONE };

struct world {
  struct ito_deque d;
  uintptr_t slots[SLOTS];
  int taken[MAXE + 1]; /* times entry k was taken */
  int cleared_ok;      /* 0 once a taken slot was found not cleared */
  /* the owner: a list of operations */
  int ops[4], nops, op, pc;
  uint64_t t;
  uintptr_t back; /* OP_TAKE_BACK: the entry it takes back */
  /* thieves: each makes one steal attempt; undo: gives what it took back */
  int nthieves, tpc[2], undo[2];
  uint64_t h[2];
  uintptr_t *slot[2], e[2];
  size_t slot_idx[2]; /* (slot[] points into the copy it was taken in) */
};

static uintptr_t entry(int k) { return (uintptr_t)k << 3; } /* tag-free, nonzero */
static int entry_no(uintptr_t e) { return (int)(e >> 3); }

static void fix(struct world *w) { w->d.slots = w->slots; }

static int owner_can(const struct world *w) {
  if (w->op >= w->nops) return 0;
  if (w->pc == PC_CONFLICT) return !spin_held(&w->d.steal_lock);
  return 1;
}

/* One step of the owner. */
static void owner_step(struct world *w) {
  struct ito_deque *d = &w->d;
  switch (w->pc) {
    case PC_START:
      if (w->ops[w->op] == OP_POP)
        w->pc = dq_pop_begin(d, &w->t) ? PC_CHECK : PC_DONE;
      else
        w->pc = dq_take_back_begin(d, w->t, w->back) ? PC_CHECK : PC_DONE;
      break;
    case PC_CHECK:
      w->pc = dq_pop_uncontended(d, w->t) ? PC_TAKE : PC_CONFLICT;
      break;
    case PC_CONFLICT:
      w->pc = ito__deque_conflict(d, w->t) ? PC_TAKE : PC_DONE;
      break;
    case PC_TAKE:
      if (w->ops[w->op] == OP_POP) {
        uintptr_t *s = &d->slots[w->t & d->mask];
        uintptr_t e = dq_pop_take(d, w->t);
        w->taken[entry_no(e)]++;
        if (*s) w->cleared_ok = 0;
      } else {
        w->taken[entry_no(w->back)]++; /* ours again; its slot keeps it */
      }
      w->pc = PC_DONE;
      break;
  }
  if (w->pc == PC_DONE) {
    w->op++;
    w->pc = PC_START;
  }
}

static int thief_can(const struct world *w, int i) { return w->tpc[i] != TPC_DONE; }

static void thief_step(struct world *w, int i) {
  struct ito_deque *d = &w->d;
  switch (w->tpc[i]) {
    case TPC_LOOK: /* the look without the lock */
      w->tpc[i] =
          __atomic_load_n(&d->head, __ATOMIC_RELAXED) >= __atomic_load_n(&d->tail, __ATOMIC_RELAXED)
              ? TPC_DONE
              : TPC_CLAIM;
      break;
    case TPC_CLAIM:
      w->tpc[i] = dq_steal_claim(d, &w->h[i]) ? TPC_CHECK : TPC_DONE;
      break;
    case TPC_CHECK:
      w->e[i] = dq_steal_check(d, w->h[i], &w->slot[i]);
      w->slot_idx[i] = (size_t)(w->slot[i] - d->slots);
      w->tpc[i] = w->e[i] ? TPC_FINISH : TPC_DONE;
      break;
    case TPC_FINISH: {
      /* (the slot's address in this copy of the world) */
      uintptr_t *slot = &d->slots[w->slot_idx[i]];
      if (w->undo[i]) {
        dq_steal_undo(d);
      } else {
        dq_steal_done(d, slot, w->e[i]);
        w->taken[entry_no(w->e[i])]++;
        if (*slot) w->cleared_ok = 0;
      }
    }
      w->tpc[i] = TPC_DONE;
      break;
  }
}

static long runs;
static int nentries;

static void check_end(struct world *w) {
  runs++;
  CHECK(!spin_held(&w->d.steal_lock));
  uint64_t h = __atomic_load_n(&w->d.head, __ATOMIC_RELAXED);
  uint64_t t = __atomic_load_n(&w->d.tail, __ATOMIC_RELAXED);
  CHECK(h <= t);
  int left[MAXE + 1] = {0};
  for (uint64_t i = h; i < t; i++) left[entry_no(w->slots[i & w->d.mask])]++;
  for (int k = 1; k <= nentries; k++) {
    if (w->taken[k] + left[k] != 1) {
      fprintf(stderr, "entry %d: taken %d times, %d left in the deque\n", k, w->taken[k], left[k]);
      CHECK(w->taken[k] + left[k] == 1);
    }
  }
  CHECK(w->cleared_ok);
}

static void explore(const struct world *w0) {
  int moved = 0;
  if (owner_can(w0)) {
    struct world w = *w0;
    fix(&w);
    owner_step(&w);
    explore(&w);
    moved = 1;
  }
  for (int i = 0; i < w0->nthieves; i++) {
    if (!thief_can(w0, i)) continue;
    struct world w = *w0;
    fix(&w);
    thief_step(&w, i);
    explore(&w);
    moved = 1;
  }
  if (!moved) {
    struct world w = *w0;
    fix(&w);
    check_end(&w);
  }
}

/* A deque holding entries 1..n (pushed by the owner), the owner's
 * operations, thieves (undo: which give back what they took). */
static void scenario(int n, const int *ops, int nops, int nthieves, int undo0, int undo1) {
  struct world w;
  memset(&w, 0, sizeof w);
  fix(&w);
  w.d.mask = SLOTS - 1;
  for (int k = 1; k <= n; k++) dq_put(&w.d, dq_tail(&w.d), entry(k)); /* (no margin here) */
  memcpy(w.ops, ops, sizeof(int) * (size_t)nops);
  w.nops = nops;
  w.nthieves = nthieves;
  w.undo[0] = undo0;
  w.undo[1] = undo1;
  w.cleared_ok = 1;
  /* a take back is the fork's return to its own record, the youngest */
  w.t = (uint64_t)n - 1;
  w.back = entry(n);
  nentries = n;
  long before = runs;
  explore(&w);
  printf("  %d entries, %d owner op(s) (%s), %d thief(s)%s: %ld interleavings\n", n, nops,
         ops[0] == OP_POP ? "pop" : "take back", nthieves, undo0 || undo1 ? " with an undo" : "",
         runs - before);
}

static void interleavings(void) {
  puts("deque: every interleaving of the owner's and the thieves' steps");
  static const int pop1[] = {OP_POP}, pop2[] = {OP_POP, OP_POP}, pop3[] = {OP_POP, OP_POP, OP_POP};
  static const int back[] = {OP_TAKE_BACK};
  for (int n = 1; n <= 3; n++) {
    scenario(n, pop1, 1, 1, 0, 0);
    scenario(n, pop2, 2, 1, 0, 0);
    scenario(n, pop2, 2, 2, 0, 0);
    scenario(n, back, 1, 1, 0, 0);
    scenario(n, back, 1, 2, 0, 0);
    scenario(n, pop1, 1, 1, 1, 0); /* a thief without a stack gives its entry back */
    scenario(n, back, 1, 2, 1, 0);
  }
  scenario(3, pop3, 3, 2, 0, 1);
}

/* ---- 2. concurrency ---------------------------------------------------------------------- */

#define N_ENTRIES 200000
static struct ito_deque cd;
static unsigned char seen[N_ENTRIES + 1];
static int owner_done;
static long stolen[2];

static void take(uintptr_t e) {
  int k = entry_no(e);
  CHECK(k >= 1 && k <= N_ENTRIES);
  CHECK(__atomic_add_fetch(&seen[k], 1, __ATOMIC_RELAXED) == 1);
}

static void *thief(void *p) {
  long i = (long)(intptr_t)p;
  while (!__atomic_load_n(&owner_done, __ATOMIC_ACQUIRE) || dq_nonempty(&cd)) {
    uintptr_t *slot;
    uintptr_t e = ito__deque_steal(&cd, &slot);
    if (!e) continue;
    take(e);
    dq_steal_done(&cd, slot, e);
    stolen[i]++;
  }
  return NULL;
}

static void concurrent(void) {
  ito__asym_fence = ito__membarrier_register();
  CHECK_EQ(ito__deque_init(&cd, 14), 0); /* room beyond DEQUE_MARGIN */
  ito__deque_reset(&cd);
  pthread_t th[2];
  for (long i = 0; i < 2; i++) CHECK_EQ(pthread_create(&th[i], NULL, thief, (void *)i), 0);
  long popped = 0;
  int k = 1;
  while (k <= N_ENTRIES) {
    /* push a few (as forks do), then take most of them back (as their
     * returns do), leaving the oldest for the thieves now and then */
    int burst = 1 + k % 5;
    for (int j = 0; j < burst && k <= N_ENTRIES; j++, k++)
      if (!dq_push(&cd, entry(k))) {
        take(entry(k)); /* full: run it ourselves */
        popped++;
      }
    if (k % 997 < burst) { /* now and then: wait (a while at most) for a thief */
      long long until = clock_ns(CLOCK_MONOTONIC) + 100 * 1000000LL;
      uint64_t had = dq_size(&cd);
      while (dq_size(&cd) == had && clock_ns(CLOCK_MONOTONIC) < until) sched_yield();
    }
    for (int j = 0; j < burst - (k % 3 == 0); j++) {
      uintptr_t e = ito__deque_pop(&cd);
      if (!e) break;
      take(e);
      popped++;
    }
  }
  uintptr_t e;
  while ((e = ito__deque_pop(&cd))) {
    take(e);
    popped++;
  }
  __atomic_store_n(&owner_done, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < 2; i++) CHECK_EQ(pthread_join(th[i], NULL), 0);
  for (int j = 1; j <= N_ENTRIES; j++) CHECK_EQ(seen[j], 1);
  CHECK(stolen[0] + stolen[1] > 0); /* (the waits above give the thieves their chance) */
  printf("deque: concurrent (%s): %d entries, owner %ld, thieves %ld and %ld\n",
         ito__asym_fence ? "membarrier" : "fences", N_ENTRIES, popped, stolen[0], stolen[1]);
}

int main(void) {
#if ITO_ASSERTS
  ito__lock_check = 0; /* (the search plays the owner and thieves on one thread) */
#endif
  interleavings();
#if ITO_ASSERTS
  ito__lock_check = 1;
#endif
  concurrent();
  puts("test_deque: OK");
  return 0;
}
