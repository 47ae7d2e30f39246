/* dist_nccl.c - the NCCL path of data parallel training (dist_nccl.h): the
 * communicator's setup over the host transport, and the step's bounded wait.
 * The backend queues the all-reduce and reports progress (nccl_poll); this
 * file owns the policy, as dist_mpi.c does for MPI: poll until done, an
 * asynchronous NCCL error, a peer found dead by the transport's heartbeat, or
 * the deadline, and on a failure ncclCommAbort (so no kernel of ours waits
 * for a peer any longer) and the group marked broken. No memory is
 * allocated here. */
#define _GNU_SOURCE /* clock_gettime, nanosleep under -std=c11 */
#include "dist_nccl.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend_registry.h"
#include "dist_mpi.h"

#define NCCL_ID_BYTES 128
#define BUCKET (1L << 22) /* floats per ncclAllReduce: 16 MiB */

static bf_backend *comm_be; /* the backend holding the communicator */
static double seconds;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double bf_nccl_seconds(void) { return seconds; }

static bf_status fail(bf_backend *be, const char *msg) {
    be->nccl_abort(be);
    if (comm_be == be) comm_be = NULL;
    return bf_dist_fail(msg);
}

/* poll until the backend's NCCL work is done: an asynchronous error, a peer
 * found dead by the transport's heartbeat (every 50 ms) or the deadline
 * aborts the communicator and breaks the group */
static bf_status wait_done(bf_backend *be, const char *what, double t0) {
    const double deadline = t0 + bf_dist_timeout();
    char msg[384];
    double next_check = t0 + 0.05;
    for (long polls = 0;; polls++) {
        int done = 0;
        bf_status s = be->nccl_poll(be, &done);
        if (s != BF_OK) {
            snprintf(msg, sizeof msg, "%s (NCCL) failed after %.1f s: %.250s", what, now() - t0, bf_last_error()->msg);
            return fail(be, msg);
        }
        if (done) return BF_OK;
        const double t = now();
        if (t > deadline) {
            snprintf(msg, sizeof msg, "%s (NCCL) did not complete within %.1f s (timeout): another rank died, raised or "
                     "is stuck; NCCL communicator aborted", what, t - t0);
            return fail(be, msg);
        }
        if (t > next_check) {
            next_check = t + 0.05;
            const int d = bf_dist_dead_peer();
            if (d >= 0) {
                snprintf(msg, sizeof msg, "rank %d (host %s) died during %s (NCCL), found after %.1f s; NCCL "
                         "communicator aborted", d, bf_dist_host_of(d), what, t - t0);
                return fail(be, msg);
            }
        }
        struct timespec ts = {0, polls < 2000 ? 10000 : 200000};
        nanosleep(&ts, NULL);
    }
}

bf_status bf_nccl_setup(bf_backend *be, const char *lib, size_t *bytes) {
    *bytes = 0;
    if (bf_dist_size() <= 1) return BF_OK;
    if (!be || !be->nccl_init || !be->nccl_unique_id)
        return BF_FAIL(BF_ERR_ARG, "distributed: the NCCL path needs a CUDA device backend");
    if (comm_be == be) return BF_OK;
    if (comm_be) return BF_FAIL(BF_ERR_DIST, "distributed: an NCCL communicator is already set up on %s", comm_be->name);
    unsigned char id[NCCL_ID_BYTES];
    memset(id, 0, sizeof id);
    /* rank 0's failure to make the id is told to the others by the agreement */
    bf_status s = bf_dist_rank() == 0 ? be->nccl_unique_id(be, lib, id) : BF_OK;
    if (s != BF_OK) {
        (void)bf_dist_abandon();
        return s;
    }
    BF_TRY(bf_dist_agree("the NCCL setup"));
    BF_TRY(bf_dist_bcast(id, NCCL_ID_BYTES, 0));
    size_t free0 = 0, free1 = 0, total = 0;
    BF_TRY(bf_backend_mem_info(be, &free0, &total));
    const double t0 = now();
    s = be->nccl_init(be, lib, id, bf_dist_rank(), bf_dist_size());
    if (s != BF_OK) {
        (void)bf_dist_abandon();
        return s;
    }
    BF_TRY(wait_done(be, "the NCCL communicator's setup", t0));
    /* NCCL's device memory: what the init took (its buffers are allocated
     * there with NCCL_RUNTIME_CONNECT=0, which the package sets) */
    BF_TRY(bf_backend_mem_info(be, &free1, &total));
    *bytes = free0 > free1 ? free0 - free1 : 0;
    comm_be = be;
    return BF_OK;
}

bf_status bf_nccl_step(bf_backend *be, float *grads, long n) {
    if (!be->nccl_allreduce) return BF_FAIL(BF_ERR_ARG, "distributed: %s has no NCCL path", be->name);
    if (comm_be != be)
        return BF_FAIL(BF_ERR_DIST, "distributed: training on %s under DataParallel without its NCCL communicator "
                                    "(fit sets it up)", be->name);
    const double t0 = now();
    bf_status s = be->nccl_allreduce(be, grads, n, BUCKET);
    if (s != BF_OK) {
        char msg[384];
        snprintf(msg, sizeof msg, "queueing the gradient all-reduce (NCCL) failed: %.300s", bf_last_error()->msg);
        return fail(be, msg);
    }
    BF_TRY(wait_done(be, "the gradient all-reduce", t0));
    BF_TRY(be->scale(be, grads, n, 1.0f / (float)bf_dist_size()));
    seconds += now() - t0;
    return BF_OK;
}

bf_status bf_nccl_bcast(bf_backend *be, void *buf, size_t bytes) {
    if (comm_be != be)
        return BF_FAIL(BF_ERR_DIST, "distributed: a broadcast on %s without its NCCL communicator", be->name);
    const double t0 = now();
    bf_status s = be->nccl_bcast(be, buf, bytes, 0);
    if (s != BF_OK) {
        char msg[384];
        snprintf(msg, sizeof msg, "queueing the weights' broadcast (NCCL) failed: %.300s", bf_last_error()->msg);
        return fail(be, msg);
    }
    BF_TRY(wait_done(be, "the weights' broadcast", t0));
    seconds += now() - t0;
    return BF_OK;
}

bf_status bf_nccl_teardown(void) {
    if (!comm_be) return BF_OK;
    bf_backend *be = comm_be;
    comm_be = NULL;
    return be->nccl_destroy(be);
}
