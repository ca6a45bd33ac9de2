/* What the drop-in test programs share: a failure report naming the
 * program (DROPIN_PROG, defined before this header), errno values by name
 * for the deterministic output both.sh compares, and a check of a pthread
 * return code. Plain C, no ito header: the programs must stay ordinary
 * pthread programs. */
#ifndef ITO_DROPIN_H
#define ITO_DROPIN_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef DROPIN_PROG
#error "define DROPIN_PROG (the program's name) before including dropin.h"
#endif

#define FAIL(...)                                                \
  do {                                                           \
    fprintf(stderr, DROPIN_PROG ": FAILED: " __VA_ARGS__);      \
    fputc('\n', stderr);                                         \
    exit(1);                                                     \
  } while (0)

static inline const char *code_name(int rc) {
  switch (rc) {
    case 0: return "0";
    case EAGAIN: return "EAGAIN";
    case EBUSY: return "EBUSY";
    case EDEADLK: return "EDEADLK";
    case EINVAL: return "EINVAL";
    case ENOMEM: return "ENOMEM";
    case ENOTSUP: return "ENOTSUP";
    case EPERM: return "EPERM";
    case ESRCH: return "ESRCH";
    case ETIMEDOUT: return "ETIMEDOUT";
    default: {
      static char buf[32];
      snprintf(buf, sizeof buf, "error %d", rc);
      return buf;
    }
  }
}

/* A pthread call that must succeed. */
static inline void must(const char *label, int rc) {
  if (rc != 0) FAIL("%s gave %s", label, code_name(rc));
}

#endif
