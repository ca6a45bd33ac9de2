/* One row of the configuration table: an environment variable, the form of
 * its value and where the parsed value goes (src/core/config.c). A
 * standalone header: the drop-in libraries register rows of their own
 * through src/dropin/ito_dropin.h. */
#ifndef ITO_CORE_CONFIG_ROW_H
#define ITO_CORE_CONFIG_ROW_H

enum ito_cfg_kind {
  ITO_CFG_INT,    /* a whole number in [lo, hi]; dst: long * */
  ITO_CFG_SIZE,   /* a size in bytes in [lo, hi], with a suffix; dst: size_t * */
  ITO_CFG_CHOICE, /* one of the words of choices, in any letter case; dst: int * (its value) */
  ITO_CFG_PARSE,  /* parse(text, dst): NULL when valid, else what is expected */
};

/* ITO_CFG_SIZE forms. Default: digits with an optional K, M or G (any
 * case). ITO_CFG_SIZE_OMP: OpenMP's form, B, K, M or G with blanks allowed
 * around, and K when there is no suffix. */
#define ITO_CFG_SIZE_OMP 1u

struct ito_cfg_choice {
  const char *word;
  int value;
};

struct ito_cfg {
  const char *name;
  enum ito_cfg_kind kind;
  void *dst;
  long long lo, hi;
  const struct ito_cfg_choice *choices; /* ended by {0, 0} */
  const char *(*parse)(const char *text, void *dst);
  unsigned flags;
  const char *dflt; /* the default, as the README's table states it */
  const char *what; /* what the variable sets, one line */
};

#endif
