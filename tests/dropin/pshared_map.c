/* Process-shared objects known by their memory, not by their address: a
 * mutex, a condition variable, a rwlock, a barrier and a semaphore in a
 * shared file, used
 *   1. through two mappings of the file in one process (made through the
 *      first, used through both);
 *   2. by a forked child that maps the file once more, at a third address;
 *   3. made by a process without the library (this program run again with
 *      LD_PRELOAD taken out of its environment), then used as in 1 and 2.
 * A wait that never ends is caught by a watchdog process after 60 s.
 * Output is deterministic; both.sh compares it with the native run. */
#define _GNU_SOURCE
#define DROPIN_PROG "pshared_map"
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dropin.h"

struct objs {
  pthread_mutex_t m;
  pthread_cond_t c;
  pthread_rwlock_t rw;
  pthread_barrier_t b;
  sem_t s;
  int flag, ready, serial;
  long counter;
};

static struct objs *map_file(int fd) {
  void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) FAIL("mmap");
  return p;
}

static void init_objs(struct objs *o) {
  memset(o, 0, sizeof *o);
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
  pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
  pthread_rwlockattr_t ra;
  pthread_rwlockattr_init(&ra);
  pthread_rwlockattr_setpshared(&ra, PTHREAD_PROCESS_SHARED);
  pthread_barrierattr_t ba;
  pthread_barrierattr_init(&ba);
  pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
  if (pthread_mutex_init(&o->m, &ma) || pthread_cond_init(&o->c, &ca) ||
      pthread_rwlock_init(&o->rw, &ra) || pthread_barrier_init(&o->b, &ba, 2) ||
      sem_init(&o->s, 1, 0))
    FAIL("init");
}

/* ---- two mappings in one process ------------------------------------------------------ */

static struct objs *A, *B;

static void *barrier_b(void *p) {
  (void)p;
  int rc = pthread_barrier_wait(&B->b);
  if (rc == PTHREAD_BARRIER_SERIAL_THREAD)
    __atomic_add_fetch(&B->serial, 1, __ATOMIC_RELAXED);
  else if (rc)
    FAIL("barrier through the second mapping: %s", code_name(rc));
  return NULL;
}

static void *cond_b(void *p) {
  (void)p;
  if (pthread_mutex_lock(&B->m)) FAIL("lock through the second mapping");
  B->ready = 1;
  while (!B->flag)
    if (pthread_cond_wait(&B->c, &B->m)) FAIL("cond_wait through the second mapping");
  /* the mutex is held again: an error-checking relock says so */
  int rc = pthread_mutex_lock(&B->m);
  B->counter = rc == EDEADLK ? 1 : -rc;
  pthread_mutex_unlock(&B->m);
  return NULL;
}

static void *try_b(void *p) {
  (void)p;
  A->counter = pthread_mutex_trylock(&B->m);
  return NULL;
}

static void two_mappings(const char *what) {
  printf("%s:\n", what);
  A->serial = 0;
  pthread_t t;
  pthread_create(&t, NULL, barrier_b, NULL);
  int rc = pthread_barrier_wait(&A->b);
  if (rc == PTHREAD_BARRIER_SERIAL_THREAD)
    __atomic_add_fetch(&A->serial, 1, __ATOMIC_RELAXED);
  else if (rc)
    FAIL("barrier through the first mapping: %s", code_name(rc));
  pthread_join(t, NULL);
  printf("  barrier: one serial thread: %s\n", A->serial == 1 ? "yes" : "no");

  A->flag = A->ready = 0;
  pthread_create(&t, NULL, cond_b, NULL);
  for (;;) {
    pthread_mutex_lock(&A->m);
    int r = A->ready;
    if (r) {
      A->flag = 1;
      pthread_cond_broadcast(&A->c);
    }
    pthread_mutex_unlock(&A->m);
    if (r) break;
    usleep(1000);
  }
  pthread_join(t, NULL);
  printf("  cond: woken, mutex held after the wait: %s\n", A->counter == 1 ? "yes" : "no");

  printf("  rwlock: wrlock %s", code_name(pthread_rwlock_wrlock(&A->rw)));
  printf(", tryrdlock through the other %s", code_name(pthread_rwlock_tryrdlock(&B->rw)));
  printf(", unlock %s", code_name(pthread_rwlock_unlock(&B->rw)));
  printf(", rdlock %s", code_name(pthread_rwlock_rdlock(&B->rw)));
  printf(", trywrlock %s", code_name(pthread_rwlock_trywrlock(&A->rw)));
  printf(", unlock %s\n", code_name(pthread_rwlock_unlock(&A->rw)));

  int v = -1;
  sem_post(&A->s);
  sem_getvalue(&B->s, &v);
  printf("  sem: value through the other %d", v);
  printf(", trywait %d", sem_trywait(&B->s));
  rc = sem_trywait(&A->s);
  printf(", again %s\n", rc ? code_name(errno) : "0");

  printf("  mutex: lock %s", code_name(pthread_mutex_lock(&A->m)));
  pthread_create(&t, NULL, try_b, NULL);
  pthread_join(t, NULL);
  printf(", another thread's trylock through the other %s", code_name((int)A->counter));
  printf(", relock through the other %s", code_name(pthread_mutex_lock(&B->m)));
  printf(", unlock through the other %s\n", code_name(pthread_mutex_unlock(&B->m)));
}

/* ---- a child that maps the file at another address ----------------------------------- */

static void child_mapping(int fd, const char *what) {
  printf("%s:\n", what);
  A->flag = A->ready = 0;
  A->counter = 0;
  pid_t kid = fork();
  if (kid < 0) FAIL("fork");
  if (kid == 0) {
    struct objs *C = map_file(fd);
    if (C == A || C == B) FAIL("the child's mapping is not at a new address");
    int rc = pthread_barrier_wait(&C->b);
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) _exit(2);
    pthread_mutex_lock(&C->m);
    C->ready = 1;
    while (!C->flag) pthread_cond_wait(&C->c, &C->m);
    pthread_mutex_unlock(&C->m);
    pthread_rwlock_wrlock(&C->rw);
    C->counter = 42;
    pthread_rwlock_unlock(&C->rw);
    sem_post(&C->s);
    _exit(0);
  }
  int rc = pthread_barrier_wait(&B->b);
  printf("  barrier with the child: %s\n",
         rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD ? "passed" : code_name(rc));
  for (;;) {
    pthread_mutex_lock(&A->m);
    int r = A->ready;
    if (r) {
      A->flag = 1;
      pthread_cond_signal(&B->c);
    }
    pthread_mutex_unlock(&A->m);
    if (r) break;
    usleep(1000);
  }
  if (sem_wait(&A->s)) FAIL("sem_wait");
  pthread_rwlock_rdlock(&B->rw);
  printf("  the child woke, wrote %ld under the rwlock and posted\n", B->counter);
  pthread_rwlock_unlock(&B->rw);
  int st;
  waitpid(kid, &st, 0);
  printf("  child: %s\n", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "exited 0" : "failed");
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "init")) { /* the process without the library */
    init_objs(map_file(atoi(argv[2])));
    return 0;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  pid_t dog = dropin_watchdog(60, "a wait on a process-shared object did not end");
  for (int round = 0; round < 2; round++) {
    char name[] = "/tmp/pshared_map-XXXXXX";
    int fd = mkstemp(name);
    if (fd < 0) FAIL("mkstemp");
    unlink(name);
    if (ftruncate(fd, 4096)) FAIL("ftruncate");
    A = map_file(fd);
    B = map_file(fd);
    if (A == B) FAIL("one address for two mappings");
    if (round == 0) {
      init_objs(A);
    } else {
      /* made by this program with the library taken out of its environment */
      extern char **environ;
      int n = 0;
      while (environ[n]) n++;
      char **env = calloc(n + 1, sizeof *env);
      int k = 0;
      for (int i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11)) env[k++] = environ[i];
      char fdarg[16];
      snprintf(fdarg, sizeof fdarg, "%d", fd);
      pid_t kid = fork();
      if (kid < 0) FAIL("fork");
      if (kid == 0) {
        /* under an emulator (qemu-user), through it: its execve of
         * /proc/self/exe would run the emulator itself */
        const char *emu = getenv("ITO_TEST_EMULATOR");
        if (emu && *emu) {
          char *words = strdup(emu), *cmd[16], *save = NULL;
          int w = 0;
          for (char *t = strtok_r(words, " ", &save); t && w < 12; t = strtok_r(NULL, " ", &save))
            cmd[w++] = t;
          cmd[w++] = argv[0];
          cmd[w++] = "init";
          cmd[w++] = fdarg;
          cmd[w] = NULL;
          execvpe(cmd[0], cmd, env);
        } else {
          execve("/proc/self/exe", (char *[]){argv[0], "init", fdarg, NULL}, env);
        }
        _exit(127);
      }
      int st;
      waitpid(kid, &st, 0);
      if (!WIFEXITED(st) || WEXITSTATUS(st)) FAIL("the process without the library failed");
      free(env);
    }
    const char *made = round == 0 ? "made here" : "made by a process without the library";
    char what[128];
    snprintf(what, sizeof what, "%s, two mappings", made);
    two_mappings(what);
    snprintf(what, sizeof what, "%s, a child's own mapping", made);
    child_mapping(fd, what);
    munmap(A, 4096);
    munmap(B, 4096);
    close(fd);
  }
  dropin_watchdog_end(dog);
  return 0;
}
