/* Time arithmetic: every conversion between struct timespec and
 * nanoseconds in the runtime and the drop-in libraries goes through these.
 * Deadlines are absolute on a named clock; values beyond about 146 years
 * saturate. A standalone header. */
#ifndef ITO_CORE_TIMESPEC_H
#define ITO_CORE_TIMESPEC_H

#include <limits.h>
#include <stdbool.h>
#include <time.h>

#define NS_PER_S 1000000000LL
/* The farthest deadline the runtime tells apart (about 146 years): later
 * ones, such as {LONG_MAX, 0} for "never", saturate to it. */
#define NS_FOREVER (LLONG_MAX / 2)

static inline long long ts_to_ns(const struct timespec *ts) {
  if (__builtin_expect(ts->tv_sec >= NS_FOREVER / NS_PER_S, 0)) return NS_FOREVER;
  if (__builtin_expect(ts->tv_sec <= -NS_FOREVER / NS_PER_S, 0)) return -NS_FOREVER;
  return (long long)ts->tv_sec * NS_PER_S + ts->tv_nsec;
}
/* ns >= 0 */
static inline struct timespec ns_to_ts(long long ns) {
  struct timespec ts = {(time_t)(ns / NS_PER_S), (long)(ns % NS_PER_S)};
  return ts;
}
/* Nanoseconds on a clock. */
static inline long long clock_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return ts_to_ns(&ts);
}
/* A well-formed timespec for a deadline or a duration: 0 <= tv_nsec < 1e9. */
static inline bool ts_valid(const struct timespec *ts) {
  return ts->tv_nsec >= 0 && ts->tv_nsec < NS_PER_S;
}
/* The deadline ns (>= 0) from now on clock. */
static inline struct timespec deadline_in(clockid_t clock, long long ns) {
  long long now = clock_ns(clock);
  return ns_to_ts(ns < NS_FOREVER - now ? now + ns : NS_FOREVER);
}
/* Nanoseconds left until the deadline abs on clock; 0 once it has passed. */
static inline long long ns_until(clockid_t clock, const struct timespec *abs) {
  long long left = ts_to_ns(abs) - clock_ns(clock);
  return left > 0 ? left : 0;
}

#endif
