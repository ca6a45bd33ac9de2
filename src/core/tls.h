/* Thread-local storage per lightweight thread (ITO_TLS=thread): each
 * thread gets its own thread pointer, a block laid out as glibc lays out a
 * thread's (its static TLS of every module and a thread descriptor), and
 * the thread pointer is switched with the context. With ITO_TLS=worker
 * (the native API's default) every strand uses the TLS of the worker it
 * runs on and none of this runs. Design: docs/tls.md.
 *
 * Invariants:
 *  1. The block in force on a worker (the thread pointer) is w->tls_cur:
 *     NULL for the worker's own, else the running fiber's f->tls. A block
 *     is in force on one worker at most: f->tls is set only while f runs
 *     a thread that owns the block, and only that thread's fiber enters it.
 *  2. The block in force holds the worker's address in ito__tls_worker and
 *     the worker OS thread's kernel id in its descriptor: both are written
 *     at every switch into a thread's block (ito__posix_enter, posix.c).
 *  3. A block is reset (its modules' TLS from their images, libc's caches
 *     kept, errno cleared, dynamic TLS freed) before another thread uses
 *     it; a thread's thread_local destructors run on its own block before
 *     it ends.
 *  4. The scheduler context of every worker runs on a block no thread
 *     uses: the worker OS thread's own, or for worker 0, whose OS thread's
 *     block the root thread keeps, one made for it. */
#ifndef ITO_CORE_TLS_H
#define ITO_CORE_TLS_H

#include "base.h"
#include "posix_hooks.h"

struct worker;
struct fiber;

/* (A worker's OS thread, or the adopted main thread, starts: tls.c's
 * observer records its own block. For the adopted main thread the root
 * keeps the OS thread's block and the worker gets a fresh one for its
 * scheduler, invariant 4.) */
/* Switches the thread pointer to tcb (NULL: the worker's own). */
HIDDEN void ito__tls_switch(struct worker *w, void *tcb);
/* A module was loaded (dlopen): its static TLS, if any, is initialised in
 * every block (glibc does it only for its own threads). */
HIDDEN void ito__tls_modules_changed(void);
/* Does the program have thread-local storage of its own (a PT_TLS
 * segment in the executable or a library other than the C, C++, Fortran
 * and OpenMP runtimes, the loader and ito's)? Any time, also before the
 * runtime starts. */
HIDDEN int ito__tls_program_has(void);
/* A block for a layer to lend (invariant 5): a spare one as its last
 * holder left it, or a fresh one (every module's initial image). NULL
 * with worker TLS or no memory. put: back to the spares. */
HIDDEN void *ito__tls_block_get(void);
HIDDEN void ito__tls_block_put(void *tp);
/* Copies the static TLS of the program's own modules (ito__tls_program_has)
 * from the block in force to dst: a snapshot of the caller's
 * threadprivate variables. */
HIDDEN void ito__tls_copy_program(void *dst);
/* The calling ito thread (not the root) runs on block tcb from now on,
 * wherever it runs; NULL: on its worker's. Returns the block it had. */
HIDDEN void *ito__tls_use(void *tcb);
/* Bytes per block (for the report), 0 with worker TLS. */
HIDDEN size_t ito__tls_block_size(void);

#endif
