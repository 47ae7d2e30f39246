/* sim_nccl.cpp - the device emulation's NCCL stand-in: the part of NCCL's C
 * API that csrc/cuda/nccl.cu calls (ncclGetUniqueId, ncclCommInitRank,
 * ncclAllReduce float sum, ncclBroadcast of bytes, ncclGroupStart/End, ncclCommGetAsyncError,
 * ncclCommInitRankConfig (blocking or not: config.blocking = 0 joins on a
 * thread, ncclCommGetAsyncError says ncclInProgress until done),
 * ncclCommAbort/Destroy, ncclGetErrorString, ncclGetVersion), exported from
 * the emulation's _cuda.so so that BF_NCCL_LIB=<that _cuda.so> makes nccl.cu
 * dlopen it as if it were libnccl.so.2. Ranks are processes on this host:
 * the unique id names a POSIX shared-memory segment that every rank maps at
 * ncclCommInitRank (which blocks until all joined, as NCCL's does). A
 * collective runs its stream's queued work (sim_drain), is queued to the
 * communicator's proxy thread and returns at once, as NCCL's enqueue does;
 * the stream is busy until the thread is done (sim_external_*). Each chunk: every rank copies its part into its slot,
 * barrier, every rank sums the slots in rank order (so all ranks get the same
 * bits), barrier. A peer process that is gone becomes ncclRemoteError (NCCL's
 * socket transport reports a lost connection so); a live but stuck peer hangs
 * the collective until ncclCommAbort, as on real GPUs. Device memory NCCL
 * would hold (its channel buffers) is taken with cudaMalloc at init:
 * NCCL_BUFFSIZE (default 4 MiB) per channel, 2 channels.
 * Test switches, at that rank's 3rd collective: BF_SIM_NCCL_STALL_RANK=r
 * its proxy never finishes it (a stuck GPU: the peers and itself meet the
 * deadline); BF_SIM_NCCL_DIE_RANK=r the process dies in it (SIGKILL: the peers
 * wait in the collective when it goes), or, with BF_SIM_NCCL_DIE_AT=init, in
 * ncclCommInitRank before joining (the peers wait in their init). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <condition_variable>
#include <deque>

#include "sim_internal.h"

#define NX extern "C" __attribute__((visibility("default")))
#define CHUNK (1 << 16) /* floats per rank slot: 256 KiB */
#define MAXR 64

typedef struct {
    char internal[128];
} ncclUniqueId;
typedef int ncclResult_t;
enum { ok = 0, sys_err = 2, invalid_arg = 4, remote_err = 6, in_progress = 7 };

struct shm_t {
    std::atomic<int> joined;
    std::atomic<unsigned> arrive, gen;
    int nranks;
    int pid[MAXR];
    float slot[1]; /* nranks * CHUNK */
};

struct op_t {
    const float *send;
    float *recv;
    size_t count; /* floats; a broadcast: bytes */
    int root;     /* -1: all-reduce (sum); else a broadcast from this rank */
};

struct ncclComm {
    shm_t *shm;
    size_t shm_bytes;
    int rank, nranks, ncalls, stall, die;
    std::atomic<int> aborted, error;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<op_t> ops;
    std::thread proxy, joiner;
    int quit, proxy_on;
    void *bufs;
    char name[128];
};

static std::atomic<unsigned> id_counter;

static void nap(void) {
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
}

static int peer_gone(ncclComm *c) {
    for (int r = 0; r < c->nranks; r++)
        if (r != c->rank && c->shm->pid[r] > 0 && kill(c->shm->pid[r], 0) != 0 && errno == ESRCH) return 1;
    return 0;
}

/* all ranks arrive; ncclRemoteError when a peer is gone, sys_err when aborted */
static int barrier(ncclComm *c) {
    shm_t *s = c->shm;
    const unsigned g = s->gen.load();
    if (s->arrive.fetch_add(1) + 1 == (unsigned)c->nranks) {
        s->arrive.store(0);
        s->gen.fetch_add(1);
        return ok;
    }
    long spins = 0;
    while (s->gen.load() == g) {
        if (c->aborted.load()) return sys_err;
        if (++spins % 2000 == 0 && peer_gone(c)) return remote_err;
        nap();
    }
    return ok;
}

/* root's bytes through slot 0, chunk by chunk */
static int run_bcast(ncclComm *c, const op_t &op) {
    const size_t cb = CHUNK * sizeof(float);
    char *slot = (char *)c->shm->slot;
    for (size_t at = 0; at < op.count; at += cb) {
        const size_t k = op.count - at < cb ? op.count - at : cb;
        if (c->rank == op.root) memcpy(slot, (const char *)op.send + at, k);
        int e = barrier(c);
        if (e != ok) return e;
        if (c->rank != op.root) memcpy((char *)op.recv + at, slot, k);
        if ((e = barrier(c)) != ok) return e;
    }
    return ok;
}

static int run_op(ncclComm *c, const op_t &op) {
    if (op.root >= 0) return run_bcast(c, op);
    const int R = c->nranks;
    for (size_t at = 0; at < op.count; at += CHUNK) {
        const size_t k = op.count - at < CHUNK ? op.count - at : CHUNK;
        memcpy(c->shm->slot + (size_t)c->rank * CHUNK, op.send + at, k * sizeof(float));
        int e = barrier(c);
        if (e != ok) return e;
        for (size_t i = 0; i < k; i++) {
            float v = c->shm->slot[i];
            for (int r = 1; r < R; r++) v += c->shm->slot[(size_t)r * CHUNK + i];
            op.recv[at + i] = v;
        }
        if ((e = barrier(c)) != ok) return e;
    }
    return ok;
}

static void proxy_main(ncclComm *c) {
    for (;;) {
        op_t op;
        {
            std::unique_lock<std::mutex> lk(c->mu);
            c->cv.wait(lk, [c] { return c->quit || !c->ops.empty(); });
            if (c->ops.empty()) return;
            op = c->ops.front();
        }
        int e = c->error.load();
        if (e == ok) {
            ++c->ncalls;
            if (c->die && c->ncalls == 3) kill(getpid(), SIGKILL); /* test switch: the rank is killed mid-collective */
            if (c->stall && c->ncalls == 3)
                while (!c->aborted.load()) nap(); /* stuck: only an abort ends it */
            e = c->aborted.load() ? sys_err : run_op(c, op);
            if (e != ok) c->error.store(e);
        }
        {
            std::lock_guard<std::mutex> lk(c->mu);
            c->ops.pop_front();
        }
        sim_external_end();
    }
}

NX ncclResult_t ncclGetVersion(int *v) {
    *v = 22800; /* NCCL_VERSION(2, 28, 0) */
    return ok;
}

NX const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ok: return "no error";
    case sys_err: return "unhandled system error (emulation: communicator aborted)";
    case invalid_arg: return "invalid argument";
    case remote_err: return "remote process exited or there was a network error";
    case in_progress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

NX ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "/bfsimnccl-%d-%u-%ld", (int)getpid(), id_counter.fetch_add(1),
             (long)time(NULL));
    return ok;
}

typedef struct {
    size_t size;
    unsigned int magic, version;
    int blocking;
} config_head; /* ncclConfig_t's leading fields */

/* every rank mapped the segment: its name can go; the proxy starts. A peer
 * that never comes makes this wait until ncclCommAbort (as NCCL's bootstrap) */
static int join(ncclComm *c, const char *name) {
    shm_t *s = c->shm;
    s->pid[c->rank] = (int)getpid();
    s->joined.fetch_add(1);
    while (s->joined.load() < c->nranks)
        if (c->aborted.load()) return sys_err;
        else nap();
    int e = barrier(c);
    if (c->rank == 0) shm_unlink(name);
    if (e != ok) return e;
    c->proxy = std::thread(proxy_main, c);
    c->proxy_on = 1;
    return ok;
}

static ncclResult_t init(ncclComm **out, int nranks, ncclUniqueId id, int rank, int blocking) {
    if (!out || nranks < 1 || nranks > MAXR || rank < 0 || rank >= nranks || id.internal[0] != '/') return invalid_arg;
    const char *dr = getenv("BF_SIM_NCCL_DIE_RANK");
    const char *when = getenv("BF_SIM_NCCL_DIE_AT");
    if (dr && atoi(dr) == rank && when && !strcmp(when, "init")) kill(getpid(), SIGKILL); /* test switch: killed before joining */
    const size_t bytes = sizeof(shm_t) + (size_t)nranks * CHUNK * sizeof(float);
    int fd = shm_open(id.internal, O_RDWR | O_CREAT, 0600);
    if (fd < 0) return sys_err;
    if (ftruncate(fd, (off_t)bytes) != 0) {
        close(fd);
        return sys_err;
    }
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return sys_err;
    /* NCCL's device buffers, as an allocation the plan must see */
    const char *bs = getenv("NCCL_BUFFSIZE");
    const size_t buff = bs && atol(bs) > 0 ? (size_t)atol(bs) : (size_t)4 << 20;
    void *bufs = NULL;
    if (cudaMalloc(&bufs, 2 * buff) != cudaSuccess) {
        munmap(m, bytes);
        return sys_err;
    }
    ncclComm *c = new ncclComm();
    c->shm = (shm_t *)m;
    c->shm_bytes = bytes;
    c->rank = rank;
    c->nranks = nranks;
    c->bufs = bufs;
    c->shm->nranks = nranks;
    const char *st = getenv("BF_SIM_NCCL_STALL_RANK");
    c->stall = st && atoi(st) == rank;
    c->die = dr && atoi(dr) == rank && !(when && !strcmp(when, "init"));
    memcpy(c->name, id.internal, sizeof c->name);
    *out = c;
    if (blocking) {
        int e = join(c, c->name);
        if (e != ok) {
            cudaFree(bufs);
            munmap(m, bytes);
            delete c;
            *out = NULL;
        }
        return e;
    }
    c->error.store(in_progress);   /* ncclCommGetAsyncError: in progress until joined */
    c->joiner = std::thread([c] { c->error.store(join(c, c->name)); });
    return in_progress;
}

NX ncclResult_t ncclCommInitRank(ncclComm **out, int nranks, ncclUniqueId id, int rank) {
    return init(out, nranks, id, rank, 1);
}

NX ncclResult_t ncclCommInitRankConfig(ncclComm **out, int nranks, ncclUniqueId id, int rank, config_head *cfg) {
    if (cfg && (cfg->magic != 0xcafebeefu || cfg->size < sizeof(config_head))) return invalid_arg;
    return init(out, nranks, id, rank, !(cfg && cfg->blocking == 0));
}

NX ncclResult_t ncclGroupStart(void) { return ok; }
NX ncclResult_t ncclGroupEnd(void) { return ok; }

NX ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, int dtype, int op, ncclComm *c, void *stream) {
    if (!c || dtype != 7 || op != 0) return invalid_arg; /* float32, sum: what boundfit uses */
    if (!c->proxy_on) return invalid_arg;                /* not joined yet */
    if (!sim_device_range(send, count * 4) || !sim_device_range(recv, count * 4) || !sim_stream_ok((cudaStream_t)stream))
        return invalid_arg;
    if (c->error.load() != ok) return c->error.load();
    sim_drain((cudaStream_t)stream); /* the stream's queued work (the gradients) first */
    sim_external_begin();
    std::lock_guard<std::mutex> lk(c->mu);
    c->ops.push_back(op_t{(const float *)send, (float *)recv, count, -1});
    c->cv.notify_one();
    return ok;
}

NX ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, int dtype, int root, ncclComm *c,
                              void *stream) {
    if (!c || dtype != 0 || root < 0 || root >= c->nranks) return invalid_arg; /* int8 (bytes): what boundfit uses */
    if (!c->proxy_on) return invalid_arg;
    if (!sim_device_range(recv, count) || (c->rank == root && !sim_device_range(send, count)) ||
        !sim_stream_ok((cudaStream_t)stream))
        return invalid_arg;
    if (c->error.load() != ok) return c->error.load();
    sim_drain((cudaStream_t)stream); /* the stream's queued work (the gradients) first */
    sim_external_begin();
    std::lock_guard<std::mutex> lk(c->mu);
    c->ops.push_back(op_t{(const float *)send, (float *)recv, count, root});
    c->cv.notify_one();
    return ok;
}

NX ncclResult_t ncclCommGetAsyncError(ncclComm *c, ncclResult_t *err) {
    if (!c || !err) return invalid_arg;
    *err = c->error.load();
    return ok;
}

static ncclResult_t finish(ncclComm *c) {
    if (c->joiner.joinable()) c->joiner.join(); /* an abort ends a join still waiting */
    {
        std::lock_guard<std::mutex> lk(c->mu);
        c->quit = 1;
        c->cv.notify_one();
    }
    if (c->proxy_on) c->proxy.join();
    cudaFree(c->bufs);
    munmap(c->shm, c->shm_bytes);
    delete c;
    return ok;
}

NX ncclResult_t ncclCommAbort(ncclComm *c) {
    if (!c) return invalid_arg;
    c->aborted.store(1);
    return finish(c);
}

NX ncclResult_t ncclCommDestroy(ncclComm *c) {
    if (!c) return invalid_arg;
    return finish(c);
}
