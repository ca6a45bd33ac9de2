/* Thread-local storage per lightweight thread: blocks laid out as glibc's,
 * the thread pointer switched with the context. Invariants at the top of
 * tls.h; design, the layout and every field set in docs/tls.md.
 *
 * This rests on glibc's private thread layout: verified for glibc 2.36 on
 * x86-64 (the struct pthread offsets below were read from its debug
 * information) and AArch64 (the same fields 512 bytes earlier: only the
 * header before them differs), and checked at start against the offsets
 * glibc publishes for libthread_db; anything else falls back to worker TLS
 * with one line. */
#define _GNU_SOURCE
#include "tls.h"

#include "forkpart.h"
#include "config.h"
#include "elfsym.h"
#include "fiber.h"
#include "observe.h"
#include "os.h"
#include "setxid.h"
#include "tcb.h"
#include "thread.h"
#include "worker.h"

#include <elf.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <locale.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int ito__tls_mode;

/* ITO_TLS: 1 thread, 0 worker (config.h) */
static struct { int thread; } tls_cfg;
static const struct ito_cfg_choice tls_words[] = {{"thread", 1}, {"worker", 0}, {0, 0}};
static const struct ito_cfg tls_rows[] = {
    {.name = "ITO_TLS",
     .kind = ITO_CFG_CHOICE,
     .dst = &tls_cfg.thread,
     .choices = tls_words,
     .dflt = "worker",
     .what = "thread: every thread has its own thread-local storage (errno, thread_local); "
             "worker: threads share their worker's"},
};
ITO_CONFIG_MODULE(tls_config, tls_rows, tls_cfg, NULL, NULL);

#if defined(__x86_64__) || defined(__aarch64__)

/* glibc's dtv: dtv[-1].counter is its length, dtv[0].counter the
 * generation, dtv[m] module m's block (val), and what to free. */
typedef union {
  size_t counter;
  struct {
    void *val;
    void *to_free;
  } pointer;
} dtv_t;
#define TLS_DTV_UNALLOCATED ((void *)-1l)

#if defined(__x86_64__)
#define R_TPOFF R_X86_64_TPOFF64 /* initial-exec: a symbol's offset from the thread pointer */
#else
#define R_TPOFF R_AARCH64_TLS_TPREL
#endif

static inline dtv_t *dtv_of(void *tp) {
#if defined(__x86_64__)
  return F(tp, OFF_DTV, dtv_t *);
#else
  return F(tp, 0, dtv_t *); /* tcbhead_t.dtv */
#endif
}

/* Is p in the static TLS of the block whose thread pointer is tp? */
static inline bool in_static(const void *tp, const void *p, size_t static_size) {
  const char *t = tp, *q = p;
#if defined(__x86_64__)
  return q < t && q >= t - static_size;
#else
  return q >= t && q < t + static_size;
#endif
}

/* ---- what the checks found at setup ----------------------------------------------------- */

#define MAX_MODULES 64
struct module {
  const char *name; /* as dl_iterate_phdr reports it */
  size_t modid;
  ptrdiff_t off;     /* its block's address minus the thread pointer (negative) */
  const void *image; /* .tdata */
  size_t filesz, memsz;
  int libc;    /* libc's block keeps its caches across threads */
  int program; /* the program's own TLS (not a runtime library's: program_module) */
  int seen;    /* still loaded (ito__tls_modules_changed) */
};

static struct {
  size_t static_size, align;
  void *(*allocate)(void *mem); /* _dl_allocate_tls */
  void (*call_dtors)(void);     /* __call_tls_dtors */
  void (*ctype_init)(void);     /* __ctype_init: the thread's ctype table pointers */
  struct module mod[MAX_MODULES];
  int nmod;
  ptrdiff_t errno_off, h_errno_off, resp_off;
  int lock;
  unsigned seq; /* odd while the module table changes (block_reset reads it again) */
  /* every block ever made, for a module loaded later (never freed) */
  void **all;
  size_t nall, capall;
  void *proto; /* a descriptor to copy the guards and flags from */
} ts;

/* Appends tp to the list *v (n used of *cap), growing it from `first`
 * entries by doubling; if there is no memory to grow, tp is not listed
 * (the callers' lists are best effort). Under ts.lock, which it lets go
 * while the allocator runs (no lock of ito's is held there:
 * docs/locks.md); whoever finds the list still full installs the copy. */
static void list_add(void ***v, size_t *n, size_t *cap, size_t first, void *tp) {
  while (*n == *cap) {
    size_t c = *cap ? *cap * 2 : first;
    spin_unlock(&ts.lock);
    void **a = malloc(c * sizeof *a), **old = NULL;
    spin_lock(&ts.lock, LR_TLS);
    if (!a) break;
    if (*n == *cap && *cap < c) {
      if (*n) memcpy(a, *v, *n * sizeof *a);
      old = *v;
      *v = a;
      *cap = c;
      a = NULL;
    }
    if (a || old) {
      spin_unlock(&ts.lock);
      free(a);
      free(old);
      spin_lock(&ts.lock, LR_TLS);
    }
  }
  if (*n < *cap) (*v)[(*n)++] = tp;
}

/* A module's static TLS block as the loader placed it for a thread glibc
 * knows (the one that started the runtime, ts.proto): its dtv entry, which
 * glibc fills for the static TLS of every thread it knows, also for a
 * module loaded later with dlopen. */
static char *static_block_of(size_t modid) {
  dtv_t *dtv = dtv_of(ts.proto);
  if (!dtv || modid > dtv[-1].counter) return NULL;
  void *v = __atomic_load_n(&dtv[modid].pointer.val, __ATOMIC_ACQUIRE);
  return v == TLS_DTV_UNALLOCATED ? NULL : v;
}

/* A module loaded later has no dtv entry until a thread reaches its TLS
 * through the dtv; its initial-exec code reaches it through the offsets
 * the loader wrote for its R_X86_64_TPOFF64 relocations: the offset of
 * (symbol + addend) from the thread pointer. The block's own offset
 * follows; NULL when the module has none (it has no static TLS). */
static char *static_block_by_relocs(const struct dl_phdr_info *info) {
  const ElfW(Dyn) *dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn) return NULL;
  const ElfW(Rela) *rela = NULL;
  const ElfW(Sym) *sym = NULL;
  size_t relasz = 0;
  for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
    uintptr_t p = (uintptr_t)d->d_un.d_ptr;
    if (p < info->dlpi_addr && (d->d_tag == DT_RELA || d->d_tag == DT_SYMTAB)) p += info->dlpi_addr;
    if (d->d_tag == DT_RELA) rela = (const ElfW(Rela) *)p;
    if (d->d_tag == DT_RELASZ) relasz = d->d_un.d_val;
    if (d->d_tag == DT_SYMTAB) sym = (const ElfW(Sym) *)p;
  }
  for (size_t i = 0; rela && i < relasz / sizeof *rela; i++) {
    if (ELF64_R_TYPE(rela[i].r_info) != R_TPOFF) continue;
    size_t si = ELF64_R_SYM(rela[i].r_info);
    long in_block = (long)rela[i].r_addend + (si && sym ? (long)sym[si].st_value : 0);
    long tpoff = *(const long *)(info->dlpi_addr + rela[i].r_offset);
    return (char *)ts.proto + tpoff - in_block;
  }
  return NULL;
}

/* The loader's own record: its link map's l_tls_offset (at the offset glibc
 * publishes for libthread_db), which says where a module's static TLS is
 * also when no thread has reached it yet and no relocation names it (on
 * AArch64 the loader gives a general-dynamic module loaded later static
 * TLS from the surplus and resolves its TLS descriptors to it). */
static char *static_block_by_linkmap(const struct dl_phdr_info *info) {
  static const uint32_t *off_d, *mod_d;
  if (!off_d) {
    mod_d = ito__elf_sym(NULL, "_thread_db_link_map_l_tls_modid", "GLIBC_PRIVATE");
    off_d = ito__elf_sym(NULL, "_thread_db_link_map_l_tls_offset", "GLIBC_PRIVATE");
  }
  if (!off_d || !mod_d || off_d[0] != 64 || mod_d[0] != 64) return NULL;
  for (struct link_map *l = _r_debug.r_map; l; l = l->l_next) {
    if (l->l_addr != info->dlpi_addr || F(l, mod_d[2], size_t) != info->dlpi_tls_modid) continue;
    ptrdiff_t o = F(l, off_d[2], ptrdiff_t);
#if defined(__x86_64__)
    return o > 0 ? (char *)ts.proto - o : NULL; /* (0: none; -1: forced dynamic) */
#else
    return o >= 16 ? (char *)ts.proto + o : NULL; /* (-1: none; -2: forced dynamic) */
#endif
  }
  return NULL;
}

/* Is this object's TLS the program's own, rather than a runtime
 * library's (the C, C++, Fortran and OpenMP runtimes, the loader, ito's
 * libraries)? gcc puts threadprivate variables and the program's
 * `__thread` there. */
static int program_module(const char *name) {
  if (!name || !*name) return 1; /* the executable */
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  /* (libhwloc and the libudev it loads come with libito.so itself: the
   * topology, topo.c) */
  static const char *const runtime[] = {
      "libc.so",    "libstdc++.so",   "libgcc_s.so",    "libgomp.so",    "libito",    "ld-linux",
      "libm.so",    "libgfortran.so", "libquadmath.so", "libpthread.so", "libdl.so",  "libasan.so",
      "libtsan.so", "libubsan.so",    "vgpreload",      "libhwloc.so",   "libudev.so"};
  for (size_t i = 0; i < sizeof runtime / sizeof runtime[0]; i++)
    if (!strncmp(base, runtime[i], strlen(runtime[i]))) return 0;
  return 1;
}

static int find_program_tls(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_TLS && info->dlpi_phdr[i].p_memsz &&
        program_module(info->dlpi_name)) {
      *(int *)arg = 1;
      return 1;
    }
  return 0;
}

int ito__tls_program_has(void) {
  int found = 0;
  dl_iterate_phdr(find_program_tls, &found);
  return found;
}

static int note_module(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size, (void)arg;
  if (!info->dlpi_tls_modid) return 0;
  const ElfW(Phdr) *tls = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_TLS) tls = &info->dlpi_phdr[i];
  char *tp = ts.proto;
  char *data = static_block_of(info->dlpi_tls_modid);
  if (!data) data = static_block_by_relocs(info);
  if (!data) data = static_block_by_linkmap(info);
  /* static TLS only: a block at a fixed place beside the thread pointer
   * (dynamic TLS is reached through the dtv, allocated on first use) */
  if (!tls || !data || !in_static(tp, data, ts.static_size)) return 0;
  const void *image = (const void *)(info->dlpi_addr + tls->p_vaddr);
  for (int i = 0; i < ts.nmod; i++) {
    if (ts.mod[i].modid == info->dlpi_tls_modid && ts.mod[i].image == image) {
      ts.mod[i].seen = 1;
      return 0;
    }
  }
  int n = ts.nmod;
  if (n == MAX_MODULES) return 0;
  struct module *m = &ts.mod[n];
  m->seen = 1;
  m->name = info->dlpi_name;
  m->modid = info->dlpi_tls_modid;
  m->off = data - tp;
  m->image = image;
  m->filesz = tls->p_filesz;
  m->memsz = tls->p_memsz;
  m->libc = info->dlpi_name && strstr(info->dlpi_name, "/libc.so.6") != NULL;
  m->program = program_module(info->dlpi_name);
  STORE_REL(&ts.nmod, n + 1); /* filled before a reset can read it */
  return 0;
}

/* Why thread TLS cannot be used here, or NULL. */
static const char *unusable(void) {
  if (strcmp(gnu_get_libc_version(), "2.36") != 0) return "glibc is not 2.36, the version verified";
#if ITO_ASAN || ITO_TSAN
  return "a sanitizer keeps its own per-thread state in the thread's block";
#endif
  if (ito__elf_sym(NULL, "__asan_init", NULL) || ito__elf_sym(NULL, "__tsan_init", NULL))
    return "a sanitizer keeps its own per-thread state in the thread's block";
  const char *pre = getenv("LD_PRELOAD");
  if (pre && strstr(pre, "vgpreload")) return "Valgrind does not follow a moved thread pointer";
  ts.allocate = (void *(*)(void *))ito__elf_sym(NULL, "_dl_allocate_tls", "GLIBC_PRIVATE");
  void (*info)(size_t *, size_t *) =
      (void (*)(size_t *, size_t *))ito__elf_sym(NULL, "_dl_get_tls_static_info", "GLIBC_PRIVATE");
  ts.call_dtors = (void (*)(void))ito__elf_sym(NULL, "__call_tls_dtors", "GLIBC_PRIVATE");
  ts.ctype_init = (void (*)(void))ito__elf_sym(NULL, "__ctype_init", "GLIBC_PRIVATE");
  if (!ts.allocate || !info || !ts.call_dtors || !ts.ctype_init)
    return "glibc's TLS allocator is not found";
  info(&ts.static_size, &ts.align);
  if (ts.align < 64) ts.align = 64;
#if defined(__x86_64__)
  if (ts.static_size < DESC_SIZE || ts.static_size > (1u << 20))
    return "glibc's static TLS size is not as expected";
#else
  if (ts.static_size > (1u << 20)) return "glibc's static TLS size is not as expected";
#endif
  /* the layout above, as glibc describes it to libthread_db: {bits,
   * count, offset} of a field, and the descriptor's size */
  const uint32_t *tid = ito__elf_sym(NULL, "_thread_db_pthread_tid", "GLIBC_PRIVATE");
  const uint32_t *spec = ito__elf_sym(NULL, "_thread_db_pthread_specific", "GLIBC_PRIVATE");
  const uint32_t *pol = ito__elf_sym(NULL, "_thread_db_pthread_schedpolicy", "GLIBC_PRIVATE");
  const uint32_t *size = ito__elf_sym(NULL, "_thread_db_sizeof_pthread", "GLIBC_PRIVATE");
  if (!tid || !spec || !pol || !size || tid[2] != OFF_TID || spec[2] != OFF_SPECIFIC ||
      pol[2] != OFF_SCHEDPOLICY || size[0] != DESC_SIZE)
    return "glibc's thread descriptor is not laid out as verified";
  /* the running thread's block must look like the layout above */
  char *tp = get_tp();
#if defined(__x86_64__)
  if (F(tp, OFF_TCB, void *) != tp || F(tp, OFF_SELF, void *) != tp)
    return "glibc's thread descriptor is not as expected";
#endif
  if (F(desc_of(tp), OFF_TID, pid_t) != (pid_t)syscall(SYS_gettid))
    return "glibc's thread descriptor is not as expected (its thread id)";
  return NULL;
}

static ptrdiff_t tls_offset_of(void *addr) { return (char *)addr - (char *)get_tp(); }

static void setup_mode(void) {
  ito__tls_mode = 0;
  if (!tls_cfg.thread) return;
  const char *why = unusable();
  if (!why) {
    ts.nmod = 0;
    ts.proto = get_tp();
    dl_iterate_phdr(note_module, NULL);
    ts.errno_off = tls_offset_of(&errno);
    ts.h_errno_off = tls_offset_of(&h_errno);
    /* glibc points __resp at the thread's own resolver state */
    size_t off = 0;
    const char *obj = ito__elf_tls("__resp", "GLIBC_PRIVATE", &off);
    ts.resp_off = 0;
    for (int i = 0; i < ts.nmod; i++)
      if (ts.mod[i].libc && obj && ts.mod[i].name && !strcmp(obj, ts.mod[i].name))
        ts.resp_off = ts.mod[i].off + (ptrdiff_t)off;
    if (!ts.resp_off) why = "libc's static TLS is not found";
  }
  /* glibc's own set*id broadcast must reach the descriptors it signals */
  if (!why && ito__setxid_glibc_start() != 0) why = "glibc's list of threads is not as verified";
  if (why) {
    char msg[256];
    snprintf(msg, sizeof msg,
             "ito: ITO_TLS=thread: %s; lightweight threads use their worker's TLS "
             "(docs/tls.md)\n",
             why);
    ito__write_stderr(msg, strlen(msg));
    return;
  }
  ts.proto = get_tp();
#if defined(__x86_64__)
  ito__tls_mode = (getauxval(AT_HWCAP2) & 2 /* HWCAP2_FSGSBASE */) ? 2 : 1;
#else
  ito__tls_mode = 2; /* (msr tpidr_el0: always) */
#endif
}

size_t ito__tls_block_size(void) {
#if defined(__x86_64__)
  return ito__tls_mode ? ts.static_size + ts.align : 0;
#else
  return ito__tls_mode ? DESC_SIZE + ts.static_size + ts.align : 0;
#endif
}

/* ---- blocks ------------------------------------------------------------------------------- */

/* A fresh block: glibc's allocator lays out the dtv and every module's
 * static TLS; the descriptor is filled as glibc's pthread_create does. */
/* Blocks are carved from slabs, one after the other, so that a block
 * touches only the pages its descriptor and its modules' TLS lie on (the
 * static TLS surplus between them stays untouched). Never freed: a block
 * stays with its fiber. */
#define SLAB_BLOCKS 256
static char *slab_next, *slab_end;

static char *slab_take(size_t stride) {
  spin_lock(&ts.lock, LR_TLS);
  if (!slab_next || slab_next + stride > slab_end) {
    size_t len = stride * SLAB_BLOCKS;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      spin_unlock(&ts.lock);
      return NULL;
    }
    slab_next = m;
    slab_end = m + len;
  }
  char *b = slab_next;
  slab_next += stride;
  spin_unlock(&ts.lock);
  return b;
}

/* A block's thread pointer (x86-64: the descriptor at the top, the static
 * TLS below; AArch64: the descriptor at the bottom, the static TLS above
 * the thread pointer), aligned for the static TLS. */
static char *block_tp(char *mem, size_t stride) {
#if defined(__x86_64__)
  return (char *)(((uintptr_t)mem + stride - DESC_SIZE) & ~(uintptr_t)(ts.align - 1));
#else
  (void)stride;
  return (char *)(((uintptr_t)mem + DESC_SIZE + ts.align - 1) & ~(uintptr_t)(ts.align - 1));
#endif
}

static void *block_new(void) {
#if defined(__x86_64__)
  size_t need = ts.static_size + ts.align;
#else
  size_t need = DESC_SIZE + ts.static_size + ts.align;
#endif
  size_t stride = (need + ts.align - 1) & ~(ts.align - 1);
  char *mem = slab_take(stride);
  if (!mem) return NULL;
  char *tp = block_tp(mem, stride), *pd = desc_of(tp);
  if (!ts.allocate(tp)) return NULL; /* (the slot stays unused) */
#if defined(__x86_64__)
  F(pd, OFF_TCB, void *) = pd;
  F(pd, OFF_SELF, void *) = pd;
  F(pd, OFF_SYSINFO, uintptr_t) = F(ts.proto, OFF_SYSINFO, uintptr_t);
  F(pd, OFF_STACK_GUARD, uintptr_t) = F(ts.proto, OFF_STACK_GUARD, uintptr_t);
  F(pd, OFF_POINTER_GUARD, uintptr_t) = F(ts.proto, OFF_POINTER_GUARD, uintptr_t);
  F(pd, OFF_FEATURE_1, unsigned) = F(ts.proto, OFF_FEATURE_1, unsigned);
#endif
  F(pd, OFF_MULTIPLE, int) = 1;
  F(pd, OFF_ROBUST_PREV, void *) = pd + OFF_ROBUST_HEAD;
  F(pd, OFF_ROBUST_HEAD, void *) = pd + OFF_ROBUST_HEAD;
  F(pd, OFF_ROBUST_HEAD + 8, long) = -24; /* __lock minus __list.__next in a mutex */
  F(pd, OFF_SPECIFIC, void *) = pd + OFF_SPECIFIC_1ST;
  F(pd, OFF_RSEQ_CPU_ID, int) = RSEQ_CPU_ID_REGISTRATION_FAILED;
  F(tp + ts.resp_off, 0, void *) = pd + OFF_RES;
  /* libc's ctype pointers (isspace, toupper ...) are per thread and set
   * at thread start by __ctype_init, which works on the running block:
   * run it on this one (glibc's start_thread does the same) */
  void *was = get_tp();
  set_tp(tp);
  ts.ctype_init();
  set_tp(was);
  spin_lock(&ts.lock, LR_TLS);
  list_add(&ts.all, &ts.nall, &ts.capall, 256, tp);
  spin_unlock(&ts.lock);
  return tp;
}

static void init_module(char *tp, const struct module *m) {
  char *dst = tp + m->off;
  memcpy(dst, m->image, m->filesz);
  memset(dst + m->filesz, 0, m->memsz - m->filesz);
}

/* The block as a fresh thread finds it (invariant 3). libc's own block
 * keeps its caches (malloc's tcache and arena, the resolver and dlerror
 * states: glibc 2.36 has no public call that frees them, so a fresh block
 * would leak them at every thread); errno and h_errno start at 0. */
static void block_reset(char *tp) {
  /* the table changes only at a dlopen or dlclose: read it again if it
   * changed meanwhile (ts.seq is odd while it changes) */
  unsigned v;
  do {
    while ((v = LOAD_ACQ(&ts.seq)) & 1) cpu_relax();
    for (int i = 0; i < LOAD_RLX(&ts.nmod); i++)
      if (!ts.mod[i].libc) init_module(tp, &ts.mod[i]);
  } while (LOAD_ACQ(&ts.seq) != v);
  F(tp + ts.errno_off, 0, int) = 0;
  F(tp + ts.h_errno_off, 0, int) = 0;
  /* dynamic TLS (modules loaded by dlopen, reached through the dtv) is
   * freed: the next thread allocates its own on first use */
  dtv_t *dtv = dtv_of(tp);
  size_t n = dtv[-1].counter;
  for (size_t m = 1; m <= n; m++) {
    void *v = dtv[m].pointer.val;
    if (v == TLS_DTV_UNALLOCATED || in_static(tp, v, ts.static_size)) continue;
    free(dtv[m].pointer.to_free);
    dtv[m].pointer.val = TLS_DTV_UNALLOCATED;
    dtv[m].pointer.to_free = NULL;
  }
}

/* ---- the switch ------------------------------------------------------------------------------ */

void ito__tls_switch(worker *w, void *tcb) {
  void *to = tcb ? tcb : w->tls_own;
  set_tp(to);
  w->tls_cur = tcb;
  if (tcb) {
    F(desc_of(tcb), OFF_TID, pid_t) = (pid_t)w->os_tid; /* invariant 2 */
    ito__tls_worker = w;                                /* (now the block's own copy) */
  }
}

static void worker_start(worker *w, fiber *root) {
  w->tls_cur = NULL;
  w->tls_own = ito__tls_mode ? get_tp() : NULL;
  w->tls_glibc = w->tls_own;
  if (!ito__tls_mode || !root) return;
  /* the root keeps the main thread's block; worker 0's scheduler gets one */
  char *own = block_new();
  if (!own) {
    ito__fatal("out of memory for worker 0's TLS block (ITO_TLS=thread)");
  }
  F(desc_of(own), OFF_TID, pid_t) = (pid_t)w->os_tid;
  root->tls = w->tls_own;
  root->tls_block = NULL; /* glibc's own: never reset by ito */
  w->tls_own = own;
  set_tp(own);
  ito__tls_worker = w;
  w->tls_cur = root->tls;
  set_tp(root->tls); /* the root runs on now, on its own */
  /* on glibc's list of threads, worker 0's block names this OS thread
   * beside main's, whose tid follows the root (docs/tls.md, "set*id") */
  ito__setxid_represent(own, root->tls, 0);
}

int ito__tls_thread_begin(fiber *f) {
  if (!f->tls_block) {
    /* glibc's allocator calls malloc, which may be the program's and may
     * wait on a mutex: the creator must not move meanwhile (its caller
     * holds its worker) */
    ito__thread_pin();
    f->tls_block = block_new();
    ito__thread_unpin();
    if (!f->tls_block) return EAGAIN;
  }
  char *tp = f->tls_block, *pd = desc_of(tp);
  F(pd, OFF_STACKBLOCK, void *) = f->lo;
  F(pd, OFF_STACKBLOCK_SIZE, size_t) = (size_t)(f->hi - f->lo);
  f->tls = tp;
  return 0;
}

void ito__tls_thread_end(fiber *f) {
  if (!f->tls) return;
  ts.call_dtors(); /* the thread_local destructors of this thread */
  uselocale(LC_GLOBAL_LOCALE);
}

void ito__tls_thread_release(fiber *f) {
  if (!f->tls) return;
  block_reset(f->tls);
  f->tls = NULL;
}

/* ---- blocks a layer lends to its threads (tls.h, invariant 5) ------------------------------ */

static struct {
  void **v;
  size_t n, cap;
} spare; /* blocks given back, under ts.lock */

void *ito__tls_block_get(void) {
  if (!ito__tls_mode) return NULL;
  ito__thread_pin(); /* (a preemptible thread must not stop holding ts.lock) */
  spin_lock(&ts.lock, LR_TLS);
  void *b = spare.n ? spare.v[--spare.n] : NULL;
  spin_unlock(&ts.lock);
  if (!b) b = block_new(); /* (pinned: glibc's allocator may call the program's malloc) */
  ito__thread_unpin();
  return b;
}

void ito__tls_block_put(void *tp) {
  if (!tp) return;
  ito__thread_pin();
  spin_lock(&ts.lock, LR_TLS);
  list_add(&spare.v, &spare.n, &spare.cap, 64, tp); /* (if not, it stays unused, in ts.all) */
  spin_unlock(&ts.lock);
  ito__thread_unpin();
}

void ito__tls_copy_program(void *dst) {
  char *src = get_tp(), *d = dst;
  if (!ito__tls_mode || src == d) return;
  unsigned v;
  do {
    while ((v = LOAD_ACQ(&ts.seq)) & 1) cpu_relax();
    for (int i = 0; i < LOAD_RLX(&ts.nmod); i++)
      if (ts.mod[i].program) memcpy(d + ts.mod[i].off, src + ts.mod[i].off, ts.mod[i].memsz);
  } while (LOAD_ACQ(&ts.seq) != v);
}

void *ito__tls_use(void *tcb) {
  ito__thread_pin(); /* the worker read below stays the one running us */
  worker *w = cur_worker();
  fiber *f = w ? w->cur : NULL;
  ITO_ASSERT(f && f->kind != FIBER_NATIVE); /* (the root keeps glibc's block) */
  void *was = f->tls;
  if (tcb) {
    char *pd = desc_of(tcb);
    F(pd, OFF_STACKBLOCK, void *) = f->lo;
    F(pd, OFF_STACKBLOCK_SIZE, size_t) = (size_t)(f->hi - f->lo);
  }
  f->tls = tcb;
  if (tcb != w->tls_cur) ito__tls_switch(w, tcb);
  ito__thread_unpin();
  return was;
}

/* After a dlopen or dlclose: a new module's static TLS is initialised in
 * every block; an unloaded one is forgotten (its image is gone). Called
 * by one thread at a time (the loader's calls are pinned, and the runtime
 * serialises these with ts.lock around the table's changes). */
void ito__tls_modules_changed(void) {
  if (!ito__tls_mode) return;
  static int busy;
  spin_lock(&busy, LR_TLS_BUSY);
  spin_lock(&ts.lock, LR_TLS);
  int before = ts.nmod;
  for (int i = 0; i < ts.nmod; i++) ts.mod[i].seen = 0;
  spin_unlock(&ts.lock);
  dl_iterate_phdr(note_module, NULL);
  spin_lock(&ts.lock, LR_TLS);
  for (int i = before; i < ts.nmod; i++)
    for (size_t b = 0; b < ts.nall; b++) init_module(ts.all[b], &ts.mod[i]);
  __atomic_add_fetch(&ts.seq, 1, __ATOMIC_ACQ_REL);
  int k = 0;
  for (int i = 0; i < ts.nmod; i++)
    if (ts.mod[i].seen) ts.mod[k++] = ts.mod[i];
  STORE_RLX(&ts.nmod, k);
  __atomic_add_fetch(&ts.seq, 1, __ATOMIC_ACQ_REL);
  spin_unlock(&ts.lock);
  spin_unlock(&busy);
}

static void tls_fork_lock(int take) {
  if (take)
    spin_lock(&ts.lock, LR_TLS);
  else
    spin_unlock(&ts.lock);
}

/* The child's thread runs on its own block (its tid the child's), which
 * becomes the one glibc's thread list holds. */
static void tls_fork_child(worker *w, ithread *self) {
  (void)self;
  if (!ito__tls_mode) return;
  ito__tls_switch(w, w->cur->tls);
  ito__setxid_represent(w->tls_own, w->tls_glibc, 1);
}
ITO_FORK_PART(tls_fork, .lock_rank = 20, .lock = tls_fork_lock, .child_order = FORK_TLS,
              .child = tls_fork_child);

#else /* neither x86-64 nor AArch64: not verified, worker TLS */

static void setup_mode(void) {
  ito__tls_mode = 0;
  if (tls_cfg.thread) {
    static const char msg[] =
        "ito: ITO_TLS=thread is verified on x86-64 and AArch64 only; "
        "lightweight threads use their worker's TLS (docs/tls.md)\n";
    ito__write_stderr(msg, sizeof msg - 1);
  }
}
static void worker_start(worker *w, fiber *root) {
  (void)root;
  w->tls_cur = w->tls_own = NULL;
}
void ito__tls_switch(worker *w, void *tcb) { (void)w, (void)tcb; }
int ito__tls_thread_begin(fiber *f) {
  (void)f;
  return 0;
}
void ito__tls_thread_end(fiber *f) { (void)f; }
void ito__tls_thread_release(fiber *f) { (void)f; }
void ito__tls_modules_changed(void) {}
size_t ito__tls_block_size(void) { return 0; }
int ito__tls_program_has(void) { return 0; }
void *ito__tls_block_get(void) { return NULL; }
void ito__tls_block_put(void *tp) { (void)tp; }
void ito__tls_copy_program(void *dst) { (void)dst; }
void *ito__tls_use(void *tcb) {
  (void)tcb;
  return NULL;
}

#endif

/* The worker's OS thread starts (observe.h): its cur is the adopted main's
 * fiber, which keeps main's block, or NULL. */
static void tls_at_worker(void) {
  worker *w = cur_worker();
  worker_start(w, w->cur);
}
ITO_OBSERVE(tls_worker_observer, OBSERVE_WORKER, OBS_TLS_WORKER, tls_at_worker);

void ito__tls_setup(void) {
  setup_mode();
  ito__posix_update(); /* (posix_hooks.h) */
}
