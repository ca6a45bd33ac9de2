/* The registry of the parts modules play in fork() (forkpart.h). */
#include "forkpart.h"

int ito__forked;

ITO_REGISTRY(ito_fork, struct ito_fork_part);

static int n_parts(void) { return ITO_REGISTRY_N(ito_fork); }
static const struct ito_fork_part *part(int i) { return ITO_REGISTRY_AT(ito_fork, i); }

/* The keys of the two orders (invariants 1 and 2); a part without a lock,
 * or without a child step, takes no part in that order. */
static bool rank_key(const void *e, const void *arg, int *k) {
  const struct ito_fork_part *p = e;
  (void)arg;
  *k = p->lock_rank;
  return p->lock != NULL;
}
static bool child_key(const void *e, const void *arg, int *k) {
  const struct ito_fork_part *p = e;
  (void)arg;
  *k = p->child_order;
  return p->child != NULL;
}

static const struct ito_fork_part *next_part(bool (*key)(const void *, const void *, int *),
                                             int after, bool down) {
  return ito__registry_next(ITO_REGISTRY_ALL(ito_fork), n_parts(), key, NULL, after, down);
}

void ito__fork_parts_lock(int take) {
  bool down = !take; /* taken ascending, let go descending */
  int at = down ? INT_MAX : INT_MIN;
  for (const struct ito_fork_part *p; (p = next_part(rank_key, at, down));) {
    p->lock(take);
    at = p->lock_rank;
  }
}

const struct ito_fork_part *ito__fork_part_ranked(int rank) {
  for (int i = 0; i < n_parts(); i++)
    if (part(i)->lock && part(i)->lock_rank == rank) return part(i);
  return NULL;
}

void ito__fork_parts_child(struct worker *w, struct ithread *self) {
  int at = INT_MIN;
  for (const struct ito_fork_part *p; (p = next_part(child_key, at, false));) {
    p->child(w, self);
    at = p->child_order;
  }
}
