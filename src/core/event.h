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
  ITO_EV_KINDS
};

struct ito_event {
  int kind;        /* enum ito_event_kind */
  int worker;      /* the worker it happened on, or -1 outside the workers */
  const void *obj; /* as the kind says */
  long peer;       /* as the kind says */
};

#endif
