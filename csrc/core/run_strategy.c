/* run_strategy.c - the two strategies of run_strategy.h: one process (every
 * hook a no-op) and data parallel (dist_mpi.c / dist_tcp.c ranks,
 * dist_overlap.c's CPU buckets, dist_nccl.c on a device). */
#include "run_strategy.h"

#include "dist_mpi.h"
#include "dist_nccl.h"
#include "dist_overlap.h"

static int one(void) { return 1; }
static bf_status none(bf_run *r) { (void)r; return BF_OK; }
static bf_status none_flag(bf_run *r, int *flag) { (void)r; *flag = 0; return BF_OK; }
static bf_status none_node(bf_run *r, int i) { (void)r; (void)i; return BF_OK; }
static bf_status keep_verdict(bf_run *r, int *bad) { (void)r; (void)bad; return BF_OK; }
static void idle(void) {}

static const bf_strategy single = {"one process", one,  none,         none_flag, none_node,
                                   none_flag,     keep_verdict, none, idle};

static bf_status dp_plan(bf_run *r) { return r->on_device ? BF_OK : bf_overlap_plan(r->m); }

static bf_status dp_begin_backward(bf_run *r, int *overlap) {
    *overlap = !r->on_device && bf_overlap_enabled();
    return *overlap ? bf_overlap_begin(r->grads, r->wire) : BF_OK;
}

static bf_status dp_node_done(bf_run *r, int i) {
    (void)r;
    return bf_overlap_active() ? bf_overlap_layer_done(i) : BF_OK;
}

static bf_status dp_end_backward(bf_run *r, int *overlapped) {
    (void)r;
    *overlapped = bf_overlap_active();
    return *overlapped ? bf_overlap_wait() : BF_OK;
}

/* CPU: the layer-aligned buckets, summed during backward (overlapped) or now, the same bits either way */
static bf_status dp_reduce(bf_run *r, int *bad) {
    const long n = r->m->n_trainable;
    BF_TRY(bf_dist_step(NULL, n, bad));
    if (r->on_device) return *bad ? BF_OK : bf_nccl_step(r->be, r->grads, n);
    const long *lo, *hi;
    const int nb = bf_overlap_buckets(&lo, &hi);
    if (!r->overlapped) BF_TRY(bf_dist_sum_buckets(r->grads, r->wire, lo, hi, nb));
    bf_dist_scale(r->grads, n);
    return BF_OK;
}

static bf_status dp_broadcast(bf_run *r) {
    if (!r->on_device || !r->arena.base) return BF_OK;
    BF_TRY(bf_nccl_bcast(r->be, r->w, sizeof(float) * (size_t)r->m->n_params));
    if (r->slot_bytes) BF_TRY(bf_nccl_bcast(r->be, r->slots, r->slot_bytes));
    return BF_OK;
}

static const bf_strategy data_parallel = {"data parallel", bf_dist_size,    dp_plan,
                                          dp_begin_backward, dp_node_done,    dp_end_backward,
                                          dp_reduce,         dp_broadcast,    bf_overlap_drain};

const bf_strategy *bf_run_strategy(void) { return bf_dist_size() > 1 ? &data_parallel : &single; }
