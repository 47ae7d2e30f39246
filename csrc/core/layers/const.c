/* const.c - Const: a per-sample constant, the same for every sample of the
 * batch, its values a non-trainable parameter set from Python: what a layer
 * called on an array inside a custom layer's call() reads (keras.io's
 * TokenAndPositionEmbedding: pos_emb(arange(maxlen))). It hangs on a tensor
 * of the graph only for the batch size, and gives that tensor no gradient. */
#include "layer.h"


static bf_status infer(bf_layer *L, int rank, const int *shape) {
    (void)rank;
    (void)shape;
    if (L->out_rank < 1) return BF_FAIL(BF_ERR_SHAPE, "%s: a constant needs a shape", L->name);
    bf_add_param(L, 0, "values", L->out_rank, L->out_shape, 0, BF_INIT_ZEROS, 0, 0);
    return BF_OK;
}

static int supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->strided_copy && be->fill_zero;
}

// out (B, shape...) = values (shape...) for every sample b
static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    return bf_run_rows_of(r, bf_step_out(r, i), bf_step_param(r, L, 0), rows, L->out_size);
}

// dinp (B, anchor...) = 0: the constant does not depend on its anchor
static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    (void)dout;
    const bf_layer *L = &r->m->layers[i];
    if (!din) return BF_OK;
    return r->be->fill_zero(r->be, din, sizeof(float) * (size_t)rows * (size_t)L->in_size);
}

const bf_layer_ops bf_ops_CONST = {
    .name = "CONST", .flags = BF_LF_OUT_GIVEN | BF_LF_SCALAR | BF_LF_ANY_RANK, .infer = infer, .supported = supported,
    .forward = forward, .backward = backward,
};
