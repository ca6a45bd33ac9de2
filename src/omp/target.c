/* libito-omp.so: teams on the host, target regions and data constructs on
 * the host (there is no offload device), and the device memory API for the
 * host device, as gcc 12's libgomp does without offloading.
 * docs/openmp.md, "Teams and target regions on the host". */
#include "omp_int.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- teams ---------------------------------------------------------------------------
 * A host teams region runs its teams one after another on the encountering
 * task, which answers omp_get_team_num() for the team it runs. */

/* thread_limit clause value to thread-limit-var */
static inline int limit_of(unsigned v) { return v > INT_MAX ? INT_MAX : (int)v; }

OMP_API void GOMP_teams_reg(void (*fn)(void *), void *data, unsigned num_teams,
                            unsigned thread_limit, unsigned flags) {
  (void)flags;
  task *t = ito__omp_cur();
  if (!thread_limit) thread_limit = (unsigned)ito__omp_g.teams_thread_limit;
  int old_limit = t->icv.thread_limit;
  if (thread_limit) t->icv.thread_limit = limit_of(thread_limit);
  if (!num_teams) num_teams = ito__omp_g.nteams ? (unsigned)ito__omp_g.nteams : 3;
  t->num_teams = num_teams - 1;
  for (t->team_num = 0; t->team_num < num_teams; t->team_num++) fn(data);
  t->num_teams = t->team_num = 0;
  if (thread_limit) t->icv.thread_limit = old_limit;
}

/* teams inside a target region: gcc runs the body while this returns true
 * (first: the first call); one team of at least num_teams_low runs per call. */
OMP_API bool GOMP_teams4(unsigned num_teams_low, unsigned num_teams_high, unsigned thread_limit,
                         bool first) {
  (void)num_teams_high;
  task *t = ito__omp_cur();
  if (first) {
    if (thread_limit) t->icv.thread_limit = limit_of(thread_limit);
    t->num_teams = (num_teams_low ? num_teams_low : 1) - 1;
    t->team_num = 0;
    return true;
  }
  if (t->team_num == t->num_teams) return false;
  t->team_num++;
  return true;
}

/* The ABI before gcc 12: only the thread limit; the body runs once. */
OMP_API void GOMP_teams(unsigned num_teams, unsigned thread_limit) {
  (void)num_teams;
  if (thread_limit) ito__omp_cur()->icv.thread_limit = limit_of(thread_limit);
}

/* nteams-var and teams-thread-limit-var: device-wide; negative values are ignored */
OMP_API void omp_set_num_teams(int n) {
  OMP_SETUP();
  if (n >= 0) ito__omp_g.nteams = n;
}
OMP_API int omp_get_max_teams(void) {
  OMP_SETUP();
  return ito__omp_g.nteams;
}
OMP_API void omp_set_teams_thread_limit(int n) {
  OMP_SETUP();
  if (n >= 0) ito__omp_g.teams_thread_limit = n;
}
OMP_API int omp_get_teams_thread_limit(void) {
  OMP_SETUP();
  return ito__omp_g.teams_thread_limit;
}

/* ---- target regions ------------------------------------------------------------------
 * Without a device every target region runs on the host: fn(hostaddrs) as
 * a new initial task (the environment's ICVs, not in any team or teams
 * region), firstprivate variables copied first. nowait makes it a task. */

/* gcc's map kinds (gomp-constants.h): the low byte is the kind, the high
 * byte log2 of the alignment */
#define MAP_FIRSTPRIVATE 12
#define TARGET_FLAG_NOWAIT 1u
/* the args array: {id | value << 16} or {id | SUBSEQUENT, value}, NULL-ended */
#define ARG_DEVICE_MASK 0x7f
#define ARG_SUBSEQUENT 0x80
#define ARG_ID_MASK 0xff00
#define ARG_THREAD_LIMIT (2 << 8)
#define ARG_VALUE_SHIFT 16

/* The thread_limit the args give to every device, or 0. */
static int args_thread_limit(void **args) {
  if (!args) return 0;
  while (*args) {
    intptr_t id = (intptr_t)*args++, val;
    if (id & ARG_SUBSEQUENT)
      val = (intptr_t)*args++;
    else
      val = id >> ARG_VALUE_SHIFT;
    if ((id & ARG_DEVICE_MASK) != 0 || (id & ARG_ID_MASK) != ARG_THREAD_LIMIT) continue;
    return val > INT_MAX ? INT_MAX : (int)val;
  }
  return 0;
}

/* Runs fn(hostaddrs) as a new initial task. */
static void target_run(void (*fn)(void *), void *hostaddrs, int thread_limit) {
  task *enc = ito__omp_cur();
  task t;
  memset(&t, 0, sizeof t);
  t.kind = TASK_INITIAL;
  t.imp = &t;
  t.parent = enc; /* not the program's initial task: its teams are not bound (team.c) */
  t.icv = ito__omp_g.init;
  if (thread_limit) t.icv.thread_limit = thread_limit;
  ito__omp_set_cur(&t);
  fn(hostaddrs);
  /* the region ends when its tasks are over */
  ito__omp_wait_kids(&t, KID_WAIT_ALIVE, true);
  if (t.deps) ito__omp_deptab_free(&t);
  free(t.solo);
  ito__omp_set_cur(enc);
}

/* The room the firstprivate copies need: bytes and alignment. */
static size_t firstprivate_size(size_t mapnum, size_t *sizes, unsigned short *kinds,
                                size_t *align) {
  size_t n = 0;
  *align = 1;
  for (size_t i = 0; i < mapnum; i++) {
    if ((kinds[i] & 0xff) != MAP_FIRSTPRIVATE) continue;
    size_t a = (size_t)1 << (kinds[i] >> 8);
    if (a > *align) *align = a;
    n = ((n + a - 1) & ~(a - 1)) + sizes[i];
  }
  return n;
}

/* Copies the firstprivate variables to buf (aligned as firstprivate_size
 * said) and points hostaddrs at the copies. */
static void firstprivate_copy(char *buf, size_t mapnum, void **hostaddrs, size_t *sizes,
                              unsigned short *kinds) {
  size_t n = 0;
  for (size_t i = 0; i < mapnum; i++) {
    if ((kinds[i] & 0xff) != MAP_FIRSTPRIVATE || !hostaddrs[i]) continue;
    size_t a = (size_t)1 << (kinds[i] >> 8);
    n = (n + a - 1) & ~(a - 1);
    memcpy(buf + n, hostaddrs[i], sizes[i]);
    hostaddrs[i] = buf + n;
    n += sizes[i];
  }
}

/* A nowait target region is a task; its data is this record, then the
 * copy of hostaddrs, then the firstprivate copies. */
struct target_task {
  void (*fn)(void *);
  int thread_limit;
  size_t mapnum, fp_off;
};
struct target_src {
  struct target_task head;
  void **hostaddrs;
  size_t *sizes;
  unsigned short *kinds;
};

static void target_task_copy(void *dst, void *src) {
  struct target_src *s = src;
  struct target_task *d = dst;
  *d = s->head;
  void **addrs = (void **)(d + 1);
  memcpy(addrs, s->hostaddrs, s->head.mapnum * sizeof *addrs);
  firstprivate_copy((char *)dst + d->fp_off, d->mapnum, addrs, s->sizes, s->kinds);
}

static void target_task_run(void *data) {
  struct target_task *d = data;
  target_run(d->fn, (void **)(d + 1), d->thread_limit);
}

OMP_API void GOMP_target_ext(int device, void (*fn)(void *), size_t mapnum, void **hostaddrs,
                             size_t *sizes, unsigned short *kinds, unsigned flags, void **depend,
                             void **args) {
  (void)device; /* no device: every region falls back to the host */
  size_t align, fp = firstprivate_size(mapnum, sizes, kinds, &align);
  int limit = args_thread_limit(args);
  if (flags & TARGET_FLAG_NOWAIT) {
    if (align < _Alignof(struct target_task)) align = _Alignof(struct target_task);
    size_t off = sizeof(struct target_task) + mapnum * sizeof(void *);
    off = (off + align - 1) & ~(align - 1);
    struct target_src s = {{fn, limit, mapnum, off}, hostaddrs, sizes, kinds};
    GOMP_task(target_task_run, &s, target_task_copy, (long)(off + fp), (long)align, true,
              depend ? 8u : 0u, depend, 0, NULL);
    return;
  }
  /* depend without nowait: wait for the dependences, then run here */
  if (depend) GOMP_taskwait_depend(depend);
  char *buf = NULL;
  if (fp) {
    buf = __builtin_alloca(fp + align - 1);
    buf = (char *)(((uintptr_t)buf + align - 1) & ~(uintptr_t)(align - 1));
    firstprivate_copy(buf, mapnum, hostaddrs, sizes, kinds);
  }
  target_run(fn, hostaddrs, limit);
}

/* The ABI before gcc 5 (no firstprivate map kind, no clauses). */
OMP_API void GOMP_target(int device, void (*fn)(void *), const void *unused, size_t mapnum,
                         void **hostaddrs, size_t *sizes, unsigned char *kinds) {
  (void)device, (void)unused, (void)mapnum, (void)sizes, (void)kinds;
  target_run(fn, hostaddrs, 0);
}

/* ---- data constructs: the host's memory is the device's ----------------------------------
 * Nothing to map or copy; depend clauses still order them among tasks:
 * with nowait an empty task with those dependences, else a wait for them. */
static void nothing(void *data) { (void)data; }

static void data_depend(unsigned flags, void **depend) {
  if (!depend) return;
  if (flags & TARGET_FLAG_NOWAIT)
    GOMP_task(nothing, NULL, NULL, 0, 1, true, 8u, depend, 0, NULL);
  else
    GOMP_taskwait_depend(depend);
}

OMP_API void GOMP_target_data(int device, const void *unused, size_t mapnum, void **hostaddrs,
                              size_t *sizes, unsigned char *kinds) {
  (void)device, (void)unused, (void)mapnum, (void)hostaddrs, (void)sizes, (void)kinds;
}
OMP_API void GOMP_target_data_ext(int device, size_t mapnum, void **hostaddrs, size_t *sizes,
                                  unsigned short *kinds) {
  (void)device, (void)mapnum, (void)hostaddrs, (void)sizes, (void)kinds;
}
OMP_API void GOMP_target_end_data(void) {}
OMP_API void GOMP_target_update(int device, const void *unused, size_t mapnum, void **hostaddrs,
                                size_t *sizes, unsigned char *kinds) {
  (void)device, (void)unused, (void)mapnum, (void)hostaddrs, (void)sizes, (void)kinds;
}
OMP_API void GOMP_target_update_ext(int device, size_t mapnum, void **hostaddrs, size_t *sizes,
                                    unsigned short *kinds, unsigned flags, void **depend) {
  (void)device, (void)mapnum, (void)hostaddrs, (void)sizes, (void)kinds;
  data_depend(flags, depend);
}
OMP_API void GOMP_target_enter_exit_data(int device, size_t mapnum, void **hostaddrs, size_t *sizes,
                                         unsigned short *kinds, unsigned flags, void **depend) {
  (void)device, (void)mapnum, (void)hostaddrs, (void)sizes, (void)kinds;
  data_depend(flags, depend);
}

/* ---- devices: none but the host, whose number is omp_get_num_devices() ----------------- */
#define HOST_DEVICE 0

OMP_API int omp_get_num_devices(void) { return 0; }
OMP_API int omp_get_initial_device(void) { return HOST_DEVICE; }
OMP_API int omp_get_device_num(void) { return HOST_DEVICE; }
OMP_API int omp_is_initial_device(void) { return 1; }
OMP_API int omp_get_default_device(void) { return ito__omp_cur()->icv.default_device; }
OMP_API void omp_set_default_device(int d) { ito__omp_cur()->icv.default_device = d >= 0 ? d : 0; }

OMP_API void *omp_target_alloc(size_t size, int device) {
  return device == HOST_DEVICE ? malloc(size) : NULL;
}
OMP_API void omp_target_free(void *p, int device) {
  if (device == HOST_DEVICE) free(p);
}
OMP_API int omp_target_is_present(const void *p, int device) { return !p || device == HOST_DEVICE; }
OMP_API int omp_target_memcpy(void *dst, const void *src, size_t len, size_t dst_off,
                              size_t src_off, int dst_device, int src_device) {
  if (dst_device != HOST_DEVICE || src_device != HOST_DEVICE) return EINVAL;
  memcpy((char *)dst + dst_off, (const char *)src + src_off, len);
  return 0;
}

/* One dimension after another: the volume[0] rows of this dimension,
 * each a rectangle of the dimensions after it. */
static void copy_rect(char *dst, const char *src, size_t elem, int ndims, const size_t *volume,
                      const size_t *dst_offsets, const size_t *src_offsets, const size_t *dst_dims,
                      const size_t *src_dims) {
  if (ndims == 1) {
    memcpy(dst + dst_offsets[0] * elem, src + src_offsets[0] * elem, volume[0] * elem);
    return;
  }
  size_t dst_slice = elem, src_slice = elem;
  for (int i = 1; i < ndims; i++) {
    dst_slice *= dst_dims[i];
    src_slice *= src_dims[i];
  }
  for (size_t j = 0; j < volume[0]; j++)
    copy_rect(dst + (dst_offsets[0] + j) * dst_slice, src + (src_offsets[0] + j) * src_slice, elem,
              ndims - 1, volume + 1, dst_offsets + 1, src_offsets + 1, dst_dims + 1, src_dims + 1);
}

OMP_API int omp_target_memcpy_rect(void *dst, const void *src, size_t elem, int ndims,
                                   const size_t *volume, const size_t *dst_offsets,
                                   const size_t *src_offsets, const size_t *dst_dims,
                                   const size_t *src_dims, int dst_device, int src_device) {
  if (!dst && !src) return INT_MAX; /* the dimensions supported */
  if (dst_device != HOST_DEVICE || src_device != HOST_DEVICE) return EINVAL;
  if (!dst || !src || ndims < 1 || !elem) return EINVAL;
  copy_rect(dst, src, elem, ndims, volume, dst_offsets, src_offsets, dst_dims, src_dims);
  return 0;
}

/* The host device's memory is the host's: nothing to associate. */
OMP_API int omp_target_associate_ptr(const void *host, const void *dev, size_t size, size_t dev_off,
                                     int device) {
  (void)host, (void)dev, (void)size, (void)dev_off, (void)device;
  return EINVAL;
}
OMP_API int omp_target_disassociate_ptr(const void *p, int device) {
  (void)p, (void)device;
  return EINVAL;
}
