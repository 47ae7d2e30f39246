/* nccl.cu - data parallel on CUDA devices: the gradient all-reduce over NCCL
 * on device buffers, queued on the compute stream (the backend's nccl_* and
 * scale entries, backend.h). libnccl.so.2 is dlopen'ed on first use from the
 * path the package found (the `nvidia-nccl-cu13` wheel, or BF_NCCL_LIB); the
 * backend builds and runs without it (nccl_api.h declares what is used).
 * Nothing here waits without a bound: nccl_allreduce only queues, and the
 * core (dist_nccl.c) polls nccl_poll against its deadline and heartbeat and
 * calls nccl_abort (ncclCommAbort) when a peer is dead or stuck. One
 * communicator per device, in static storage. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"
#include "cuda_ops.h"
#include "nccl_api.h"

static void *nccl_lib;
static bf_nccl_fns nccl;

static struct {
    bf_nccl_comm_t comm;
    int rank, size;
} comms[BF_CUDA_MAX_DEVICES];

#define NSYM(name)                                                                                  \
    do {                                                                                            \
        *(void **)(&nccl.name) = dlsym(h, "nccl" #name);                                            \
        if (!nccl.name) {                                                                           \
            dlclose(h);                                                                             \
            return BF_FAIL(BF_ERR_DEVICE, "NCCL: %s has no nccl" #name " (NCCL 2.x needed)", lib); \
        }                                                                                           \
    } while (0)

static bf_status load(const char *lib) {
    if (nccl_lib) return BF_OK;
    if (!lib || !lib[0])
        return BF_FAIL(BF_ERR_DEVICE, "NCCL: no libnccl.so.2 found; pip install \"boundfit[cuda]\" (nvidia-nccl-cu13) "
                                      "or set BF_NCCL_LIB");
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) return BF_FAIL(BF_ERR_DEVICE, "NCCL: cannot load %s: %s", lib, dlerror());
    NSYM(GetVersion);
    NSYM(GetUniqueId);
    NSYM(CommInitRank);
    NSYM(CommGetAsyncError);
    NSYM(CommAbort);
    NSYM(CommDestroy);
    NSYM(AllReduce);
    NSYM(Broadcast);
    NSYM(GroupStart);
    NSYM(GroupEnd);
    NSYM(GetErrorString);
    *(void **)(&nccl.CommInitRankConfig) = dlsym(h, "ncclCommInitRankConfig"); /* optional */
    nccl_lib = h;
    return BF_OK;
}

static bf_status nccl_fail(bf_nccl_result r, const char *what) {
    return BF_FAIL(BF_ERR_DIST, "distributed: %s failed: NCCL error %d (%s)", what, r,
                   nccl.GetErrorString ? nccl.GetErrorString(r) : "?");
}

// id (128 bytes) = ncclGetUniqueId: rank 0 makes it, the host transport sends it
bf_status bf_cuda_nccl_unique_id(bf_backend *be, const char *lib, void *id) {
    BF_CUDA_ENTER(st, be);
    (void)st;
    BF_TRY(load(lib));
    bf_nccl_id u;
    bf_nccl_result r = nccl.GetUniqueId(&u);
    if (r != BF_NCCL_SUCCESS) return nccl_fail(r, "ncclGetUniqueId");
    memcpy(id, &u, sizeof u);
    return BF_OK;
}

/* ncclCommInitRankConfig on this device, non-blocking (config.blocking = 0):
 * returns while NCCL connects the ranks; nccl_poll reports when it is done,
 * so that the core bounds the wait (a rank that died before joining would
 * hang a blocking init). Without ncclCommInitRankConfig (NCCL < 2.14), the
 * blocking ncclCommInitRank. */
bf_status bf_cuda_nccl_init(bf_backend *be, const char *lib, const void *id, int rank, int size) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(load(lib));
    if (comms[st->device].comm) {
        if (comms[st->device].rank == rank && comms[st->device].size == size) return BF_OK;
        return BF_FAIL(BF_ERR_DIST, "distributed: %s already has an NCCL communicator (rank %d of %d)", st->name,
                       comms[st->device].rank, comms[st->device].size);
    }
    bf_nccl_id u;
    memcpy(&u, id, sizeof u);
    bf_nccl_comm_t c = NULL;
    bf_nccl_result r;
    if (nccl.CommInitRankConfig) {
        bf_nccl_config cfg = {sizeof(bf_nccl_config), BF_NCCL_CONFIG_MAGIC, BF_NCCL_CONFIG_VERSION, 0,
                              BF_NCCL_UNDEF_INT, BF_NCCL_UNDEF_INT, BF_NCCL_UNDEF_INT, NULL, BF_NCCL_UNDEF_INT};
        r = nccl.CommInitRankConfig(&c, size, u, rank, &cfg);
    } else {
        r = nccl.CommInitRank(&c, size, u, rank);
    }
    if (r != BF_NCCL_SUCCESS && r != BF_NCCL_IN_PROGRESS) {
        if (c) nccl.CommAbort(c);
        return nccl_fail(r, "ncclCommInitRank");
    }
    comms[st->device].comm = c;
    comms[st->device].rank = rank;
    comms[st->device].size = size;
    return BF_OK;
}

static bf_status have_comm(bf_cuda_state *st, const char *what) {
    if (!comms[st->device].comm)
        return BF_FAIL(BF_ERR_DIST, "distributed: %s on %s before its NCCL communicator was set up", what, st->name);
    return BF_OK;
}

// buf (n floats, device) summed over the ranks in place: buckets of at most `bucket` floats in one group
bf_status bf_cuda_nccl_allreduce(bf_backend *be, float *buf, long n, long bucket) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(have_comm(st, "the gradient all-reduce"));
    if (n <= 0) return BF_OK;
    if (bucket <= 0) bucket = n;
    bf_nccl_result r = nccl.GroupStart();
    if (r != BF_NCCL_SUCCESS) return nccl_fail(r, "ncclGroupStart");
    for (long at = 0; at < n; at += bucket) {
        const long k = n - at < bucket ? n - at : bucket;
        r = nccl.AllReduce(buf + at, buf + at, (size_t)k, BF_NCCL_FLOAT32, BF_NCCL_SUM, comms[st->device].comm,
                           (void *)st->stream);
        if (r != BF_NCCL_SUCCESS) {
            nccl.GroupEnd();
            return nccl_fail(r, "ncclAllReduce (gradients)");
        }
    }
    r = nccl.GroupEnd();
    if (r != BF_NCCL_SUCCESS && r != BF_NCCL_IN_PROGRESS) return nccl_fail(r, "ncclGroupEnd (gradients)");
    return BF_OK;
}

// buf (bytes, device) = root's, queued on the compute stream
bf_status bf_cuda_nccl_bcast(bf_backend *be, void *buf, size_t bytes, int root) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(have_comm(st, "the weights' broadcast"));
    if (!bytes) return BF_OK;
    bf_nccl_result r = nccl.Broadcast(buf, buf, bytes, BF_NCCL_INT8, root, comms[st->device].comm, (void *)st->stream);
    if (r != BF_NCCL_SUCCESS && r != BF_NCCL_IN_PROGRESS) return nccl_fail(r, "ncclBroadcast (weights)");
    return BF_OK;
}

/* *done = 1 once the communicator is ready (ncclCommGetAsyncError no longer
 * ncclInProgress) and the compute stream's queued work (the all-reduce)
 * finished; an asynchronous NCCL error (a peer's connection lost, ...) fails */
bf_status bf_cuda_nccl_poll(bf_backend *be, int *done) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(have_comm(st, "polling the all-reduce"));
    *done = 0;
    bf_nccl_result ae = BF_NCCL_SUCCESS;
    bf_nccl_result r = nccl.CommGetAsyncError(comms[st->device].comm, &ae);
    if (r != BF_NCCL_SUCCESS) return nccl_fail(r, "ncclCommGetAsyncError");
    if (ae == BF_NCCL_IN_PROGRESS) return BF_OK;
    if (ae != BF_NCCL_SUCCESS) return nccl_fail(ae, "NCCL (asynchronous error)");
    cudaError_t e = cudaStreamQuery(st->stream);
    if (e == cudaErrorNotReady) return BF_OK;
    BF_CUDA_CHECK(st, e);
    *done = 1;
    return BF_OK;
}

/* after a failure: ncclCommAbort frees the communicator without waiting for
 * its peers; the device's later collectives fail until a new one is made */
void bf_cuda_nccl_abort(bf_backend *be) {
    bf_cuda_state *st = BF_CUDA_ST(be);
    if (!nccl_lib || !comms[st->device].comm) return;
    (void)nccl.CommAbort(comms[st->device].comm);
    comms[st->device].comm = NULL;
}

// the group ended cleanly: ncclCommDestroy (waits for the queued collectives)
bf_status bf_cuda_nccl_destroy(bf_backend *be) {
    BF_CUDA_ENTER(st, be);
    if (!nccl_lib || !comms[st->device].comm) return BF_OK;
    bf_nccl_result r = nccl.CommDestroy(comms[st->device].comm);
    comms[st->device].comm = NULL;
    return r == BF_NCCL_SUCCESS ? BF_OK : nccl_fail(r, "ncclCommDestroy");
}

// x (n) *= s
__global__ void scale_kernel(float *x, float s, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        x[i] = __fmul_rn(x[i], s);
}

bf_status bf_cuda_scale(bf_backend *be, float *x, long n, float s) {
    BF_CUDA_ENTER(st, be);
    if (n < 0) return BF_FAIL(BF_ERR_SHAPE, "scale: n=%ld", n);
    if (n == 0) return BF_OK;
    scale_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(x, s, n);
    BF_CUDA_LAUNCHED(st, scale_kernel);
    return BF_OK;
}
