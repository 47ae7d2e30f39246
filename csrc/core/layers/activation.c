/* activation.c - the Activation layer (and ReLU, LeakyReLU, ELU, Softmax)
 * and the activation dispatch every layer uses: Keras 3's other activations
 * go to actx_*, the first five to act_*. A linear activation, or one folded
 * into the loss, is a view. */
#include "layer.h"

bf_status bf_run_act_forward(bf_run *r, const bf_layer *L, float *out, const float *z, bf_act act, long N, int C) {
    bf_backend *be = r->be;
    if (bf_act_is_x(act)) return be->actx_forward(be, out, z, act, &L->actp, N * (long)C);
    return be->act_forward(be, out, z, act, N, C);
}

bf_status bf_run_act_backward(bf_run *r, const bf_layer *L, float *dz, const float *dout, const float *z,
                              const float *out, bf_act act, long N, int C) {
    bf_backend *be = r->be;
    if (bf_act_is_x(act)) return be->actx_backward(be, dz, dout, z, out, act, &L->actp, N * (long)C);
    return be->act_backward(be, dz, dout, out, act, N, C);
}

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    (void)shape;
    if (rank == 0 && L->act == BF_ACT_SOFTMAX) /* Keras: a softmax over the batch axis, mixing the samples */
        return BF_FAIL(BF_ERR_SHAPE, "%s: softmax of one number per sample (shape (None,)) would normalize over the "
                       "batch axis in Keras, mixing the samples; give it shape (None, 1) or more classes", L->name);
    return BF_OK;
}

static unsigned node_flags(const bf_run *r, int i) {
    const bf_layer *L = &r->m->layers[i];
    unsigned f = BF_LF_FUSABLE | BF_LF_ROWS;
    if (L->act == BF_ACT_LINEAR || r->node_fused[i]) f |= BF_LF_VIEW;
    if (bf_act_needs_x(L->act)) f |= BF_LF_READS_IN;
    else if (!r->node_fused[i]) f |= BF_LF_READS_OUT;
    return f;
}

static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    const int C = bf_last_dim(L);
    return bf_run_act_forward(r, L, bf_step_out(r, i), bf_step_in(r, i), bf_step_act(r, i), (long)rows * L->in_size / C,
                              C);
}

static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    const int C = bf_last_dim(L);
    if (!din) return BF_OK;
    return bf_run_act_backward(r, L, din, dout, bf_step_in(r, i), bf_step_out(r, i), bf_step_act(r, i),
                               (long)rows * L->in_size / C, C);
}

const bf_layer_ops bf_ops_ACTIVATION = {
    .name = "ACTIVATION",
    .flags = BF_LF_FUSABLE | BF_LF_SCALAR | BF_LF_ANY_RANK,
    .infer = infer,
    .mask = bf_mask_keep,
    .node_flags = node_flags,
    .forward = forward,
    .backward = backward,
};
