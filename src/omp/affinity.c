/* Affinity display (OpenMP 5, "OMP_AFFINITY_FORMAT"): omp_capture_affinity,
 * omp_display_affinity, and OMP_DISPLAY_AFFINITY's report of each thread
 * of a parallel region, with the fields and widths gcc's runtime accepts.
 * docs/openmp.md, "Affinity display". */
#define _GNU_SOURCE
#include "omp_int.h"

#include <ctype.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

OMP_API int omp_get_level(void);
OMP_API int omp_get_thread_num(void);
OMP_API int omp_get_num_threads(void);
OMP_API int omp_get_ancestor_thread_num(int level);
OMP_API int omp_get_team_num(void);
OMP_API int omp_get_num_teams(void);

/* Appends to out[*k] (size bytes), counting what would not fit. */
static void put(char *out, size_t size, size_t *k, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++, (*k)++)
    if (*k + 1 < size) out[*k] = s[i];
}

/* The CPUs the caller's OS thread may run on, as 0-3,8. */
static void cpu_list(char *buf, size_t len) {
  cpu_set_t set;
  size_t k = 0;
  buf[0] = 0;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  for (int c = 0; c < CPU_SETSIZE && k + 24 < len;) {
    if (!CPU_ISSET(c, &set)) {
      c++;
      continue;
    }
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) e++;
    int n = e > c ? snprintf(buf + k, len - k, "%s%d-%d", k ? "," : "", c, e)
                  : snprintf(buf + k, len - k, "%s%d", k ? "," : "", c);
    if (n < 0) break;
    k += (size_t)n;
    c = e + 1;
  }
}

static const struct {
  char c;
  const char *name;
} fields[] = {{'t', "team_num"},       {'T', "num_teams"},   {'L', "nesting_level"},
              {'n', "thread_num"},     {'N', "num_threads"}, {'a', "ancestor_tnum"},
              {'H', "host"},           {'P', "process_id"},  {'i', "native_thread_id"},
              {'A', "thread_affinity"}};

/* The field's value as text, or 0 for an unknown field. */
static int value(char c, char *buf, size_t len) {
  switch (c) {
    case 't':
      snprintf(buf, len, "%d", omp_get_team_num());
      return 1;
    case 'T':
      snprintf(buf, len, "%d", omp_get_num_teams());
      return 1;
    case 'L':
      snprintf(buf, len, "%d", omp_get_level());
      return 1;
    case 'n':
      snprintf(buf, len, "%d", omp_get_thread_num());
      return 1;
    case 'N':
      snprintf(buf, len, "%d", omp_get_num_threads());
      return 1;
    case 'a':
      snprintf(buf, len, "%d", omp_get_ancestor_thread_num(omp_get_level() - 1));
      return 1;
    case 'H':
      if (gethostname(buf, len) != 0) buf[0] = 0;
      buf[len - 1] = 0;
      return 1;
    case 'P':
      snprintf(buf, len, "%d", (int)getpid());
      return 1;
    case 'i': /* the lightweight thread running the caller (its handle) */
      snprintf(buf, len, "0x%llx", (unsigned long long)ito_self());
      return 1;
    case 'A':
      cpu_list(buf, len);
      return 1;
    default:
      return 0;
  }
}

/* Expands fmt into out (size bytes, NUL-terminated when size > 0);
 * returns the length of the whole expansion. */
static size_t expand(char *out, size_t size, const char *fmt) {
  size_t k = 0;
  for (const char *p = fmt; *p;) {
    if (*p != '%') {
      put(out, size, &k, p++, 1);
      continue;
    }
    const char *start = p++;
    if (*p == '%') {
      put(out, size, &k, p++, 1);
      continue;
    }
    /* %[0][.]width field: 0 pads with zeros, . (or 0) right-justifies */
    bool zero = false, right = false;
    if (*p == '0') zero = right = true, p++;
    if (*p == '.') right = true, p++;
    int width = 0;
    while (isdigit((unsigned char)*p)) width = width * 10 + (*p++ - '0');
    char c = 0;
    if (*p == '{') {
      const char *e = strchr(p, '}');
      for (size_t i = 0; e && i < sizeof fields / sizeof fields[0]; i++)
        if ((size_t)(e - p - 1) == strlen(fields[i].name) &&
            !strncmp(p + 1, fields[i].name, (size_t)(e - p - 1)))
          c = fields[i].c;
      p = e ? e + 1 : p + strlen(p);
    } else if (*p) {
      c = *p++;
    }
    char v[512];
    if (!c || !value(c, v, sizeof v)) { /* unknown: kept as written */
      put(out, size, &k, start, (size_t)(p - start));
      continue;
    }
    size_t n = strlen(v);
    size_t pad = width > 0 && (size_t)width > n ? (size_t)width - n : 0;
    if (right)
      for (size_t i = 0; i < pad; i++) put(out, size, &k, zero ? "0" : " ", 1);
    put(out, size, &k, v, n);
    if (!right)
      for (size_t i = 0; i < pad; i++) put(out, size, &k, " ", 1);
  }
  if (size) out[k < size ? k : size - 1] = 0;
  return k;
}

OMP_API size_t omp_capture_affinity(char *buffer, size_t size, const char *format) {
  OMP_SETUP();
  if (!format || !*format) format = ito__omp_g.affinity_format;
  return expand(buffer, buffer ? size : 0, format);
}

OMP_API void omp_display_affinity(const char *format) {
  OMP_SETUP();
  if (!format || !*format) format = ito__omp_g.affinity_format;
  size_t n = expand(NULL, 0, format);
  char *b = malloc(n + 2);
  if (!b) ito__omp_fatal("omp_display_affinity: out of memory");
  expand(b, n + 1, format);
  b[n] = '\n';
  fwrite(b, 1, n + 1, stderr);
  free(b);
}

/* OMP_DISPLAY_AFFINITY: a thread of a parallel region shows its affinity
 * the first time its place in a team (nesting level, number, team size)
 * is new, as gcc's runtime shows it when a thread's affinity changes. */
#define SEEN 256
static struct { int level, num, size; } seen[SEEN];
static int nseen, seen_lock;

void ito__omp_display_affinity_member(void) {
  int level = omp_get_level(), num = omp_get_thread_num(), size = omp_get_num_threads();
  bool show = true;
  ito__dropin_lock(&seen_lock, ITO_DROPIN_LR_LEAF);
  for (int i = 0; i < nseen && show; i++)
    if (seen[i].level == level && seen[i].num == num && seen[i].size == size) show = false;
  if (show && nseen < SEEN) seen[nseen++] = (typeof(seen[0])){level, num, size};
  ito__dropin_unlock(&seen_lock);
  if (show) omp_display_affinity(NULL);
}
