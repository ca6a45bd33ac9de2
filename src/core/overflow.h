/* Stack overflow reports (overflow.c). */
#ifndef ITO_CORE_OVERFLOW_H
#define ITO_CORE_OVERFLOW_H

#include "base.h"

/* (At each start, overflow.c's observer installs the SIGSEGV and SIGBUS
 * handler, keeping the program's, which gets every fault that is not an
 * overflow.) */
/* A drop-in library's words for the code on a stack that overflowed,
 * given the stack's context word (fiber.h): a phrase naming it ("an
 * OpenMP task") into out, the function it runs in *fn; 0 leaves the
 * report to the runtime. Called in the fault handler: reads only. */
typedef int (*overflow_describe_fn)(void *ctx, char *out, size_t len, void **fn);
HIDDEN void ito__overflow_describe(overflow_describe_fn fn);
/* (Each worker's OS thread gets an alternate signal stack as it starts:
 * overflow.c's observer.) */

#endif
