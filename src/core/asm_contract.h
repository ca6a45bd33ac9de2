/* The contract between the C core and the assembly of src/arch/: offsets
 * and constants the assembly uses, defined once here. The C side checks
 * each against its structure with a static assertion next to the
 * structure (deque.h, worker.h, record.h, lazy.c); the assembly includes
 * this file. Only #defines: the assembler reads it. */
#ifndef ITO_CORE_ASM_CONTRACT_H
#define ITO_CORE_ASM_CONTRACT_H

/* struct worker, whose first member is its deque (struct ito_deque) */
#define W_TAIL 0       /* deque: tail index (the owner's) */
#define W_SLOTS 8      /* deque: the slot array */
#define W_MASK 16      /* deque: capacity - 1 */
#define W_FENCE 24     /* deque: pops left in the fenced window */
#define W_HEAD 64      /* deque: head index (the thieves') */
#define W_CUR 128      /* worker: the fiber running on it */
#define W_HMARK 136    /* worker: a recorder's mark array, as an offset from the deque's slots */
#define W_HQUIET 144   /* worker: a recorder's quiet forks left, plus one (hooks.h) */
#define W_SCHED_HI 192 /* worker: the top of its scheduler stack */

/* The fork checks the deque's capacity when the tail is a multiple of
 * DEQUE_MARGIN, and every pusher keeps DEQUE_MARGIN entries free
 * (docs/scheduler.md, "The deque protocol"). A power of two. */
#define DEQUE_MARGIN 4096
/* Pops that fence after the owner sees a spinner or wakes a sleeper
 * (docs/scheduler.md, "Fenced windows"). */
#define FENCE_WINDOW 64

/* The idle word (docs/idle.md): S << 32 | M << 31 | H << 30 | Z. */
#define IDLE_BIT_SYM 31   /* M: symmetric mode (no membarrier) */
#define IDLE_BIT_HOOKS 30 /* H: an event recorder is attached (docs/hooks.md) */
#define IDLE_SHIFT_S 32   /* S, the spinners, in the high half */

/* ito_tg_t (include/ito/ito.h) */
#define TG_PENDING 24 /* int pending, with int stolen next to it */

/* struct ito_rec: REC_NREGS 8-byte words, then the task group and the fiber */
#if defined(__x86_64__)
#define REC_NREGS 9 /* rbx rbp r12 r13 r14 r15 sp pc (unused) */
#define REC_SP 6    /* the word holding the stack pointer after return */
#define REC_PC 7    /* the word holding the return address (the fork's site) */
#elif defined(__aarch64__)
#define REC_NREGS 22 /* x19-x28 x29 x30(pc) sp d8-d15 fpcr */
#define REC_SP 12
#define REC_PC 11
#else
#error "ito supports x86-64 and AArch64"
#endif
#define REC_TG (REC_NREGS * 8)
#define REC_FIBER (REC_NREGS * 8 + 8)
#define REC_SIZE (REC_NREGS * 8 + 16)

#endif
