/* Context switch and lazy-fork entry points for AArch64, AAPCS64, ELF, GNU as.
 *
 * Saved context (ito__ctx_jump), 176 bytes at the saved stack pointer:
 *   +0 x19 x20  +16 x21 x22  +32 x23 x24  +48 x25 x26  +64 x27 x28
 *   +80 x29 x30(return address)  +96 d8 d9  +112 d10 d11  +128 d12 d13
 *   +144 d14 d15  +160 fpcr  +168 pad
 *
 * Fork record (struct ito_rec in src/core/record.h), REC_SIZE (192) bytes:
 *   +0..+72 x19-x28  +80 x29  +88 x30 (the continuation's address)
 *   +96 stack pointer of the caller  +104..+160 d8-d15  +168 unused
 *   +176 task group  +184 fiber (set in C)
 * Records do not carry FPCR; full context switches do (docs/lazy-tasks.md).
 */

#include "../core/asm_contract.h"
        .text

/* void *ito__ctx_jump(void **save_sp, void *to_sp, void *arg) */
        .globl  ito__ctx_jump
        .hidden ito__ctx_jump
        .type   ito__ctx_jump, %function
        .p2align 4
ito__ctx_jump:
        sub     sp, sp, #176
        stp     x19, x20, [sp, #0]
        stp     x21, x22, [sp, #16]
        stp     x23, x24, [sp, #32]
        stp     x25, x26, [sp, #48]
        stp     x27, x28, [sp, #64]
        stp     x29, x30, [sp, #80]
        stp     d8, d9, [sp, #96]
        stp     d10, d11, [sp, #112]
        stp     d12, d13, [sp, #128]
        stp     d14, d15, [sp, #144]
        mrs     x9, fpcr
        str     x9, [sp, #160]
        mov     x9, sp
        str     x9, [x0]
        mov     sp, x1
        ldp     x19, x20, [sp, #0]
        ldp     x21, x22, [sp, #16]
        ldp     x23, x24, [sp, #32]
        ldp     x25, x26, [sp, #48]
        ldp     x27, x28, [sp, #64]
        ldp     x29, x30, [sp, #80]
        ldp     d8, d9, [sp, #96]
        ldp     d10, d11, [sp, #112]
        ldp     d12, d13, [sp, #128]
        ldp     d14, d15, [sp, #144]
        ldr     x9, [sp, #160]
        msr     fpcr, x9
        add     sp, sp, #176
        mov     x0, x2
        ret
        .size   ito__ctx_jump, .-ito__ctx_jump

/* First frame of a new context: x19 holds the entry function, x0 its argument. */
        .globl  ito__ctx_start
        .hidden ito__ctx_start
        .type   ito__ctx_start, %function
        .p2align 4
ito__ctx_start:
        mov     x29, #0
        mov     x30, #0
        blr     x19
        brk     #0
        .size   ito__ctx_start, .-ito__ctx_start

/* Store or load the callee-saved registers of a record at base (x19-x30 at
 * +0..+88, d8-d15 at +104..+160); REC_STORE also stores sp_value at +96. */
.macro REC_REGS op, opd, base
        \op     x19, x20, [\base, #0]
        \op     x21, x22, [\base, #16]
        \op     x23, x24, [\base, #32]
        \op     x25, x26, [\base, #48]
        \op     x27, x28, [\base, #64]
        \op     x29, x30, [\base, #80]
        \opd    d8, d9, [\base, #104]
        \opd    d10, d11, [\base, #120]
        \opd    d12, d13, [\base, #136]
        \opd    d14, d15, [\base, #152]
.endm
.macro REC_STORE base, sp_value
        REC_REGS stp, stp, \base
        str     \sp_value, [\base, #(REC_SP*8)]
.endm
.macro REC_LOAD base
        REC_REGS ldp, ldp, \base
.endm

.macro SAVE_REC
        sub     sp, sp, #REC_SIZE
        add     x9, sp, #REC_SIZE
        REC_STORE sp, x9
        str     x0, [sp, #REC_TG]
.endm

/* ThreadSanitizer builds give every child a lightweight thread of its own
 * (src/core/lazy.c), so the fork entry points below are C there. */
#if !ITO_TSAN
/* void ito_tg_fork_(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size)
 * Records the caller's continuation and calls ito__fork_c(tg, fn, arg, size,
 * rec), which returns only if nobody took the continuation. */
        .globl  ito_tg_fork_
        .type   ito_tg_fork_, %function
        .p2align 4
ito_tg_fork_:
        mov     x5, #0                          /* a child of one parameter */
.Lfork_common:
        SAVE_REC
        mov     x4, sp
        bl      ito__fork_c
        ldr     x30, [sp, #88]
        add     sp, sp, #REC_SIZE
        ret
        .size   ito_tg_fork_, .-ito_tg_fork_

/* ito_tg_fork_wN_(tg, fn, arg): the fork for an argument of N 8-byte words. */
.macro FORK_SIZED n
        .globl  ito_tg_fork_w\n\()_
        .type   ito_tg_fork_w\n\()_, %function
        .p2align 4
ito_tg_fork_w\n\()_:
        mov     x3, #(8*\n)
        mov     x5, #1                          /* a child of two parameters */
        b       .Lfork_common
        .size   ito_tg_fork_w\n\()_, .-ito_tg_fork_w\n\()_
.endm
        FORK_SIZED 1
        FORK_SIZED 2
        FORK_SIZED 3
        FORK_SIZED 4

/* ito_tg_fork_r2_(tg, fn, w0, w1): a closure of two words in registers. */
        .globl  ito_tg_fork_r2_
        .type   ito_tg_fork_r2_, %function
        .p2align 4
ito_tg_fork_r2_:
        mov     x5, #2
        b       .Lfork_common
        .size   ito_tg_fork_r2_, .-ito_tg_fork_r2_

/* void ito_tg_join_(ito_tg_t *tg, void *frame) */
        .globl  ito_tg_join_
        .type   ito_tg_join_, %function
        .p2align 4
ito_tg_join_:
        add     x10, x0, #TG_PENDING
        ldar    w9, [x10]                       /* tg->pending */
        cmp     w9, #1
        b.ne    1f
        ldr     w9, [x0, #(TG_PENDING+4)]       /* tg->stolen */
        cbnz    w9, 1f
        ret
1:
        SAVE_REC
        mov     x2, sp
        bl      ito__join_c
        ldr     x30, [sp, #88]
        add     sp, sp, #REC_SIZE
        ret
        .size   ito_tg_join_, .-ito_tg_join_

#endif /* !ITO_TSAN */

/* void ito__resume(const struct ito_rec *rec, void *sp) */
        .globl  ito__resume
        .hidden ito__resume
        .type   ito__resume, %function
        .p2align 4
ito__resume:
        REC_LOAD x0
        mov     sp, x1
        sub     sp, sp, #16
        str     x30, [sp]
        bl      ito__arrive
        ldr     x30, [sp]
        add     sp, sp, #16
        ret
        .size   ito__resume, .-ito__resume

/* void ito__spawn_on(struct ito_rec *rec, void *sp, void (*body)(void *, void *, void *),
 *                    void *a0, void *a1, void *a2)
 * As on x86-64: body returns when the caller's record was taken back; then
 * restore the caller's registers and stack, call ito__spawn_done(rec), return. */
        .globl  ito__spawn_on
        .hidden ito__spawn_on
        .type   ito__spawn_on, %function
        .p2align 4
ito__spawn_on:
        mov     x9, sp
        REC_STORE x0, x9
        mov     x19, x0                         /* x19: the record */
        mov     sp, x1
        mov     x29, #0
        mov     x9, x2                          /* body(a0, a1, a2) */
        mov     x0, x3
        mov     x1, x4
        mov     x2, x5
        blr     x9
        mov     x0, x19
        ldr     x9, [x0, #96]
        mov     sp, x9
        REC_LOAD x0
        sub     sp, sp, #16
        str     x30, [sp]
        bl      ito__spawn_done
        ldr     x30, [sp]
        add     sp, sp, #16
        ret
        .size   ito__spawn_on, .-ito__spawn_on

/* ito__tg_return_trap: a checked task group's home frame returned while a
 * continuation of the group ran elsewhere (src/core/lazy.c put this
 * address in the frame's return-address slot). The stack is the home
 * stack, where a child may still run: move to the worker's scheduler
 * stack and stop the program with a message. */
        .globl  ito__tg_return_trap
        .hidden ito__tg_return_trap
        .type   ito__tg_return_trap, %function
        .p2align 4
ito__tg_return_trap:
        .cfi_startproc
        .cfi_undefined x30
        mrs     x9, tpidr_el0
        adrp    x10, :gottprel:ito__tls_worker
        ldr     x10, [x10, #:gottprel_lo12:ito__tls_worker]
        ldr     x9, [x9, x10]
        ldr     x9, [x9, #W_SCHED_HI]
        and     x9, x9, #-16
        mov     sp, x9
        mov     x29, #0
        bl      ito__tg_returned
        brk     #0
        .cfi_endproc
        .size   ito__tg_return_trap, .-ito__tg_return_trap

        .section .note.GNU-stack,"",%progbits
