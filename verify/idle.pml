/*
 * verify/idle.pml: the sleep/wake protocol of ito's idle workers
 * (docs/idle.md) as coded in src/core/idle.c, the only code that touches
 * the idle word: ito__idle_sleep (G1-G5; `sleep` below),
 * ito__idle_wake_one (`wake_one`), ito__idle_wake (`wake_worker`),
 * ito__idle_stop_spinning (`got_work`), ito__idle_start_spinning,
 * unsleep_locked and ito__idle_waiter_arrives (the parker), with
 * idle_after_publish in src/core/idle.h (`publish_check_full`), the
 * scheduler's loop in src/core/sched.c (`sched`: ito__sched_loop) and the
 * x86-64 fork path (src/arch/ctx_x86_64_sysv_elf_gas.S, .Lfork_idle), with
 * the defaults ITO_DEQUE_FENCE=asymmetric (membarrier) and
 * ITO_WAIT_POLICY=passive. The I/O layer's threads wait through a poll
 * source (src/core/poll.c): io_waiters below is ito__idle_waiters, io_poller
 * the poll role, and the eventfd the poll sleeper's kick.
 * verify/check.sh runs it; docs/idle.md, "The Promela model", says what it
 * checks.
 *
 * Memory: x86-TSO where it matters.  A fork publishes its entry (slot and
 * tail) with plain stores and no fence, so the entry sits in the forking
 * worker's store buffer, buf[w], and may become visible only after that
 * worker has read the idle word.  A buffered store drains at any time
 * (process Drain), at any locked instruction of its own worker (flush: lock
 * xchg, xadd, cmpxchg, or), and for every worker at once at the sleeper's
 * membarrier (G2).  Every other store is a locked instruction, or is
 * followed by one before anybody can depend on it, so it is visible at once.
 *
 * Abstractions: a worker's deque and ready queue are one count of visible
 * entries, work[w], and taking one is atomic (the deque protocol is not
 * modelled).  Time is not modelled: a spinner makes at most ROUNDS rounds
 * between sleeps.  Timers, the stop flag, shutdown and fenced pop windows
 * are left out.  A busy worker may stay busy for ever (its process ends), so
 * that an entry it published must be run by somebody else.
 *
 * Steps: each atomic block below is one step.  Where it holds more than one
 * access to shared state, the comment says why that loses no behaviour (the
 * other accesses are private, or only seen under sleep_lock).
 *
 * Switches (spin -DNAME=value):
 *   N        workers, 2 to 4                   FORKS    forks in all
 *   READIES  fibers made ready by a worker     OUTSIDE  ... by a non-worker
 *   MAILS    fibers migrated to another worker (mail)
 *   ROUNDS   rounds a spinner makes at most between sleeps (>= 1)
 *   MIN_SPINNERS  spinners always allowed (src/core/idle.c has 2; 1 is Go's rule)
 *   BROKEN   0: the protocol as coded
 *            1: no heavy barrier (membarrier) at G2
 *            2: the last spinner to find work wakes no replacement
 *            3: the fork reads the idle word before it publishes
 *            4: wake_one stores x - 1 + (1 << 32), x read under the lock,
 *               where the code has a fetch_add (docs/idle.md's pseudo-code
 *               reads like such a store)
 *            5: (with SYMMETRIC) the fork does not fence before it reads
 *               the idle word (the code before the mark bit M existed)
 *   SYMMETRIC 1: ITO_DEQUE_FENCE=symmetric, no membarrier: G2 is the
 *               sleeper's own fence, and the mark bit M sends every fork to
 *               .Lfork_idle, which fences (lock or) before it reads S and Z
 *   PARKS    times a running thread parks on I/O (docs/dropin.md 7.3-7.5;
 *            one parked thread at a time; 0: no I/O, the model as before)
 *   BROKEN, with PARKS > 0:
 *            6: a waker that takes the poll sleeper off the list clears
 *               io_poller (the first draft of docs/dropin.md 7.4): another
 *               worker may take the role while the woken one still enters
 *               epoll_wait, and its epoll_wait reads the eventfd write
 *               meant for the woken one
 *            7: G1 never takes the poll role (nobody sleeps in epoll_wait)
 *            8: the leaving poll sleeper does not call wake_one (the
 *               handoff; passes: wake_one finds S > 0, the leaver itself)
 *            9: the parker that raises io_waiters from 0 wakes nobody
 *           10: G1 reads io_waiters before its fetch_add on the idle word
 *
 * Blocking I/O (PARKS > 0; docs/dropin.md 7.4, docs/idle.md "The Promela
 * model"): io_waiters counts parked threads, io_poller is the poll sleeper.
 * A sleeper that took the role at G1 sleeps in epoll_wait, which returns
 * when the kernel reports the parked thread's readiness or when the
 * eventfd (one for the runtime; sticky: its count stays until an
 * epoll_wait reads it) is set; a waker that takes the poll sleeper off the
 * list writes the eventfd instead of futex_wake, and leaves io_poller
 * alone: the holder gives the role up itself, under sleep_lock, once it
 * will call epoll_wait no more, so that two workers never wait in
 * epoll_wait on one eventfd count (BROKEN 6 is the other way).  A busy or
 * spinning worker polls without blocking before it steals.  Readiness goes
 * only to whoever calls epoll_wait.  The dispatcher puts the thread on its
 * own ready queue and decrements io_waiters (the thread is woken), then
 * publish_check; from there the thread is an ordinary entry.  Left out:
 * more than one parked thread at a time, directions, timeouts and the
 * poll sleeper's timer, the record lock and seq retry (parking is one
 * step), a home worker that is busy (7.5), the 61st-pass poll of a worker
 * with local work, and a worker busy for ever never polls.
 *   G1SPLIT  1: G1 in two steps with I/O (see G1)
 *   RETIRE   1: worker N-1 is an extra worker (docs/monitor.md): where it
 *            would sleep it may retire instead, ito__idle_leave: leave S
 *            (its fetch_sub), G2, the G3 scan; with something found it
 *            spins again and steals there, else it is gone for good.  Mail
 *            never goes to it (no thread has an extra as its home).
 *   BROKEN, with RETIRE:
 *           11: the retiring worker leaves S and goes without the scan
 *               (passes: the replacement it wakes scans)
 *           12: the last spinner retires and wakes no replacement (with
 *               PARKS: nobody takes the poll role)
 *   IOINV    0: do not check (5) in every state (the rejected variants
 *            then show an actual lost wake-up rather than the invariant)
 *
 * printf lines only show in a replayed trail (spin -t), never in pan.
 */

#ifndef N
#define N 3
#endif
#ifndef FORKS
#define FORKS 2
#endif
#ifndef READIES
#define READIES 1
#endif
#ifndef OUTSIDE
#define OUTSIDE 0
#endif
#ifndef MAILS
#define MAILS 0
#endif
#ifndef ROUNDS
#define ROUNDS 1
#endif
#ifndef SYMMETRIC
#define SYMMETRIC 0
#endif
#ifndef MIN_SPINNERS
#define MIN_SPINNERS 2  /* as src/core/idle.c */
#endif
#ifndef BROKEN
#define BROKEN 0
#endif
#ifndef PARKS
#define PARKS 0
#endif
#ifndef G1SPLIT
#define G1SPLIT 0
#endif
#ifndef RETIRE
#define RETIRE 0
#endif
#if RETIRE && MAILS > 0
#error "RETIRE: mail never goes to an extra worker; use MAILS=0"
#endif
#if (BROKEN == 11 || BROKEN == 12) && !RETIRE
#error "BROKEN 11 and 12 need RETIRE"
#endif
#ifndef IOINV
#define IOINV 1
#endif
#if BROKEN >= 6 && BROKEN <= 10 && PARKS == 0
#error "BROKEN 6 to 10 need PARKS > 0"
#endif

#if N < 2 || N > 4
#error "N must be 2, 3 or 4"
#endif

#define NONE 255

/* ---- shared state ------------------------------------------------------ */
byte S, Z;            /* ito__rt_idle = S << 32 | Z */
bit  sleep_lock;
byte list[N];         /* the sleeper list, a stack: list[nsleep - 1] is on top */
byte nsleep;
bool on_list[N];
bit  wake_word[N];    /* the futex word */
bool queued[N];       /* blocked in futex_wait on wake_word[w] */
byte ws_hint[N];      /* ws_hint + 1, 0 for none */
byte work[N];         /* visible entries: deque and ready queue */
byte buf[N];          /* fork entries still in worker w's store buffer */
byte mail[N];         /* visible mail for worker w */
byte mbuf[N];         /* a mail store in w's store buffer: target + 1, or 0 */
byte forks = FORKS;
byte readies = READIES;
byte mails = MAILS;
#if PARKS > 0
byte io_waiters;      /* threads parked waiting for fd readiness */
byte io_poller = NONE;/* the poll sleeper (in or on its way to epoll_wait) */
bit  evfd;            /* the eventfd's count is not 0 */
byte io_state;        /* the I/O thread: 0 not parked, 1 parked, 2 parked
                       * and its readiness is pending in the epoll set */
byte parks = PARKS;
byte npend;           /* ghost: workers about to call wake_one for I/O's
                       * sake, or inside G1 with the lock held */
byte npoll;           /* ghost: workers that took the role and may still
                       * call epoll_wait */
#endif

/* ---- ghosts: never read by the protocol ------------------------------- */
bool spinning[N];     /* w->spinning */
bool insleep[N];      /* w is in idle_sleep, past G1 */
bool gone[N];         /* w stays busy for ever */

/* w is counted in S if it spins, or if somebody took it off the list and
 * it has not yet returned from idle_sleep (where it sets spinning). */
#define SPN(i) ((spinning[i] || (insleep[i] && !on_list[i])) -> 1 : 0)
#define ONL(i) (on_list[i] -> 1 : 0)
#define BAD(i) ((spinning[i] && on_list[i]) || (on_list[i] && !insleep[i]))
#define MISSED(i) (!gone[i] && mail[i] > 0)
#if N == 2
#define NSPIN (SPN(0) + SPN(1))
#define NLIST (ONL(0) + ONL(1))
#define ANYBAD (BAD(0) || BAD(1))
#define WORK (work[0] + work[1] + buf[0] + buf[1])
#define IDLE (!gone[0] || !gone[1])
#define MAILMISSED (MISSED(0) || MISSED(1))
#elif N == 3
#define NSPIN (SPN(0) + SPN(1) + SPN(2))
#define NLIST (ONL(0) + ONL(1) + ONL(2))
#define ANYBAD (BAD(0) || BAD(1) || BAD(2))
#define WORK (work[0] + work[1] + work[2] + buf[0] + buf[1] + buf[2])
#define IDLE (!gone[0] || !gone[1] || !gone[2])
#define MAILMISSED (MISSED(0) || MISSED(1) || MISSED(2))
#else
#define NSPIN (SPN(0) + SPN(1) + SPN(2) + SPN(3))
#define NLIST (ONL(0) + ONL(1) + ONL(2) + ONL(3))
#define ANYBAD (BAD(0) || BAD(1) || BAD(2) || BAD(3))
#define WORK (work[0] + work[1] + work[2] + work[3] + buf[0] + buf[1] + buf[2] + buf[3])
#define IDLE (!gone[0] || !gone[1] || !gone[2] || !gone[3])
#define MAILMISSED (MISSED(0) || MISSED(1) || MISSED(2) || MISSED(3))
#endif

/* (3) The idle word counts the real spinners and sleepers.  Checked at the
 * end of every step that changes S, Z, the list or a worker's role (no
 * other step changes them). */
inline check_counts() {
  assert(S == NSPIN && Z == NLIST && Z == nsleep && !ANYBAD)
}

#if PARKS > 0
/* (5) The I/O invariant of docs/idle.md: while io_waiters > 0 and somebody
 * sleeps, a sleeper holds the poll role (it is in epoll_wait or on its way
 * there), or somebody will make one: a spinner (it passes G1 or, the last
 * one, wakes a sleeper when it finds work; S also counts woken workers not
 * yet back), a worker inside G1, or one about to call wake_one (npend). */
#define IO_OK (io_waiters == 0 || Z == 0 || io_poller != NONE || S > 0 || npend > 0)
#endif

inline who() {
  if
  :: me == NONE -> printf("outside: ")
  :: else -> printf("w%d: ", me)
  fi
}

/* A locked instruction of worker i drains i's store buffer first. */
inline flush(i) {
  if
  :: i < N ->
     work[i] = work[i] + buf[i];
     buf[i] = 0;
     if
     :: mbuf[i] > 0 -> mail[mbuf[i] - 1]++; mbuf[i] = 0
     :: else
     fi
  :: else
  fi
}

/* membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): every running thread of the
 * process executes a full barrier before the call returns. */
inline membarrier() {
  j = 0;
  do
  :: j < N -> flush(j); j++
  :: else -> break
  od;
  j = 0
}

/* unsleep_locked's list part: take v off the stack (sleep_lock held). */
inline unlist(v) {
  j = 0;
  do
  :: list[j] == v -> break
  :: else -> j++
  od;
  do
  :: j + 1 < nsleep -> list[j] = list[j + 1]; j++
  :: else -> break
  od;
  nsleep--;
  list[nsleep] = 0;
  on_list[v] = 0;
#if PARKS > 0 && BROKEN == 6
  if
  :: io_poller == v -> io_poller = NONE   /* whoever takes it off the list */
  :: else
  fi;
#endif
  j = 0
}

/* Wakes v, which a waker has just taken off the list (pw: v was the poll
 * sleeper): futex_wake, or a write to the eventfd, whose count stays until
 * an epoll_wait reads it. */
#if PARKS > 0
#define WAKE(v) if \
                :: pw -> evfd = 1; pw = 0; who(); \
                   printf("writes the eventfd (to wake w%d)\n", v) \
                :: else -> queued[v] = 0 \
                fi
#define WAS_POLLER(v) pw = (v == io_poller)
#define PEND_DONE() if :: mypend -> mypend = 0; npend-- :: else fi
#else
#define WAKE(v) queued[v] = 0
#define WAS_POLLER(v) skip
#define PEND_DONE() skip
#endif

/* ito__idle_wake_one(hint), called by me (NONE: not a worker).  Steps: take the
 * lock and read the word and the list top (and unlock at once when nobody
 * needs waking); unsleep_locked: its fetch_add (the list work, only seen
 * under the lock, goes with it); the release store of wake_word with the
 * unlock; futex_wake(&v->wake_word) after the lock. */
inline wake_one(h) {
  atomic {
    sleep_lock == 0 -> flush(me);
    who();
    if
    :: S != 0 || Z == 0 || nsleep == 0 ->
       PEND_DONE();
       printf("wake_one: S=%d Z=%d, nobody to wake\n", S, Z)
    :: else ->
       sleep_lock = 1; v = list[nsleep - 1];
#if PARKS > 0
       /* a futex sleeper rather than the poll sleeper */
       if
       :: v == io_poller && nsleep > 1 -> v = list[nsleep - 2]
       :: else
       fi;
#endif
#if BROKEN == 4
       x_s = S; x_z = Z;
#endif
       printf("wake_one: S=%d Z=%d, takes w%d off the list\n", S, Z, v)
    fi
  };
  if
  :: v != NONE ->
#if BROKEN == 4
     d_step { unlist(v); S = x_s + 1; Z = x_z - 1; x_s = 0; x_z = 0;
              ws_hint[v] = h + 1; check_counts() };
#else
     d_step { WAS_POLLER(v); unlist(v); S++; Z--;
              ws_hint[v] = (h == NONE -> 0 : h + 1); PEND_DONE(); check_counts() };
#endif
     atomic { wake_word[v] = 1; sleep_lock = 0 };
     atomic { WAKE(v); v = NONE }    /* futex_wake, or the eventfd write */
  :: else
  fi
}

/* P3 after a full fence (idle_after_publish(hint, true)): one load of the word. */
inline publish_check_full(h) {
  atomic {
    who(); printf("P3 (fenced) reads the idle word: S=%d Z=%d\n", S, Z);
    ok = (S == 0 && Z > 0)
  };
  if
  :: ok -> ok = 0; wake_one(h)
  :: else
  fi
}

/* P3 of the assembly fork path, with no fence before it: two loads, the
 * whole word and then its S half (cmpq $0, ito__rt_idle; jne .Lfork_idle;
 * .Lfork_idle: cmpl $0, ito__rt_idle+4; je .Lfork_wake). */
inline fork_check() {
#if SYMMETRIC && BROKEN != 5
  /* the word is never 0 (M): .Lfork_idle fences, then reads the counts */
  atomic {
    flush(me);
    printf("w%d: P3 (symmetric: fenced) reads the idle word: S=%d Z=%d\n", me, S, Z);
    ok = (S != 0 || Z != 0)
  };
#else
  atomic {
    printf("w%d: P3 (no fence) reads the idle word: S=%d Z=%d\n", me, S, Z);
    ok = (S != 0 || Z != 0)
  };
#endif
  if
  :: ok ->
     atomic { ok = (S == 0); printf("w%d: P3 reads S again: %d\n", me, S) };
     if
     :: ok -> ok = 0; wake_one(me)
     :: else
     fi
  :: else
  fi
}

/* idle_sleep returns: w->spinning = 1 (whoever took w off the list counted
 * it in S) and w will try ws_hint first.  Nobody writes ws_hint[me] once w
 * is off the list, so this goes with the step that finds it off. */
inline back_as_spinner() {
  spn = 1; spinning[me] = 1; insleep[me] = 0;
  hint = ws_hint[me]; ws_hint[me] = 0;
  found = 0;
  check_counts()
}

/* try_victim(x): a steal takes an entry if x has one visible (the steal
 * lock is a locked instruction). */
#define STEAL(x) work[x] > 0 -> flush(me); work[x]--; \
                 printf("w%d: steals an entry of w%d\n", me, x); ok = 1

#if PARKS > 0
/* The poller took the readiness event (under the fd record's lock): the
 * thread is woken (io_waiters--) onto the poller's own ready queue (7.5:
 * home is the poller, or asleep; home busy is not modelled), then
 * publish(w, true) (idle_after_publish), the fenced P2-P3. */
inline dispatch() {
  atomic {
    flush(me); work[me]++; io_waiters--;
    printf("w%d: dispatches the I/O thread to its ready queue: io_waiters=%d\n", me, io_waiters)
  };
  publish_check_full(me)
}
#endif

/* G1's list part and the fetch_add (sleep_lock held). */
inline G1_PUSH() {
  flush(me);
  list[nsleep] = me; nsleep++;
  on_list[me] = 1;
  wake_word[me] = 0;
  Z++;
  if
  :: spn -> S--
  :: else
  fi;
  spn = 0; spinning[me] = 0;
  insleep[me] = 1;
  rounds = 0;
  check_counts();
  printf("w%d: G1 goes on the sleeper list: S=%d Z=%d\n", me, S, Z)
}

#if PARKS > 0
/* G1 takes the poll role if io_waiters (read into iow) > 0 and nobody has
 * it (sleep_lock held). */
inline TAKE_ROLE() {
#if BROKEN != 7
  if
  :: iow > 0 && io_poller == NONE -> io_poller = me; ispoll = 1;
     npoll++;
#if BROKEN != 6
     assert(npoll == 1);     /* nobody else may still call epoll_wait */
#endif
     printf("w%d: G1 takes the poll role (io_waiters=%d)\n", me, iow)
  :: else
  fi
#else
  skip
#endif
}
#endif

#if PARKS > 0
/* A poll sleeper that will call epoll_wait no more gives up the role
 * itself (sleep_lock held; at G4, or after a wake-up: a waker leaves
 * io_poller alone).  The handoff: if io_waiters > 0 it will call wake_one
 * (ok). */
inline LEAVE_ROLE() {
  if
  :: ispoll ->
     ispoll = 0; npoll--;
#if BROKEN != 6
     if
     :: io_poller == me -> io_poller = NONE
     :: else
     fi;
#endif
#if BROKEN != 8
     ok = (io_waiters > 0);
#endif
     printf("w%d: leaves the poll role: io_waiters=%d\n", me, io_waiters)
  :: else
  fi
}
#endif

#include "idle_worker.pml"

/* A thread that is not a worker makes a fiber ready: ito__ready_list pushes
 * it on some worker's ready queue under its lock, then publish(t, true). */
active proctype Outside() {
  byte me = NONE, t, v = NONE, j;
#if BROKEN == 4
  byte x_s, x_z;
#endif
  bool ok;
#if PARKS > 0
  bool pw, mypend;
#endif
#if OUTSIDE > 0
  byte n = OUTSIDE;
again:
  atomic {
    select (t : 0 .. N - 1); work[t]++; n--;
    printf("outside: puts a ready fiber on w%d's ready queue\n", t)
  };
  publish_check_full(t);
  if
  :: n > 0 -> goto again
  :: else -> t = 0
  fi
#endif
}

/* Store buffers drain on their own, in order (a mail store is only ever
 * buffered alone: it follows a locked instruction). */
inline drain(i) {
  atomic { buf[i] > 0 -> buf[i]--; work[i]++;
           printf("w%d's buffered entry becomes visible\n", i) }
}
inline drain_mail(i) {
  atomic { mbuf[i] > 0 -> mail[mbuf[i] - 1]++; mbuf[i] = 0 }
}
active proctype Drain() {
end_drain:
  do
  :: drain(0)
  :: drain(1)
  :: drain_mail(0)
  :: drain_mail(1)
#if N > 2
  :: drain(2)
  :: drain_mail(2)
#endif
#if N > 3
  :: drain(3)
  :: drain_mail(3)
#endif
  od
}

#if PARKS > 0
/* The kernel: some time after the thread parked, its fd becomes ready; the
 * event waits in the epoll set for whoever calls epoll_wait next. */
active proctype Kernel() {
end_kernel:
  do
  :: atomic { io_state == 1 -> io_state = 2;
              printf("kernel: the fd is ready: an event waits in the epoll set\n") }
  od
}

#if IOINV
/* (5), checked in every state (npend: see IO_OK). */
active proctype IoInvariant() {
end_ioinv:
  atomic {
    !IO_OK ->
    printf("io_waiters=%d, S=%d Z=%d, nobody in (or on the way to) epoll_wait\n",
           io_waiters, S, Z);
    assert(IO_OK)
  }
}
#endif
#define IOLOST (io_state != 0)
#else
#define IOLOST 0
#endif

/* (1) No lost wake-up.  When nothing can move any more (every worker has
 * stayed busy or sleeps in futex_wait, since a spinner can always move), no
 * entry may be left while some worker sleeps, and no mail for a sleeper.
 * With I/O: no parked thread whose readiness waits in the epoll set (the
 * kernel has always delivered it by then) while some worker sleeps. */
active proctype Lost() {
end_lost:
  atomic {
    timeout ->
    printf("nothing can move: %d entries left, %d mail, I/O thread parked: %d, a worker asleep: %d\n",
           WORK, MAILMISSED, IOLOST, IDLE);
    assert(!(((WORK > 0 || IOLOST) && IDLE) || MAILMISSED))
  }
}

init {
  byte i;
  atomic {
    for (i : 0 .. N - 1) {
      run Worker(i)
    }
  }
}
