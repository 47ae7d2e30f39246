/* const.c - Const: a per-sample constant, the same for every sample of the
 * batch, its values a non-trainable parameter set from Python: what a layer
 * called on an array inside a custom layer's call() reads (keras.io's
 * TokenAndPositionEmbedding: pos_emb(arange(maxlen))). It hangs on a tensor
 * of the graph only for the batch size, and passes that tensor no gradient
 * (BF_LF_NO_GRAD_IN: no zero-filled gradient buffer to add). */
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

const bf_layer_ops bf_ops_CONST = {
    .name = "CONST", .flags = BF_LF_OUT_GIVEN | BF_LF_SCALAR | BF_LF_ANY_RANK | BF_LF_NO_GRAD_IN, .infer = infer,
    .supported = supported, .forward = forward,
};
