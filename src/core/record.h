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
/* The address a checked task group's home frame returns to while a
 * continuation of the group is stolen (lazy.c); never called. */
HIDDEN void ito__tg_return_trap(void);

/* ---- what the assembly calls (lazy.c, thread.c) ---------------------------------------- */
struct worker;
/* The whole fork in C (AArch64; on x86-64 a fork outside the workers).
 * kind 0: fn(copy); 1: fn(copy, tg); 2: fn(arg, tg, size), two words in
 * registers, nothing copied. */
HIDDEN void ito__fork_c(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size, struct ito_rec *rec,
                        int kind);
/* A fork's continuation was taken: this child is done (no return). */
HIDDEN void ito__fork_taken(ito_tg_t *tg) __attribute__((noreturn));
/* A fork while a recorder is attached (the idle word's H bit): reports
 * the fork of the record at index t of w's deque and does the rest of the
 * fork's P2 and P3 (docs/idle.md). After the child, the fork reports its
 * record taken back, or taken (then ends this child as ito__fork_taken). */
HIDDEN void ito__fork_hook(ito_tg_t *tg, struct worker *w, struct ito_rec *rec, uint64_t t);
HIDDEN void ito__fork_back_hook(ito_tg_t *tg, struct worker *w, struct ito_rec *rec, uint64_t t);
/* A quiet fork (hooks.h, invariant 4) found somebody idle, or the
 * symmetric mode: the fork's P2 and P3, as ito__fork_hook does them. */
HIDDEN void ito__fork_quiet_counts(struct worker *w);
HIDDEN void ito__fork_taken_hook(ito_tg_t *tg, struct worker *w, struct ito_rec *rec, uint64_t t)
    __attribute__((noreturn));
/* The join's slow half: wait for the children, move back to the home
 * stack. */
HIDDEN void ito__join_c(ito_tg_t *tg, void *frame, struct ito_rec *rec);
/* ito__tg_return_trap reached: stops the program with a message. */
HIDDEN void ito__tg_returned(void) __attribute__((noreturn));
/* Back on the creator's stack after a thread started by ito_create
 * ended with its record still the creator's. */
HIDDEN void ito__spawn_done(struct ito_rec *rec);

#endif
