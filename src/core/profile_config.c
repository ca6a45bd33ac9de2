/* The profiler's settings: its rows of the configuration (config.h) and
 * their parsers. Design: docs/profile.md. */
#include "config.h"
#include "profile_data.h"

#include <string.h>
#include <strings.h>

struct prof_settings ito__prof_cfg;

/* ITO_PROFILE: a comma list of summary, csv, trace and dag; 1 is summary,
 * 0 off. */
static const char *parse_profile(const char *text, void *dst) {
  static const char *const words[] = {"summary", "csv", "trace", "dag"};
  static const char expected[] =
      "0, 1, or a comma list of summary, csv, trace and dag (for example summary,trace)";
  int mask = 0;
  if (!strcmp(text, "0") || !strcmp(text, "1")) {
    *(int *)dst = text[0] == '1' ? 1 : 0;
    return NULL;
  }
  for (const char *p = text;;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    int k = -1;
    for (int i = 0; i < 4; i++)
      if (strlen(words[i]) == n && !strncasecmp(p, words[i], n)) k = i;
    if (k < 0) return expected;
    mask |= 1 << k;
    if (!end) break;
    p = end + 1;
  }
  *(int *)dst = mask;
  return NULL;
}

/* A file name prefix or a file: any text without a newline. */
static const char *parse_path(const char *text, void *dst) {
  if (strchr(text, '\n')) return "a path";
  *(const char **)dst = text;
  return NULL;
}

/* (a table: one row per variable, packed) */
/* clang-format off */
static const struct ito_cfg prof_rows[] = {
    {.name = "ITO_PROFILE", .kind = ITO_CFG_PARSE, .dst = &ito__prof_cfg.what,
     .parse = parse_profile, .dflt = "0",
     .what = "profile the run: summary, csv, trace, dag (a comma list); 1: summary"},
    {.name = "ITO_PROFILE_OUT", .kind = ITO_CFG_PARSE, .dst = &ito__prof_cfg.out,
     .parse = parse_path, .dflt = "ito-profile",
     .what = "the profile's files: PREFIX.csv, PREFIX.trace.json, PREFIX.dag.json"},
    {.name = "ITO_PROFILE_BASELINE", .kind = ITO_CFG_PARSE, .dst = &ito__prof_cfg.baseline,
     .parse = parse_path, .dflt = "none",
     .what = "a profile CSV of a 1-worker run: work-time stretch per region"},
    {.name = "ITO_PROFILE_COLLAPSE", .kind = ITO_CFG_INT, .dst = &ito__prof_cfg.collapse_ns,
     .lo = 0, .hi = 10 * 1000 * 1000, .dflt = "1000",
     .what = "nanoseconds: the profiler collapses subtrees whose work at their place averaged "
             "less, their span estimated (0: never; every fork recorded)"},
};
/* clang-format on */
static void prof_defaults(void *settings) {
  *(struct prof_settings *)settings = (struct prof_settings){0, "ito-profile", NULL, 1000};
}
ITO_CONFIG_MODULE(profile_config, prof_rows, ito__prof_cfg, prof_defaults, NULL);
