/* Process-wide set*id with lightweight threads (setxid.c): the system call
 * nr with its arguments on every OS thread of the process. 0, or -errno
 * (the calling thread's failure, before any other thread changed, or the
 * first failure of another thread); 1 when it did nothing because
 * lightweight threads run on their workers' thread-local storage
 * (ito__tls_mode 0), where glibc's own set*id is the right call. */
#ifndef ITO_CORE_SETXID_H
#define ITO_CORE_SETXID_H

#include "base.h"
#include "posix_hooks.h"

HIDDEN long ito__setxid(long nr, long a, long b, long c);

/* glibc's own broadcast, for the set*id calls libc makes inside itself
 * (ITO_TLS=thread; setxid.c, second part):
 *  - _glibc_start, at each start with blocks per thread: finds glibc's
 *    lists of threads; -1 where glibc is not laid out as verified.
 *  - _glibc_install, at each start once the runtime's OS threads exist
 *    (glibc installs its handler at its first thread): the handler that
 *    answers glibc's signal on the descriptor it signalled.
 *  - _represent: main's OS thread is named on glibc's list by own_tp
 *    (worker 0's scheduler block) too, beside main_tp (main's descriptor,
 *    whose tid follows the root); called on that OS thread, at start and
 *    (child != 0) in a child of fork, where own_tp == main_tp says that
 *    worker 0 runs on its own descriptor.
 *  - _unrepresent: worker 0's block off the list (the runtime stops). */
HIDDEN int ito__setxid_glibc_start(void);
HIDDEN void ito__setxid_glibc_install(void);
HIDDEN void ito__setxid_represent(void *own_tp, void *main_tp, int child);

#endif
