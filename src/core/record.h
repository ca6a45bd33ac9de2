/* Fork and create records: the callee-saved registers, stack pointer and
 * return address of a forking call (or of ito_create's caller), kept in
 * the fork's own frame (or the child's fiber header); the layout is fixed
 * by src/arch/ctx_*.S, through asm_contract.h. Design:
 * docs/lazy-tasks.md. */
#ifndef ITO_CORE_RECORD_H
#define ITO_CORE_RECORD_H

#include <ito/ito.h>

#include "asm_contract.h"
#include "base.h"

struct fiber;

struct ito_rec {
  uint64_t regs[REC_NREGS];
  ito_tg_t *tg;
  struct fiber *fiber; /* the fiber whose stack holds the forking frame */
};
_Static_assert(offsetof(struct ito_rec, tg) == REC_TG, "asm: rec->tg");
_Static_assert(offsetof(struct ito_rec, fiber) == REC_FIBER, "asm: rec->fiber");
_Static_assert(sizeof(struct ito_rec) == REC_SIZE, "asm: record size");
_Static_assert(offsetof(ito_tg_t, pending) == TG_PENDING &&
                   offsetof(ito_tg_t, stolen) == TG_PENDING + 4,
               "asm: tg->pending and tg->stolen");

static inline void *rec_sp(const struct ito_rec *r) { return (void *)(uintptr_t)r->regs[REC_SP]; }

/* ---- the assembly (src/arch/ctx_*.S) ------------------------------------------------ */
/* Records the caller in rec, moves to sp and calls body(a0, a1, a2); when
 * body returns (the record still the caller's), back on the caller's
 * stack it calls ito__spawn_done(rec) and returns. If somebody took the
 * record, body does not return: the caller is resumed from rec elsewhere. */
HIDDEN void ito__spawn_on(struct ito_rec *rec, void *sp, void (*body)(void *, void *, void *),
                          void *a0, void *a1, void *a2);
/* Restores rec's registers, moves to sp, calls ito__arrive() and returns
 * from the recorded call. */
HIDDEN void ito__resume(const struct ito_rec *rec, void *sp) __attribute__((noreturn));

#endif
