/* The configuration table and its parser (src/core/config.h), white box:
 * every kind of row with good and bad values (a bad one must stop a child
 * process with exit status 2 and one line naming the variable), letter
 * case, the size forms, defaults given by a drop-in library, and the
 * core's own rows read into the settings. */
#define _GNU_SOURCE
#include "../../src/core/config.h"
#include "../../src/core/fiber.h"
#include "../../src/core/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"

static long n;
static size_t sz, omp_sz;
static int word;
static int parsed_ok;

static const char *parse_even(const char *text, void *dst) {
  (void)dst;
  long v = strtol(text, NULL, 10);
  if (v % 2) return "an even number";
  parsed_ok = 1;
  return NULL;
}

static const struct ito_cfg_choice words[] = {{"red", 1}, {"green", 2}, {"blue", 3}, {0, 0}};
static const struct ito_cfg rows[] = {
    {.name = "T_INT", .kind = ITO_CFG_INT, .dst = &n, .lo = -3, .hi = 7},
    {.name = "T_SIZE", .kind = ITO_CFG_SIZE, .dst = &sz, .lo = 16 << 10, .hi = 1L << 30},
    {.name = "T_OMPSIZE",
     .kind = ITO_CFG_SIZE,
     .dst = &omp_sz,
     .lo = 1,
     .hi = 1L << 30,
     .flags = ITO_CFG_SIZE_OMP},
    {.name = "T_WORD", .kind = ITO_CFG_CHOICE, .dst = &word, .choices = words},
    {.name = "T_PARSE", .kind = ITO_CFG_PARSE, .parse = parse_even},
};
#define NROWS ((int)(sizeof rows / sizeof rows[0]))

/* Sets name=value alone (the other test variables unset), reads the rows.
 * In a child: returns its exit status and stderr's first line in msg. */
static int read_in_child(const char *name, const char *value, char *msg, size_t len) {
  int fds[2];
  CHECK_EQ(pipe(fds), 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    setenv(name, value, 1);
    ito__config_read(rows, NROWS);
    _exit(0);
  }
  close(fds[1]);
  ssize_t k = read(fds[0], msg, len - 1);
  msg[k > 0 ? k : 0] = 0;
  close(fds[0]);
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st));
  return WEXITSTATUS(st);
}

static void good(const char *name, const char *value) {
  setenv(name, value, 1);
  ito__config_read(rows, NROWS);
  unsetenv(name);
}

static void bad(const char *name, const char *value, const char *expect) {
  char msg[512];
  CHECK_EQ(read_in_child(name, value, msg, sizeof msg), 2);
  char want[128];
  snprintf(want, sizeof want, "ito: %s=%s is not valid: expected ", name, value);
  if (strncmp(msg, want, strlen(want)) != 0 || !strstr(msg, expect) ||
      strchr(msg, '\n') != msg + strlen(msg) - 1) {
    fprintf(stderr, "%s=%s: message \"%s\", wanted \"%s...%s\" on one line\n", name, value, msg,
            want, expect);
    CHECK(0);
  }
}

static void each(const struct ito_cfg *r, void *arg) {
  int *seen = arg;
  if (!strncmp(r->name, "ITO_", 4)) seen[0]++;
  if (!strncmp(r->name, "T_", 2)) seen[1]++;
  if (!strncmp(r->name, "TM_", 3)) seen[2]++;
}

/* A module of this test's own, registered as libito.so's modules are. */
static struct tm_settings {
  long count;
  int mode;
  long derived; /* twice count, set by finish */
} tm;
static const struct ito_cfg_choice tm_modes[] = {{"fast", 1}, {"slow", 2}, {0, 0}};
static const struct ito_cfg tm_rows[] = {
    {.name = "TM_COUNT", .kind = ITO_CFG_INT, .dst = &tm.count, .lo = 0, .hi = 100},
    {.name = "TM_MODE", .kind = ITO_CFG_CHOICE, .dst = &tm.mode, .choices = tm_modes},
};
static void tm_defaults(void *s) { *(struct tm_settings *)s = (struct tm_settings){5, 1, 0}; }
static void tm_finish(void *s) {
  struct tm_settings *t = s;
  t->derived = 2 * t->count;
}
ITO_CONFIG_MODULE(tm_config, tm_rows, tm, tm_defaults, tm_finish);

int main(void) {
  good("T_INT", "-3");
  CHECK_EQ(n, -3);
  good("T_INT", " 7 ");
  CHECK_EQ(n, 7);
  /* one rule for every number: blanks around it and a sign are taken, by
   * whole-number and size rows alike */
  static const char *int3[] = {"+3", " 3", "3 ", "\t+3 "};
  for (size_t i = 0; i < sizeof int3 / sizeof int3[0]; i++) {
    n = 0;
    good("T_INT", int3[i]);
    CHECK_EQ(n, 3);
  }
  static const char *size3[] = {"+3M", " 3M", "3M ", "3 M", " +3 m\t"};
  for (size_t i = 0; i < sizeof size3 / sizeof size3[0]; i++) {
    sz = 0;
    good("T_SIZE", size3[i]);
    CHECK_EQ(sz, 3L << 20);
  }
  good("T_SIZE", "65536b");
  CHECK_EQ(sz, 65536);
  bad("T_INT", "8", "a whole number from -3 to 7");
  bad("T_INT", "+-3", "-3 to 7");
  bad("T_INT", "3 3", "-3 to 7");
  bad("T_INT", " ", "-3 to 7");
  bad("T_INT", "3x", "-3 to 7");
  bad("T_INT", "99999999999999999999", "-3 to 7");

  good("T_SIZE", "16K");
  CHECK_EQ(sz, 16 << 10);
  good("T_SIZE", "1g");
  CHECK_EQ(sz, 1L << 30);
  good("T_SIZE", "3M");
  CHECK_EQ(sz, 3L << 20);
  good("T_SIZE", "65536");
  CHECK_EQ(sz, 65536);
  static const char *bad_sizes[] = {"64KB", "64KiB", "1GiB",  "15K",     "2G", "-1",
                                    "K",    "+-1M",  "1 M B", "0x10000", "1T"};
  for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++)
    bad("T_SIZE", bad_sizes[i], "a size in bytes from 16K to 1G, optionally with a B, K, M or G");

  good("T_OMPSIZE", " 4 M ");
  CHECK_EQ(omp_sz, 4L << 20);
  good("T_OMPSIZE", "8");
  CHECK_EQ(omp_sz, 8 << 10); /* K when there is no suffix */
  good("T_OMPSIZE", "100b");
  CHECK_EQ(omp_sz, 100);
  bad("T_OMPSIZE", "4 MB", "a B, K, M or G suffix (K if none)");

  good("T_WORD", "GREEN");
  CHECK_EQ(word, 2);
  good("T_WORD", "Blue");
  CHECK_EQ(word, 3);
  good("T_WORD", " red\t");
  CHECK_EQ(word, 1);
  bad("T_WORD", "purple", "red, green or blue");

  good("T_PARSE", "4");
  CHECK(parsed_ok);
  bad("T_PARSE", "5", "an even number");
  puts("config: every kind of row, good and bad values, one-line messages: OK");

  /* the table keeps every row read, the modules' first */
  int seen[3] = {0, 0, 0}; /* the core's rows, this test's, this test's module's */
  ito__config_each(each, seen);
  CHECK(seen[0] >= 8);
  CHECK_EQ(seen[1], NROWS);
  CHECK_EQ(seen[2], 2);

  /* a module's rows (ITO_CONFIG_MODULE): its defaults, a variable, a
   * default given by a library, each read at a start; the value a row has
   * now, computed without touching the module's settings */
  char v[64];
  unsetenv("TM_COUNT");
  unsetenv("TM_MODE");
  ito__config_read_modules();
  CHECK_EQ(tm.count, 5);
  CHECK_EQ(tm.mode, 1);
  CHECK_EQ(tm.derived, 10); /* (finish ran) */
  setenv("TM_COUNT", " 7", 1);
  CHECK_EQ(ito__config_value("TM_COUNT", v, sizeof v), 0);
  CHECK(!strcmp(v, "7"));
  CHECK_EQ(tm.count, 5); /* not read yet */
  ito__config_read_modules();
  CHECK_EQ(tm.count, 7);
  CHECK_EQ(tm.derived, 14);
  CHECK_EQ(ito__config_default("TM_MODE", "slow", "T_LIB_MODE"), 0);
  CHECK(!strcmp(ito__config_blame("TM_MODE"), "T_LIB_MODE"));
  CHECK(!strcmp(ito__config_blame("TM_COUNT"), "TM_COUNT"));
  CHECK_EQ(ito__config_value("TM_MODE", v, sizeof v), 0);
  CHECK(!strcmp(v, "slow"));
  ito__config_read_modules();
  CHECK_EQ(tm.mode, 2);
  setenv("TM_MODE", "fast", 1); /* the variable wins over the default */
  CHECK(!strcmp(ito__config_blame("TM_MODE"), "TM_MODE"));
  ito__config_read_modules();
  CHECK_EQ(tm.mode, 1);
  CHECK(ito__config_value("TM_NO_SUCH", v, sizeof v) != 0);
  CHECK(ito__config_default("TM_NO_SUCH", "1", "T_FROM") != 0);
  puts("config: a module's rows, defaults from a library, values computed apart: OK");

  /* the scheduler's rows, read into ito__cfg (runtime.c) */
  unsetenv("ITO_STACK_SIZE");
  unsetenv("ITO_WAIT_POLICY");
  setenv("ITO_NUM_WORKERS", "3", 1);
  ito__config_read_modules();
  CHECK_EQ(ito__cfg.workers, 3);
  CHECK_EQ(ito__cfg.stack_size, ITO_DEFAULT_STACK);
  CHECK_EQ(ito__config_default("ITO_STACK_SIZE", "1M", "T_FROM"), 0);
  CHECK_EQ(ito__config_default("ITO_WAIT_POLICY", "ACTIVE", "T_FROM"), 0);
  ito__config_read_modules();
  CHECK_EQ(ito__cfg.stack_size, 1L << 20);
  CHECK_EQ(ito__cfg.wait_active, 1);
  setenv("ITO_STACK_SIZE", "256K", 1); /* the variable wins over the default */
  ito__config_read_modules();
  CHECK_EQ(ito__cfg.stack_size, 256 << 10);
  setenv("ITO_STACK_SIZE", "20000", 1); /* rounded up to pages */
  CHECK_EQ(ito__config_value("ITO_STACK_SIZE", v, sizeof v), 0);
  CHECK(!strcmp(v, "20480"));
  unsetenv("ITO_STACK_SIZE");
  puts("config: the scheduler's rows, defaults from a library: OK");
  puts("test_config: OK");
  return 0;
}
