/* Loopback sockets for the drop-in socket tests (peerclose.c,
 * timeouts.c): a socket bound to 127.0.0.1 port 0 (never a fixed port),
 * and connected pairs, TCP through one listener or a socketpair. Include
 * after dropin.h. */
#ifndef ITO_DROPIN_LOOPBACK_H
#define ITO_DROPIN_LOOPBACK_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

static struct sockaddr_in loopback(void) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = 0;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

/* A socket bound to 127.0.0.1 port 0, listening if backlog > 0; *a gets
 * its address. */
static int bound(struct sockaddr_in *a, int backlog) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) FAIL("socket: %s", strerror(errno));
  *a = loopback();
  socklen_t al = sizeof *a;
  if (bind(s, (struct sockaddr *)a, sizeof *a) || (backlog > 0 && listen(s, backlog)) ||
      getsockname(s, (struct sockaddr *)a, &al))
    FAIL("bind, listen or getsockname on 127.0.0.1 port 0: %s", strerror(errno));
  return s;
}

/* The listener every TCP pair comes from (bound(&laddr, backlog)). */
static int lst = -1;
static struct sockaddr_in laddr;

/* A connected pair, TCP or a socketpair: fd[0] and fd[1] are the two ends. */
static void pair(int tcp, int fd[2]) {
  if (!tcp) {
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd)) FAIL("socketpair: %s", strerror(errno));
    return;
  }
  int c = socket(AF_INET, SOCK_STREAM, 0);
  if (c < 0) FAIL("socket: %s", strerror(errno));
  if (connect(c, (struct sockaddr *)&laddr, sizeof laddr))
    FAIL("connect to the listener: %s", strerror(errno));
  int a = accept(lst, NULL, NULL);
  if (a < 0) FAIL("accept: %s", strerror(errno));
  fd[0] = a;
  fd[1] = c;
}

#endif
