/* The registry of the parts modules play in fork() (forkpart.h). */
#include "forkpart.h"

int ito__forked;

ITO_REGISTRY(ito_fork, struct ito_fork_part);

static int n_parts(void) { return ITO_REGISTRY_N(ito_fork); }
static const struct ito_fork_part *part(int i) { return ITO_REGISTRY_AT(ito_fork, i); }

/* The part with the least key above `after` (key: its lock_rank, or its
 * child_order), or NULL. Few parts, a fork is rare: a scan each. */
static const struct ito_fork_part *next_part(bool by_rank, int after, bool down) {
  const struct ito_fork_part *best = NULL;
  int best_key = 0;
  for (int i = 0; i < n_parts(); i++) {
    const struct ito_fork_part *p = part(i);
    if (by_rank ? !p->lock : !p->child) continue;
    int key = by_rank ? p->lock_rank : p->child_order;
    if (down ? key >= after : key <= after) continue;
    ITO_ASSERT(!best || key != best_key); /* invariant 3 */
    if (!best || (down ? key > best_key : key < best_key)) {
      best = p;
      best_key = key;
    }
  }
  return best;
}

void ito__fork_parts_lock(int take) {
  bool down = !take; /* taken ascending, let go descending */
  int at = down ? INT_MAX : INT_MIN;
  for (const struct ito_fork_part *p; (p = next_part(true, at, down));) {
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
  for (const struct ito_fork_part *p; (p = next_part(false, at, false));) {
    p->child(w, self);
    at = p->child_order;
  }
}
