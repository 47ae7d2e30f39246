/* dist_tcp.c - data-parallel collectives over TCP sockets (torchrun-style
 * launch, no MPI): a star around rank 0, which reduces in rank order and
 * sends the result back block by block while the peers still send (the
 * all-reduce is pipelined), so every rank holds the same bits; gradients in
 * float32, or as bfloat16 with float32 sums at rank 0 (T_BF16_SUM). Framing: each
 * message is a 16-byte frame header (magic, kind, argument) then, for DATA,
 * exactly the bytes the receiver expects; a STOP frame (a rank stopped with
 * an error) or DEAD frame (rank 0 found a peer's connection closed) can
 * arrive where DATA was expected, and a size that differs means the ranks
 * are out of step: all three fail the collective with BF_ERR_DIST. Sockets
 * are non-blocking and every wait is a poll() of at most 100 ms against the
 * collective's deadline. Once broken, this rank closes its connections so
 * the others find out at once. No allocation: rank 0 reduces through the
 * static `scratch` block and reads hellos into the static `pend` table. */
#define _GNU_SOURCE /* clock_gettime, gethostname, MSG_NOSIGNAL, getaddrinfo under -std=c11 */
#include "dist_tcp.h"

#include "half.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
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
#define PENDING 64        /* rank 0: connections accepted whose hello is not complete yet */
#define HELLO_WAIT_S 5.0 /* a connection's time, once accepted, to send its whole hello */

/* REFUSED: rank 0 turned this hello down (arg: its WORLD_SIZE, or -1: the rank
 * already joined); ABSENT: rank 0 gave up at the deadline (arg: first missing
 * rank | count << 16) */
enum { K_DATA = 1, K_STOP = 2, K_DEAD = 3, K_REFUSED = 4, K_ABSENT = 5 };
enum { T_F32_SUM = 0, T_F64 = 1, T_I32_MAX = 2, T_BF16_SUM = 3 }; /* BF16: bfloat16 on the wire, float32 sums */
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
    long long grad_sent; /* gradient bytes this rank sent (frames included) */
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
 * STOP / DEAD / a malformed or mis-sized frame fail the collective, as do
 * REFUSED / ABSENT (rank 0 turned this rank down or gave up at the rendezvous) */
static bf_status check_frame(int peer, const frame *f, long bytes, const char *what, double t0) {
    if (f->magic != MAGIC || f->kind < K_DATA || f->kind > K_ABSENT) {
        snprintf(t.broken_msg, sizeof t.broken_msg, "rank %d of %d: a malformed frame from rank %d during %s", t.rank,
                 t.size, t.rank == 0 ? peer : 0, what);
        return broken_now(0, -1);
    }
    if (f->kind == K_STOP) return peer_stopped((int)f->arg, what);
    if (f->kind == K_DEAD) return peer_died((int)f->arg, what, now() - t0);
    if (f->kind == K_REFUSED) {
        if (f->arg < 0)
            snprintf(t.broken_msg, sizeof t.broken_msg,
                     "rank 0 refused this process (RANK=%d): another process already joined as rank %d; give each "
                     "process its own RANK",
                     t.rank, t.rank);
        else
            snprintf(t.broken_msg, sizeof t.broken_msg,
                     "rank 0 refused this process (RANK=%d WORLD_SIZE=%d): its group has WORLD_SIZE=%lld; set the "
                     "same WORLD_SIZE on every process",
                     t.rank, t.size, (long long)f->arg);
        return broken_now(0, -1);
    }
    if (f->kind == K_ABSENT) {
        const int first = (int)(f->arg & 0xffff), more = (int)(f->arg >> 16) - 1;
        snprintf(t.broken_msg, sizeof t.broken_msg,
                 "rank %d of %d: rank 0 gave up during %s: rank %d%s never joined within its timeout (rank 0's error "
                 "names every missing rank)",
                 t.rank, t.size, what, first, more > 0 ? " and others" : "");
        return broken_now(0, -1);
    }
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

/* k floats of acc from / into bfloat16 (round to nearest even) */
static void from_bf16(float *acc, const uint16_t *w, long k) {
    for (long i = 0; i < k; i++) acc[i] = bf_bf16_expand(w[i]);
}
static void to_bf16(uint16_t *w, const float *acc, long k) {
    for (long i = 0; i < k; i++) w[i] = bf_bf16_round(acc[i]);
}

/* in place over all ranks, pipelined by blocks of `scratch`: for each block
 * rank 0 folds in rank 1, 2, ... in order, then sends the block back while
 * the peers are still sending the next ones (exchange). T_BF16_SUM: buf is
 * the bfloat16 wire copy of acc (n floats, already rounded); rank 0 expands
 * its own block into acc, adds each peer's expanded block in float32, rounds
 * the sum into buf to send it; every rank ends with acc = the expanded sum */
static bf_status allreduce(void *buf, long n, int type, int op, float *acc, const char *what, double timeout) {
    const double t0 = now(), dl = t0 + timeout;
    const long es = type == T_F64 ? 8 : type == T_BF16_SUM ? 2 : 4, bytes = n * es, per = (long)sizeof scratch / es;
    const int grads = type == T_F32_SUM || type == T_BF16_SUM;
    if (t.rank == 0) {
        frame f = {MAGIC, K_DATA, bytes};
        for (int r = 1; r < t.size; r++) BF_TRY(recv_data(r, NULL, bytes, 0, what, t0, dl));
        for (int r = 1; r < t.size; r++) BF_TRY(xfer_w(r, &f, sizeof f, 1, 0, what, t0, dl));
        for (long at = 0; at < n; at += per) {
            const long k = n - at < per ? n - at : per;
            char *block = (char *)buf + at * es;
            if (type == T_BF16_SUM) from_bf16(acc + at, (const uint16_t *)(void *)block, k);
            for (int r = 1; r < t.size; r++) {
                BF_TRY(xfer(r, scratch, (size_t)(k * es), 0, what, t0, dl));
                if (type == T_BF16_SUM) {
                    const uint16_t *in = (const uint16_t *)(void *)scratch;
                    for (long i = 0; i < k; i++) acc[at + i] += bf_bf16_expand(in[i]);
                } else {
                    combine(block, scratch, k, type, op);
                }
            }
            if (type == T_BF16_SUM) { /* rounded to travel, and kept as it travels: every rank the same bits */
                to_bf16((uint16_t *)(void *)block, acc + at, k);
                from_bf16(acc + at, (const uint16_t *)(void *)block, k);
            }
            for (int r = 1; r < t.size; r++) BF_TRY(xfer_w(r, block, (size_t)(k * es), 1, 0, what, t0, dl));
        }
        if (grads) t.grad_sent += (long long)(t.size - 1) * ((long long)sizeof f + bytes);
    } else {
        BF_TRY(exchange(buf, bytes, what, t0, dl));
        if (type == T_BF16_SUM) from_bf16(acc, buf, n);
        if (grads) t.grad_sent += (long long)sizeof(frame) + bytes;
    }
    t.comm_seconds += now() - t0;
    return BF_OK;
}

/* ---- rendezvous ---- */

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

/* rank 0's rendezvous: every connection is accepted at once into `pend`
 * and read as its bytes come (one poll over the listener, the pending
 * connections and the ranks joined so far), so a silent or slow one delays
 * nobody. A pending connection gets HELLO_WAIT_S to send its whole hello;
 * one that sends nothing, garbage, a WORLD_SIZE other than ours or a rank
 * already joined is closed (a wrong hello first hears why: a REFUSED frame)
 * and noted for the error at the deadline, which names exactly the ranks
 * that never said hello. A joined rank whose connection closes before the
 * group is complete leaves (a restarted rank can join again). */
static struct {
    int fd;
    size_t got; /* bytes of `h` received */
    double since;
    char from[32]; /* the peer's address:port */
    hello h;
} pend[PENDING];
static char notes[512]; /* what was refused, for the error at the deadline */

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
    size_t at = strlen(notes);
    if (at + 8 >= sizeof notes) return;
    if (at) at += (size_t)snprintf(notes + at, sizeof notes - at, "; ");
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(notes + at, sizeof notes - at, fmt, ap);
    va_end(ap);
    if (k < 0 || at + (size_t)k >= sizeof notes) memcpy(notes + sizeof notes - 5, "...", 4);
}

static void drop(int i) {
    close(pend[i].fd);
    pend[i].fd = -1;
}

static void drop_pending(void) {
    for (int i = 0; i < PENDING; i++)
        if (pend[i].fd >= 0) drop(i);
}

/* a complete hello: the rank joins, or the connection is told why not and closed */
static void take_hello(int i) {
    hello *h = &pend[i].h;
    h->host[HOST_LEN - 1] = '\0';
    const int fits = h->size == t.size && h->rank >= 1 && h->rank < t.size;
    if (fits && t.fd[h->rank] < 0) {
        t.fd[h->rank] = pend[i].fd;
        memcpy(t.host[h->rank], h->host, HOST_LEN);
        pend[i].fd = -1;
        return;
    }
    frame f = {MAGIC, K_REFUSED, fits ? -1 : t.size}; /* -1: the rank already joined */
    (void)!send(pend[i].fd, &f, sizeof f, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (fits)
        note("%s (host %.40s, pid %d) said RANK=%d, but rank %d already joined", pend[i].from, h->host, (int)h->pid,
             (int)h->rank, (int)h->rank);
    else
        note("%s (host %.40s, pid %d) said RANK=%d WORLD_SIZE=%d, but this group has WORLD_SIZE=%d", pend[i].from,
             h->host, (int)h->pid, (int)h->rank, (int)h->size, t.size);
    drop(i);
}

/* bytes from a pending connection, into its own hello buffer */
static void read_hello(int i) {
    char *p = (char *)&pend[i].h + pend[i].got;
    ssize_t k = recv(pend[i].fd, p, sizeof(hello) - pend[i].got, MSG_DONTWAIT);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (k <= 0) {
        note("%s closed after %zu of %zu hello bytes", pend[i].from, pend[i].got, sizeof(hello));
        drop(i);
        return;
    }
    pend[i].got += (size_t)k;
    if (pend[i].got >= sizeof(uint32_t) && pend[i].h.magic != MAGIC) {
        note("%s is not a boundfit rank (what it sent is not a hello)", pend[i].from);
        drop(i);
    } else if (pend[i].got == sizeof(hello)) {
        take_hello(i);
    }
}

/* every connection waiting on the listener, into a free slot (the oldest
 * pending one makes room when all are taken), its hello read if already there */
static void accept_all(int ls) {
    for (;;) {
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        int fd = accept(ls, (struct sockaddr *)&from, &fl);
        if (fd < 0) return;
        int i = 0;
        for (int j = 0; j < PENDING; j++) {
            if (pend[j].fd < 0) {
                i = j;
                break;
            }
            if (pend[j].since < pend[i].since) i = j;
        }
        if (pend[i].fd >= 0) {
            note("%s dropped unheard: %d newer connections waited", pend[i].from, PENDING);
            drop(i);
        }
        tune(fd);
        char ip[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &from.sin_addr, ip, sizeof ip);
        pend[i].fd = fd;
        pend[i].got = 0;
        pend[i].since = now();
        snprintf(pend[i].from, sizeof pend[i].from, "%s:%d", ip, (int)ntohs(from.sin_port));
        read_hello(i);
    }
}

/* the deadline: the joined ranks hear who is missing (an ABSENT frame), and
 * the error names every missing rank and every refused connection */
static bf_status absent(const char *addr, int port) {
    char who[200] = "";
    int missing = 0, first = -1, at = 0;
    for (int r = 1; r < t.size; r++) {
        if (t.fd[r] >= 0) continue;
        if (first < 0) first = r;
        missing++;
        if (at < (int)sizeof who - 16) at += snprintf(who + at, sizeof who - (size_t)at, " %d", r);
        else if (at < (int)sizeof who - 4) at += snprintf(who + at, sizeof who - (size_t)at, " ...");
    }
    for (int i = 0; i < PENDING; i++)
        if (pend[i].fd >= 0) note("%s sent %zu of %zu hello bytes", pend[i].from, pend[i].got, sizeof(hello));
    tell_all(K_ABSENT, (int)(first | (missing << 16)), -1);
    return BF_FAIL(BF_ERR_DIST,
                   "distributed: rank 0 at %s:%d: %s%s (of WORLD_SIZE=%d) did not join within %.1f s (same "
                   "MASTER_ADDR / MASTER_PORT / WORLD_SIZE everywhere?)%s%s",
                   addr, port, missing == 1 ? "rank" : "ranks", who, t.size, t.timeout, notes[0] ? "; refused: " : "",
                   notes);
}

static bf_status root_gather(int ls, const char *addr, int port, double deadline) {
    struct pollfd pf[1 + PENDING + MAX_RANKS];
    int of[1 + PENDING + MAX_RANKS]; /* pf[k] is: rank of[k] joined (> 0), pending slot -1 - of[k], or the listener */
    for (;;) {
        int n = 0, missing = 0;
        const double tn = now();
        for (int r = 1; r < t.size; r++) {
            if (t.fd[r] < 0) {
                missing++;
                continue;
            }
            pf[n] = (struct pollfd){t.fd[r], POLLIN, 0};
            of[n++] = r;
        }
        if (!missing) return BF_OK;
        if (tn > deadline) return absent(addr, port);
        for (int i = 0; i < PENDING; i++) {
            if (pend[i].fd < 0) continue;
            if (tn - pend[i].since > HELLO_WAIT_S) {
                note("%s sent %zu of %zu hello bytes within %.0f s", pend[i].from, pend[i].got, sizeof(hello),
                     HELLO_WAIT_S);
                drop(i);
                continue;
            }
            pf[n] = (struct pollfd){pend[i].fd, POLLIN, 0};
            of[n++] = -1 - i;
        }
        pf[n] = (struct pollfd){ls, POLLIN, 0};
        of[n++] = 0;
        const int ms = (int)((deadline - tn) * 1000.0) + 1;
        if (poll(pf, (nfds_t)n, ms > 100 ? 100 : ms) <= 0) continue;
        for (int k = 0; k < n; k++) {
            if (!pf[k].revents) continue;
            if (of[k] > 0) { /* a joined rank only waits for the hosts: anything from it means it left */
                note("rank %d (host %.40s) left before every rank joined", of[k], t.host[of[k]]);
                close(t.fd[of[k]]);
                t.fd[of[k]] = -1;
            } else if (of[k] < 0) {
                read_hello(-1 - of[k]);
            } else {
                accept_all(ls);
            }
        }
    }
}

/* rank 0: listen, gather every rank's hello, send the hosts. The listener
 * and every connection without a hello are closed here on every path; the
 * ranks' connections by bf_tcp_init on failure. */
static bf_status root_accept(const char *addr, int port, double deadline) {
    struct sockaddr_in sa;
    if (resolve(addr, port, &sa) != 0)
        return BF_FAIL(BF_ERR_DIST, "distributed: MASTER_ADDR=%s does not resolve (port %d)", addr, port);
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (ls < 0) return BF_FAIL(BF_ERR_DIST, "distributed: socket() failed for %s:%d: %s", addr, port, strerror(errno));
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int ok = bind(ls, (struct sockaddr *)&sa, sizeof sa) == 0;
    if (!ok && errno == EADDRNOTAVAIL) { /* MASTER_ADDR names this host from outside: listen on every interface */
        sa.sin_addr.s_addr = htonl(INADDR_ANY);
        ok = bind(ls, (struct sockaddr *)&sa, sizeof sa) == 0;
    }
    if (!ok || listen(ls, SOMAXCONN) != 0) {
        const int e = errno;
        close(ls);
        return BF_FAIL(BF_ERR_DIST, "distributed: rank 0 cannot listen at MASTER_ADDR=%s MASTER_PORT=%d: %s", addr,
                       port, strerror(e));
    }
    fcntl(ls, F_SETFL, fcntl(ls, F_GETFL) | O_NONBLOCK);
    for (int i = 0; i < PENDING; i++) pend[i].fd = -1;
    notes[0] = '\0';
    bf_status s = root_gather(ls, addr, port, deadline);
    close(ls);
    drop_pending();
    if (s != BF_OK) return s;
    const double t0 = now();
    for (int r = 1; r < t.size; r++)
        BF_TRY(send_data(r, t.host, (long)t.size * HOST_LEN, "the exchange of hosts", t0, deadline));
    return BF_OK;
}

static bf_status peer_connect(const char *addr, int port, double deadline) {
    struct sockaddr_in sa;
    if (resolve(addr, port, &sa) != 0)
        return BF_FAIL(BF_ERR_DIST, "distributed: MASTER_ADDR=%s does not resolve (port %d)", addr, port);
    const char *last = "no answer";
    for (;;) {
        if (now() > deadline)
            return BF_FAIL(BF_ERR_DIST, "distributed: rank 0 at MASTER_ADDR=%s MASTER_PORT=%d could not be reached "
                                        "within the timeout: %s",
                           addr, port, last);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            return BF_FAIL(BF_ERR_DIST, "distributed: socket() failed for %s:%d: %s", addr, port, strerror(errno));
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
    bf_status s = rank == 0 ? root_accept(addr, port, deadline) : peer_connect(addr, port, deadline);
    if (s != BF_OK) { /* every failure leaves no socket open and no group: a corrected retry starts afresh */
        close_all();
        t.on = 0;
        t.size = 1;
        t.rank = 0;
    }
    return s;
}

/* ---- the collectives (dist_mpi.h's, when this transport is the one in use) ---- */

bf_status bf_tcp_agree(const char *what) {
    BF_TRY(check_usable(what));
    int32_t flag = 0;
    return allreduce(&flag, 1, T_I32_MAX, 1, NULL, what, t.timeout);
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
    BF_TRY(allreduce(&flag, 1, T_I32_MAX, 1, NULL, "the step's agreement", t.timeout));
    *bad = flag;
    if (!grads) return BF_OK; /* on a device: NCCL reduces them (dist_nccl.c) */
    BF_TRY(allreduce(grads, n, T_F32_SUM, 0, NULL, "the gradient all-reduce", t.timeout));
    const float inv = 1.0f / (float)t.size;
    for (long i = 0; i < n; i++) grads[i] *= inv;
    return BF_OK;
}

bf_status bf_tcp_allreduce_f64(double *buf, long n, int op) {
    BF_TRY(check_usable("an all-reduce"));
    return allreduce(buf, n, T_F64, op, NULL, "an all-reduce", t.timeout);
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
    return allreduce(grads, n, T_F32_SUM, 0, NULL, "the gradient all-reduce", t.timeout);
}

bf_status bf_tcp_sum_bf16(float *grads, uint16_t *wire, long n) {
    BF_TRY(check_usable("the gradient all-reduce (bfloat16)"));
    to_bf16(wire, grads, n);
    return allreduce(wire, n, T_BF16_SUM, 0, grads, "the gradient all-reduce (bfloat16)", t.timeout);
}

long long bf_tcp_grad_bytes_sent(void) { return t.grad_sent; }
