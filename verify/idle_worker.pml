/*
 * verify/idle_worker.pml: the worker of the idle-worker model, included
 * by verify/idle.pml (whose head says what is modelled and how): the
 * scheduler's loop, the sleep (G1-G5), the wakes and the poll role.
 */
proctype Worker(byte me) {
  byte v = NONE, j, k, found, rounds, hint;
#if BROKEN == 4
  byte x_s, x_z;
#endif
  bool ok, top;
  bool spn;             /* w->spinning; the ghost spinning[me] copies it */
#if PARKS > 0
  bool pw;              /* the worker being woken was the poll sleeper */
  bool mypend;          /* counted in npend */
  bool ispoll;          /* took the poll role at G1 (a local of idle_sleep) */
  bool gotio;           /* epoll_wait gave it the readiness, not dispatched */
  byte iow;             /* io_waiters as G1 read it */
#endif

  if
  :: me == 0 -> goto running    /* worker 0 runs the root task */
  :: else -> goto sched
  fi;

running:
  do
  :: /* a fork: P1 (slot and tail: plain stores), no fence P2, then P3 */
#if BROKEN == 3
     atomic { forks > 0 -> forks-- };
     fork_check();
     atomic { buf[me]++; printf("w%d: forks: the entry sits in its store buffer\n", me) }
#else
     atomic { forks > 0 -> forks--; buf[me]++;
              printf("w%d: forks: the entry sits in its store buffer\n", me) };
     fork_check()
#endif
  :: /* it makes a fiber ready: ito__ready_list pushes it on this worker's
      * ready queue under its lock, then publish(w, true) */
     atomic { readies > 0 -> readies--; flush(me); work[me]++;
              printf("w%d: puts a ready fiber on its own ready queue\n", me) };
     publish_check_full(me)
#if PARKS > 0
  :: /* the running thread parks on I/O (7.3): linked on the fd's wait list,
      * io_waiters++ (a locked add; readiness may come from then on), then
      * the worker goes to its scheduler.  If it raised io_waiters from 0
      * while Z > 0 and nobody has the poll role, it calls wake_one. */
     atomic {
       parks > 0 && io_state == 0 -> parks--;
       flush(me);
       ok = (io_waiters == 0);
       io_waiters++; io_state = 1;
#if BROKEN == 9
       ok = 0;
#endif
       if
       :: ok -> mypend = 1; npend++
       :: else
       fi;
       printf("w%d: its thread parks on I/O: io_waiters=%d\n", me, io_waiters)
     };
     if
     :: ok ->
        atomic {
          ok = (Z > 0);
          printf("w%d: the parker reads Z=%d\n", me, Z);
          if
          :: !ok -> PEND_DONE()
          :: else
          fi
        };
        if
        :: ok ->
           atomic {
             ok = (io_poller == NONE);
             printf("w%d: the parker reads io_poller: %d (255: none)\n", me, io_poller);
             if
             :: !ok -> PEND_DONE()
             :: else
             fi
           };
           if
           :: ok -> ok = 0; wake_one(NONE)
           :: else
           fi
        :: else
        fi
     :: else
     fi;
     goto sched
#endif
  :: /* ACT_MIGRATE: the running fiber moves to worker v as mail (under v's
      * mail_lock), then ito__idle_wake(v); this worker goes idle */
     atomic {
       mails > 0 -> mails--;
       select (k : 1 .. N - 1);
       v = (me + k) % N; k = 0;
       flush(me);              /* spin_lock(&v->mail_lock) */
       mbuf[me] = v + 1;       /* the mail store, in the store buffer */
       printf("w%d: mails its fiber to w%d\n", me, v)
     };
     atomic {                  /* wake_worker: lock, look, unsleep_locked */
       sleep_lock == 0 -> sleep_lock = 1;
       flush(me);
       if
       :: on_list[v] ->
          WAS_POLLER(v); unlist(v); S++; Z--; ws_hint[v] = 0; check_counts();
          printf("w%d: wake_worker takes w%d off the list\n", me, v)
       :: else -> sleep_lock = 0; v = NONE
       fi
     };
     if
     :: v != NONE ->
        atomic { wake_word[v] = 1; sleep_lock = 0 };
        atomic { WAKE(v); v = NONE }    /* futex_wake, or the eventfd */
     :: else
     fi;
     goto sched
  :: atomic { printf("w%d: its task ends\n", me); goto sched }
  :: atomic { printf("w%d: stays busy for ever\n", me); gone[me] = 1; goto forever }
  od;

sched:  /* ito__sched_loop, a round: run_local (mail), pop_tail (the
         * youngest entry may still be in our own store buffer), rq_pop.
         * A simplification: the code loads mail, then the deque, then the
         * ready queue; here the three are one step. */
  if
  :: atomic { mail[me] > 0 -> flush(me); mail[me]--;
              printf("w%d: takes its mail\n", me) }; goto got_work
  :: atomic { buf[me] > 0 -> buf[me]--;
              printf("w%d: pops its own entry\n", me) }; goto got_work
  :: atomic { buf[me] == 0 && work[me] > 0 -> work[me]--;
              printf("w%d: pops its own entry\n", me) }; goto got_work
#if PARKS > 0
  :: else ->
     /* nothing local: epoll_wait(ep, ev, 64, 0), if io_waiters > 0 and the
      * poll try-lock admits it.  Always, here: a poll that the try-lock
      * skips behaves as one made before the kernel's event, which the
      * model has too (readiness is seen by pollers only). */
     atomic {
       rounds++;
       if
       :: io_state == 2 -> io_state = 0; gotio = 1;
          printf("w%d: its non-blocking epoll_wait gets the readiness\n", me)
       :: else
       fi
     }
  fi;
  if
  :: gotio -> gotio = 0; dispatch(); goto sched
  :: else
  fi;
#else
  :: else -> rounds++
  fi;
#endif
  if
  :: !spn ->
     /* start_spinning: x = load; until a CAS from x to x + (1 << 32)
      * succeeds, give up if S >= MIN_SPINNERS && 2S >= busy,
      * busy = N - S - Z - 1.
      * One step, at the successful CAS or at the load that gave up: a
      * failed CAS only reloads x. */
     atomic {
       if
       :: S >= MIN_SPINNERS && 2 * S >= N - S - Z - 1 ->
          top = 1;
          printf("w%d: may not spin (S=%d Z=%d)\n", me, S, Z)
       :: else ->
          flush(me); S++; spn = 1; spinning[me] = 1; check_counts();
          printf("w%d: starts spinning: S=%d Z=%d\n", me, S, Z)
       fi
     };
     if
     :: top -> goto sleep
     :: else
     fi
  :: else
  fi;

steal:
  /* ws_hint first (a woken worker, or one whose scan found work, tries
   * there), then random victims: any of the others, or none (the random
   * choice missed them).  One step: every victim may be missed anyway, so
   * reading them one by one would add no behaviour. */
  atomic {
    if
    :: hint > 0 && hint - 1 != me && work[hint - 1] > 0 ->
       flush(me); work[hint - 1]--; ok = 1;
       printf("w%d: steals an entry of w%d (ws_hint)\n", me, hint - 1)
    :: else ->
       if
       :: STEAL((me + 1) % N)
#if N > 2
       :: STEAL((me + 2) % N)
#endif
#if N > 3
       :: STEAL((me + 3) % N)
#endif
       :: skip
       fi
    fi;
    hint = 0
  };
  if
  :: ok -> ok = 0; goto got_work
  :: else
  fi;
  /* end of a round: another one, or the spin time has run out.  rounds
   * counts the rounds begun since the last sleep; the spin time is looked
   * at every 16 rounds only, so a sleep follows at least one new round. */
  if
  :: rounds < ROUNDS -> goto sched
  :: rounds > 0 -> top = 0; goto sleep
  fi;

sleep:  /* ito__idle_sleep(w) */
#if RETIRE
  /* an extra worker with nothing to do may retire instead (the monitor's
   * count allowing it is not modelled: any time) */
  if
  :: me == N - 1 ->
     atomic {
       flush(me);
       if
       :: spn -> ok = (S == 1 && Z > 0); S--
       :: else
       fi;
       spn = 0; spinning[me] = 0; rounds = 0;
#if PARKS > 0 && BROKEN != 12
       if
       :: ok -> mypend = 1; npend++
       :: else
       fi;
#endif
       check_counts();
       printf("w%d: leaves S to retire: S=%d Z=%d\n", me, S, Z)
     };
#if BROKEN == 12
     ok = 0;
#endif
     /* the last spinner leaves while others sleep: a replacement, as
      * ito__idle_stop_spinning (else nobody may take the poll role) */
     if
     :: ok -> ok = 0; wake_one(NONE)
     :: else
     fi;
#if BROKEN == 11
     atomic { gone[me] = 1; printf("w%d: retires without a scan\n", me) };
     goto forever;
#else
#if SYMMETRIC
     d_step { flush(me) };
#else
     d_step { membarrier(); printf("w%d: G2 before retiring\n", me) };
#endif
     atomic {
       found = 0;
       for (k : 1 .. N) {
         if
         :: found == 0 && work[(me + k) % N] > 0 -> found = (me + k) % N + 1
         :: else
         fi
       };
       k = 0;
       if
       :: found != 0 ->
          flush(me); S++; spn = 1; spinning[me] = 1; hint = found; found = 0;
          check_counts();
          printf("w%d: its last scan finds work: spins again\n", me)
       :: else ->
          gone[me] = 1;
          printf("w%d: its last scan finds nothing: retires\n", me)
       fi
     };
     if
     :: gone[me] -> goto forever
     :: else -> goto steal
     fi
#endif
  :: else
  fi;
#endif
  /* G1: lock; push; wake_word = 0; the fetch_add; unlock.  Only the
   * fetch_add is read without the lock.  With I/O, G1 also reads
   * io_waiters (changed without the lock) after the fetch_add, and takes
   * the poll role (io_poller = w) if io_waiters > 0 and nobody has it.
   * Still one step: the load follows the fetch_add, a locked instruction,
   * and io_poller is read without the lock only by a parker, which, seeing
   * the role a moment late, makes a wake_one that the model has anyway (its
   * two loads are two steps).  -DG1SPLIT=1 makes it two steps (the lock
   * held between them), as BROKEN 10 must. */
#if PARKS > 0 && (G1SPLIT || BROKEN == 10)
  atomic {
    sleep_lock == 0 -> sleep_lock = 1; mypend = 1; npend++;
#if BROKEN == 10
    flush(me);
    iow = io_waiters;
    printf("w%d: G1 locks, reads io_waiters=%d first\n", me, iow)
  };
  atomic {
    G1_PUSH();
#else
    G1_PUSH()
  };
  atomic {
    iow = io_waiters;
#endif
    TAKE_ROLE();
    iow = 0; PEND_DONE(); sleep_lock = 0;
    check_counts()
  };
#else
  atomic {
    sleep_lock == 0 ->
    G1_PUSH();
#if PARKS > 0
    iow = io_waiters;
    TAKE_ROLE();
    iow = 0;
    check_counts()
#endif
  };
#endif
  /* G2: ito__heavy_barrier() (src/core/os.c) */
#if SYMMETRIC
  /* G2 is the sleeper's own full fence: its own buffer (G1's locked
   * instruction has drained it already) */
  d_step { flush(me); printf("w%d: G2 (symmetric) own fence\n", me) };
#elif BROKEN != 1
  d_step { membarrier(); printf("w%d: G2 membarrier: every store buffer drained\n", me) };
#endif
  /* G3: the scheduler's scan (sched.c, given to idle.c as ops.scan): its own mail (the stop flag, timers: not modelled), then
   * every worker's deque and ready queue, from me + 1 round to me */
  atomic {
    if
    :: mail[me] > 0 -> found = NONE
    :: else -> found = 0
    fi;
    k = 1
  };
  do
  :: found == 0 && k <= N ->
     atomic {
       if
       :: work[(me + k) % N] > 0 -> found = (me + k) % N + 1
       :: else
       fi;
       k++
     }
  :: else ->
     atomic {
       k = 0;
       if
       :: found == 0 -> printf("w%d: G3 scan finds nothing\n", me)
       :: found == NONE -> printf("w%d: G3 scan finds its mail\n", me)
       :: else -> printf("w%d: G3 scan finds an entry of w%d\n", me, found - 1)
       fi
     };
     break
  od;
  /* G5: while (!found && !wake_word) futex_wait(&wake_word, 0, no timeout).
   * The load of wake_word and futex_wait's own check are one step: a
   * futex_wait that finds 1 returns at once and the loop reads 1 again.
   * The poll sleeper (the role taken at G1, a local of idle_sleep) calls
   * epoll_wait instead: it returns once the eventfd's count is not 0 (read
   * back to 0 then: a stale write only loops) or the readiness is pending,
   * which it takes; then it leaves like G4 and dispatches. */
  do
  :: found != 0 -> break
  :: else ->
     atomic {
       if
       :: wake_word[me] != 0 -> back_as_spinner(); ok = 1;
          printf("w%d: woken, spins: S=%d Z=%d\n", me, S, Z)
#if PARKS > 0
       :: else ->
          if
          :: ispoll -> printf("w%d: G5 epoll_wait\n", me)
          :: else -> queued[me] = 1; printf("w%d: G5 futex_wait\n", me)
          fi
#else
       :: else -> queued[me] = 1;
          printf("w%d: G5 futex_wait\n", me)
#endif
       fi
     };
     if
     :: ok -> ok = 0; break
     :: else
     fi;
#if PARKS > 0
     if
     :: ispoll ->
end_epoll:
        atomic {
          evfd || io_state == 2 ->
          if
          :: io_state == 2 -> io_state = 0; gotio = 1; found = NONE;
             printf("w%d: epoll_wait returns the readiness (eventfd %d)\n", me, evfd)
          :: else ->
             printf("w%d: epoll_wait returns the eventfd\n", me)
          fi;
          evfd = 0
        }
     :: else ->
end_asleep:
        !queued[me]
     fi
#else
end_asleep:
     !queued[me]
#endif
  od;
  /* G4: leave the list unless a waker already took us off it */
  if
  :: found != 0 ->
     atomic {
       sleep_lock == 0 ->
       flush(me);
       if
       :: on_list[me] ->
          unlist(me); S++; Z--;
          ws_hint[me] = (found == NONE -> 0 : found);
          wake_word[me] = 1;
          check_counts()
       :: else
       fi;
       back_as_spinner();
#if PARKS > 0
       LEAVE_ROLE();
#endif
       printf("w%d: G4 spins again: S=%d Z=%d\n", me, S, Z)
     }
  :: else
  fi;
#if PARKS > 0
  /* Woken (no G4): it gives up the role now, under sleep_lock. */
  if
  :: ispoll -> atomic { sleep_lock == 0 -> flush(me); LEAVE_ROLE() }
  :: else
  fi;
  /* the handoff */
  if
  :: ok -> ok = 0; wake_one(NONE)
  :: else
  fi;
  /* then it dispatches what epoll_wait gave it */
  if
  :: gotio -> gotio = 0; dispatch(); top = 0; goto sched
  :: else
  fi;
#endif
  if
  :: top -> top = 0; goto steal
  :: else -> goto sched
  fi;

got_work:  /* ito__idle_stop_spinning: a spinner stops spinning; the last one to do so
            * wakes a replacement while anybody sleeps */
progress_take:
  if
  :: spn ->
     atomic {
       flush(me);
       ok = (S == 1 && Z > 0);
       S--; spn = 0; spinning[me] = 0;
#if PARKS > 0 && BROKEN != 2
       if
       :: ok -> mypend = 1; npend++
       :: else
       fi;
#endif
       check_counts();
       printf("w%d: stops spinning: S=%d Z=%d\n", me, S, Z)
     };
#if BROKEN == 2
     ok = 0;
#endif
     if
     :: ok -> ok = 0; wake_one(me)
     :: else
     fi
  :: else
  fi;
  rounds = 0;
  goto running;

forever:
  skip
}
