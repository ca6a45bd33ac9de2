/* A poll source (src/core/poll.h). A standalone header: the drop-in
 * interface registers sources with it (the MPI library's requests). */
#ifndef ITO_CORE_POLL_SOURCE_H
#define ITO_CORE_POLL_SOURCE_H

struct ito_poll_source {
  /* the source's */
  const char *name;
  /* >= 0: a descriptor that is readable while poll has something to do
   * (level-triggered); a sleeper waits on it. -1: none, the source is
   * polled with back-off while threads wait for it. */
  int fd;
  /* Handles what is ready without waiting; returns how many threads it
   * made ready. May run on several workers at once. */
  int (*poll)(void *arg);
  void *arg;
  /* fd < 0: the first and the longest gap between two polls while threads
   * wait (the gap doubles while polls find nothing, and starts again at
   * the first after one found something). */
  long backoff_min_ns, backoff_max_ns;
  /* the runtime's */
  struct ito_poll_source *next;
  int waiters;
  long backoff_ns;
  long long due_ns; /* CLOCK_MONOTONIC: the next poll of a back-off source */
};

#endif
