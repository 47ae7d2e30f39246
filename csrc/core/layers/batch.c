/* batch.c - BATCH_REDUCE: the sum (op 0) or mean (op 1) of its input over
 * the whole batch and every axis of a sample, one number the same for every
 * sample (per-sample shape ()): keras.ops.tensordot(a, b, 2) of two (B, E)
 * tensors (the sum of their Multiply), keras.ops.sum / mean(x) with no axis,
 * whose Keras result has no batch axis and broadcasts back onto samples.
 * It mixes the samples of a batch (BF_LF_BATCH): a step may not split a batch
 * (run.c refuses micro-batches and data-parallel ranks). Forward sums into
 * out[0] and copies it to the other rows; backward, the gradient of every
 * input element is the sum of dout over the rows (times 1/(rows*n) for the
 * mean), written into din[0] and copied out the same way. No buffer of its own. */
#include "layer.h"

#include <string.h>

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    (void)rank;
    (void)shape;
    const int op = L->cfg.emath.op;
    if (op < 0 || op > 1) return BF_FAIL(BF_ERR_ARG, "%s: unknown batch reduction %d", L->name, op);
    L->out_rank = 0; /* one number per sample */
    return BF_OK;
}

static int supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->strided_copy != NULL && be->ewise != NULL;
}

// x[0] = sum of inp (rows, n), then times `scale`
static bf_status sum_into(bf_backend *be, float *x, const float *inp, long rows, long n, float scale) {
    bf_strided g;
    memset(&g, 0, sizeof g);
    g.nd = 1;
    g.n[0] = 1;
    g.nr = 2;
    g.rn[0] = rows;
    g.rs[0] = n;
    g.rn[1] = n;
    g.rs[1] = 1;
    BF_TRY(be->strided_copy(be, x, inp, &g));
    return scale == 1.0f ? BF_OK : be->ewise(be, x, x, NULL, NULL, BF_EW_SCALE, scale, 1);
}

// x[1..total) = x[0]
static bf_status spread(bf_backend *be, float *x, long total) {
    if (total <= 1) return BF_OK;
    bf_strided g;
    memset(&g, 0, sizeof g);
    g.nd = 1;
    g.n[0] = total - 1;
    g.os[0] = 1;
    g.is[0] = 0;
    return be->strided_copy(be, x + 1, x, &g);
}

static float mean_scale(const bf_layer *L, int rows) {
    return L->cfg.emath.op == 1 ? 1.0f / ((float)rows * (float)L->in_size) : 1.0f;
}

// out (B) = sum (or mean) of inp (B, n) over all of it, in every row
static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    float *out = bf_step_out(r, i);
    BF_TRY(sum_into(r->be, out, bf_step_in(r, i), rows, L->in_size, mean_scale(L, rows)));
    return spread(r->be, out, rows);
}

// din (B, n) = sum of dout (B) over the rows (times 1/(B n) for the mean), in every element
static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    if (!din) return BF_OK;
    BF_TRY(sum_into(r->be, din, dout, rows, 1, mean_scale(L, rows)));
    return spread(r->be, din, (long)rows * L->in_size);
}

const bf_layer_ops bf_ops_BATCH_REDUCE = {
    .name = "BATCH_REDUCE", .flags = BF_LF_SCALAR | BF_LF_BATCH, .parse = bf_parse_emath, .infer = infer, .supported = supported,
    .forward = forward, .backward = backward,
};
