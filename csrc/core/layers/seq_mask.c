/* seq_mask.c - SEQ_MASK: a sequence given a mask computed in the graph (a
 * recurrent call's mask= argument, keras.layers.Masking). Inputs: the mask
 * m (T,) per sample, then the sequence x (T, ...); the output is x (a copy)
 * carrying the step mask (m != 0) as Embedding(mask_zero=True) carries its
 * own: a planned (B, T) buffer the forward writes and the masked layers
 * downstream read (masks.h). The mask is the first input so that the node's
 * in_size is the mask's length (seq_loss.c reads it so). No gradient flows
 * into the mask (it is piecewise constant), as in Keras. */
#include "layer.h"

#include <string.h>

#include "../emap_ops.h"

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    (void)shape;
    if (L->nin != 2) return BF_FAIL(BF_ERR_ARG, "%s: takes a mask and a sequence, got %d inputs", L->name, L->nin);
    if (rank != 1)
        return BF_FAIL(BF_ERR_SHAPE, "%s: a mask has one value per step, shape (T,) per sample, got rank %d", L->name,
                       rank);
    return BF_OK;
}

/* the sequence: (T, ...) with the mask's T; its shape is the output's */
static bf_status check(bf_model *m, int i) {
    bf_layer *L = &m->layers[i];
    const int s = L->in_ids[1], T = m->t_shape[L->in_ids[0]][0];
    if (m->t_rank[s] < 1 || m->t_shape[s][0] != T)
        return BF_FAIL(BF_ERR_SHAPE, "%s: the mask has %d steps and the sequence %d (shape (batch, T, ...) with the "
                       "mask's T is needed)", L->name, T, m->t_rank[s] >= 1 ? m->t_shape[s][0] : 0);
    L->out_rank = m->t_rank[s];
    memcpy(L->out_shape, m->t_shape[s], sizeof L->out_shape);
    return BF_OK;
}

static bf_status mask(const bf_model *m, int i, int *out) {
    (void)m;
    *out = i;
    return BF_OK;
}

static int supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->unary_map && be->ewise && be->fill_zero;
}

static bf_status plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    (void)tb;
    (void)bw;
    BF_TRY(bf_run_newbuf(r, &r->aux_id[i], (size_t)r->B * L->in_size * sizeof(float), BF_BUF_STATE, L->name,
                         " mask"));
    bf_run_use(r, r->aux_id[i], t);
    return BF_OK;
}

// mask (B, T) = m != 0; out (B, T, ...) = x
static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    const bf_map_op ne = {.op = BF_UN_COUNT + BF_BIN_NOT_EQUAL};
    BF_TRY(r->be->unary_map(r->be, BF_BUF(r, r->aux_id[i]), bf_step_in(r, i), &ne, (long)rows * L->in_size));
    return r->be->ewise(r->be, bf_step_out(r, i), bf_step_tensor(r, L->in_ids[1]), NULL, NULL, BF_EW_SCALE, 1.0f,
                        (long)rows * L->out_size);
}

// dx = dout; the mask's gradient is zero
static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    float *dx = bf_step_din(r, i, 1);
    if (din) BF_TRY(r->be->fill_zero(r->be, din, sizeof(float) * (size_t)rows * L->in_size));
    return dx ? r->be->ewise(r->be, dx, dout, NULL, NULL, BF_EW_SCALE, 1.0f, (long)rows * L->out_size) : BF_OK;
}

const bf_layer_ops bf_ops_SEQ_MASK = {
    .name = "SEQ_MASK",
    .flags = BF_LF_MULTI_IN | BF_LF_ANY_RANK,
    .infer = infer,
    .check = check,
    .mask = mask,
    .supported = supported,
    .plan = plan,
    .forward = forward,
    .backward = backward,
};
