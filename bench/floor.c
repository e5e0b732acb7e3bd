/* The least a closed-loop HTTP/1.1 keep-alive client can cost on this kernel: C connections
 * on one thread, level-triggered epoll, per response one read(2) (more only when it arrives in
 * pieces) and per request one write(2) of a fixed request; responses framed by Content-Length
 * only, no latency recorded, no statistics, no checks beyond the status line's "200". What is
 * left is the kernel's work for a request on loopback, which every client pays: a client that
 * costs 1.0x this is at the floor, and no client can go below it by user-space work alone.
 *
 * Usage: floor HOST PORT PATH CONNECTIONS SECONDS. Prints what vs-peers.sh reads (wrk's words:
 * "N requests in", "Requests/sec:"). Run by bench/vs-peers.sh as the tool `floor`. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF 16384

struct conn {
  int fd;
  size_t have;      /* bytes of the current response read so far */
  size_t need;      /* its whole length once its head is parsed, else 0 */
  char buf[BUF];
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
  perror(what);
  exit(1);
}

/* The response's length once its head is in, or 0 while it is not. */
static size_t framed(struct conn *c) {
  char *end = memmem(c->buf, c->have, "\r\n\r\n", 4);
  if (!end) return 0;
  if (c->have < 12 || memcmp(c->buf + 9, "200", 3) != 0) {
    fprintf(stderr, "floor: not a 200 response\n");
    exit(1);
  }
  char *cl = memmem(c->buf, end - c->buf, "Content-Length: ", 16);
  if (!cl) {
    fprintf(stderr, "floor: no Content-Length\n");
    exit(1);
  }
  return (size_t)(end + 4 - c->buf) + strtoul(cl + 16, NULL, 10);
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: floor HOST PORT PATH CONNECTIONS SECONDS\n");
    return 2;
  }
  char req[512];
  int reqlen = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", argv[3],
                        argv[1], argv[2]);
  int n = atoi(argv[4]);
  double seconds = atof(argv[5]);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
  if (inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) die("inet_pton");
  int ep = epoll_create1(0);
  struct conn *conns = calloc(n, sizeof *conns);
  if (!conns) die("calloc");
  for (int i = 0; i < n; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) die("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conns[i].fd = fd;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &conns[i]};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl");
    if (write(fd, req, reqlen) != reqlen) die("write");
  }
  long done = 0;
  double start = now(), stop = start + seconds;
  struct epoll_event evs[256];
  while (now() < stop) {
    int k = epoll_wait(ep, evs, 256, 100);
    if (k < 0 && errno != EINTR) die("epoll_wait");
    for (int e = 0; e < k; e++) {
      struct conn *c = evs[e].data.ptr;
      ssize_t got = read(c->fd, c->buf + c->have, BUF - c->have);
      if (got <= 0) {
        if (got < 0 && errno == EAGAIN) continue;
        fprintf(stderr, "floor: the server closed or failed a connection\n");
        return 1;
      }
      c->have += got;
      if (!c->need) c->need = framed(c);
      if (!c->need || c->have < c->need) continue;
      if (c->have > c->need) {
        fprintf(stderr, "floor: more than one response at once (none was pipelined)\n");
        return 1;
      }
      done++;
      c->have = c->need = 0;
      if (write(c->fd, req, reqlen) != reqlen) die("write");
    }
  }
  double took = now() - start;
  printf("%ld requests in %.2fs\nRequests/sec: %.2f\n", done, took, done / took);
  return 0;
}
