/* dist_mpi.c - MPI collectives for data-parallel training, through a dlopen'ed
 * libmpi_abi.so (standard ABI, mpi_abi_min.h). Collectives are non-blocking
 * (MPI_Iallreduce / MPI_Ibcast / MPI_Iallgather) and polled with MPI_Test
 * against a deadline: a peer that died makes MPI_Test return an error (the
 * communicator has MPI_ERRORS_RETURN) or the deadline pass, and either way
 * this rank gets BF_ERR_DIST naming the operation, never a hang. Gradients
 * are reduced in place (no buffer of ours) in buckets of at most BUCKET
 * floats, all in flight at once; as bfloat16 through the run's wire buffer
 * with a user op that sums in float32 (DataParallel(gradient_compression=
 * "bfloat16")). No memory is allocated here.
 * After a torchrun-style launch (bf_tcp_init, no MPI) every bf_dist_* call
 * below hands over to dist_tcp.c: one interface for run.c whichever
 * transport carries it. */
#define _GNU_SOURCE /* kill, clock_gettime, gethostname under -std=c11 */
#include "dist_mpi.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dist_tcp.h"
#include "half.h"
#include "mpi_abi_min.h"

#define MAX_BUCKETS 64
#define MAX_RANKS 1024 /* ranks whose liveness is watched (the rest: the deadline only) */
#define HOST_LEN 64
#define BUCKET (1L << 22) /* floats: 16 MiB per bucket at most */

static struct {
    void *lib;
    int (*Initialized)(int *);
    int (*Init_thread)(int *, char ***, int, int *);
    int (*Finalize)(void);
    int (*Comm_dup)(MPI_Comm, MPI_Comm *);
    int (*Comm_set_errhandler)(MPI_Comm, MPI_Errhandler);
    int (*Comm_rank)(MPI_Comm, int *);
    int (*Comm_size)(MPI_Comm, int *);
    int (*Iallreduce)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *);
    int (*Ibcast)(void *, int, MPI_Datatype, int, MPI_Comm, MPI_Request *);
    int (*Iallgather)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm, MPI_Request *);
    int (*Test)(MPI_Request *, int *, MPI_Status *);
    int (*Error_string)(int, char *, int *);
    int (*Op_create)(MPI_User_function *, int, MPI_Op *);
    MPI_Op bf16_sum; /* bfloat16 values, float32 sums (bf16_sum_op) */
    int wire_bf16;   /* the active distribution's gradient_compression="bfloat16" */
    long long grad_bytes;
    MPI_Comm comm, gcomm; /* gcomm: the gradient buckets (dist_overlap.c's thread), apart from the flags */
    int rank, size, broken, we_initialized;
    double timeout, comm_seconds;
    char broken_msg[384];
    struct peer {
        char host[HOST_LEN]; /* hostname and PID namespace: pids are comparable only within one */
        char pidns[32];
        int pid;
    } peers[MAX_RANKS];
    int npeers;
} g = {.size = 1, .timeout = 60.0};

/* the heartbeat: a peer process on this host that is gone or a zombie */
static int peer_dead(int pid) {
    if (kill(pid, 0) != 0 && errno == ESRCH) return 1;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* "pid (comm) S ..." */
    return p && (p[2] == 'Z' || p[2] == 'X');
}

/* rank of a dead peer on this host, or -1 */
static int dead_peer(void) {
    for (int i = 0; i < g.npeers; i++)
        if (i != g.rank && g.peers[i].pid > 0 && strcmp(g.peers[i].host, g.peers[g.rank].host) == 0 &&
            g.peers[i].pidns[0] && strcmp(g.peers[i].pidns, g.peers[g.rank].pidns) == 0 && peer_dead(g.peers[i].pid))
            return i;
    return -1;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int bf_dist_size(void) { return bf_tcp_active() ? bf_tcp_size() : g.size; }
int bf_dist_rank(void) { return bf_tcp_active() ? bf_tcp_rank() : g.rank; }
double bf_dist_comm_seconds(void) { return bf_tcp_active() ? bf_tcp_comm_seconds() : g.comm_seconds; }
void bf_dist_set_timeout(double t) {
    bf_tcp_set_timeout(t);
    if (t > 0) g.timeout = t;
}

/* record the failure, mark the group broken so later calls fail at once */
static bf_status broken(const char *what, int rc, double waited) {
    char es[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (rc != MPI_SUCCESS && g.Error_string) g.Error_string(rc, es, &len);
    if (rc != MPI_SUCCESS)
        snprintf(g.broken_msg, sizeof g.broken_msg, "rank %d of %d: %s failed after %.1f s: %.120s", g.rank, g.size,
                 what, waited, es[0] ? es : "MPI error");
    else
        snprintf(g.broken_msg, sizeof g.broken_msg,
                 "rank %d of %d: %s did not complete within %.1f s (timeout): another rank died, raised or is stuck",
                 g.rank, g.size, what, waited);
    g.broken = 1;
    return BF_FAIL(BF_ERR_DIST, "distributed: %s; this process group cannot continue", g.broken_msg);
}

static bf_status check_usable(const char *what) {
    if (!g.lib) return BF_FAIL(BF_ERR_DIST, "distributed: %s before bf.distribution.initialize()", what);
    if (g.broken) return BF_FAIL(BF_ERR_DIST, "distributed: %s refused: the process group is broken (%s)", what, g.broken_msg);
    return BF_OK;
}

/* poll the n requests until all are done, an MPI error, a peer on this host
 * found dead (checked every 50 ms), or the deadline */
static bf_status wait_all(MPI_Request *rq, int n, const char *what, double timeout) {
    const double t0 = now(), deadline = t0 + timeout;
    double next_check = t0 + 0.05;
    long polls = 0;
    for (int i = 0; i < n;) {
        int flag = 0;
        int rc = g.Test(&rq[i], &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return broken(what, rc, now() - t0);
        if (flag) {
            i++;
            continue;
        }
        if (++polls > 2000) { /* past a short spin, yield the core between polls */
            const double t = now();
            if (t > deadline) return broken(what, MPI_SUCCESS, t - t0);
            if (t > next_check) {
                next_check = t + 0.05;
                int d = dead_peer();
                if (d >= 0) {
                    snprintf(g.broken_msg, sizeof g.broken_msg,
                             "rank %d of %d: rank %d (pid %d on host %s) died during %s, found after %.1f s", g.rank,
                             g.size, d, g.peers[d].pid, g.peers[d].host, what, t - t0);
                    g.broken = 1;
                    return BF_FAIL(BF_ERR_DIST, "distributed: %s; this process group cannot continue", g.broken_msg);
                }
            }
            struct timespec ts = {0, polls > 200000 ? 1000000 : 20000};
            nanosleep(&ts, NULL);
        }
    }
    g.comm_seconds += now() - t0;
    return BF_OK;
}

/* MPI's combine of two bfloat16 partial sums: expanded, added in float32,
 * rounded to nearest even (the result travels on, or is the sum) */
static void bf16_sum_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++) b[i] = bf_bf16_round(bf_bf16_expand(a[i]) + bf_bf16_expand(b[i]));
}

#define SYM(name)                                                                        \
    do {                                                                                 \
        *(void **)(&g.name) = dlsym(g.lib, "MPI_" #name);                                \
        if (!g.name) return BF_FAIL(BF_ERR_DIST, "distributed: %s has no MPI_" #name, lib); \
    } while (0)

bf_status bf_dist_init(const char *lib, double timeout_s, int *rank, int *size) {
    bf_dist_set_timeout(timeout_s);
    if (g.lib) {
        *rank = g.rank;
        *size = g.size;
        return BF_OK;
    }
    void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
    if (!h) return BF_FAIL(BF_ERR_DIST, "distributed: cannot load the MPI library %s: %s", lib, dlerror());
    g.lib = h;
    SYM(Initialized);
    SYM(Init_thread);
    SYM(Finalize);
    SYM(Comm_dup);
    SYM(Comm_set_errhandler);
    SYM(Comm_rank);
    SYM(Comm_size);
    SYM(Iallreduce);
    SYM(Ibcast);
    SYM(Iallgather);
    SYM(Test);
    SYM(Error_string);
    SYM(Op_create);
    int inited = 0, provided = 0, rc;
    g.Initialized(&inited);
    if (!inited) {
        rc = g.Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
        if (rc != MPI_SUCCESS) {
            g.lib = NULL;
            return BF_FAIL(BF_ERR_DIST, "distributed: MPI_Init_thread failed (%d)", rc);
        }
        g.we_initialized = 1;
    }
    /* errors on our communicator come back as codes instead of aborting the job */
    if ((rc = g.Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)) != MPI_SUCCESS ||
        (rc = g.Comm_dup(MPI_COMM_WORLD, &g.comm)) != MPI_SUCCESS ||
        (rc = g.Comm_set_errhandler(g.comm, MPI_ERRORS_RETURN)) != MPI_SUCCESS ||
        (rc = g.Comm_dup(g.comm, &g.gcomm)) != MPI_SUCCESS ||
        (rc = g.Comm_set_errhandler(g.gcomm, MPI_ERRORS_RETURN)) != MPI_SUCCESS ||
        (rc = g.Comm_rank(g.comm, &g.rank)) != MPI_SUCCESS || (rc = g.Comm_size(g.comm, &g.size)) != MPI_SUCCESS) {
        g.size = 1;
        return BF_FAIL(BF_ERR_DIST, "distributed: setting up the communicator failed (%d)", rc);
    }
    if ((rc = g.Op_create(bf16_sum_op, 1, &g.bf16_sum)) != MPI_SUCCESS) {
        g.size = 1;
        return BF_FAIL(BF_ERR_DIST, "distributed: MPI_Op_create (the bfloat16 sum) failed (%d)", rc);
    }
    /* who runs where: the heartbeat watches the peers on this host */
    struct peer me;
    memset(&me, 0, sizeof me);
    gethostname(me.host, HOST_LEN - 1);
    me.pid = (int)getpid();
    if (readlink("/proc/self/ns/pid", me.pidns, sizeof me.pidns - 1) < 0) me.pidns[0] = '\0';
    g.npeers = 0;
    if (g.size <= MAX_RANKS) {
        MPI_Request rq;
        rc = g.Iallgather(&me, (int)sizeof me, MPI_BYTE, g.peers, (int)sizeof me, MPI_BYTE, g.comm, &rq);
        if (rc != MPI_SUCCESS) return broken("MPI_Iallgather (hosts)", rc, 0.0);
        BF_TRY(wait_all(&rq, 1, "the exchange of hosts", g.timeout));
        g.npeers = g.size;
    }
    *rank = g.rank;
    *size = g.size;
    return BF_OK;
}

const char *bf_dist_host_of(int rank) {
    if (bf_tcp_active()) return bf_tcp_host_of(rank);
    return rank >= 0 && rank < g.npeers ? g.peers[rank].host : "?";
}

/* the failure flag every step agrees on first: 0 fine, 1 non-finite
 * gradients somewhere, 2 + r: rank r stopped with an error */
static bf_status agree_flag(int *flag, const char *what, double timeout) {
    MPI_Request rq;
    int rc = g.Iallreduce(MPI_IN_PLACE, flag, 1, MPI_INT, MPI_MAX, g.comm, &rq);
    if (rc != MPI_SUCCESS) return broken(what, rc, 0.0);
    return wait_all(&rq, 1, what, timeout);
}

/* flag >= 2 from agree_flag: rank flag - 2 stopped; this rank fails too */
static bf_status peer_stopped(int flag, const char *what) {
    const int r = flag - 2;
    snprintf(g.broken_msg, sizeof g.broken_msg, "rank %d of %d: rank %d (host %s) stopped with an error before %s; "
             "see its traceback", g.rank, g.size, r, bf_dist_host_of(r), what);
    g.broken = 1;
    return BF_FAIL(BF_ERR_DIST, "distributed: %s; this process group cannot continue", g.broken_msg);
}

bf_status bf_dist_agree(const char *what) {
    if (bf_tcp_active()) return bf_tcp_agree(what);
    if (g.size <= 1) return BF_OK;
    BF_TRY(check_usable(what));
    int flag = 0;
    BF_TRY(agree_flag(&flag, what, g.timeout));
    return flag >= 2 ? peer_stopped(flag, what) : BF_OK;
}

bf_status bf_dist_abandon(void) {
    if (bf_tcp_active()) return bf_tcp_abandon();
    if (g.size <= 1 || !g.lib || g.broken) return BF_OK;
    int flag = 2 + g.rank;
    double t = g.timeout < 5.0 ? g.timeout : 5.0;
    bf_status s = agree_flag(&flag, "telling the other ranks this one stopped", t);
    if (s == BF_OK) {
        snprintf(g.broken_msg, sizeof g.broken_msg, "rank %d stopped with an error", g.rank);
        g.broken = 1;
    }
    return s;
}

bf_status bf_dist_step(float *grads, long n, int *bad) {
    if (bf_tcp_active()) return bf_tcp_step(grads, n, bad);
    if (g.size <= 1) return BF_OK;
    BF_TRY(check_usable("the gradient all-reduce"));
    int flag = *bad ? 1 : 0;
    BF_TRY(agree_flag(&flag, "the step's agreement", g.timeout));
    if (flag >= 2) return peer_stopped(flag, "the step's gradient all-reduce");
    *bad = flag;
    if (!grads) return BF_OK; /* on a device: NCCL reduces them (dist_nccl.c) */
    MPI_Request rq[MAX_BUCKETS];
    long per = (n + MAX_BUCKETS - 1) / MAX_BUCKETS;
    if (per < BUCKET) per = n < BUCKET ? (n > 0 ? n : 1) : BUCKET;
    int nb = 0, rc;
    for (long at = 0; at < n && nb < MAX_BUCKETS; at += per) {
        long k = n - at < per ? n - at : per;
        rc = g.Iallreduce(MPI_IN_PLACE, grads + at, (int)k, MPI_FLOAT, MPI_SUM, g.comm, &rq[nb]);
        if (rc != MPI_SUCCESS) return broken("MPI_Iallreduce (gradients)", rc, 0.0);
        nb++;
    }
    BF_TRY(wait_all(rq, nb, "the gradient all-reduce", g.timeout));
    const float inv = 1.0f / (float)g.size;
    for (long i = 0; i < n; i++) grads[i] *= inv;
    return BF_OK;
}

bf_status bf_dist_allreduce_f64(double *buf, long n, int op) {
    if (bf_tcp_active()) return bf_tcp_allreduce_f64(buf, n, op);
    if (g.size <= 1) return BF_OK;
    BF_TRY(check_usable("an all-reduce"));
    MPI_Request rq;
    int rc = g.Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_DOUBLE, op == 1 ? MPI_MAX : op == 2 ? MPI_MIN : MPI_SUM,
                          g.comm, &rq);
    if (rc != MPI_SUCCESS) return broken("MPI_Iallreduce", rc, 0.0);
    return wait_all(&rq, 1, "an all-reduce", g.timeout);
}

bf_status bf_dist_bcast(void *buf, long bytes, int root) {
    if (bf_tcp_active()) return bf_tcp_bcast(buf, bytes, root);
    if (g.size <= 1) return BF_OK;
    BF_TRY(check_usable("a broadcast"));
    MPI_Request rq[MAX_BUCKETS];
    const long chunk = 1L << 30;
    int nb = 0;
    for (long at = 0; at < bytes || nb == 0; at += chunk) {
        if (nb == MAX_BUCKETS) return BF_FAIL(BF_ERR_ARG, "distributed: broadcast of %ld bytes is too large", bytes);
        long k = bytes - at < chunk ? bytes - at : chunk;
        int rc = g.Ibcast((char *)buf + at, (int)k, MPI_BYTE, root, g.comm, &rq[nb]);
        if (rc != MPI_SUCCESS) return broken("MPI_Ibcast", rc, 0.0);
        nb++;
        if (bytes == 0) break;
    }
    return wait_all(rq, nb, "a broadcast", g.timeout);
}

bf_status bf_dist_allgather(const void *send, void *recv, long bytes) {
    if (bf_tcp_active()) return bf_tcp_allgather(send, recv, bytes);
    if (g.size <= 1) {
        memcpy(recv, send, (size_t)bytes);
        return BF_OK;
    }
    BF_TRY(check_usable("an all-gather"));
    MPI_Request rq;
    int rc = g.Iallgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, g.comm, &rq);
    if (rc != MPI_SUCCESS) return broken("MPI_Iallgather", rc, 0.0);
    return wait_all(&rq, 1, "an all-gather", g.timeout);
}

bf_status bf_dist_finalize(void) {
    if (bf_tcp_active()) return bf_tcp_finalize();
    if (!g.lib || g.broken || !g.we_initialized) return BF_OK;
    int rc = g.Finalize();
    g.we_initialized = 0;
    g.size = 1;
    g.rank = 0;
    return rc == MPI_SUCCESS ? BF_OK : BF_FAIL(BF_ERR_DIST, "distributed: MPI_Finalize failed (%d)", rc);
}

double bf_dist_timeout(void) { return bf_tcp_active() ? bf_tcp_timeout() : g.timeout; }

int bf_dist_dead_peer(void) {
    if (bf_tcp_active()) return bf_tcp_peer_gone();
    return g.lib && !g.broken ? dead_peer() : -1;
}

bf_status bf_dist_fail(const char *msg) {
    if (bf_tcp_active()) return bf_tcp_fail(msg);
    snprintf(g.broken_msg, sizeof g.broken_msg, "rank %d of %d: %s", g.rank, g.size, msg);
    g.broken = 1;
    return BF_FAIL(BF_ERR_DIST, "distributed: %s; this process group cannot continue", g.broken_msg);
}

void bf_dist_set_wire_bf16(int on) { g.wire_bf16 = on != 0; }
int bf_dist_wire_bf16(void) { return g.wire_bf16; }
long long bf_dist_grad_bytes(void) { return bf_tcp_active() ? bf_tcp_grad_bytes_sent() : g.grad_bytes; }

bf_status bf_dist_sum_buckets(float *grads, uint16_t *wire, const long *lo, const long *hi, int nb) {
    if (bf_tcp_active()) {
        for (int b = 0; b < nb; b++)
            BF_TRY(wire ? bf_tcp_sum_bf16(grads + lo[b], wire + lo[b], hi[b] - lo[b])
                        : bf_tcp_sum(grads + lo[b], hi[b] - lo[b]));
        return BF_OK;
    }
    if (g.size <= 1) return BF_OK;
    BF_TRY(check_usable("the gradient all-reduce"));
    MPI_Request rq[MAX_BUCKETS];
    if (nb > MAX_BUCKETS) return BF_FAIL(BF_ERR_INTERNAL, "distributed: %d buckets", nb);
    for (int b = 0; b < nb; b++) {
        const int k = (int)(hi[b] - lo[b]);
        int rc;
        if (wire) {
            for (long i = lo[b]; i < hi[b]; i++) wire[i] = bf_bf16_round(grads[i]);
            rc = g.Iallreduce(MPI_IN_PLACE, wire + lo[b], k, MPI_UINT16_T, g.bf16_sum, g.gcomm, &rq[b]);
        } else {
            rc = g.Iallreduce(MPI_IN_PLACE, grads + lo[b], k, MPI_FLOAT, MPI_SUM, g.gcomm, &rq[b]);
        }
        if (rc != MPI_SUCCESS) return broken("MPI_Iallreduce (gradients)", rc, 0.0);
        g.grad_bytes += (long long)k * (wire ? 2 : 4);
    }
    BF_TRY(wait_all(rq, nb, "the gradient all-reduce", g.timeout));
    for (int b = 0; wire && b < nb; b++)
        for (long i = lo[b]; i < hi[b]; i++) grads[i] = bf_bf16_expand(wire[i]);
    return BF_OK;
}

void bf_dist_scale(float *grads, long n) {
    const float inv = 1.0f / (float)bf_dist_size();
    for (long i = 0; i < n; i++) grads[i] *= inv;
}

