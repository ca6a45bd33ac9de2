/* Wait queues (invariants at the top of waitq.h). */
#include "waitq.h"

/* ---- queue operations (the queue's lock held) ------------------------------------ */

void ito__wq_push(void **head, void **tail, waiter *wt) {
  ITO_ASSERT(!wt->queued);
  wt->next = NULL;
  wt->queued = 1;
  if (*tail)
    ((waiter *)*tail)->next = wt;
  else
    *head = wt;
  *tail = wt;
}

void ito__wq_remove(void **head, void **tail, waiter *wt) {
  waiter *prev = NULL;
  for (waiter *x = *head; x; prev = x, x = x->next) {
    if (x != wt) continue;
    if (prev)
      prev->next = x->next;
    else
      *head = x->next;
    if (*tail == x) *tail = prev;
    x->queued = 0;
    return;
  }
  ITO_ASSERT(!"a queued waiter is on its queue");
}

/* Takes the leading waiters off the queue, at most max of them (max < 0:
 * no limit), and with by_tag only while they carry tag: a list in queue
 * order (the queue's own links, cut after the last one); *n gets their
 * number. */
static waiter *take_prefix(void **head, void **tail, int max, bool by_tag, int tag, int *n) {
  waiter *first = *head, *last = NULL, *w = first;
  int k = 0;
  while (w && k != max && (!by_tag || w->tag == tag)) {
    ITO_ASSERT(w->queued);
    w->queued = 0;
    last = w;
    w = w->next;
    k++;
  }
  *n = k;
  if (!last) return NULL;
  last->next = NULL;
  *head = w;
  if (!w) *tail = NULL;
  return first;
}

waiter *ito__wq_take(void **head, void **tail, int n) {
  int k;
  return take_prefix(head, tail, n, false, 0, &k);
}

waiter *ito__wq_take_tag(void **head, void **tail, int tag, int *n) {
  return take_prefix(head, tail, -1, true, tag, n);
}

waiter *ito__wq_last(waiter *list) {
  while (list && list->next) list = list->next;
  return list;
}
