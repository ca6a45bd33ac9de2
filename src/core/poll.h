/* Poll sources: the extension point through which work that completes
 * outside the runtime (fd readiness, MPI requests) makes parked threads
 * ready. Idle workers poll the registered sources before they sleep, and
 * one sleeper (the poll sleeper of idle.h) waits for them. A source either
 * offers a descriptor a sleeper can wait on (the I/O layer's epoll, the
 * first), or asks to be polled with back-off while threads wait for it.
 * Design and costs: docs/poll.md.
 *
 * Invariants:
 *  1. Sources are registered for the life of the process and never
 *     removed; the list is read without a lock.
 *  2. A thread that will wait for a source is counted (ito__poll_arrive)
 *     before it checks for the last time whether it must wait, and
 *     uncounted after it woke; the idle protocol keeps a poll sleeper
 *     while any is counted (idle.h, invariant 4).
 *  3. The kick is sticky: an ito__poll_kick before the poll sleeper's wait
 *     still ends that wait.
 *  4. The sleeper's set and its kick exist together or not at all; made,
 *     the set holds the descriptor of every source that has one (a source
 *     whose descriptor the set cannot take is not registered). Without a
 *     set (the descriptors or the kernel's memory ran out), registering a
 *     back-off source still succeeds, a kick does nothing, and the poll
 *     sleeper waits in slices of 1 ms and polls every source with
 *     waiters; each wait tries to make the set. A sleeper that finds a
 *     set newer than it last saw returns once without waiting, after a
 *     fence that pairs with the kick's: a waker whose kick found no set
 *     had stored the wake word, which the sleeper then sees. */
#ifndef ITO_CORE_POLL_H
#define ITO_CORE_POLL_H

#include "base.h"
#include "poll_source.h"

/* Registers s (its fields as poll_source.h says). 0, EINVAL (no poll
 * function, or a back-off source without a positive backoff_min_ns), or
 * EAGAIN (s has a descriptor, and the sleeper's set could not be made or
 * take it: nothing is registered; try again later). */
HIDDEN int ito__poll_register(struct ito_poll_source *s);
/* A registered source's descriptor is now fd: the set (made if need be)
 * watches it. 0, or EAGAIN (as above; s->fd is fd all the same, and a set
 * made later takes it). */
HIDDEN int ito__poll_watch(struct ito_poll_source *s, int fd);
/* A registered source has no descriptor for now (after fork, in a child
 * that could not make it one); it has no waiters. */
HIDDEN void ito__poll_unwatch(struct ito_poll_source *s);
/* A thread will wait for s / no longer waits (invariant 2). */
HIDDEN void ito__poll_arrive(struct ito_poll_source *s);
HIDDEN void ito__poll_leave(struct ito_poll_source *s);
/* The scheduler, looking for work or every 61st pass while threads wait:
 * polls the sources with waiters (a back-off source when it is due), never
 * waiting. Returns how many threads were made ready. */
HIDDEN int ito__poll_run(void);
/* The poll sleeper's wait (idle.h's wait_events): until a source's
 * descriptor is ready, a kick, a back-off source is due, or timeout_ns
 * (-1: none); then polls what is ready. Returns threads made ready. It
 * may return sooner, with nothing ready (invariant 4): the caller looks at
 * its wake word and waits again. */
HIDDEN int ito__poll_wait(long timeout_ns);
/* Ends the poll sleeper's wait (invariant 3). */
HIDDEN void ito__poll_kick(void);

#endif
