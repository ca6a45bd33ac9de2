/* cpu_relax: the spin-wait hint, for the runtime (base.h) and the drop-in
 * libraries' own spins alike. A standalone header. */
#ifndef ITO_CORE_RELAX_H
#define ITO_CORE_RELAX_H

static inline void cpu_relax(void) {
#if defined(__x86_64__)
  __asm__ volatile("pause" ::: "memory");
#elif defined(__aarch64__)
  __asm__ volatile("yield" ::: "memory");
#else
  __asm__ volatile("" ::: "memory");
#endif
}

#endif
