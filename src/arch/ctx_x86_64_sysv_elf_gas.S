/* Context switch and lazy-fork entry points for x86-64, System V ABI, ELF, GNU as.
 *
 * Saved context (ito__ctx_jump), at the saved stack pointer, upward:
 *   +0  mxcsr (4 bytes) | x87 control word (2 bytes) | pad
 *   +8  r15   +16 r14   +24 r13   +32 r12   +40 rbx   +48 rbp   +56 return address
 *
 * Fork record (struct ito_rec in src/core/record.h), 88 bytes:
 *   +0 rbx  +8 rbp  +16 r12  +24 r13  +32 r14  +40 r15
 *   +48 stack pointer of the caller after return   +56 return address
 *   +64 unused  +72 task group  +80 fiber (set in C)
 *
 * Records do not carry the floating-point control state (MXCSR, x87 control
 * word): saving it costs more than the rest of a fork. A continuation taken
 * by another worker runs with that worker's state (docs/lazy-tasks.md).
 * Full context switches (ito__ctx_jump) do carry it.
 */
#include "../core/asm_contract.h"

        .text

/* void *ito__ctx_jump(void **save_sp, void *to_sp, void *arg)
 * Saves the caller's context, stores its stack pointer in *save_sp and resumes
 * the context saved at to_sp, where ito__ctx_jump returns arg. */
        .globl  ito__ctx_jump
        .hidden ito__ctx_jump
        .type   ito__ctx_jump, @function
        .p2align 4
ito__ctx_jump:
        .cfi_startproc
        pushq   %rbp
        .cfi_adjust_cfa_offset 8
        pushq   %rbx
        .cfi_adjust_cfa_offset 8
        pushq   %r12
        .cfi_adjust_cfa_offset 8
        pushq   %r13
        .cfi_adjust_cfa_offset 8
        pushq   %r14
        .cfi_adjust_cfa_offset 8
        pushq   %r15
        .cfi_adjust_cfa_offset 8
        subq    $8, %rsp
        .cfi_adjust_cfa_offset 8
        stmxcsr (%rsp)
        fnstcw  4(%rsp)
        movq    %rsp, (%rdi)
        movq    %rsi, %rsp
        ldmxcsr (%rsp)
        fldcw   4(%rsp)
        addq    $8, %rsp
        popq    %r15
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        popq    %rbp
        movq    %rdx, %rax
        movq    %rdx, %rdi
        ret
        .cfi_endproc
        .size   ito__ctx_jump, .-ito__ctx_jump

/* First frame of a new context made by ito__ctx_make: r12 holds the entry
 * function, rdi its argument (the arg of the ito__ctx_jump that started it). */
        .globl  ito__ctx_start
        .hidden ito__ctx_start
        .type   ito__ctx_start, @function
        .p2align 4
ito__ctx_start:
        .cfi_startproc
        .cfi_undefined rip
        xorl    %ebp, %ebp
        call    *%r12
        ud2
        .cfi_endproc
        .size   ito__ctx_start, .-ito__ctx_start

/* void ito_tg_fork_(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size)
 *
 * The fast path of a fork, whole: record the caller's continuation, copy the
 * argument below the record, publish the record at the tail of the worker's
 * deque, call the child, and take the record back. Only when the record was
 * taken (or in the rare cases below) does it call into C. The offsets and
 * constants (W_*, REC_*, DEQUE_MARGIN, FENCE_WINDOW, the idle word's bits)
 * come from src/core/asm_contract.h, whose values the C structures check
 * with static assertions. */
/* Store or load the callee-saved registers of a record at base (the first
 * 48 bytes of struct ito_rec). */
.macro REC_STORE base
        movq    %rbx, 0(\base)
        movq    %rbp, 8(\base)
        movq    %r12, 16(\base)
        movq    %r13, 24(\base)
        movq    %r14, 32(\base)
        movq    %r15, 40(\base)
.endm
.macro REC_LOAD base
        movq    0(\base), %rbx
        movq    8(\base), %rbp
        movq    16(\base), %r12
        movq    24(\base), %r13
        movq    32(\base), %r14
        movq    40(\base), %r15
.endm

/* ThreadSanitizer builds give every child a lightweight thread of its own
 * (src/core/lazy.c), so the fork entry points below are C there. */
#if !ITO_TSAN
/* The record and the worker, common to every fork entry: leaves the record
 * in r12 (the CFA is r12 + REC_SIZE + 8 from here on) and the worker in rbx. */
.macro FORK_SAVE outside
        subq    $REC_SIZE, %rsp
        .cfi_adjust_cfa_offset REC_SIZE
        REC_STORE %rsp
        .cfi_rel_offset rbx, 0
        .cfi_rel_offset r12, 16
        .cfi_rel_offset r13, 24
        .cfi_rel_offset r14, 32
        leaq    (REC_SIZE+8)(%rsp), %rax
        movq    %rax, 48(%rsp)
        movq    REC_SIZE(%rsp), %rax
        movq    %rax, 56(%rsp)
        movq    %rdi, REC_TG(%rsp)
        movq    %rsp, %r12                      /* r12: the record */
        .cfi_def_cfa_register r12
        movq    ito__tls_worker@gottpoff(%rip), %rax
        movq    %fs:(%rax), %rbx                /* rbx: the worker */
        testq   %rbx, %rbx
        jz      \outside
.endm

/* void ito_tg_fork_wN_(ito_tg_t *tg, ito_task2_fn fn, void *arg)
 * The same fork for an argument of exactly N 8-byte words (N = 1..4), which
 * the C++ API knows at compile time: the copy is N fixed moves. Every fork
 * calls its child as fn(copy, tg); ito_task_fn children ignore tg. */
.macro FORK_SIZED n
        .globl  ito_tg_fork_w\n\()_
        .type   ito_tg_fork_w\n\()_, @function
        .p2align 4
ito_tg_fork_w\n\()_:
        .cfi_startproc
        FORK_SAVE .Lfork_outside_w\n
        subq    $((8*\n+15)/16*16), %rsp
        movq    %rsp, %rdi
        .set    k, 0
        .rept   \n
        movq    (8*k)(%rdx), %rax
        movq    %rax, (8*k)(%rsp)
        .set    k, k+1
        .endr
        jmp     .Lfork_push
.Lfork_outside_w\n:
        movl    $(8*\n), %ecx
        movq    %r12, %r8
        movl    $1, %r9d
        call    ito__fork_c
        jmp     .Lfork_done
        .cfi_endproc
        .size   ito_tg_fork_w\n\()_, .-ito_tg_fork_w\n\()_
.endm

        .globl  ito_tg_fork_
        .type   ito_tg_fork_, @function
        .p2align 4
ito_tg_fork_:
        .cfi_startproc
        FORK_SAVE .Lfork_outside
        movq    %rdx, %rdi                      /* rdi: the child's argument */
        testq   %rcx, %rcx
        jz      .Lfork_push
        leaq    15(%rcx), %rax                  /* copy size bytes below the record */
        andq    $-16, %rax
        subq    %rax, %rsp
        movq    %rsp, %rdi
        cmpq    $32, %rcx                       /* 8, 16, 24 or 32 bytes: word moves that */
        ja      .Lfork_loop                     /* line up with the caller's own stores, */
        testb   $7, %cl                         /* so store-to-load forwarding works */
        jnz     .Lfork_loop
        movq    (%rdx), %rax
        movq    %rax, (%rsp)
        cmpq    $16, %rcx
        jb      .Lfork_push
        movq    8(%rdx), %rax
        movq    %rax, 8(%rsp)
        cmpq    $24, %rcx
        jb      .Lfork_push
        movq    16(%rdx), %rax
        movq    %rax, 16(%rsp)
        cmpq    $32, %rcx
        jb      .Lfork_push
        movq    24(%rdx), %rax
        movq    %rax, 24(%rsp)
        jmp     .Lfork_push
.Lfork_loop:
        xorl    %r8d, %r8d
        testb   $7, %cl
        jnz     .Lfork_bytes
.Lfork_words:
        movq    (%rdx,%r8), %rax
        movq    %rax, (%rsp,%r8)
        addq    $8, %r8
        cmpq    %rcx, %r8
        jb      .Lfork_words
        jmp     .Lfork_push
.Lfork_bytes:
        movzbl  (%rdx,%r8), %eax
        movb    %al, (%rsp,%r8)
        incq    %r8
        cmpq    %rcx, %r8
        jb      .Lfork_bytes
.Lfork_push:
        movq    W_CUR(%rbx), %rax
        movq    %rax, REC_FIBER(%r12)                  /* rec->fiber */
        movq    W_TAIL(%rbx), %r13              /* r13: t, this record's index */
        testl   $(DEQUE_MARGIN-1), %r13d        /* capacity: checked every DEQUE_MARGIN */
        jz      .Lfork_capacity                 /* pushes, keeping that many entries free */
.Lfork_slot:
        movq    W_MASK(%rbx), %rax
        andq    %r13, %rax
        movq    W_SLOTS(%rbx), %r14
        leaq    (%r14,%rax,8), %r14             /* r14: the record's slot */
        movq    %r12, (%r14)
        leaq    1(%r13), %rax
        movq    %rax, W_TAIL(%rbx)              /* publish (a plain store is a release on x86) */
        cmpq    $0, ito__rt_idle(%rip)          /* anybody spinning or asleep? (docs/idle.md) */
        jne     .Lfork_idle
.Lfork_call:
        movq    %rsi, %rax                      /* the child gets (copy, tg); a child */
        movq    REC_TG(%r12), %rsi                  /* of one parameter ignores tg */
        call    *%rax
        /* Take the record back. Whoever takes a record clears its slot (a
         * thief after counting the split, the owner when it pops), and only
         * this frame ever stores this record's address, so the slot still
         * holding it means nobody took it and the tail is t + 1 again; we
         * need not even be on the same worker to tell (docs/scheduler.md,
         * invariants 2 and 3). Then the THE check against a thief that is
         * taking it right now. */
        cmpq    %r12, (%r14)
        jne     .Lfork_taken
        movq    %r13, W_TAIL(%rbx)
        cmpl    $0, W_FENCE(%rbx)               /* a fenced window (docs/scheduler.md) */
        jnz     .Lfork_fence
.Lfork_check:
        cmpq    W_HEAD(%rbx), %r13              /* a thief has it if head > t */
        jb      .Lfork_conflict
.Lfork_done:
        movq    %r12, %rsp
        .cfi_def_cfa_register rsp
        movq    0(%rsp), %rbx
        movq    16(%rsp), %r12
        movq    24(%rsp), %r13
        movq    32(%rsp), %r14
        addq    $REC_SIZE, %rsp
        .cfi_adjust_cfa_offset -REC_SIZE
        ret
        .cfi_adjust_cfa_offset REC_SIZE
        .cfi_def_cfa_register r12
.Lfork_fence:
        lock orq $0, (%rsp)                     /* a full fence, cheaper than mfence */
        decl    W_FENCE(%rbx)
        jnz     .Lfork_check
        movq    %rbx, %rdi                      /* the window ran out (the worker's */
        call    ito__deque_fence_expire         /* address is its deque's) */
        jmp     .Lfork_check
/* Somebody spins or sleeps, or this is symmetric mode (M, bit IDLE_BIT_SYM
 * of the idle word), or a recorder is attached (H, bit IDLE_BIT_HOOKS): with
 * M, without membarrier on the sleeper's side, the publisher must fence
 * before it reads the counts (P2 of docs/idle.md); with H the fork reports
 * itself (ito__fork_hook, docs/hooks.md). With nobody spinning (S, the high
 * half, is 0) a sleeper must be woken: ito__fork_wake rechecks under its
 * lock. */
.Lfork_idle:
        movq    ito__rt_idle(%rip), %rax
        btq     $IDLE_BIT_HOOKS, %rax
        jc      .Lfork_hook
.Lfork_counts:
        btrq    $IDLE_BIT_SYM, %rax             /* M */
        jnc     1f
        lock orq $0, (%rsp)
        movq    ito__rt_idle(%rip), %rax
        btrq    $IDLE_BIT_SYM, %rax
1:      btrq    $IDLE_BIT_HOOKS, %rax
        testq   %rax, %rax
        jz      .Lfork_call                     /* only flags: nobody idle */
        shrq    $IDLE_SHIFT_S, %rax
        jz      .Lfork_wake
        cmpl    $0, W_FENCE(%rbx)               /* a spinner will try to steal: fence */
        jne     .Lfork_call                     /* our pops for a while, so that it */
        cmpl    $0, ito__asym_fence(%rip)       /* needs no membarrier */
        je      .Lfork_call
        movl    $FENCE_WINDOW, W_FENCE(%rbx)
        jmp     .Lfork_call
/* A recorder is attached (H): the fork reports itself and does what
 * .Lfork_counts does, in C (ito__fork_hook), then calls the child and takes
 * the record back as above, and reports how that went: the record taken
 * back (ito__fork_back_hook) or taken (ito__fork_taken_hook, which does
 * not return). The path without H is not touched (docs/hooks.md). */
.Lfork_hook:
        movl    W_HQUIET(%rbx), %eax            /* quiet forks (hooks.h, invariant 4): */
        cmpl    $1, %eax                        /* 0: none asked, 1: the last one was */
        ja      .Lfork_quiet                    /* taken, this fork reports itself */
        pushq   %rdi
        pushq   %rsi
        pushq   %rdx
        pushq   %rdx                            /* keeps the stack 16-byte aligned */
        movq    REC_TG(%r12), %rdi              /* ito__fork_hook(tg, worker, rec, t) */
        movq    %rbx, %rsi
        movq    %r12, %rdx
        movq    %r13, %rcx
        call    ito__fork_hook
        popq    %rdx
        popq    %rdx
        popq    %rsi
        popq    %rdi
        movq    %rsi, %rax
        movq    REC_TG(%r12), %rsi
        call    *%rax
        cmpq    %r12, (%r14)
        jne     .Lfork_htaken
        movq    %r13, W_TAIL(%rbx)
        cmpl    $0, W_FENCE(%rbx)
        jnz     .Lfork_hfence
.Lfork_hcheck:
        cmpq    W_HEAD(%rbx), %r13
        jb      .Lfork_hconflict
.Lfork_hback:
        movq    REC_TG(%r12), %rdi              /* ito__fork_back_hook(tg, worker, rec, t) */
        movq    %rbx, %rsi
        movq    %r12, %rdx
        movq    %r13, %rcx
        call    ito__fork_back_hook
        jmp     .Lfork_done
.Lfork_hfence:
        lock orq $0, (%rsp)
        decl    W_FENCE(%rbx)
        jnz     .Lfork_hcheck
        movq    %rbx, %rdi
        call    ito__deque_fence_expire
        jmp     .Lfork_hcheck
.Lfork_hconflict:
        movq    %rbx, %rdi
        movq    %r13, %rsi
        call    ito__deque_conflict
        testb   %al, %al
        jnz     .Lfork_hback
.Lfork_htaken:
        movq    REC_TG(%r12), %rdi              /* ito__fork_taken_hook(tg, worker, rec, t) */
        movq    %rbx, %rsi
        movq    %r12, %rdx
        movq    %r13, %rcx
        call    ito__fork_taken_hook            /* does not return */
        ud2
/* A quiet fork: no report, one quiet fork less, the record marked for a
 * thief (record + 1, at hook_mark bytes from its slot) and the mark
 * cleared once the record is taken back. Only a taken record is reported
 * (ito__fork_taken_hook), as for every reported fork. */
.Lfork_quiet:
        decl    %eax
        movl    %eax, W_HQUIET(%rbx)
        movq    W_HMARK(%rbx), %rcx
        leaq    1(%r12), %rax
        movq    %rax, (%r14,%rcx)
        movq    ito__rt_idle(%rip), %rax        /* anybody idle, or M: what .Lfork_counts */
        btrq    $IDLE_BIT_HOOKS, %rax           /* does, in C */
        testq   %rax, %rax
        jnz     .Lfork_qcounts
.Lfork_qcall:
        movq    %rsi, %rax
        movq    REC_TG(%r12), %rsi
        call    *%rax
        cmpq    %r12, (%r14)
        jne     .Lfork_htaken
        movq    %r13, W_TAIL(%rbx)
        cmpl    $0, W_FENCE(%rbx)
        jnz     .Lfork_qfence
.Lfork_qcheck:
        cmpq    W_HEAD(%rbx), %r13
        jb      .Lfork_qconflict
.Lfork_qback:
        movq    W_HMARK(%rbx), %rcx
        movq    $0, (%r14,%rcx)
        jmp     .Lfork_done
.Lfork_qfence:
        lock orq $0, (%rsp)
        decl    W_FENCE(%rbx)
        jnz     .Lfork_qcheck
        movq    %rbx, %rdi
        call    ito__deque_fence_expire
        jmp     .Lfork_qcheck
.Lfork_qconflict:
        movq    %rbx, %rdi
        movq    %r13, %rsi
        call    ito__deque_conflict
        testb   %al, %al
        jnz     .Lfork_qback
        jmp     .Lfork_htaken
.Lfork_qcounts:
        pushq   %rdi
        pushq   %rsi
        pushq   %rdx
        pushq   %rdx                            /* keeps the stack 16-byte aligned */
        movq    %rbx, %rdi
        call    ito__fork_quiet_counts
        popq    %rdx
        popq    %rdx
        popq    %rsi
        popq    %rdi
        jmp     .Lfork_qcall
.Lfork_wake:
        pushq   %rdi
        pushq   %rsi
        pushq   %rdx
        pushq   %rdx                            /* keeps the stack 16-byte aligned */
        movq    %rbx, %rdi
        call    ito__fork_wake
        popq    %rdx
        popq    %rdx
        popq    %rsi
        popq    %rdi
        jmp     .Lfork_call
.Lfork_conflict:
        movq    %rbx, %rdi
        movq    %r13, %rsi
        call    ito__deque_conflict             /* true: the record is ours after all */
        testb   %al, %al
        jnz     .Lfork_done
.Lfork_taken:
        movq    REC_TG(%r12), %rdi
        call    ito__fork_taken                 /* does not return */
        ud2
.Lfork_capacity:
        movq    %r13, %rax
        subq    W_HEAD(%rbx), %rax
        addq    $DEQUE_MARGIN, %rax
        cmpq    W_MASK(%rbx), %rax
        jbe     .Lfork_slot
        movq    %rsi, %rax                      /* nearly full: run the child serially */
        movq    REC_TG(%r12), %rsi
        call    *%rax
        jmp     .Lfork_done
.Lfork_outside:
        movq    %r12, %r8                       /* not on a worker: the C path */
        xorl    %r9d, %r9d
        call    ito__fork_c
        jmp     .Lfork_done
        .cfi_endproc
        .size   ito_tg_fork_, .-ito_tg_fork_

        FORK_SIZED 1
        FORK_SIZED 2
        FORK_SIZED 3
        FORK_SIZED 4

/* void ito_tg_fork_r2_(ito_tg_t *tg, ito_task_r2_fn fn, uintptr_t w0, uintptr_t w1)
 * The fork for a closure of at most two words passed in registers: nothing
 * is copied, and the child is called as fn(w0, tg, w1). */
        .globl  ito_tg_fork_r2_
        .type   ito_tg_fork_r2_, @function
        .p2align 4
ito_tg_fork_r2_:
        .cfi_startproc
        FORK_SAVE .Lfork_outside_r2
        movq    %rdx, %rdi                      /* fn(w0, tg, w1): tg goes in at the call */
        movq    %rcx, %rdx
        jmp     .Lfork_push
.Lfork_outside_r2:
        movq    %r12, %r8                       /* arg = w0, size = w1 */
        movl    $2, %r9d
        call    ito__fork_c
        jmp     .Lfork_done
        .cfi_endproc
        .size   ito_tg_fork_r2_, .-ito_tg_fork_r2_

/* void ito_tg_join_(ito_tg_t *tg, void *frame)
 * Returns at once when no child is outstanding and no continuation of the
 * group was stolen; otherwise records the caller's context (so the join can
 * resume it on the group's home stack) and calls ito__join_c(tg, frame, rec). */
        .globl  ito_tg_join_
        .type   ito_tg_join_, @function
        .p2align 4
ito_tg_join_:
        .cfi_startproc
        cmpq    $1, TG_PENDING(%rdi)    /* tg->pending == 1 and tg->stolen == 0 */
        jne     1f
        ret
1:
        subq    $REC_SIZE, %rsp
        .cfi_adjust_cfa_offset REC_SIZE
        REC_STORE %rsp
        leaq    (REC_SIZE+8)(%rsp), %rax
        movq    %rax, 48(%rsp)
        movq    REC_SIZE(%rsp), %rax
        movq    %rax, 56(%rsp)
        movq    %rdi, REC_TG(%rsp)
        movq    %rsp, %rdx
        call    ito__join_c
        addq    $REC_SIZE, %rsp
        .cfi_adjust_cfa_offset -REC_SIZE
        ret
        .cfi_endproc
        .size   ito_tg_join_, .-ito_tg_join_
#endif /* !ITO_TSAN */

/* void ito__resume(const struct ito_rec *rec, void *sp)
 * Restores the registers of rec, moves to stack pointer sp, calls
 * ito__arrive() there and then continues at rec's return address as if the
 * recorded call had returned. */
        .globl  ito__resume
        .hidden ito__resume
        .type   ito__resume, @function
        .p2align 4
ito__resume:
        .cfi_startproc
        REC_LOAD %rdi
        movq    56(%rdi), %rax
        movq    %rsi, %rsp
        pushq   %rax
        subq    $8, %rsp
        call    ito__arrive
        addq    $8, %rsp
        ret
        .cfi_endproc
        .size   ito__resume, .-ito__resume

/* void ito__spawn_on(struct ito_rec *rec, void *sp, void (*body)(void *, void *, void *),
 *                    void *a0, void *a1, void *a2)
 * Records the caller's continuation in rec (for thieves), moves to stack
 * pointer sp and calls body(a0, a1, a2). When body returns, the continuation is
 * the caller's again: back on the caller's stack with its registers, call
 * ito__spawn_done(rec) there, and return to the caller. Calls and returns
 * stay paired, so the return predictor stays right. If somebody took the
 * record, body does not return; the caller is resumed from rec elsewhere. */
        .globl  ito__spawn_on
        .hidden ito__spawn_on
        .type   ito__spawn_on, @function
        .p2align 4
ito__spawn_on:
        .cfi_startproc
        REC_STORE %rdi
        leaq    8(%rsp), %rax
        movq    %rax, 48(%rdi)
        movq    (%rsp), %rax
        movq    %rax, 56(%rdi)
        movq    %rdi, %r12                      /* r12: the record */
        movq    %rsi, %rsp
        .cfi_undefined rip
        xorl    %ebp, %ebp
        movq    %rdx, %rax                      /* body(a0, a1, a2) */
        movq    %rcx, %rdi
        movq    %r8, %rsi
        movq    %r9, %rdx
        call    *%rax
        movq    %r12, %rdi
        movq    48(%rdi), %rsp
        subq    $8, %rsp                        /* the caller's return address */
        .cfi_def_cfa rsp, 8
        .cfi_offset rip, -8
        REC_LOAD %rdi
        subq    $8, %rsp
        .cfi_adjust_cfa_offset 8
        call    ito__spawn_done
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        ret
        .cfi_endproc
        .size   ito__spawn_on, .-ito__spawn_on

/* ito__tg_return_trap: a checked task group's home frame returned while a
 * continuation of the group ran elsewhere (src/core/lazy.c put this
 * address in the frame's return-address slot). The stack is the home
 * stack, where a child may still run: move to the worker's scheduler
 * stack and stop the program with a message. */
        .globl  ito__tg_return_trap
        .hidden ito__tg_return_trap
        .type   ito__tg_return_trap, @function
        .p2align 4
ito__tg_return_trap:
        .cfi_startproc
        .cfi_undefined rip
        movq    ito__tls_worker@gottpoff(%rip), %rax
        movq    %fs:(%rax), %rax
        movq    W_SCHED_HI(%rax), %rsp
        andq    $-16, %rsp
        call    ito__tg_returned
        ud2
        .cfi_endproc
        .size   ito__tg_return_trap, .-ito__tg_return_trap

        .section .note.GNU-stack,"",@progbits
