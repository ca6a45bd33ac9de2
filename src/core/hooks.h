/* Event hooks: where a recorder (a profiler, a tracer) attaches to see
 * spawns, steals, joins, creates, parks, resumes, sleeps and wake-ups.
 * Design and costs: docs/hooks.md.
 *
 * Invariants:
 *  1. A recorder attaches before the runtime starts and stays for the run;
 *     ito__hooks_on and the idle word's H bit are set at start and not
 *     changed while the runtime runs.
 *  2. With no recorder, the fork and join fast paths execute exactly the
 *     instructions they execute without hooks: the assembly fork reaches
 *     its hook only through the branch it already takes when the idle word
 *     is not 0 (H sets a bit of it), and a join reaches its hook only
 *     through the slow path (a traced group's pending count carries
 *     TG_TRACED). Every other hook costs one predictable branch.
 *  3. The recorder's function runs on the worker, inside the scheduler or
 *     the thread that caused the event: it must not block, park or call
 *     into the runtime.
 *  4. Quiet forks: while the worker's hook_quiet is above 1 (the recorder
 *     sets it, on the worker, only from an event of that worker), a fork
 *     that would reach its hook decrements it and is not reported: it
 *     writes its record's address + 1 to its mark (the word hook_mark
 *     bytes from its deque slot), and its take-back clears the mark with
 *     no event. The fork that finds it at 1 is reported. A quiet fork
 *     whose continuation was taken is reported as taken (FORK_TAKEN), its
 *     group set up for the recorder first. A recorder that never sets
 *     hook_quiet sees every fork. */
#ifndef ITO_CORE_HOOKS_H
#define ITO_CORE_HOOKS_H

#include "base.h"
#include "event.h"

extern int ito__hooks_on HIDDEN;

/* Attaches a recorder, before the runtime starts (invariant 1: the drop-in
 * interface checks); EINVAL for NULL or a second one. */
HIDDEN int ito__hooks_attach(void (*fn)(const struct ito_event *e, void *arg), void *arg);
HIDDEN void ito__hook_emit(int kind, int worker, const void *obj, long peer);
/* The same with the record and index fields (event.h). */
HIDDEN void ito__hook_emit_rec(int kind, int worker, const void *obj, long peer, const void *rec,
                               unsigned long aux);

/* One predictable branch where no recorder is attached. */
#define HOOK(kind, worker, obj, peer)                                                        \
  do {                                                                                       \
    if (UNLIKELY(LOAD_RLX(&ito__hooks_on))) ito__hook_emit((kind), (worker), (obj), (peer)); \
  } while (0)

#define HOOK_REC(kind, worker, obj, peer, rec, aux)                      \
  do {                                                                   \
    if (UNLIKELY(LOAD_RLX(&ito__hooks_on)))                              \
      ito__hook_emit_rec((kind), (worker), (obj), (peer), (rec), (aux)); \
  } while (0)

/* A traced task group's pending count carries this bias from its first
 * fork to its join, so that the join's inline check fails and the join
 * reaches its hook (invariant 2). Larger than any real count; the join's
 * wait ignores it, since a fork may set it after the join began to wait
 * (lazy.c, trace_spawn). */
#define TG_TRACED (1 << 30)
/* Set while the first fork of a traced group sets the group up for the
 * recorder (lazy.c, trace_spawn): the other forks wait for TG_TRACED. */
#define TG_TRACING (1 << 29)
#define TG_BIAS (TG_TRACED | TG_TRACING)

#endif
