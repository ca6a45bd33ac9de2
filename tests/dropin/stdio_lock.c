/* A thread holding a stream lock (flockfile) across a blocking call keeps
 * it to itself: 16 threads each write 200 lines in three pieces, sleeping
 * 1 ms between the pieces with stdout locked. Natively the lock belongs to
 * the OS thread; under libito-pthread.so the holder is pinned to its worker
 * (docs/dropin.md section 5), so no other thread running there can enter
 * the lock and write into the middle of the line. The output (captured by
 * both.sh) is summarised: the count of whole lines per thread, and how
 * many lines came out broken. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 16
#define LINES 200

static FILE *out;

static void *writer(void *p) {
  int id = (int)(long)p;
  for (int i = 0; i < LINES; i++) {
    flockfile(out);
    fprintf(out, "<%d:", id);
    fflush(out);
    if (i % 20 == 0) usleep(1000); /* would park: the lock must stay held */
    fprintf(out, "%d", i);
    fprintf(out, ":%d>\n", id);
    funlockfile(out);
  }
  return NULL;
}

int main(void) {
  char path[] = "/tmp/ito-stdio-lock-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0 || !(out = fdopen(fd, "w+"))) {
    perror("stdio_lock: temporary file");
    return 1;
  }
  unlink(path);
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++)
    if (pthread_create(&t[i], NULL, writer, (void *)i)) {
      fprintf(stderr, "stdio_lock: FAILED: pthread_create\n");
      return 1;
    }
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  fflush(out);
  rewind(out);
  int whole[THREADS] = {0}, broken = 0;
  char line[256];
  while (fgets(line, sizeof line, out)) {
    int a, n, b;
    char end;
    if (sscanf(line, "<%d:%d:%d%c", &a, &n, &b, &end) == 4 && a == b && end == '>' && a >= 0 &&
        a < THREADS && n >= 0 && n < LINES)
      whole[a]++;
    else
      broken++;
  }
  for (int i = 0; i < THREADS; i++) printf("thread %d: %d whole lines\n", i, whole[i]);
  printf("broken lines: %d\n", broken);
  if (broken) {
    fprintf(stderr, "stdio_lock: FAILED: %d lines were broken into by another thread\n", broken);
    return 1;
  }
  return 0;
}
