/* The profiler's outputs: figures in seconds, the summary and its
 * diagnosis, Cilkscale's CSV, a Chrome trace and the collapsed graph
 * (docs/profile.md). Runs after the recording (profile.c), never on the
 * recording path. */
#define _GNU_SOURCE
#include "config.h"
#include "os.h"
#include "profile_data.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- files ------------------------------------------------------------------------------- */

static const char *suffix_of(int bit) {
  return bit == PROF_CSV ? "csv" : bit == PROF_TRACE ? "trace.json" : "dag.json";
}

static void path_of(char *out, size_t len, const char *prefix, int number, int bit) {
  if (number > 1)
    snprintf(out, len, "%s.%d.%s", prefix, number, suffix_of(bit));
  else
    snprintf(out, len, "%s.%s", prefix, suffix_of(bit));
}

static void say(const char *line) { ito__write_stderr(line, strlen(line)); }

static const char *kind_of(int bit) {
  return bit == PROF_CSV ? "csv" : bit == PROF_TRACE ? "trace" : "dag";
}

/* A profile file being written: a new file beside its final name, created
 * without following links (O_EXCL, O_NOFOLLOW), mode 0644 less the umask;
 * out_close renames it over the final name only when every write went
 * through. A link planted at the final name is replaced, never written
 * through; an old file stays whole until the new one is complete. */
struct out {
  FILE *f; /* over fd, through out_write (its first error kept in err) */
  int fd;
  int err;
  int bit;
  const char *prefix;
  char path[4096];
  char tmp[4200];
};

static void out_fail(const struct out *o, int err) {
  char msg[8800];
  snprintf(msg, sizeof msg,
           "ito: ITO_PROFILE_OUT=%s: cannot write %s (%s): the profile's %s is skipped; name a "
           "prefix in a writable directory with room\n",
           o->prefix, o->path, strerror(err), kind_of(o->bit));
  say(msg);
}

/* The stream's writes. A buffered stream reports a failed write at a later
 * call, when errno may say something else (or nothing): the first error is
 * kept here, as the write gave it. */
static ssize_t out_write(void *cookie, const char *buf, size_t len) {
  struct out *o = cookie;
  size_t done = 0;
  while (done < len) {
    ssize_t k = ito__os.write(o->fd, buf + done, len - done); /* (libc's, as stdio's) */
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      if (!o->err) o->err = k < 0 ? errno : EIO;
      return 0; /* (the stream's error; the file is dropped) */
    }
    done += (size_t)k;
  }
  return (ssize_t)done;
}

static int out_fd_close(void *cookie) {
  struct out *o = cookie;
  int rc = (int)ito__os.syscall(SYS_close, o->fd);
  if (rc != 0 && !o->err) o->err = errno;
  return rc;
}

static bool out_open(struct out *o, const char *prefix, int number, int bit) {
  static unsigned seq;
  o->f = NULL;
  o->err = 0;
  o->bit = bit;
  o->prefix = prefix;
  path_of(o->path, sizeof o->path, prefix, number, bit);
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 100; tries++) {
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp-%ld-%u", o->path, (long)getpid(),
             __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
    fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    out_fail(o, errno);
    return false;
  }
  o->fd = fd;
  o->f = fopencookie(o, "w", (cookie_io_functions_t){.write = out_write, .close = out_fd_close});
  if (!o->f) {
    int e = errno;
    close(fd);
    unlink(o->tmp);
    out_fail(o, e);
    return false;
  }
  return true;
}

/* Ends the file: in place under its name when every write went through,
 * else removed and one line said. */
static void out_close(struct out *o) {
  int e = 0;
  errno = 0;
  if (fflush(o->f) != 0 || ferror(o->f)) e = o->err ? o->err : errno ? errno : EIO;
  errno = 0;
  if (fclose(o->f) != 0 && !e) e = o->err ? o->err : errno ? errno : EIO;
  o->f = NULL;
  if (!e && rename(o->tmp, o->path) != 0) e = errno;
  if (e) {
    unlink(o->tmp);
    out_fail(o, e);
  }
}

/* Drops a file begun by out_open. */
static void out_drop(struct out *o) {
  fclose(o->f);
  o->f = NULL;
  unlink(o->tmp);
}

int ito__prof_check_out(int what, const char *prefix, int number) {
  int bad = 0;
  for (int bit = PROF_CSV; bit <= PROF_DAG; bit <<= 1) {
    if (!(what & bit)) continue;
    struct out o;
    if (!out_open(&o, prefix, number, bit))
      bad |= bit;
    else
      out_drop(&o);
  }
  return bad;
}

/* ---- the baseline ------------------------------------------------------------------------ */

/* The work column of a CSV this profiler wrote (or Cilkscale's, whose
 * columns it has), read once per file: the summary asks for every region. */
static struct {
  char file[4096];
  bool valid; /* a profile CSV */
  int n;
  struct {
    char tag[PROF_TAG_LEN];
    double work;
  } row[PROF_TAGS + 1];
} base;
static int base_lock;

static void base_load(const char *file) {
  snprintf(base.file, sizeof base.file, "%s", file);
  base.valid = false;
  base.n = 0;
  FILE *f = fopen(file, "r");
  if (!f) return;
  char line[512];
  if (fgets(line, sizeof line, f) && !strncmp(line, "tag,work", 8)) {
    base.valid = true;
    while (base.n < PROF_TAGS + 1 && fgets(line, sizeof line, f)) {
      char *comma = strchr(line, ',');
      if (!comma || (size_t)(comma - line) >= PROF_TAG_LEN) continue;
      *comma = 0;
      char *end;
      double v = strtod(comma + 1, &end);
      if (end == comma + 1) continue;
      memcpy(base.row[base.n].tag, line, (size_t)(comma - line) + 1); /* (with its NUL) */
      base.row[base.n++].work = v;
    }
  }
  fclose(f);
}

double ito__prof_baseline_work(const char *file, const char *tag) {
  if (!file) return -1;
  double w = -1;
  spin_lock(&base_lock, LR_LEAF);
  if (strcmp(base.file, file) || !base.file[0]) base_load(file);
  for (int i = 0; base.valid && i < base.n; i++)
    if (!strcmp(base.row[i].tag, tag)) w = base.row[i].work; /* (the last row of a tag) */
  spin_unlock(&base_lock);
  return w;
}

/* ---- figures ------------------------------------------------------------------------------- */

void ito__prof_figures(const struct prof_run *r, const struct prof_sums *s, uint64_t forks,
                       struct ito_profile *out) {
  double k = r->sec_per_tick;
  memset(out, 0, sizeof *out);
  out->workers = r->workers;
  out->elapsed = (double)s->elapsed * k;
  out->work = (double)s->time[C_WORK] * k;
  out->span = (double)span_ticks(s->span) * k;
  out->parallelism = out->span > 0 ? out->work / out->span : 0;
  out->burdened_span = out->span + (double)forks * (double)r->burden * k;
  out->burdened_parallelism = out->burdened_span > 0 ? out->work / out->burdened_span : 0;
  out->bound = (r->workers > 0 ? out->work / r->workers : 0) + out->span;
  out->overhead = (double)s->time[C_RUNTIME] * k;
  out->idle = (double)s->time[C_IDLE] * k;
  out->idle_ready = (double)s->time[C_READY] * k;
  out->blocked = (double)s->time[C_BLOCKED] * k;
  out->descheduled = (double)s->time[C_OS] * k;
  out->instances = s->instances;
  out->spawns = s->n[N_SPAWN];
  out->steals = s->n[N_STEAL];
  out->steal_fails = s->n[N_STEAL_FAIL];
  out->creates = s->n[N_CREATE];
  out->parks = s->n[N_PARK];
  out->sleeps = s->n[N_SLEEP];
  out->wakes = s->n[N_WAKE];
  out->tasks_local = s->n[N_LOCAL];
  out->tasks_remote = s->n[N_REMOTE];
  out->tasks_unknown = s->n[N_UNKNOWN];
  out->collapsed = s->n[N_COLL];
  out->collapsed_forks = s->n[N_QUIET];
}

void ito__prof_stretch(const struct prof_run *r, const char *tag, struct ito_profile *p) {
  double base = ito__prof_baseline_work(r->baseline, tag);
  if (base > 0) p->stretch = p->work / base;
}

/* ---- the summary --------------------------------------------------------------------------- */

static double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0; }

/* One line naming the largest loss, in words a user can act on. */
static void diagnosis(const struct ito_profile *p, char *out, size_t len) {
  double total = p->workers * p->elapsed;
  double lost = total - p->work;
  double tasks = (double)(p->spawns + p->creates + 1);
  double grain_us = p->work / tasks * 1e6;
  double stretch_loss = p->stretch > 1 ? p->work - p->work / p->stretch : 0;
  if (total <= 0 || lost < 0.1 * total) {
    if (stretch_loss > 0.1 * total) {
      snprintf(out, len,
               "work-time stretch %.2f against the baseline: the same work runs slower on %d "
               "workers (memory traffic or contention)",
               p->stretch, p->workers);
      return;
    }
    snprintf(out, len,
             "workers ran the program's code %.0f%% of the time: the run is within 10%% of its "
             "bound",
             pct(p->work, total));
    return;
  }
  double c[6] = {p->idle, p->idle_ready, p->overhead, p->blocked, stretch_loss, p->descheduled};
  int k = 0;
  for (int i = 1; i < 6; i++)
    if (c[i] > c[k]) k = i;
  switch (k) {
    case 0:
      if (p->parallelism < 2.0 * p->workers)
        snprintf(out, len,
                 "parallelism %.1f on %d workers: the program does not expose enough "
                 "parallelism (%.0f%% of worker time idle with no work anywhere)",
                 p->parallelism, p->workers, pct(p->idle, total));
      else
        snprintf(out, len,
                 "%.0f%% of worker time idle with no work anywhere, though the parallelism is "
                 "%.1f: serial phases between the parallel ones",
                 pct(p->idle, total), p->parallelism);
      return;
    case 1:
      snprintf(out, len,
               "%.0f%% of worker time idle while work was ready: stealing is too slow for "
               "tasks of %.2g us",
               pct(p->idle_ready, total), grain_us);
      return;
    case 2:
      snprintf(out, len,
               "runtime overhead %.0f%% of work: tasks are too fine (%.2g us of work per "
               "spawn); coarsen them (a larger cutoff)",
               pct(p->overhead, p->work), grain_us);
      return;
    case 3:
      snprintf(out, len,
               "%.0f%% of worker time idle while threads were blocked (I/O, locks, sleeps): "
               "the program waits, not the runtime",
               pct(p->blocked, total));
      return;
    case 4:
      snprintf(out, len,
               "work-time stretch %.2f against the baseline: the same work runs slower on %d "
               "workers (memory traffic or contention)",
               p->stretch, p->workers);
      return;
    default:
      snprintf(out, len,
               "%.0f%% of worker time off the CPU in running code: the OS ran other threads "
               "on the workers' CPUs (use fewer workers than CPUs, ITO_NUM_WORKERS, or a "
               "quieter machine), or the program blocked in system calls ito does not see",
               pct(p->descheduled, total));
  }
}

static void summary(const struct prof_run *r, const struct ito_profile *p) {
  char buf[4096];
  size_t n = 0;
#define OUT(...)                                                                   \
  do {                                                                             \
    int m_ = snprintf(buf + n, sizeof buf - n, __VA_ARGS__);                       \
    if (m_ > 0) n = n + (size_t)m_ < sizeof buf ? n + (size_t)m_ : sizeof buf - 1; \
  } while (0)
  double total = p->workers * p->elapsed;
  OUT("ito profile (run %d, %d workers):\n", r->number, p->workers);
  OUT("  work T1 %.6f s, span Tinf %.6f s, parallelism %.2f\n", p->work, p->span, p->parallelism);
  OUT("  burdened span %.6f s (%.2f us per fork on the path), burdened parallelism %.2f\n",
      p->burdened_span, (double)r->burden * r->sec_per_tick * 1e6, p->burdened_parallelism);
  OUT("  elapsed Tp %.6f s, bound T1/P + Tinf %.6f s\n", p->elapsed, p->bound);
  OUT("  worker time P x Tp %.6f s: work %.1f%%, runtime %.1f%%, idle %.1f%%, idle while work "
      "was ready %.1f%%, blocked %.1f%%, off the CPU %.1f%%\n",
      total, pct(p->work, total), pct(p->overhead, total), pct(p->idle, total),
      pct(p->idle_ready, total), pct(p->blocked, total), pct(p->descheduled, total));
  if (p->stretch > 0) OUT("  work-time stretch %.3f (against %s)\n", p->stretch, r->baseline);
  OUT("  counts: %llu spawns, %llu steals (%llu failed attempts), %llu threads created, %llu "
      "parks, %llu sleeps, %llu wakes\n",
      p->spawns, p->steals, p->steal_fails, p->creates, p->parks, p->sleeps, p->wakes);
  if (p->collapsed)
    OUT("  collapsed: %llu subtrees of tasks under %.2f us (%.1f%% of the spawns): their spans "
        "estimated from the subtrees recorded whole (ITO_PROFILE_COLLAPSE=0 records every fork)\n",
        p->collapsed, (double)ito__prof_cfg.collapse_ns * 1e-3,
        p->spawns ? 100.0 * (double)p->collapsed_forks / (double)p->spawns : 0.0);
  if (p->tasks_local + p->tasks_remote + p->tasks_unknown)
    OUT("  tasks placed by their data (docs/numa.md): %llu ran on their data's node, %llu on "
        "another node, %llu with data on no known node\n",
        p->tasks_local, p->tasks_remote, p->tasks_unknown);
  ito__write_stderr(buf, n);
  for (int i = 0; i < r->nregions; i++) {
    const struct prof_region *g = &r->regions[i];
    if (!g->sum.instances) continue;
    struct ito_profile q;
    ito__prof_figures(r, &g->sum, g->forks, &q);
    ito__prof_stretch(r, g->tag, &q);
    n = 0;
    double qt = q.workers * q.elapsed;
    OUT("  region %s: %llu instance%s, elapsed %.6f s, work %.6f s, span %.6f s, parallelism "
        "%.2f, burdened parallelism %.2f",
        g->tag, q.instances, q.instances == 1 ? "" : "s", q.elapsed, q.work, q.span, q.parallelism,
        q.burdened_parallelism);
    if (q.stretch > 0) OUT(", stretch %.3f", q.stretch);
    OUT("\n    worker time: work %.1f%%, runtime %.1f%%, idle %.1f%%, idle while work was ready "
        "%.1f%%, blocked %.1f%%, off the CPU %.1f%%\n",
        pct(q.work, qt), pct(q.overhead, qt), pct(q.idle, qt), pct(q.idle_ready, qt),
        pct(q.blocked, qt), pct(q.descheduled, qt));
    char qd[512];
    diagnosis(&q, qd, sizeof qd);
    OUT("    diagnosis: %s\n", qd);
    ito__write_stderr(buf, n);
  }
  char d[512];
  diagnosis(p, d, sizeof d);
  n = 0;
  OUT("  diagnosis: %s\n", d);
  uint64_t dropped = 0;
  for (int i = 0; i < r->workers && r->tracks; i++) dropped += r->tracks[i].dropped;
  if (dropped && (r->what & (PROF_TRACE | PROF_DAG)))
    OUT("  the timeline is partial: %llu records did not fit the per-worker buffers "
        "(the figures above are whole)\n",
        (unsigned long long)dropped);
  ito__write_stderr(buf, n);
#undef OUT
}

/* ---- CSV (Cilkscale's columns) ------------------------------------------------------------- */

static void csv_row(FILE *f, const char *tag, const struct ito_profile *p) {
  fprintf(f, "%s,%.9f,%.9f,%.6f,%.9f,%.6f\n", tag, p->work, p->span, p->parallelism,
          p->burdened_span, p->burdened_parallelism);
}

static void write_csv(const struct prof_run *r, const struct ito_profile *all) {
  struct out o;
  if (!out_open(&o, r->prefix, r->number, PROF_CSV)) return;
  FILE *f = o.f;
  fprintf(f,
          "tag,work (seconds),span (seconds),parallelism,burdened_span (seconds),"
          "burdened_parallelism\n");
  for (int i = 0; i < r->nregions; i++) {
    const struct prof_region *g = &r->regions[i];
    if (!g->sum.instances) continue;
    struct ito_profile q;
    ito__prof_figures(r, &g->sum, g->forks, &q);
    csv_row(f, g->tag, &q);
  }
  csv_row(f, "", all);
  out_close(&o);
}

/* ---- the trace (Chrome trace events) ------------------------------------------------------- */

static double us(const struct prof_run *r, uint64_t t) {
  return t > r->t_start ? (double)(t - r->t_start) * r->sec_per_tick * 1e6 : 0;
}

static const char *slice_name(int type) {
  return type == TR_WORK ? "program" : type == TR_IDLE ? "idle" : "runtime";
}

static void write_trace(const struct prof_run *r) {
  struct out o;
  if (!out_open(&o, r->prefix, r->number, PROF_TRACE)) return;
  FILE *f = o.f;
  fprintf(f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"ito\"}}");
  uint64_t dropped = 0;
  unsigned long flow = 0;
  for (int w = 0; w < r->workers; w++) {
    const struct prof_track *t = &r->tracks[w];
    dropped += t->dropped;
    fprintf(f,
            ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":"
            "\"worker %d\"}}",
            w, w);
    for (uint32_t i = 0; i < t->n; i++) {
      const struct trec *e = &t->rec[i];
      switch (e->type) {
        case TR_WORK:
        case TR_RUNTIME:
        case TR_IDLE:
          if (e->t1 <= e->t0) break;
          fprintf(f,
                  ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,"
                  "\"ts\":%.3f,\"dur\":%.3f",
                  slice_name(e->type), slice_name(e->type), w, us(r, e->t0),
                  us(r, e->t1) - us(r, e->t0));
          if (e->type == TR_WORK)
            fprintf(f, ",\"args\":{\"span_us\":%.3f}",
                    (double)span_ticks(e->b) * r->sec_per_tick * 1e6);
          fprintf(f, "}");
          break;
        case TR_STEAL:
        case TR_WAKE: {
          const char *name = e->type == TR_STEAL ? "steal" : "wake";
          flow++;
          fprintf(f,
                  ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"s\",\"id\":%lu,\"pid\":1,"
                  "\"tid\":%d,\"ts\":%.3f}",
                  name, name, flow, e->a, us(r, e->t0));
          fprintf(f,
                  ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%lu,"
                  "\"pid\":1,\"tid\":%d,\"ts\":%.3f}",
                  name, name, flow, w, us(r, e->t1));
          break;
        }
        case TR_PARK:
        case TR_RESUME:
          fprintf(f,
                  ",\n{\"name\":\"blocked\",\"cat\":\"thread\",\"ph\":\"%s\",\"id\":%d,\"pid\":1,"
                  "\"tid\":%d,\"ts\":%.3f,\"args\":{\"thread\":%d}}",
                  e->type == TR_PARK ? "b" : "e", e->a, w, us(r, e->t0), e->a);
          break;
        default:
          break;
      }
    }
  }
  fprintf(f, "\n],\"otherData\":{\"workers\":%d,\"dropped_records\":%llu}}\n", r->workers,
          (unsigned long long)dropped);
  out_close(&o);
}

/* ---- the collapsed graph --------------------------------------------------------------------- */

/* The node of worker w's track running at time t: its index among the
 * track's program slices, or -1. */
static long node_at(const struct prof_track *t, uint64_t at, uint64_t *first_id) {
  long k = 0;
  for (uint32_t i = 0; i < t->n; i++) {
    const struct trec *e = &t->rec[i];
    if (e->type != TR_WORK || e->t1 <= e->t0) continue;
    if (e->t0 <= at && at <= e->t1) return (long)(first_id[0] + (uint64_t)k);
    k++;
  }
  return -1;
}

static void write_dag(const struct prof_run *r) {
  struct out o;
  if (!out_open(&o, r->prefix, r->number, PROF_DAG)) return;
  FILE *f = o.f;
  uint64_t *first = calloc((size_t)r->workers + 1, sizeof *first);
  if (!first) {
    out_drop(&o);
    out_fail(&o, ENOMEM);
    return;
  }
  uint64_t id = 0;
  fprintf(f, "{\"unit\":\"us\",\"nodes\":[");
  const char *sep = "\n";
  for (int w = 0; w < r->workers; w++) {
    first[w] = id;
    const struct prof_track *t = &r->tracks[w];
    for (uint32_t i = 0; i < t->n; i++) {
      const struct trec *e = &t->rec[i];
      if (e->type != TR_WORK || e->t1 <= e->t0) continue;
      fprintf(f, "%s{\"id\":%llu,\"worker\":%d,\"start\":%.3f,\"end\":%.3f,\"span_end\":%.3f}", sep,
              (unsigned long long)id, w, us(r, e->t0), us(r, e->t1),
              (double)span_ticks(e->b) * r->sec_per_tick * 1e6);
      sep = ",\n";
      id++;
    }
  }
  first[r->workers] = id;
  fprintf(f, "\n],\"edges\":[");
  sep = "\n";
  for (int w = 0; w < r->workers; w++) {
    const struct prof_track *t = &r->tracks[w];
    for (uint32_t i = 0; i < t->n; i++) {
      const struct trec *e = &t->rec[i];
      if ((e->type != TR_STEAL && e->type != TR_WAKE) || e->a < 0 || e->a >= r->workers) continue;
      long from = node_at(&r->tracks[e->a], e->t0, &first[e->a]);
      long to = node_at(t, e->t1, &first[w]);
      if (from < 0 || to < 0) continue;
      fprintf(f, "%s{\"from\":%ld,\"to\":%ld,\"kind\":\"%s\"}", sep, from, to,
              e->type == TR_STEAL ? "steal" : "wake");
      sep = ",\n";
    }
  }
  fprintf(f, "\n]}\n");
  free(first);
  out_close(&o);
}

void ito__prof_write(const struct prof_run *r) {
  struct ito_profile all;
  ito__prof_figures(r, &r->all, span_forks(r->all.span), &all);
  ito__prof_stretch(r, "", &all);
  if (r->baseline && ito__prof_baseline_work(r->baseline, "") < 0) {
    char msg[4400];
    snprintf(msg, sizeof msg,
             "ito: ITO_PROFILE_BASELINE=%s: not a profile CSV with a whole-run row (run with "
             "ITO_PROFILE=csv ITO_NUM_WORKERS=1 to make one): no stretch reported\n",
             r->baseline);
    say(msg);
  }
  if (r->what & PROF_SUMMARY) summary(r, &all);
  if (r->what & PROF_CSV) write_csv(r, &all);
  if (r->what & PROF_TRACE) write_trace(r);
  if (r->what & PROF_DAG) write_dag(r);
}
