/* glibc's thread descriptor and the thread pointer: the layout of glibc
 * 2.36's struct pthread that ito writes (tls.c, setxid.c), and the thread
 * pointer's read and write. Design: docs/tls.md.
 *
 * Invariant: the offsets are glibc 2.36's on x86-64 and AArch64; tls.c
 * checks the ones it relies on at start (ITO_TLS=thread stays off where
 * they do not hold). */
#ifndef ITO_CORE_TCB_H
#define ITO_CORE_TCB_H

#include "base.h"
#include "os.h"
#include "posix_hooks.h" /* (ito__tls_mode: 2 where wrfsbase writes the pointer) */

#include <sys/syscall.h>

#if defined(__x86_64__) || defined(__aarch64__)

/* glibc 2.36: struct pthread (nptl/descr.h). It starts with a header of
 * 704 bytes on x86-64 (tcbhead_t: the thread pointer is the descriptor's
 * address, and the static TLS lies below it, TLS variant II) and of 192 on
 * AArch64 (the descriptor lies just below the thread pointer, which points
 * to a two-word tcbhead_t {dtv, private} with the static TLS above it, TLS
 * variant I); the fields after the header are the same. */
#if defined(__x86_64__)
#define DESC_SIZE 2368       /* sizeof (struct pthread) == TLS_TCB_SIZE */
#define HEAD 704             /* the header union: tcbhead_t */
#define OFF_TCB 0            /* header.tcb: the block's own address */
#define OFF_DTV 8            /* header.dtv */
#define OFF_SELF 16          /* header.self */
#define OFF_MULTIPLE 24      /* header.multiple_threads */
#define OFF_SYSINFO 32       /* header.sysinfo */
#define OFF_STACK_GUARD 40   /* header.stack_guard: %fs:0x28 */
#define OFF_POINTER_GUARD 48 /* header.pointer_guard: %fs:0x30 */
#define OFF_FEATURE_1 72     /* header.feature_1 (CET) */
#else
#define DESC_SIZE 1856 /* sizeof (struct pthread) == TLS_PRE_TCB_SIZE */
#define HEAD 192       /* the header union: void *__padding[24] */
#define OFF_MULTIPLE 0 /* header.multiple_threads */
/* (the stack and pointer guards are globals on AArch64) */
#endif
#define OFF_TID (HEAD + 16)                  /* tid, after list */
#define OFF_ROBUST_PREV (HEAD + 24)          /* robust_prev */
#define OFF_ROBUST_HEAD (HEAD + 32)          /* robust_head {list, futex_offset, list_op_pending} */
#define OFF_SPECIFIC_1ST (HEAD + 80)         /* specific_1stblock */
#define OFF_SPECIFIC (HEAD + 592)            /* specific[0] */
#define OFF_SCHEDPOLICY (HEAD + 884)         /* schedpolicy (checked, not set) */
#define OFF_STACKBLOCK (HEAD + 976)          /* stackblock */
#define OFF_STACKBLOCK_SIZE (HEAD + 984)     /* stackblock_size: the alloca cutoff reads it */
#define OFF_RES (HEAD + 1016)                /* res: the resolver state __resp points to */
#define OFF_RSEQ_CPU_ID (HEAD + 1636)        /* rseq_area.cpu_id */
#define RSEQ_CPU_ID_REGISTRATION_FAILED (-2) /* sched_getcpu then asks the kernel */

#define F(p, off, type) (*(type *)((char *)(p) + (off)))

/* A thread pointer's descriptor (struct pthread), and its dtv. */
static inline char *desc_of(void *tp) {
#if defined(__x86_64__)
  return tp;
#else
  return (char *)tp - DESC_SIZE;
#endif
}

#if defined(__x86_64__)
static inline void set_tp(void *tcb) {
  if (LIKELY(ito__tls_mode == 2))
    __asm__ volatile("wrfsbase %0" ::"r"(tcb) : "memory");
  else
    ito__os.syscall(SYS_arch_prctl, 0x1002 /* ARCH_SET_FS */, tcb);
}

static inline void *get_tp(void) {
  void *p;
  __asm__ volatile("movq %%fs:0, %0" : "=r"(p));
  return p;
}
#else
static inline void set_tp(void *tcb) {
  __asm__ volatile("msr tpidr_el0, %0" ::"r"(tcb) : "memory");
}

static inline void *get_tp(void) {
  void *p;
  __asm__ volatile("mrs %0, tpidr_el0" : "=r"(p));
  return p;
}
#endif

/* The thread pointer of a descriptor (desc_of's inverse). */
static inline void *tp_of(void *desc) {
#if defined(__x86_64__)
  return desc;
#else
  return (char *)desc + DESC_SIZE;
#endif
}

#else /* (no ITO_TLS=thread elsewhere: ito__tls_mode stays 0) */
static inline char *desc_of(void *tp) { return tp; }
static inline void *tp_of(void *desc) { return desc; }
static inline void *get_tp(void) { return NULL; }
static inline void set_tp(void *tcb) { (void)tcb; }
#endif
#endif
