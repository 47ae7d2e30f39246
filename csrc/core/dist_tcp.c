/* dist_tcp.c - data-parallel collectives over TCP sockets (torchrun-style
 * launch, no MPI): a star around rank 0, which reduces in rank order and
 * sends the result back block by block while the peers still send (the
 * all-reduce is pipelined), so every rank holds the same bits. Framing: each
 * message is a 16-byte frame header (magic, kind, argument) then, for DATA,
 * exactly the bytes the receiver expects; a STOP frame (a rank stopped with
 * an error) or DEAD frame (rank 0 found a peer's connection closed) can
 * arrive where DATA was expected, and a size that differs means the ranks
 * are out of step: all three fail the collective with BF_ERR_DIST. Sockets
 * are non-blocking and every wait is a poll() of at most 100 ms against the
 * collective's deadline. Once broken, this rank closes its connections so
 * the others find out at once. No allocation: rank 0 reduces through the
 * static `scratch` block. */
#define _GNU_SOURCE /* clock_gettime, gethostname, MSG_NOSIGNAL, getaddrinfo under -std=c11 */
#include "dist_tcp.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>


#define MAX_RANKS 256
#define HOST_LEN 64
#define MAGIC 0x62664454u /* "bfDT" */
#define SCRATCH_DOUBLES 8192 /* 64 KiB */

enum { K_DATA = 1, K_STOP = 2, K_DEAD = 3 };
enum { T_F32_SUM = 0, T_F64 = 1, T_I32_MAX = 2 };
enum { IO_OK = 0, IO_CLOSED = -1, IO_TIMEOUT = -2, IO_INCOMING = -3 };

typedef struct {
    uint32_t magic, kind;
    int64_t arg; /* DATA: payload bytes; STOP / DEAD: the rank */
} frame;

typedef struct {
    uint32_t magic;
    int32_t rank, size, pid;
    char host[HOST_LEN];
} hello;

static struct {
    int on, rank, size, broken;
    int fd[MAX_RANKS]; /* rank 0: fd[r] is the connection to rank r; others: fd[0] to rank 0 */
    double timeout, comm_seconds;
    char broken_msg[384];
    char host[MAX_RANKS][HOST_LEN];
} t = {.size = 1, .timeout = 60.0};

static double scratch[SCRATCH_DOUBLES]; /* rank 0: one peer's contribution, a block at a time */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int bf_tcp_active(void) { return t.on && t.size > 1; }
int bf_tcp_size(void) { return t.size; }
int bf_tcp_rank(void) { return t.rank; }
double bf_tcp_comm_seconds(void) { return t.comm_seconds; }
void bf_tcp_set_timeout(double s) {
    if (s > 0) t.timeout = s;
}
const char *bf_tcp_host_of(int r) { return r >= 0 && r < t.size && t.on ? t.host[r] : "?"; }

static int fd_of(int peer) { return t.rank == 0 ? t.fd[peer] : t.fd[0]; }

static void close_all(void) {
    for (int i = 0; i < t.size && i < MAX_RANKS; i++)
        if (t.fd[i] >= 0) {
            shutdown(t.fd[i], SHUT_RDWR);
            close(t.fd[i]);
            t.fd[i] = -1;
        }
}

/* best effort, never waits: a STOP / DEAD frame to every peer of rank 0 but `skip` */
static void tell_all(uint32_t kind, int who, int skip) {
    if (t.rank != 0) return;
    frame f = {MAGIC, kind, who};
    for (int r = 1; r < t.size; r++)
        if (r != skip && t.fd[r] >= 0) (void)!send(t.fd[r], &f, sizeof f, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* mark the group broken with broken_msg set, tell the others, close */
static bf_status broken_now(uint32_t tell, int who) {
    t.broken = 1;
    if (tell) tell_all(tell, who, who);
    close_all();
    return BF_FAIL(BF_ERR_DIST, "distributed: %s; this process group cannot continue", t.broken_msg);
}

static bf_status peer_stopped(int who, const char *what) {
    snprintf(t.broken_msg, sizeof t.broken_msg,
             "rank %d of %d: rank %d (host %s) stopped with an error before %s; see its traceback", t.rank, t.size,
             who, bf_tcp_host_of(who), what);
    return broken_now(K_STOP, who);
}

static bf_status peer_died(int who, const char *what, double waited) {
    snprintf(t.broken_msg, sizeof t.broken_msg,
             "rank %d of %d: rank %d (host %s) died or gave up during %s (its connection closed), found after %.1f s",
             t.rank, t.size, who, bf_tcp_host_of(who), what, waited);
    return broken_now(K_DEAD, who);
}

static bf_status timed_out(const char *what, double waited) {
    snprintf(t.broken_msg, sizeof t.broken_msg,
             "rank %d of %d: %s did not complete within %.1f s (timeout): another rank died, raised or is stuck",
             t.rank, t.size, what, waited);
    return broken_now(0, -1);
}

/* move len bytes over fd, polling until the deadline; with watch_in, bytes
 * arriving while sending stop the transfer (IO_INCOMING) */
static int raw_io(int fd, void *buf, size_t len, int sending, int watch_in, double deadline) {
    char *p = buf;
    while (len > 0) {
        ssize_t k = sending ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT) : recv(fd, p, len, MSG_DONTWAIT);
        if (k > 0) {
            p += k;
            len -= (size_t)k;
            continue;
        }
        if (k == 0 && !sending) return IO_CLOSED;
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return IO_CLOSED;
        const double tn = now();
        if (tn > deadline) return IO_TIMEOUT;
        struct pollfd pf = {fd, (short)(sending ? (POLLOUT | (watch_in ? POLLIN : 0)) : POLLIN), 0};
        int ms = (int)((deadline - tn) * 1000.0) + 1;
        if (poll(&pf, 1, ms > 100 ? 100 : ms) > 0 && sending && watch_in && (pf.revents & POLLIN)) return IO_INCOMING;
    }
    return IO_OK;
}

static bf_status read_frame(int peer, frame *f, const char *what, double t0, double deadline);
static bf_status check_frame(int peer, const frame *f, long bytes, const char *what, double t0);

/* a transfer with a peer in a collective; its failures as statuses. watch:
 * while sending, bytes from the peer mean it stopped (off where the peer is
 * legitimately sending at the same time: the pipelined all-reduce) */
static bf_status xfer_w(int peer, void *buf, size_t len, int sending, int watch, const char *what, double t0,
                        double deadline) {
    int rc = raw_io(fd_of(peer), buf, len, sending, watch, deadline);
    if (rc == IO_OK) return BF_OK;
    if (rc == IO_TIMEOUT) return timed_out(what, now() - t0);
    if (rc == IO_CLOSED) return peer_died(t.rank == 0 ? peer : 0, what, now() - t0);
    /* the peer spoke while we were sending: only a STOP / DEAD frame or a close can do that */
    frame f;
    BF_TRY(read_frame(peer, &f, what, t0, deadline));
    snprintf(t.broken_msg, sizeof t.broken_msg, "rank %d of %d: rank %d sent data out of turn during %s", t.rank,
             t.size, t.rank == 0 ? peer : 0, what);
    return broken_now(0, -1);
}

/* a frame header; STOP / DEAD fail here, DATA comes back */
static bf_status xfer(int peer, void *buf, size_t len, int sending, const char *what, double t0, double deadline) {
    return xfer_w(peer, buf, len, sending, 1, what, t0, deadline);
}

static bf_status read_frame(int peer, frame *f, const char *what, double t0, double deadline) {
    int rc = raw_io(fd_of(peer), f, sizeof *f, 0, 0, deadline);
    if (rc == IO_TIMEOUT) return timed_out(what, now() - t0);
    if (rc != IO_OK) return peer_died(t.rank == 0 ? peer : 0, what, now() - t0);
    return check_frame(peer, f, -1, what, t0);
}

/* a frame header as expected: DATA of `bytes` bytes (any size when bytes < 0);
 * STOP / DEAD / a malformed or mis-sized frame fail the collective */
static bf_status check_frame(int peer, const frame *f, long bytes, const char *what, double t0) {
    if (f->magic != MAGIC || f->kind < K_DATA || f->kind > K_DEAD) {
        snprintf(t.broken_msg, sizeof t.broken_msg, "rank %d of %d: a malformed frame from rank %d during %s", t.rank,
                 t.size, t.rank == 0 ? peer : 0, what);
        return broken_now(0, -1);
    }
    if (f->kind == K_STOP) return peer_stopped((int)f->arg, what);
    if (f->kind == K_DEAD) return peer_died((int)f->arg, what, now() - t0);
    if (bytes >= 0 && f->arg != bytes) {
        snprintf(t.broken_msg, sizeof t.broken_msg,
                 "rank %d of %d: ranks out of step during %s: rank %d sent %lld bytes where %ld were expected "
                 "(do all ranks run the same program on the same model?)",
                 t.rank, t.size, what, t.rank == 0 ? peer : 0, (long long)f->arg, bytes);
        return broken_now(0, -1);
    }
    return BF_OK;
}

/* a peer's half of the pipelined all-reduce: buf goes to rank 0 while the
 * reduced result comes back into buf. In place is safe: rank 0 returns a
 * byte only after it has received that byte from every rank, so the read
 * position never passes the write position. */
static bf_status exchange(void *buf, long bytes, const char *what, double t0, double dl) {
    const int fd = t.fd[0];
    frame out = {MAGIC, K_DATA, bytes}, in;
    const size_t hs = sizeof(frame), total = hs + (size_t)bytes;
    size_t so = 0, ro = 0;
    while (so < total || ro < total) {
        int moved = 0;
        if (so < total) {
            const char *src = so < hs ? (const char *)&out + so : (const char *)buf + (so - hs);
            ssize_t k = send(fd, src, so < hs ? hs - so : total - so, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (k > 0) {
                so += (size_t)k;
                moved = 1;
            } else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                return peer_died(0, what, now() - t0);
            }
        }
        if (ro < total) {
            char *dst = ro < hs ? (char *)&in + ro : (char *)buf + (ro - hs);
            ssize_t k = recv(fd, dst, ro < hs ? hs - ro : total - ro, MSG_DONTWAIT);
            if (k > 0) {
                ro += (size_t)k;
                moved = 1;
                if (ro == hs) BF_TRY(check_frame(0, &in, bytes, what, t0));
            } else if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                return peer_died(0, what, now() - t0);
            }
        }
        if (moved) continue;
        const double tn = now();
        if (tn > dl) return timed_out(what, tn - t0);
        struct pollfd pf = {fd, (short)(POLLIN | (so < total ? POLLOUT : 0)), 0};
        int ms = (int)((dl - tn) * 1000.0) + 1;
        poll(&pf, 1, ms > 100 ? 100 : ms);
    }
    return BF_OK;
}

static bf_status recv_data(int peer, void *buf, long bytes, int payload, const char *what, double t0, double dl) {
    frame f;
    int rc = raw_io(fd_of(peer), &f, sizeof f, 0, 0, dl);
    if (rc == IO_TIMEOUT) return timed_out(what, now() - t0);
    if (rc != IO_OK) return peer_died(t.rank == 0 ? peer : 0, what, now() - t0);
    BF_TRY(check_frame(peer, &f, bytes, what, t0));
    return payload ? xfer(peer, buf, (size_t)bytes, 0, what, t0, dl) : BF_OK;
}

static bf_status send_data(int peer, const void *buf, long bytes, const char *what, double t0, double dl) {
    frame f = {MAGIC, K_DATA, bytes};
    BF_TRY(xfer(peer, &f, sizeof f, 1, what, t0, dl));
    return xfer(peer, (void *)buf, (size_t)bytes, 1, what, t0, dl);
}

static bf_status check_usable(const char *what) {
    if (!t.on) return BF_FAIL(BF_ERR_DIST, "distributed: %s before bf.distribution.initialize()", what);
    if (t.broken)
        return BF_FAIL(BF_ERR_DIST, "distributed: %s refused: the process group is broken (%s)", what, t.broken_msg);
    return BF_OK;
}

static void combine(void *acc, const void *in, long k, int type, int op) {
    if (type == T_F32_SUM) {
        float *a = acc;
        const float *b = in;
        for (long i = 0; i < k; i++) a[i] += b[i];
    } else if (type == T_I32_MAX) {
        int32_t *a = acc;
        const int32_t *b = in;
        for (long i = 0; i < k; i++) a[i] = b[i] > a[i] ? b[i] : a[i];
    } else {
        double *a = acc;
        const double *b = in;
        for (long i = 0; i < k; i++) a[i] = op == 1 ? (b[i] > a[i] ? b[i] : a[i]) : op == 2 ? (b[i] < a[i] ? b[i] : a[i])
                                                                                          : a[i] + b[i];
    }
}

/* in place over all ranks, pipelined by blocks of `scratch`: for each block
 * rank 0 folds in rank 1, 2, ... in order, then sends the block back while
 * the peers are still sending the next ones (exchange) */
static bf_status allreduce(void *buf, long n, int type, int op, const char *what, double timeout) {
    const double t0 = now(), dl = t0 + timeout;
    const long es = type == T_F64 ? 8 : 4, bytes = n * es, per = (long)sizeof scratch / es;
    if (t.rank == 0) {
        frame f = {MAGIC, K_DATA, bytes};
        for (int r = 1; r < t.size; r++) BF_TRY(recv_data(r, NULL, bytes, 0, what, t0, dl));
        for (int r = 1; r < t.size; r++) BF_TRY(xfer_w(r, &f, sizeof f, 1, 0, what, t0, dl));
        for (long at = 0; at < n; at += per) {
            const long k = n - at < per ? n - at : per;
            char *block = (char *)buf + at * es;
            for (int r = 1; r < t.size; r++) {
                BF_TRY(xfer(r, scratch, (size_t)(k * es), 0, what, t0, dl));
                combine(block, scratch, k, type, op);
            }
            for (int r = 1; r < t.size; r++) BF_TRY(xfer_w(r, block, (size_t)(k * es), 1, 0, what, t0, dl));
        }
    } else {
        BF_TRY(exchange(buf, bytes, what, t0, dl));
    }
    t.comm_seconds += now() - t0;
    return BF_OK;
}

/* ---- rendezvous ---- */

static bf_status init_fail(int fd, const char *fmt, const char *a, int b, const char *c) {
    if (fd >= 0) close(fd);
    close_all();
    t.on = 0;
    t.size = 1;
    t.rank = 0;
    return BF_FAIL(BF_ERR_DIST, fmt, a, b, c);
}

static int resolve(const char *addr, int port, struct sockaddr_in *out) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(addr, NULL, &hints, &res) != 0 || !res) return -1;
    memcpy(out, res->ai_addr, sizeof *out);
    freeaddrinfo(res); /* libc's own allocation, freed before return */
    out->sin_port = htons((uint16_t)port);
    return 0;
}

static void tune(int fd) {
    int one = 1, buf = 4 << 20; /* kernel socket buffers (not ours): fewer wake-ups per gradient exchange */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static bf_status root_accept(const char *addr, int port, double deadline) {
    struct sockaddr_in sa;
    if (resolve(addr, port, &sa) != 0)
        return init_fail(-1, "distributed: MASTER_ADDR=%s does not resolve (port %d)%s", addr, port, "");
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (ls < 0) return init_fail(-1, "distributed: socket() failed for %s:%d: %s", addr, port, strerror(errno));
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(ls, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (errno == EADDRNOTAVAIL) { /* MASTER_ADDR names this host from outside: listen on every interface */
            sa.sin_addr.s_addr = htonl(INADDR_ANY);
            if (bind(ls, (struct sockaddr *)&sa, sizeof sa) == 0) goto bound;
        }
        return init_fail(ls, "distributed: rank 0 cannot listen at MASTER_ADDR=%s MASTER_PORT=%d: %s", addr, port,
                         strerror(errno));
    }
bound:
    if (listen(ls, t.size) != 0)
        return init_fail(ls, "distributed: listen() at %s:%d failed: %s", addr, port, strerror(errno));
    fcntl(ls, F_SETFL, fcntl(ls, F_GETFL) | O_NONBLOCK);
    for (int joined = 0; joined < t.size - 1;) {
        const double tn = now();
        if (tn > deadline) {
            char who[160] = "";
            int at = 0;
            for (int r = 1; r < t.size && at < (int)sizeof who - 8; r++)
                if (t.fd[r] < 0) at += snprintf(who + at, sizeof who - (size_t)at, " %d", r);
            return init_fail(ls, "distributed: rank 0 at %s:%d: ranks%s did not join within the timeout "
                                 "(same MASTER_ADDR / MASTER_PORT / WORLD_SIZE everywhere?)",
                             addr, port, who);
        }
        struct pollfd pf = {ls, POLLIN, 0};
        if (poll(&pf, 1, 100) <= 0) continue;
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) continue;
        tune(fd);
        hello h;
        if (raw_io(fd, &h, sizeof h, 0, 0, deadline) != IO_OK || h.magic != MAGIC) {
            close(fd); /* not one of ours, or it gave up: keep listening */
            continue;
        }
        h.host[HOST_LEN - 1] = '\0';
        if (h.size != t.size || h.rank < 1 || h.rank >= t.size || t.fd[h.rank] >= 0) {
            char m[160];
            snprintf(m, sizeof m, "RANK=%d WORLD_SIZE=%d (host %.40s), but this group has WORLD_SIZE=%d%s", h.rank,
                     h.size, h.host, t.size, h.rank >= 1 && h.rank < t.size && t.fd[h.rank] >= 0 ? " and that rank" : "");
            return init_fail(fd, "distributed: a process joined %s:%d with %s; check RANK / WORLD_SIZE on every "
                                 "process (each rank once, one WORLD_SIZE)",
                             addr, port, m);
        }
        t.fd[h.rank] = fd;
        memcpy(t.host[h.rank], h.host, HOST_LEN);
        joined++;
    }
    close(ls);
    const double t0 = now();
    for (int r = 1; r < t.size; r++)
        BF_TRY(send_data(r, t.host, (long)t.size * HOST_LEN, "the exchange of hosts", t0, deadline));
    return BF_OK;
}

static bf_status peer_connect(const char *addr, int port, double deadline) {
    struct sockaddr_in sa;
    if (resolve(addr, port, &sa) != 0)
        return init_fail(-1, "distributed: MASTER_ADDR=%s does not resolve (port %d)%s", addr, port, "");
    const char *last = "no answer";
    for (;;) {
        if (now() > deadline)
            return init_fail(-1, "distributed: rank 0 at MASTER_ADDR=%s MASTER_PORT=%d could not be reached within "
                                 "the timeout: %s",
                             addr, port, last);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) return init_fail(-1, "distributed: socket() failed for %s:%d: %s", addr, port, strerror(errno));
        tune(fd);
        int ok = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
        if (!ok && errno == EINPROGRESS) {
            struct pollfd pf = {fd, POLLOUT, 0};
            int err = 0;
            socklen_t el = sizeof err;
            if (poll(&pf, 1, 1000) > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0) ok = 1;
            else last = strerror(err ? err : ETIMEDOUT);
        } else if (!ok) {
            last = strerror(errno);
        }
        if (ok) {
            t.fd[0] = fd;
            break;
        }
        close(fd);
        struct timespec ts = {0, 100000000}; /* rank 0 may not listen yet */
        nanosleep(&ts, NULL);
    }
    hello h;
    memset(&h, 0, sizeof h);
    h.magic = MAGIC;
    h.rank = t.rank;
    h.size = t.size;
    h.pid = (int32_t)getpid();
    memcpy(h.host, t.host[t.rank], HOST_LEN);
    const double t0 = now();
    BF_TRY(xfer(0, &h, sizeof h, 1, "joining the group (hello)", t0, deadline));
    return recv_data(0, t.host, (long)t.size * HOST_LEN, 1, "the exchange of hosts", t0, deadline);
}

bf_status bf_tcp_init(const char *addr, int port, int rank, int size, double timeout_s) {
    bf_tcp_set_timeout(timeout_s);
    if (t.on) {
        if (rank != t.rank || size != t.size)
            return BF_FAIL(BF_ERR_DIST, "distributed: already joined as rank %d of %d", t.rank, t.size);
        return BF_OK;
    }
    if (size < 1 || size > MAX_RANKS)
        return BF_FAIL(BF_ERR_ARG, "distributed: WORLD_SIZE=%d must be between 1 and %d", size, MAX_RANKS);
    if (rank < 0 || rank >= size)
        return BF_FAIL(BF_ERR_ARG, "distributed: RANK=%d must be between 0 and WORLD_SIZE - 1 = %d", rank, size - 1);
    if (port <= 0 || port > 65535) return BF_FAIL(BF_ERR_ARG, "distributed: MASTER_PORT=%d is not a TCP port", port);
    for (int i = 0; i < MAX_RANKS; i++) t.fd[i] = -1;
    memset(t.host, 0, sizeof t.host);
    gethostname(t.host[rank], HOST_LEN - 1);
    t.rank = rank;
    t.size = size;
    t.broken = 0;
    t.on = 1;
    if (size == 1) return BF_OK;
    const double deadline = now() + t.timeout;
    return rank == 0 ? root_accept(addr, port, deadline) : peer_connect(addr, port, deadline);
}

/* ---- the collectives (dist_mpi.h's, when this transport is the one in use) ---- */

bf_status bf_tcp_agree(const char *what) {
    BF_TRY(check_usable(what));
    int32_t flag = 0;
    return allreduce(&flag, 1, T_I32_MAX, 1, what, t.timeout);
}

bf_status bf_tcp_abandon(void) {
    if (!bf_tcp_active() || t.broken) return BF_OK;
    const double t0 = now(), dl = t0 + (t.timeout < 5.0 ? t.timeout : 5.0);
    snprintf(t.broken_msg, sizeof t.broken_msg, "rank %d stopped with an error", t.rank);
    if (t.rank == 0) {
        tell_all(K_STOP, 0, -1);
    } else {
        frame f = {MAGIC, K_STOP, t.rank};
        (void)raw_io(t.fd[0], &f, sizeof f, 1, 0, dl);
    }
    t.broken = 1;
    for (int i = 0; i < t.size; i++) /* FIN after the frame; close at exit */
        if (t.fd[i] >= 0) shutdown(t.fd[i], SHUT_WR);
    return BF_OK;
}

bf_status bf_tcp_step(float *grads, long n, int *bad) {
    BF_TRY(check_usable("the gradient all-reduce"));
    int32_t flag = *bad ? 1 : 0;
    BF_TRY(allreduce(&flag, 1, T_I32_MAX, 1, "the step's agreement", t.timeout));
    *bad = flag;
    if (!grads) return BF_OK; /* on a device: NCCL reduces them (dist_nccl.c) */
    BF_TRY(allreduce(grads, n, T_F32_SUM, 0, "the gradient all-reduce", t.timeout));
    const float inv = 1.0f / (float)t.size;
    for (long i = 0; i < n; i++) grads[i] *= inv;
    return BF_OK;
}

bf_status bf_tcp_allreduce_f64(double *buf, long n, int op) {
    BF_TRY(check_usable("an all-reduce"));
    return allreduce(buf, n, T_F64, op, "an all-reduce", t.timeout);
}

bf_status bf_tcp_bcast(void *buf, long bytes, int root) {
    BF_TRY(check_usable("a broadcast"));
    if (root < 0 || root >= t.size) return BF_FAIL(BF_ERR_ARG, "distributed: broadcast root %d out of range", root);
    const char *what = "a broadcast";
    const double t0 = now(), dl = t0 + t.timeout;
    if (t.rank == 0) {
        if (root != 0) BF_TRY(recv_data(root, buf, bytes, 1, what, t0, dl));
        for (int r = 1; r < t.size; r++)
            if (r != root) BF_TRY(send_data(r, buf, bytes, what, t0, dl));
    } else if (t.rank == root) {
        BF_TRY(send_data(0, buf, bytes, what, t0, dl));
    } else {
        BF_TRY(recv_data(0, buf, bytes, 1, what, t0, dl));
    }
    t.comm_seconds += now() - t0;
    return BF_OK;
}

bf_status bf_tcp_allgather(const void *send, void *recv, long bytes) {
    BF_TRY(check_usable("an all-gather"));
    const char *what = "an all-gather";
    const double t0 = now(), dl = t0 + t.timeout;
    if (t.rank == 0) {
        memcpy(recv, send, (size_t)bytes);
        for (int r = 1; r < t.size; r++) BF_TRY(recv_data(r, (char *)recv + (long)r * bytes, bytes, 1, what, t0, dl));
        for (int r = 1; r < t.size; r++) BF_TRY(send_data(r, recv, (long)t.size * bytes, what, t0, dl));
    } else {
        BF_TRY(send_data(0, send, bytes, what, t0, dl));
        BF_TRY(recv_data(0, recv, (long)t.size * bytes, 1, what, t0, dl));
    }
    t.comm_seconds += now() - t0;
    return BF_OK;
}

bf_status bf_tcp_finalize(void) {
    if (!t.on) return BF_OK;
    close_all();
    t.on = 0;
    t.size = 1;
    t.rank = 0;
    return BF_OK;
}

double bf_tcp_timeout(void) { return t.timeout; }

/* a peer's connection closed (it died or gave up): its rank, else -1 */
int bf_tcp_peer_gone(void) {
    if (!bf_tcp_active() || t.broken) return -1;
    for (int r = 0; r < t.size; r++) {
        if (r == t.rank || t.fd[r] < 0) continue;
        struct pollfd p = {t.fd[r], POLLRDHUP, 0};
        if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) return r;
    }
    return -1;
}

/* a failure found outside this file (the NCCL all-reduce): the group is
 * broken, the connections closed so that the peers see it at once */
bf_status bf_tcp_fail(const char *msg) {
    snprintf(t.broken_msg, sizeof t.broken_msg, "rank %d of %d: %s", t.rank, t.size, msg);
    return broken_now(0, -1);
}

bf_status bf_tcp_sum(float *grads, long n) {
    BF_TRY(check_usable("the gradient all-reduce"));
    return allreduce(grads, n, T_F32_SUM, 0, "the gradient all-reduce", t.timeout);
}

