/* The events a recorder sees (src/core/hooks.h). A standalone header: the
 * drop-in interface hands recorders these events. */
#ifndef ITO_CORE_EVENT_H
#define ITO_CORE_EVENT_H

enum ito_event_kind {
  ITO_EV_SPAWN = 1, /* a fork (obj: the task group; peer: 0) or a task spawn (obj: NULL) */
  ITO_EV_STEAL,     /* a thief took an entry (obj: the entry; peer: the victim's id) */
  ITO_EV_JOIN,      /* a task group's join (obj: the group) or a thread join (obj: the
                       descriptor; peer: 1) returns */
  ITO_EV_CREATE,    /* a lightweight thread was created (obj: its descriptor) */
  ITO_EV_PARK,      /* a fiber parks (obj: the fiber) */
  ITO_EV_RESUME,    /* a parked or queued fiber runs again (obj: the fiber) */
  ITO_EV_SLEEP,     /* a worker goes to sleep */
  ITO_EV_WAKE,      /* a worker leaves its sleep */
  /* The events below let a recorder follow the critical path (the
   * profiler, docs/profile.md); the fields they fill are listed in
   * docs/hooks.md. */
  ITO_EV_FORK_BACK,   /* a fork's child returned and its parent took its record back (obj:
                         the group; rec: the record; aux: its deque index; worker: the fork's) */
  ITO_EV_FORK_TAKEN,  /* a fork's child returned and its record had been taken (as FORK_BACK) */
  ITO_EV_TAKE,        /* an entry was taken from a deque to run (rec: the tagged entry; aux:
                         its index; peer: the deque's owner) */
  ITO_EV_LEAVE,       /* the running code left its stack for the scheduler (obj: the fiber;
                         peer: why, ACT_* of sched.h) */
  ITO_EV_RUN,         /* the scheduler runs a fiber, or a create record's creator (obj: the
                         fiber; peer: 1 for a creator resumed from a create record) */
  ITO_EV_READY,       /* a fiber was made ready to run (obj: the fiber) */
  ITO_EV_EXIT,        /* a lightweight thread ended (obj: its descriptor) */
  ITO_EV_CREATE_BACK, /* a thread ended with its creator's record still there: the creator
                         goes on, on this worker (obj: the thread's fiber) */
  ITO_EV_IDLE,        /* a worker found nothing to run and starts to spin */
  ITO_EV_STEAL_FAIL,  /* a steal attempt on a victim found nothing (peer: the victim) */
  ITO_EV_WAIT_THIEF,  /* the owner of a deque waits for a thief that holds its steal lock
                         (obj: the deque; peer: 0 as the wait begins, 1 as it ends) */
  ITO_EV_KINDS
};

struct ito_event {
  int kind;          /* enum ito_event_kind */
  int worker;        /* the worker it happened on, or -1 outside the workers */
  const void *obj;   /* as the kind says */
  long peer;         /* as the kind says */
  const void *rec;   /* a fork or create record, or a deque entry, as the kind says */
  unsigned long aux; /* a deque index, as the kind says */
};

#endif
