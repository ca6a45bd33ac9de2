/* Places in OpenMP's forms (invariants at the top of places.h; design in
 * docs/numa.md, "Places"):
 *
 *   abstract:  threads | cores | ll_caches | numa_domains | sockets [ ( count ) ]
 *   explicit:  a comma list of place intervals, each
 *                { resource list } [ : length [ : stride ] ]   or   ! { ... }
 *              a resource list a comma list of
 *                cpu [ : length [ : stride ] ]   or   ! cpu
 *
 * A place interval {P}:n:s is the n places P, P+s, P+2s, ... (P+s: every
 * CPU of P plus s); a resource interval c:n:s the CPUs c, c+s, ...; `!`
 * takes a CPU out of its place, or a place out of the list. */
#define _GNU_SOURCE
#include "places.h"
#include "observe.h"

#include "config.h"
#include "topo.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_PLACES 1024

static cpu_set_t *places;
static int nplaces;

static const char expected[] =
    "threads, cores, ll_caches, numa_domains or sockets, optionally with a count in "
    "parentheses, or a comma list of places such as {0,1},{2:2} or {0:4}:4:4 (CPU numbers "
    "below 1024)";

/* ---- the parser ---------------------------------------------------------------------- */

struct cur {
  const char *s;
  bool bad;
};

static void blanks(struct cur *c) {
  while (isspace((unsigned char)*c->s)) c->s++;
}

static bool eat(struct cur *c, char ch) {
  blanks(c);
  if (*c->s != ch) return false;
  c->s++;
  return true;
}

static long number(struct cur *c, bool sign) {
  blanks(c);
  const char *p = c->s;
  bool neg = false;
  if (sign && (*p == '-' || *p == '+')) neg = *p++ == '-';
  if (!isdigit((unsigned char)*p)) {
    c->bad = true;
    return 0;
  }
  long v = 0;
  while (isdigit((unsigned char)*p)) {
    v = v * 10 + (*p++ - '0');
    if (v > 1000000) {
      c->bad = true;
      return 0;
    }
  }
  c->s = p;
  return neg ? -v : v;
}

/* "c[:len[:stride]]" or "!c" into (or out of) set. */
static void resource(struct cur *c, cpu_set_t *set, cpu_set_t *out) {
  bool excl = eat(c, '!');
  long first = number(c, false), len = 1, stride = 1;
  if (!excl && eat(c, ':')) {
    len = number(c, false);
    if (eat(c, ':')) stride = number(c, true);
  }
  if (c->bad || len < 1) {
    c->bad = true;
    return;
  }
  for (long k = 0; k < len; k++) {
    long cpu = first + k * stride;
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      c->bad = true;
      return;
    }
    CPU_SET((int)cpu, excl ? out : set);
  }
}

/* "{ resource list }" */
static void place(struct cur *c, cpu_set_t *set) {
  CPU_ZERO(set);
  cpu_set_t out;
  CPU_ZERO(&out);
  if (!eat(c, '{')) {
    c->bad = true;
    return;
  }
  do {
    resource(c, set, &out);
  } while (!c->bad && eat(c, ','));
  if (!eat(c, '}')) c->bad = true;
  for (int i = 0; i < CPU_SETSIZE; i++)
    if (CPU_ISSET(i, &out)) CPU_CLR(i, set);
}

static void shifted(const cpu_set_t *p, long by, cpu_set_t *q, bool *bad) {
  CPU_ZERO(q);
  for (int i = 0; i < CPU_SETSIZE; i++) {
    if (!CPU_ISSET(i, p)) continue;
    long j = i + by;
    if (j < 0 || j >= CPU_SETSIZE) {
      *bad = true;
      return;
    }
    CPU_SET((int)j, q);
  }
}

static const char *const kinds[TOPO_KINDS] = {[TOPO_PU] = "threads",
                                              [TOPO_CORE] = "cores",
                                              [TOPO_LLC] = "ll_caches",
                                              [TOPO_NUMA] = "numa_domains",
                                              [TOPO_SOCKET] = "sockets"};

/* Parses text; with out, expands it (the topology is read for an abstract
 * name). Returns the number of places, or -1 when the text is not valid. */
static int parse(const char *text, cpu_set_t *out, int max) {
  struct cur c = {text, false};
  blanks(&c);
  for (int k = 0; k < TOPO_KINDS; k++) {
    size_t n = strlen(kinds[k]);
    if (strncasecmp(c.s, kinds[k], n) || isalnum((unsigned char)c.s[n]) || c.s[n] == '_') continue;
    c.s += n;
    long count = -1;
    if (eat(&c, '(')) {
      count = number(&c, false);
      if (c.bad || count < 1 || !eat(&c, ')')) return -1;
    }
    blanks(&c);
    if (*c.s) return -1;
    if (!out) return 1;
    const struct topo *t = ito__topo();
    int ng = t->groups[k];
    if (count < 0 || count > ng) count = ng;
    if (count > max) count = max;
    for (int g = 0; g < count; g++) {
      CPU_ZERO(&out[g]);
      for (int p = 0; p < t->pus; p++)
        if (t->group_of[k][p] == g && t->pu_os[p] >= 0 && t->pu_os[p] < CPU_SETSIZE)
          CPU_SET(t->pu_os[p], &out[g]);
    }
    return (int)count;
  }
  int n = 0;
  do {
    bool excl = eat(&c, '!');
    cpu_set_t p;
    place(&c, &p);
    long len = 1, stride = 1;
    if (!excl && eat(&c, ':')) {
      len = number(&c, false);
      if (eat(&c, ':')) stride = number(&c, true);
    }
    if (c.bad || len < 1 || (!excl && CPU_COUNT(&p) == 0)) return -1;
    for (long k = 0; k < len; k++) {
      cpu_set_t q;
      bool bad = false;
      shifted(&p, k * stride, &q, &bad);
      if (bad) return -1;
      if (excl) { /* takes every equal place out */
        for (int i = 0; out && i < n;)
          if (CPU_EQUAL(&out[i], &q)) {
            memmove(&out[i], &out[i + 1], sizeof(cpu_set_t) * (size_t)(n - i - 1));
            n--;
          } else {
            i++;
          }
        continue;
      }
      if (n >= max) return -1;
      if (out) out[n] = q;
      n++;
    }
  } while (eat(&c, ','));
  blanks(&c);
  if (*c.s || n == 0) return -1;
  return n;
}

/* ---- the runtime's places --------------------------------------------------------------- */

/* ITO_PLACES and ITO_BIND (config.h) */
static struct places_settings {
  const char *places; /* the environment's string, or NULL */
  int bind;           /* ITO_BIND=1: ITO_PLACES=cores */
} places_cfg;

static const char *parse_places(const char *text, void *dst) {
  if (parse(text, NULL, MAX_PLACES) < 0) return expected;
  *(const char **)dst = text;
  return NULL;
}
static const struct ito_cfg places_rows[] = {
    {.name = "ITO_PLACES",
     .kind = ITO_CFG_PARSE,
     .dst = &places_cfg.places,
     .parse = parse_places,
     .dflt = "none",
     .what = "the places workers are bound to, in OpenMP's forms (cores, {0,1},{2,3}, ...)"},
    {.name = "ITO_BIND",
     .kind = ITO_CFG_CHOICE,
     .dst = &places_cfg.bind,
     .choices = ito__cfg_bits,
     .dflt = "0",
     .what = "1: pin worker i to the i-th allowed CPU"},
};
ITO_CONFIG_MODULE(places_config, places_rows, places_cfg, NULL, NULL);

static void places_setup(void) {
  const char *text = places_cfg.places ? places_cfg.places : places_cfg.bind ? "cores" : NULL;
  nplaces = 0;
  if (!text) return;
  if (!places) places = malloc(sizeof(cpu_set_t) * MAX_PLACES);
  if (!places) return; /* (no memory: unbound, as without places) */
  int n = parse(text, places, MAX_PLACES);
  if (n < 1) ito__config_error(ito__config_blame("ITO_PLACES"), text, expected);
  /* every place must hold a unit of the topology (invariant 2) */
  const struct topo *t = ito__topo();
  for (int i = 0; i < n; i++) {
    bool any = false;
    for (int p = 0; p < t->pus && !any; p++)
      any = t->pu_os[p] >= 0 && t->pu_os[p] < CPU_SETSIZE && CPU_ISSET(t->pu_os[p], &places[i]);
    if (!any) {
      char why[200];
      snprintf(why, sizeof why,
               "places whose CPUs the machine has (place %d has none of the %d CPUs of %s)", i,
               t->pus, t->source);
      ito__config_error(ito__config_blame("ITO_PLACES"), text, why);
    }
  }
  nplaces = n;
}
ITO_OBSERVE(places_at_setup, OBSERVE_SETUP, OBS_PLACES, places_setup);

int ito__places_count(void) { return nplaces; }

const cpu_set_t *ito__place_cpus(int i) { return i >= 0 && i < nplaces ? &places[i] : NULL; }

int ito__worker_place(int id) { return nplaces && id >= 0 ? id % nplaces : -1; }

int ito__place_node(int i) {
  const cpu_set_t *p = ito__place_cpus(i);
  if (!p) return -1;
  const struct topo *t = ito__topo();
  for (int u = 0; u < t->pus; u++)
    if (t->pu_os[u] >= 0 && t->pu_os[u] < CPU_SETSIZE && CPU_ISSET(t->pu_os[u], p))
      return t->pu_node[u];
  return -1;
}

int ito__worker_node(int id) {
  if (id < 0) return -1;
  int pl = ito__worker_place(id);
  if (pl >= 0) return ito__place_node(pl);
  const struct topo *t = ito__topo();
  return t->pu_node[id % t->pus];
}
