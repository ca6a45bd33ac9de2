/* The set*id calls: process-wide through the runtime's own broadcast
 * (src/core/setxid.c), since glibc's acts on thread descriptors and a
 * lightweight thread with its own thread-local storage runs on a block
 * glibc does not know (docs/tls.md, "set*id"). Same results as glibc's:
 * 0, or -1 with errno. */
#include "shim.h"

#include <grp.h>
#include <sys/syscall.h>

/* 1 with *ret set when the runtime made the call; 0 when glibc's own
 * broadcast is the right one (lightweight threads on their workers'
 * blocks: ITO_TLS=worker or its fallback). */
static int setxid(long nr, long a, long b, long c, int *ret) {
  long r = ito__dropin_setxid(nr, a, b, c);
  if (r == 1) return 0;
  if (r < 0) {
    errno = (int)-r;
    *ret = -1;
  } else {
    *ret = 0;
  }
  return 1;
}
#define SETXID(name, nr, a, b, c, ...)           \
  do {                                           \
    int ret_;                                    \
    if (setxid(nr, a, b, c, &ret_)) return ret_; \
    return ito__pt_real.name(__VA_ARGS__);       \
  } while (0)

ITO_PT_EXPORT int setuid(uid_t u) {
  ITO_PT_ENTER(setuid, u);
  SETXID(setuid, SYS_setuid, (long)u, 0, 0, u);
}
ITO_PT_EXPORT int setgid(gid_t g) {
  ITO_PT_ENTER(setgid, g);
  SETXID(setgid, SYS_setgid, (long)g, 0, 0, g);
}
ITO_PT_EXPORT int seteuid(uid_t u) {
  ITO_PT_ENTER(seteuid, u);
  if (u == (uid_t)-1) {
    errno = EINVAL;
    return -1;
  }
  SETXID(seteuid, SYS_setresuid, -1L, (long)u, -1L, u);
}
ITO_PT_EXPORT int setegid(gid_t g) {
  ITO_PT_ENTER(setegid, g);
  if (g == (gid_t)-1) {
    errno = EINVAL;
    return -1;
  }
  SETXID(setegid, SYS_setresgid, -1L, (long)g, -1L, g);
}
ITO_PT_EXPORT int setreuid(uid_t r, uid_t e) {
  ITO_PT_ENTER(setreuid, r, e);
  SETXID(setreuid, SYS_setreuid, (long)(int)r, (long)(int)e, 0, r, e);
}
ITO_PT_EXPORT int setregid(gid_t r, gid_t e) {
  ITO_PT_ENTER(setregid, r, e);
  SETXID(setregid, SYS_setregid, (long)(int)r, (long)(int)e, 0, r, e);
}
ITO_PT_EXPORT int setresuid(uid_t r, uid_t e, uid_t s) {
  ITO_PT_ENTER(setresuid, r, e, s);
  SETXID(setresuid, SYS_setresuid, (long)(int)r, (long)(int)e, (long)(int)s, r, e, s);
}
ITO_PT_EXPORT int setresgid(gid_t r, gid_t e, gid_t s) {
  ITO_PT_ENTER(setresgid, r, e, s);
  SETXID(setresgid, SYS_setresgid, (long)(int)r, (long)(int)e, (long)(int)s, r, e, s);
}
ITO_PT_EXPORT int setgroups(size_t n, const gid_t *list) {
  ITO_PT_ENTER(setgroups, n, list);
  SETXID(setgroups, SYS_setgroups, (long)n, (long)list, 0, n, list);
}
