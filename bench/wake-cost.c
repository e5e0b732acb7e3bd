/* What one timer wake-up costs the thread that sleeps, in CPU time (user + system, getrusage),
 * on this machine: the floor under any open-loop client that sends each request at its own
 * due time, since requests due GAP_US apart need a wake-up each.
 *
 *   sleep: clock_nanosleep to each due time, one after another (what loadlab's open loop does
 *          between sends above 1,000 req/s);
 *   uring: (with liburing) the kernel times them: io_uring TIMEOUT ops with absolute due times,
 *          each linked to a NOP, queued 16 ahead, the thread waiting in io_uring_enter; the
 *          wake-up then runs in the kernel without returning to user space.
 *
 * Usage: wake-cost GAP_US COUNT. Built and run by bench/wake-cost.sh. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#ifdef WITH_URING
#include <liburing.h>
#endif

static double cpu_us(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static long switches(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_nvcsw;
}

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void report(const char *how, long gap, long n, double cpu, long sw) {
  printf("%-6s gap %5ld us: %6.2f us CPU per wake-up (%ld due times, %ld voluntary switches)\n",
         how, gap, cpu / n, n, sw);
}

static void by_sleep(long gap, long n) {
  double c0 = cpu_us();
  long s0 = switches();
  long long due = now_ns() + 1000000;
  for (long i = 0; i < n; i++, due += gap * 1000) {
    struct timespec t = {due / 1000000000, due % 1000000000};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
  }
  report("sleep", gap, n, cpu_us() - c0, switches() - s0);
}

#ifdef WITH_URING
static void by_uring(long gap, long n) {
  enum { AHEAD = 16 };
  struct io_uring ring;
  if (io_uring_queue_init(4 * AHEAD, &ring, 0) < 0) {
    perror("io_uring_queue_init");
    return;
  }
  struct __kernel_timespec *ts = calloc(n, sizeof *ts);
  double c0 = cpu_us();
  long s0 = switches();
  long long base = now_ns() + 1000000;
  long queued = 0, done = 0;
  while (done < n) {
    for (; queued < n && queued - done < AHEAD; queued++) {
      long long due = base + queued * gap * 1000;
      ts[queued].tv_sec = due / 1000000000;
      ts[queued].tv_nsec = due % 1000000000;
      struct io_uring_sqe *s = io_uring_get_sqe(&ring);
      /* An expired timeout counts as a success, so the link goes on to the NOP. */
      io_uring_prep_timeout(s, &ts[queued], 0, IORING_TIMEOUT_ABS | IORING_TIMEOUT_ETIME_SUCCESS);
      s->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
      io_uring_prep_nop(io_uring_get_sqe(&ring));
    }
    io_uring_submit_and_wait(&ring, AHEAD / 2);
    struct io_uring_cqe *c;
    unsigned head, k = 0;
    io_uring_for_each_cqe(&ring, head, c) k++;
    io_uring_cq_advance(&ring, k);
    done += k;
  }
  report("uring", gap, n, cpu_us() - c0, switches() - s0);
  io_uring_queue_exit(&ring);
  free(ts);
}
#endif

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s GAP_US COUNT\n", argv[0]);
    return 2;
  }
  long gap = atol(argv[1]), n = atol(argv[2]);
  by_sleep(gap, n);
#ifdef WITH_URING
  by_uring(gap, n);
#endif
  return 0;
}
