/* The files the runtime writes (the profiler's) and the environment it
 * trusts (docs/profile.md "Files", docs/api.md "Environment"):
 *
 *   test_outfiles links    a link planted at a profile file's name is
 *                          replaced by the new file, never written through;
 *                          the file's mode is at most 0644; no scratch file
 *                          is left behind
 *   test_outfiles full     a write that fails (RLIMIT_FSIZE: EFBIG) is one
 *                          line naming the file and the error; the old
 *                          file stays whole; the program's status is its own
 *   test_outfiles secure   run as root: a copy of this program made setuid
 *                          to nobody ignores ITO_* variables (a bad value
 *                          does not stop it; no profile is written), as
 *                          glibc ignores its own in a secure process;
 *                          SKIPPED where no setuid program can be run */
#define _GNU_SOURCE
#include <ito/ito.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child.h"

static void *leaf(void *arg) {
  ito_yield();
  return arg;
}

/* Threads under the runtime, so that the profile has rows: each yields
 * once, so the trace has at least a slice per thread. */
#define THREADS 64
static void run_some(void) {
  CHECK_EQ(ito_init(), 0);
  ito_thread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) CHECK_EQ(ito_create(leaf, (void *)i, &t[i]), 0);
  for (long i = 0; i < THREADS; i++) {
    void *r;
    CHECK_EQ(ito_join(t[i], &r), 0);
    CHECK_EQ((long)r, i);
  }
  CHECK_EQ(ito_finalize(), 0);
}

static void put(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CHECK(fd >= 0);
  CHECK_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
}

static void get(const char *path, char *out, size_t len) {
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  ssize_t n = read(fd, out, len - 1);
  CHECK(n >= 0);
  out[n] = 0;
  close(fd);
}

/* The names in dir, one count: files other than those expected. */
static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

/* Runs fn in a child with stderr into err: its exit status. */
static void call(void *fn) { ((void (*)(void))fn)(); }
static int in_child(void (*fn)(void), char *err, size_t len) {
  int st = child_run(call, (void *)fn, err, len);
  CHECK(WIFEXITED(st));
  return WEXITSTATUS(st);
}

static char dir[256];

static void tmpdir(void) {
  const char *t = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/ito-outfiles-XXXXXX", t && *t ? t : "/tmp");
  CHECK(mkdtemp(dir) != NULL);
}

static void cleanup(void) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK_EQ(system(cmd), 0);
}

/* ---- links -------------------------------------------------------------------------------- */

static void links(void) {
  tmpdir();
  char victim[400], link[400], prefix[400];
  snprintf(victim, sizeof victim, "%s/victim", dir);
  snprintf(link, sizeof link, "%s/p.csv", dir);
  snprintf(prefix, sizeof prefix, "%s/p", dir);
  put(victim, "keep\n");
  CHECK_EQ(symlink(victim, link), 0);
  setenv("ITO_PROFILE", "csv", 1);
  setenv("ITO_PROFILE_OUT", prefix, 1);
  umask(0);
  char err[1024];
  CHECK_EQ(in_child(run_some, err, sizeof err), 0);
  CHECK_EQ(err[0], 0);
  char text[256];
  get(victim, text, sizeof text);
  CHECK(!strcmp(text, "keep\n")); /* never written through the link */
  struct stat st;
  CHECK_EQ(lstat(link, &st), 0);
  CHECK(S_ISREG(st.st_mode)); /* the link replaced by the profile */
  CHECK_EQ(st.st_mode & 07777, 0644);
  get(link, text, sizeof text);
  CHECK(!strncmp(text, "tag,work", 8));
  CHECK_EQ(count_entries(dir), 2); /* victim and p.csv: no scratch file left */
  cleanup();
  puts("outfiles links: a link at the profile's name replaced, not followed; mode 0644: OK");
}

/* ---- a write that fails ---------------------------------------------------------------------- */

static void limited_run(void) {
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit rl = {1024, 1024};
  CHECK_EQ(setrlimit(RLIMIT_FSIZE, &rl), 0);
  run_some();
}

static void full(void) {
  tmpdir();
  char prefix[400], trace[400], csv[400];
  snprintf(prefix, sizeof prefix, "%s/p", dir);
  snprintf(trace, sizeof trace, "%s/p.trace.json", dir);
  snprintf(csv, sizeof csv, "%s/p.csv", dir);
  put(trace, "old\n");
  setenv("ITO_PROFILE", "csv,trace", 1);
  setenv("ITO_PROFILE_OUT", prefix, 1);
  /* the csv fits in 1024 bytes; the trace of 64 threads' slices does not */
  char err[2048];
  CHECK_EQ(in_child(limited_run, err, sizeof err), 0);
  char want[600];
  snprintf(want, sizeof want, "ito: ITO_PROFILE_OUT=%s: cannot write %s (%s)", prefix, trace,
           strerror(EFBIG));
  if (strncmp(err, want, strlen(want)) || strchr(err, '\n') != err + strlen(err) - 1) {
    fprintf(stderr, "message \"%s\", wanted one line \"%s...\"\n", err, want);
    CHECK(0);
  }
  char text[256];
  get(trace, text, sizeof text);
  CHECK(!strcmp(text, "old\n")); /* the old file whole */
  get(csv, text, sizeof text);
  CHECK(!strncmp(text, "tag,work", 8)); /* the small file written */
  CHECK_EQ(count_entries(dir), 2);
  cleanup();
  puts("outfiles full: a failed write is one line, the old file whole: OK");
}

/* ---- a secure process ----------------------------------------------------------------------- */

static int secure_child(const char *prefix) {
  if (getauxval(AT_SECURE) != 1) {
    printf("SKIPPED: the setuid copy did not run secure (a nosuid file system?)\n");
    return TEST_SKIP_STATUS;
  }
  run_some(); /* ITO_NUM_WORKERS=none would stop a program that read it */
  char csv[400];
  snprintf(csv, sizeof csv, "%s.csv", prefix);
  CHECK(access(csv, F_OK) != 0);
  /* _exit: a sanitizer's leak check at exit cannot trace a setuid process */
  fflush(stdout);
  _exit(0);
}

static int secure(const char *self) {
  if (geteuid() != 0) {
    printf("SKIPPED: only root can make a setuid copy of this program\n");
    return TEST_SKIP_STATUS;
  }
  struct passwd *pw = getpwnam("nobody");
  if (!pw) {
    printf("SKIPPED: no user nobody to make the copy setuid to\n");
    return TEST_SKIP_STATUS;
  }
  tmpdir();
  CHECK_EQ(chmod(dir, 0777), 0);
  char copy[400], prefix[400], cmd[1200];
  snprintf(copy, sizeof copy, "%s/secure", dir);
  snprintf(prefix, sizeof prefix, "%s/p", dir);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", self, copy);
  CHECK_EQ(system(cmd), 0);
  CHECK_EQ(chown(copy, pw->pw_uid, pw->pw_gid), 0);
  CHECK_EQ(chmod(copy, 04755), 0);
  setenv("ITO_NUM_WORKERS", "none", 1);
  setenv("ITO_PROFILE", "csv", 1);
  setenv("ITO_PROFILE_OUT", prefix, 1);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    execl(copy, copy, "secure-child", prefix, (char *)NULL);
    _exit(126);
  }
  int st;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  cleanup();
  CHECK(WIFEXITED(st));
  if (WEXITSTATUS(st) == TEST_SKIP_STATUS) return TEST_SKIP_STATUS;
  if (WEXITSTATUS(st) == 127) {
    printf(
        "SKIPPED: the setuid copy could not load libito (a library path nobody may "
        "read?)\n");
    return TEST_SKIP_STATUS;
  }
  CHECK_EQ(WEXITSTATUS(st), 0); /* 2 would be ITO_NUM_WORKERS=none read and refused */
  puts("outfiles secure: a setuid program ignores ITO_* variables: OK");
  return 0;
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "";
  if (!strcmp(what, "links"))
    links();
  else if (!strcmp(what, "full"))
    full();
  else if (!strcmp(what, "secure")) {
    char self[400];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(n > 0);
    self[n] = 0;
    return secure(self);
  } else if (!strcmp(what, "secure-child") && argc > 2)
    return secure_child(argv[2]);
  else {
    fprintf(stderr, "usage: test_outfiles links|full|secure\n");
    return 2;
  }
  return 0;
}
