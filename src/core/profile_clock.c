/* The profiler's clock and the time the OS took (profile.h's invariants,
 * profile_rec.h; design in docs/profile.md, "Where the workers' time
 * went"): the cycle counter's rate against CLOCK_MONOTONIC, and the split
 * of a worker's interval into time on its CPU and time off it. */
#define _GNU_SOURCE
#include "profile_rec.h"

#include <stdint.h>
#include <time.h>

double ito__prof_sec_per_tick;
uint64_t ito__prof_t0, ito__prof_long_ticks, ito__prof_resync_ticks;
static uint64_t t0_ns;

static uint64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* The tick counter and CLOCK_MONOTONIC read at one instant: a tick
 * reading between two monotonic ones, of a few tries the pair closest
 * together. A thread that the OS preempts between the two clocks' reads
 * would otherwise pair readings a time slice (or, on a loaded machine,
 * tens of milliseconds) apart, and the clock's rate measured from such a
 * pair would be off by as much: the profiler's split of an interval into
 * time on and off the CPU (less_os_slow) would then count most of the
 * work as the OS's. */
static void clock_pair(uint64_t *t, uint64_t *ns) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 8; i++) {
    uint64_t a = mono_ns(), k = ticks(), b = mono_ns();
    if (b - a < best) {
      best = b - a;
      *t = k;
      *ns = a + (b - a) / 2;
    }
    if (best < 1000) break;
  }
}

/* ---- time the OS took ------------------------------------------------------------------------
 * A worker's OS thread that the kernel preempts in the middle of a strand
 * (or whose virtual CPU the hypervisor takes away) would stretch that
 * strand, the work and the span by a scheduler tick (4 ms here) or more
 * that the program never asked for. An interval longer than LONG_NS is
 * checked against the thread's time on a CPU (CLOCK_THREAD_CPUTIME_ID,
 * which leaves out the time the hypervisor stole where the kernel accounts
 * for it; /proc's schedstat is no use for a running thread: its figure
 * lags by up to a scheduler tick): the wall time since the last
 * reading that the thread was not on a CPU moves from the interval to
 * C_OS. Shorter intervals are not checked (a read is a system call of
 * about 0.37 us here: 2.5% of 15 us; its own time is the runtime's), but
 * the reading is renewed at the end of any interval, and when the worker
 * starts to run something, once the last one is older than RESYNC_NS:
 * time off the CPU in short intervals stays in them, and what a long one
 * loses is at most what the OS took since the last interval that ended
 * with the reading more than RESYNC_NS old. (Renewed only when the worker
 * started to run something or to idle, a worker that only forked and
 * joined charged a long strand with what the OS took during the many
 * short ones before it, since its first event.) */
#define LONG_NS 15000
#define RESYNC_NS 1000000
#define CALL_NS 1000        /* the least of a reading counted as the call itself */
static uint64_t call_ticks; /* what a reading's call takes at most, unhindered */

/* The calling thread's time on a CPU (ns), or last (the last reading). */
static uint64_t on_cpu(uint64_t last) {
  struct timespec t;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return last;
  return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* A reading taken at now, where an interval ended: [now, after] is the
 * call itself (the runtime's, call_ticks at most) and whatever the OS took
 * at its return (a system call is where a preempted thread stops): off
 * the CPU. The next interval and the next reading count from after
 * (since_at), so that this is not counted again. */
void ito__prof_reading(struct pworker *p, uint64_t now) {
  p->ss_cpu = on_cpu(p->ss_cpu);
  uint64_t after = ticks(), spent = after > now ? after - now : 0;
  uint64_t own = spent < call_ticks ? spent : call_ticks;
  add(&p->time[C_RUNTIME], own);
  add(&p->time[C_OS], spent - own);
  p->ss_t = now + spent;
  p->skip_to = now + spent;
}

/* d ticks of an interval that ends now, less what the OS took of them:
 * the wall time since the last reading that the thread was not on a CPU,
 * d at most. */
uint64_t ito__prof_less_os_slow(struct pworker *p, uint64_t now, uint64_t d) {
  if (!p->mine) return d;
  uint64_t cpu0 = p->ss_cpu, wall = now > p->ss_t ? now - p->ss_t : 0;
  ito__prof_reading(p, now);
  uint64_t ran = (uint64_t)((double)(p->ss_cpu - cpu0) * 1e-9 / ito__prof_sec_per_tick);
  uint64_t t = wall > ran ? wall - ran : 0;
  if (t > d) t = d;
  add(&p->time[C_OS], t);
  return d - t;
}

/* ---- the rate ---------------------------------------------------------------------------- */

/* The clock's rate before the run is long enough to measure it against
 * CLOCK_MONOTONIC (calibrate): a 2 ms measurement. */
static double first_rate(void) {
  uint64_t a, an, b, bn;
  clock_pair(&a, &an);
  while (mono_ns() - an < 2000000ULL) {
  }
  clock_pair(&b, &bn);
  return b > a ? (double)(bn - an) * 1e-9 / (double)(b - a) : 1e-9;
}

/* What a reading's call takes here, unhindered: twice the least of a few
 * (a system call of 0.4 to 2 us, as the machine's mitigations make it),
 * CALL_NS at least. */
static uint64_t call_cost(void) {
  uint64_t least = UINT64_MAX;
  for (int i = 0; i < 8; i++) {
    uint64_t a = ticks();
    (void)on_cpu(0);
    uint64_t b = ticks() - a;
    if (b < least) least = b;
  }
  uint64_t floor = (uint64_t)(CALL_NS * 1e-9 / ito__prof_sec_per_tick);
  return 2 * least > floor ? 2 * least : floor;
}

void ito__prof_clock_start(void) {
  if (!ito__prof_sec_per_tick) ito__prof_sec_per_tick = first_rate(); /* (once a process) */
  ito__prof_long_ticks = (uint64_t)(LONG_NS * 1e-9 / ito__prof_sec_per_tick);
  ito__prof_resync_ticks = (uint64_t)(RESYNC_NS * 1e-9 / ito__prof_sec_per_tick);
  call_ticks = call_cost();
  clock_pair(&ito__prof_t0, &t0_ns);
}

double ito__prof_calibrate(void) {
  uint64_t now_t, now_ns;
  clock_pair(&now_t, &now_ns);
  if (now_t > ito__prof_t0 && now_ns > t0_ns + 20000000ULL)
    return (double)(now_ns - t0_ns) * 1e-9 / (double)(now_t - ito__prof_t0);
  return ito__prof_sec_per_tick;
}
