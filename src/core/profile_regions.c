/* The profiler's regions: ito_profile_begin / ito_profile_end and the
 * figures back, ito_profile_get (docs/profile.md, "The API"). A region's
 * figures are the differences of the run's figures (profile.c) between
 * its begin and its end, summed over its instances; the table is this
 * file's alone, under region_lock. */
#define _GNU_SOURCE
#include <ito/ito.h>

#include "profile_data.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static struct prof_region regions[PROF_TAGS];
static struct {
  int open;
  uint64_t t, span;
  struct prof_sums at;
} opened[PROF_TAGS];
static int nregions;
static int region_lock;

static int find_tag(const char *tag) {
  for (int i = 0; i < nregions; i++)
    if (!strcmp(regions[i].tag, tag)) return i;
  return -1;
}

static bool tag_ok(const char *tag) { return tag && *tag && strlen(tag) < PROF_TAG_LEN; }

/* 0 when the call goes on to lock the regions: the figures are taken;
 * else what it returns (a bad tag; 0 when not recording). */
static int region_call(const char *tag, uint64_t *now, struct prof_sums *s, uint64_t *span) {
  if (!tag_ok(tag)) return EINVAL;
  if (!ito__prof_recording()) return -1;
  ito__prof_now(now, s, span);
  spin_lock(&region_lock, LR_LEAF);
  return 0;
}

int ito_profile_begin(const char *tag) {
  uint64_t now, span;
  struct prof_sums s;
  int pre = region_call(tag, &now, &s, &span);
  if (pre) return pre < 0 ? 0 : pre;
  int i = find_tag(tag), rc = 0;
  if (i < 0 && nregions == PROF_TAGS) {
    rc = ENOSPC;
  } else if (i >= 0 && opened[i].open) {
    rc = EINVAL;
  } else {
    if (i < 0) {
      i = nregions++;
      memset(&regions[i], 0, sizeof regions[i]);
      snprintf(regions[i].tag, sizeof regions[i].tag, "%s", tag);
    }
    opened[i].open = 1;
    opened[i].t = now;
    opened[i].span = span;
    opened[i].at = s;
  }
  spin_unlock(&region_lock);
  return rc;
}

int ito_profile_end(const char *tag) {
  uint64_t now, span;
  struct prof_sums s;
  int pre = region_call(tag, &now, &s, &span);
  if (pre) return pre < 0 ? 0 : pre;
  int i = find_tag(tag), rc = 0;
  if (i < 0 || !opened[i].open) {
    rc = EINVAL;
  } else {
    struct prof_sums *r = &regions[i].sum, *a = &opened[i].at;
    opened[i].open = 0;
    r->elapsed += now - opened[i].t;
    /* another worker's open interval is guessed at both ends (sums_now):
     * an idle one may be split differently at its end than guessed at the
     * begin, so a category can come out a little short: none below 0 */
    for (int c = 0; c < NCAT; c++)
      if (s.time[c] > a->time[c]) r->time[c] += s.time[c] - a->time[c];
    for (int c = 0; c < NCOUNT; c++) r->n[c] += s.n[c] - a->n[c];
    uint64_t b = opened[i].span;
    if (span > b) {
      r->span += (span_ticks(span) - span_ticks(b)) << SPAN_KBITS;
      if (span_forks(span) > span_forks(b)) regions[i].forks += span_forks(span) - span_forks(b);
    }
    r->instances++;
  }
  spin_unlock(&region_lock);
  return rc;
}

int ito_profile_get(const char *tag, struct ito_profile *out) {
  if (!out) return EINVAL;
  if (!ito__prof_recording()) return ENOTSUP;
  uint64_t now, span;
  struct prof_sums s;
  ito__prof_now(&now, &s, &span);
  struct prof_run r;
  ito__prof_run(&r);
  if (!tag || !*tag) {
    ito__prof_figures(&r, &s, span_forks(s.span), out);
    ito__prof_stretch(&r, "", out);
    return 0;
  }
  spin_lock(&region_lock, LR_LEAF);
  int i = find_tag(tag);
  struct prof_region copy;
  if (i >= 0) copy = regions[i];
  spin_unlock(&region_lock);
  if (i < 0 || !copy.sum.instances) return ENOENT;
  ito__prof_figures(&r, &copy.sum, copy.forks, out);
  ito__prof_stretch(&r, tag, out);
  return 0;
}

void ito__prof_regions(const struct prof_region **r, int *n) {
  *r = regions;
  *n = nregions;
}

void ito__prof_regions_reset(void) {
  spin_lock(&region_lock, LR_LEAF);
  memset(regions, 0, sizeof regions);
  memset(opened, 0, sizeof opened);
  nregions = 0;
  spin_unlock(&region_lock);
}
