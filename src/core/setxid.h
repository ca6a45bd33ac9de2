/* Process-wide set*id with lightweight threads (setxid.c): the system call
 * nr with its arguments on every OS thread of the process. 0, or -errno
 * (the calling thread's failure, before any other thread changed, or the
 * first failure of another thread); 1 when it did nothing because
 * lightweight threads run on their workers' thread-local storage
 * (ito__tls_mode 0), where glibc's own set*id is the right call. */
#ifndef ITO_CORE_SETXID_H
#define ITO_CORE_SETXID_H

#include "base.h"

HIDDEN long ito__setxid(long nr, long a, long b, long c);

#endif
