/* What a debugger needs to find the lightweight threads of a process or a
 * core dump without ito's debug information: where the thread table and
 * the workers are, and the offsets of the few fields it reads. The gdb
 * extension (tools/gdb/ito-gdb.py) reads this one exported object, checks
 * its magic and version, and walks the rest itself. Design: docs/debugging.md.
 *
 * Invariants:
 *  1. Every offset here is computed by the compiler (offsetof, sizeof), so
 *     the descriptor cannot drift from the structures it describes.
 *  2. The layout of struct ito_debug_info only grows at its end; a change
 *     to the meaning of a field bumps ITO_DEBUG_VERSION. */
#include "base.h"
#include "fiber.h"
#include "handle.h"
#include "monitor.h"
#include "sched.h"
#include "thread.h"
#include "worker.h"

#define ITO_DEBUG_MAGIC 0x69746f64u /* "itod" */
#define ITO_DEBUG_VERSION 1u

/* Read by tools/gdb/ito-gdb.py with a fixed layout (LP64: 4-byte words and
 * 8-byte pointers, no implicit padding, 120 bytes; checked below). */
struct ito_debug_info {
  uint32_t magic, version, ptr_size, handle_chunk_log2;
  /* the thread table (handle.h): chunks of slots, and how many slots exist */
  const void *handle_chunks, *handle_nslots;
  uint32_t slot_size, slot_t;
  /* the descriptor (thread.h) and the fiber header it sits in (fiber.h) */
  uint32_t fiber_th, fiber_sp, fiber_parked_on, fiber_thread, fiber_kind;
  uint32_t th_sync, th_fn, th_arg, th_name, th_name_size;
  uint32_t ts_done; /* sync at or above it: the thread is over */
  uint32_t pad0;
  /* the workers (sched.h, monitor.h): an array of pointers and its length */
  const void *workers, *nslots;
  uint32_t worker_cur, worker_id, worker_os_tid;
  uint32_t pad;
};

__attribute__((visibility("default"), used)) const struct ito_debug_info ito__debug_info = {
    .magic = ITO_DEBUG_MAGIC,
    .version = ITO_DEBUG_VERSION,
    .ptr_size = sizeof(void *),
    .handle_chunk_log2 = HANDLE_CHUNK_LOG2,
    .handle_chunks = &ito__handle_chunks,
    .handle_nslots = &ito__handle_nslots,
    .slot_size = sizeof(struct handle_slot),
    .slot_t = offsetof(struct handle_slot, t),
    .fiber_th = offsetof(fiber, th),
    .fiber_sp = offsetof(fiber, sp),
    .fiber_parked_on = offsetof(fiber, parked_on),
    .fiber_thread = offsetof(fiber, thread),
    .fiber_kind = offsetof(fiber, kind),
    .th_sync = offsetof(ithread, sync),
    .th_fn = offsetof(ithread, fn),
    .th_arg = offsetof(ithread, arg),
    .th_name = offsetof(ithread, name),
    .th_name_size = sizeof(((ithread *)0)->name),
    .ts_done = TS_DONE,
    .workers = &ito__workers,
    .nslots = &ito__nslots,
    .worker_cur = offsetof(worker, cur),
    .worker_id = offsetof(worker, id),
    .worker_os_tid = offsetof(worker, os_tid),
};

_Static_assert(sizeof(void *) != 8 || sizeof(struct ito_debug_info) == 120,
               "ito_debug_info: tools/gdb/ito-gdb.py reads this layout");
