/* Drop-in test: the program's own event loops and signal waits.
 *  - 8 threads, each with its own epoll set over a pipe, wait in
 *    epoll_wait while main writes to the pipes one by one;
 *  - 4 threads wait in select over socketpairs, 8 threads sleep with an
 *    empty select, a select that times out leaves tv at zero, a select
 *    over an fd numbered above FD_SETSIZE;
 *  - ppoll and epoll_pwait2 with timeouts, and ppoll over pipes;
 *  - sigwait, sigwaitinfo and sigtimedwait for signals main blocked before
 *    creating threads, sent with kill(2) to the process.
 * The test runs with ITO_EXTRA_WORKERS=0 (tests/dropin/CMakeLists.txt): a
 * wait that blocked its worker instead of parking would hang it with one
 * worker.
 *
 * A plain pthread program (docs/dropin.md, section 8), run natively and
 * under libito-pthread.so; both.sh compares the outputs. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <unistd.h>

#define DROPIN_PROG "eventloops"
#include "dropin.h"

#define EP 8
static int ep_pipes[EP][2];
static int ep_got[EP];

static void *epoll_thread(void *p) {
  long i = (long)p;
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) FAIL("epoll_create1");
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
  if (epoll_ctl(ep, EPOLL_CTL_ADD, ep_pipes[i][0], &ev)) FAIL("epoll_ctl");
  struct epoll_event out[4];
  int n;
  while ((n = epoll_wait(ep, out, 4, 30000)) < 0 && errno == EINTR) {
  }
  if (n != 1 || out[0].data.u32 != (uint32_t)i) FAIL("epoll_wait %ld returned %d", i, n);
  char c;
  if (read(ep_pipes[i][0], &c, 1) != 1) FAIL("read");
  ep_got[i] = c;
  close(ep);
  return NULL;
}

#define SEL 4
static int sel_pairs[SEL][2];
static int sel_got[SEL];

static void *select_thread(void *p) {
  long i = (long)p;
  fd_set r;
  FD_ZERO(&r);
  FD_SET(sel_pairs[i][0], &r);
  struct timeval tv = {30, 0};
  int n = select(sel_pairs[i][0] + 1, &r, NULL, NULL, &tv);
  if (n != 1 || !FD_ISSET(sel_pairs[i][0], &r)) FAIL("select %ld returned %d", i, n);
  char c;
  if (recv(sel_pairs[i][0], &c, 1, 0) != 1) FAIL("recv");
  sel_got[i] = c;
  return NULL;
}

static void *select_sleep(void *p) {
  (void)p;
  struct timeval tv = {0, 20000};
  if (select(0, NULL, NULL, NULL, &tv) != 0) FAIL("select as a sleep");
  return (void *)1;
}

static int sig_seen;
static void *sigwait_thread(void *p) {
  (void)p;
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR1);
  int sig = 0;
  int rc = sigwait(&s, &sig);
  if (rc || sig != SIGUSR1) FAIL("sigwait: %d, signal %d", rc, sig);
  siginfo_t si;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR2);
  if (sigwaitinfo(&s, &si) != SIGUSR2) FAIL("sigwaitinfo");
  __atomic_store_n(&sig_seen, si.si_code == SI_USER && si.si_pid == getpid() ? 2 : 1,
                   __ATOMIC_RELEASE);
  return NULL;
}

static void pause_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

int main(int argc, char **argv) {
  /* signals first: blocked in main, so every thread inherits the mask */
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  sigaddset(&block, SIGUSR2);
  sigaddset(&block, SIGTERM);
  if (pthread_sigmask(SIG_BLOCK, &block, NULL)) FAIL("pthread_sigmask");

  pthread_t t[16];
  for (long i = 0; i < EP; i++) {
    if (pipe(ep_pipes[i])) FAIL("pipe");
    if (pthread_create(&t[i], NULL, epoll_thread, (void *)i)) FAIL("pthread_create");
  }
  pause_ms(20);
  for (int i = 0; i < EP; i++)
    if (write(ep_pipes[i][1], &"abcdefgh"[i], 1) != 1) FAIL("write");
  for (int i = 0; i < EP; i++) pthread_join(t[i], NULL);
  printf("epoll_wait:");
  for (int i = 0; i < EP; i++) printf(" %c", ep_got[i]);
  printf("\n");

  for (long i = 0; i < SEL; i++) {
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sel_pairs[i])) FAIL("socketpair");
    if (pthread_create(&t[i], NULL, select_thread, (void *)i)) FAIL("pthread_create");
  }
  pause_ms(20);
  for (int i = SEL - 1; i >= 0; i--)
    if (send(sel_pairs[i][1], &"wxyz"[i], 1, 0) != 1) FAIL("send");
  for (int i = 0; i < SEL; i++) pthread_join(t[i], NULL);
  printf("select: %c %c %c %c\n", sel_got[0], sel_got[1], sel_got[2], sel_got[3]);

  long slept = 0;
  for (long i = 0; i < 8; i++) pthread_create(&t[i], NULL, select_sleep, NULL);
  for (int i = 0; i < 8; i++) {
    void *r;
    pthread_join(t[i], &r);
    slept += (long)r;
  }
  printf("select with no fds: %ld threads slept\n", slept);

  /* a select that times out */
  fd_set r;
  FD_ZERO(&r);
  FD_SET(sel_pairs[0][0], &r);
  struct timeval tv = {0, 30000};
  int n = select(sel_pairs[0][0] + 1, &r, NULL, NULL, &tv);
  printf("select timing out: %d, fd %s, tv %ld.%06ld\n", n,
         FD_ISSET(sel_pairs[0][0], &r) ? "set" : "clear", (long)tv.tv_sec, (long)tv.tv_usec);

  /* an fd above FD_SETSIZE, in a set of the program's own size */
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  int high = 1500;
  if (rl.rlim_cur <= (rlim_t)high && rl.rlim_max > (rlim_t)high) {
    rl.rlim_cur = high + 1;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  int try_high = !(argc > 1 && strcmp(argv[1], "no-high-fd") == 0);
  if (try_high && dup2(sel_pairs[1][0], high) == high) {
    unsigned long big[2048 / (8 * sizeof(unsigned long))];
    memset(big, 0, sizeof big);
    big[high / (8 * sizeof(unsigned long))] |= 1UL << (high % (8 * sizeof(unsigned long)));
    send(sel_pairs[1][1], "!", 1, 0);
    struct timeval tv2 = {5, 0};
    n = select(high + 1, (fd_set *)big, NULL, NULL, &tv2);
    int set = (big[high / (8 * sizeof(unsigned long))] >> (high % (8 * sizeof(unsigned long)))) & 1;
    printf("select on fd %d: %d, %s\n", high, n, set ? "set" : "clear");
    close(high);
  } else {
    printf("select on fd %d: not tried (%s)\n", high,
           try_high ? "no such fd allowed here" : "the emulator cannot");
  }

  /* ppoll and epoll_pwait2 */
  struct pollfd pf = {ep_pipes[0][0], POLLIN, 0};
  struct timespec ts = {0, 30000000};
  printf("ppoll timing out: %d\n", ppoll(&pf, 1, &ts, NULL));
  if (write(ep_pipes[0][1], "q", 1) != 1) FAIL("write");
  n = ppoll(&pf, 1, NULL, NULL);
  printf("ppoll ready: %d, revents %s\n", n, pf.revents & POLLIN ? "POLLIN" : "none");
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 7}, out;
  epoll_ctl(ep, EPOLL_CTL_ADD, ep_pipes[1][0], &ev);
  /* (the kernel's own answer first, through the raw call no library
   * interposes: qemu-user 7.2 has no epoll_pwait2) */
  struct timespec zero = {0, 0};
  if (syscall(SYS_epoll_pwait2, ep, &out, 1, &zero, NULL, (size_t)8) < 0 && errno == ENOSYS)
    printf("epoll_pwait2 timing out: not in this kernel\n");
  else
    printf("epoll_pwait2 timing out: %d\n", epoll_pwait2(ep, &out, 1, &ts, NULL));
  n = epoll_wait(-1, &out, 1, 0);
  printf("epoll_wait on a bad fd: %d %s\n", n, errno == EBADF ? "EBADF" : "other");
  close(ep);

  /* signals */
  pthread_create(&t[0], NULL, sigwait_thread, NULL);
  pause_ms(20);
  kill(getpid(), SIGUSR1);
  pause_ms(20);
  kill(getpid(), SIGUSR2);
  pthread_join(t[0], NULL);
  printf("sigwait and sigwaitinfo: %s\n", __atomic_load_n(&sig_seen, __ATOMIC_ACQUIRE) == 2
                                              ? "SIGUSR1, then SIGUSR2 from us"
                                              : "wrong siginfo");
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  struct timespec shortwait = {0, 20000000};
  siginfo_t si;
  int rc = sigtimedwait(&term, &si, &shortwait);
  printf("sigtimedwait timing out: %d %s\n", rc,
         rc < 0 && errno == EAGAIN ? "EAGAIN" : strerror(errno));
  kill(getpid(), SIGTERM);
  rc = sigtimedwait(&term, &si, &shortwait);
  printf("sigtimedwait with one pending: %s\n", rc == SIGTERM ? "SIGTERM" : "other");
  return 0;
}
