/* The registry of the parts modules play in fork() (forkpart.h). */
#include "forkpart.h"

int ito__forked;

/* The entries ITO_FORK_PART puts in the ito_fork section (weak: a program
 * that links no part has none). */
extern const struct ito_fork_part *const __start_ito_fork[] __attribute__((weak)) HIDDEN;
extern const struct ito_fork_part *const __stop_ito_fork[] __attribute__((weak)) HIDDEN;

static int n_parts(void) { return (int)(__stop_ito_fork - __start_ito_fork); }

/* The part with the least key above `after` (key: its lock_rank, or its
 * child_order), or NULL. Few parts, a fork is rare: a scan each. */
static const struct ito_fork_part *next_part(bool by_rank, int after, bool down) {
  const struct ito_fork_part *best = NULL;
  int best_key = 0;
  for (int i = 0; i < n_parts(); i++) {
    const struct ito_fork_part *p = __start_ito_fork[i];
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
    if (__start_ito_fork[i]->lock && __start_ito_fork[i]->lock_rank == rank)
      return __start_ito_fork[i];
  return NULL;
}

void ito__fork_parts_child(struct worker *w, struct ithread *self) {
  int at = INT_MIN;
  for (const struct ito_fork_part *p; (p = next_part(false, at, false));) {
    p->child(w, self);
    at = p->child_order;
  }
}
