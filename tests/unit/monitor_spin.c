/* A spin loop in a shared object of its own, for test_monitor.c's case 6:
 * the unit tests link ito statically, and preemption never interrupts
 * code of the object that holds ito (src/core/preempt.h, invariant 2),
 * so the loop must live elsewhere. */
void *unit_monitor_spin(void *flag) {
  while (!*(volatile int *)flag) {
  }
  return 0;
}
