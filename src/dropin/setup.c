/* The drop-in libraries' set-up: libc's definitions, configuration rows,
 * defaults, the exception globals, recorders and poll sources. Each entry
 * hands over to the core (src/dropin/ito_dropin.h). */
#define _GNU_SOURCE
#include "ito_dropin.h"

#include <errno.h>

#include "../core/atfork.h"
#include "../core/config.h"
#include "../core/elfsym.h"
#include "../core/setxid.h"
#include "../core/thread.h"
#include "../core/tls.h"
#include "../core/hooks.h"
#include "../core/os.h"
#include "../core/overflow.h"
#include "../core/poll.h"
#include "../core/preempt.h"
#include "../core/runtime.h"
#include "../core/switch.h"
#include "../io/io.h"

void ito__dropin_os_install(const struct ito_os *os) {
  if (ito__rt_state() != RT_OFF)
    ito__fatal(
        "a drop-in library was set up after the runtime started; load it with LD_PRELOAD "
        "or link it before libito");
  ito__os_install(os);
}

void ito__dropin_fd_view_tracked(void) { STORE_RLX(&ito__io_view_tracked, 1); }

static void io_early(void) { (void)ito__io_setup(); }
void ito__dropin_io_early(void) { STORE_REL(&ito__rt_at_start, io_early); }

void ito__dropin_config_read(const struct ito_cfg *rows, int n) { ito__config_read(rows, n); }

void ito__dropin_config_each(void (*fn)(const struct ito_cfg *row, void *arg), void *arg) {
  ito__config_each(fn, arg);
}

int ito__dropin_config_default(const char *name, const char *text, const char *from) {
  return ito__config_default(name, text, from);
}

void ito__dropin_default_workers(int n) { ito__config_default_workers(n); }

int ito__dropin_config_value(const char *name, char *out, size_t len) {
  return ito__config_value(name, out, len);
}

int ito__dropin_config_number(const char **p, long long lo, long long hi, long long *out) {
  return ito__config_number(p, lo, hi, out);
}

int ito__dropin_key_create(ito_key_t *key, void (*destructor)(void *)) {
  return ito__key_create_reserved(key, destructor);
}
void *ito__dropin_key_get(ito_key_t key) { return ito__key_get(key); }
int ito__dropin_key_set(ito_key_t key, const void *value) { return ito__key_set(key, value); }

void ito__dropin_overflow_describe(int (*fn)(void *ctx, char *out, size_t len, void **start)) {
  ito__overflow_describe(fn);
}

void ito__dropin_set_eh(void *(*get_globals)(void)) { ito__set_eh(get_globals); }

int ito__dropin_hooks_attach(void (*fn)(const struct ito_event *e, void *arg), void *arg) {
  if (ito__rt_state() != RT_OFF) return EBUSY; /* the fork's variant is chosen at start */
  return ito__hooks_attach(fn, arg);
}

int ito__dropin_poll_register(struct ito_poll_source *s) { return ito__poll_register(s); }
void ito__dropin_poll_arrive(struct ito_poll_source *s) { ito__poll_arrive(s); }
void ito__dropin_poll_leave(struct ito_poll_source *s) { ito__poll_leave(s); }

void *ito__dropin_sym(const void *after, const char *name, const char *version) {
  return ito__elf_sym(after, name, version);
}

long ito__dropin_setxid(long nr, long a, long b, long c) { return ito__setxid(nr, a, b, c); }

void ito__dropin_modules_changed(void) {
  ito__tls_modules_changed();
  ito__preempt_modules_changed();
}

void ito__dropin_preempt_enable(int all_threads, void (*cancel)(void)) {
  ito__preempt_enabled = 1;
  if (all_threads) ito__preempt_threads = 1;
  if (cancel) ito__preempt_on_cancel(cancel);
}

void ito__dropin_atfork_prepare(void) { ito__atfork_prepare(); }
void ito__dropin_atfork_parent(void) { ito__atfork_parent(); }
void ito__dropin_atfork_child(void) {
  if (!ito__atfork_active()) return; /* not forked by an ito thread */
  ito__atfork_child();
}
