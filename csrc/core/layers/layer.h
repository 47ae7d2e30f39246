/* layer.h - what a layer file (csrc/core/layers/<family>.c) uses: the model
 * and run types, its node's buffers in a step, parameters and gradients,
 * planning (new buffers and their uses), the activation dispatch and the
 * shared geometry helpers. A layer file includes this header only. */
#ifndef BF_LAYERS_LAYER_H
#define BF_LAYERS_LAYER_H

#include <limits.h>

#include "../bufs.h"
#include "../masks.h"
#include "../step.h"
#include "registry.h"

/* ---- shapes and parameters (model.c: bf_add_param, bf_shape_str) ---- */

/* Keras's output length of a window k, stride s ('same' or 'valid') */
/* a window's output length: 0 (refused by the caller) when a valid window is longer than its input (C's division
 * truncates: (1 - 2) / 2 + 1 would be 1) */
static inline int bf_out_len(int in, int k, int s, int same) {
    return same ? (in - 1) / s + 1 : in < k ? 0 : (in - k) / s + 1;
}
/* a mask hook: the output carries the first input's mask */
bf_status bf_mask_keep(const bf_model *m, int i, int *mask);

/* a window's geometry (conv.c): Conv2D and pooling; the input's (H, W) or,
 * for pooling with allow_1d, a (T, C) input as a 1 x T image */
bf_status bf_infer_window(bf_layer *L, int rank, const int *shape, int allow_1d);
void bf_layer_geom(const bf_layer *L, int B, bf_conv_geom *g);
/* Conv1D: its geometry; Conv2DTranspose: the Conv2D it is the adjoint of (backend.h) */
void bf_layer_conv1d_geom(const bf_layer *L, int B, bf_conv1d_geom *g);
void bf_layer_convt_geom(const bf_layer *L, int B, bf_conv_geom *g);

/* random image layers (preprocess.c): a training forward starts (the micro-batch
 * counter), and node i's augmentation geometry for `rows` rows (the current draw) */
void bf_run_augment_begin(bf_run *r);
void bf_run_augment_geom(const bf_run *r, int i, int rows, bf_augment *a);

/* the size of a node's input's last axis, 1 for one number per sample (rank 0): the C of an (N, C) view */
static inline int bf_last_dim(const bf_layer *L) { return L->in_rank > 0 ? L->in_shape[L->in_rank - 1] : 1; }

/* ---- planning: bf_run_newbuf, bf_run_use (bufs.h); masks (masks.h) ---- */

/* ---- a step (run.c) ---- */

#define BF_BUF(r, id) ((float *)((r)->scratch + (r)->bufs[id].offset))
/* tensor t's values (the input batch slot for a single input) */
static inline float *bf_step_tensor(bf_run *r, int t) {
    return r->t_buf[t] == BF_X_NONE ? r->xslot[r->cur] : BF_BUF(r, r->t_buf[t]);
}
static inline float *bf_step_in(bf_run *r, int i) { return bf_step_tensor(r, r->m->layers[i].in_ids[0]); }
static inline float *bf_step_out(bf_run *r, int i) { return bf_step_tensor(r, r->m->n_inputs + i); }
/* a planned buffer id's memory, NULL for none (< 0) */
static inline float *bf_step_buf(bf_run *r, int id) { return id >= 0 ? BF_BUF(r, id) : NULL; }
/* node i's kept pre-activation, else `none` */
static inline float *bf_step_pre_act(bf_run *r, int i, float *none) {
    return r->aux_id[i] >= 0 ? BF_BUF(r, r->aux_id[i]) : none;
}
/* where node i writes its gradient for input j; NULL: not needed */
static inline float *bf_step_din(bf_run *r, int i, int j) {
    int g = r->gtmp[i][j];
    if (g == -3) return NULL;
    return BF_BUF(r, g == -2 ? r->t_grad[r->m->layers[i].in_ids[j]] : g);
}
static inline float *bf_step_param(bf_run *r, const bf_layer *L, int j) {
    return j < L->nparam ? r->w + L->params[j].offset : NULL;
}
static inline float *bf_step_grad(bf_run *r, const bf_layer *L, int j) {
    return j < L->nparam && L->params[j].trainable ? r->grads + L->params[j].grad_offset : NULL;
}
/* node i's activation in this run (linear when folded into the loss) */
static inline bf_act bf_step_act(const bf_run *r, int i) {
    return r->node_fused[i] ? BF_ACT_LINEAR : r->m->layers[i].act;
}
/* queue the bound of node i's parameter gradients (BF_LF_BOUND kinds) */
bf_status bf_run_take_bound(bf_run *r, int i, const float *inp, long n_in, const float *dz, long n_dz, double count);

/* out (rows, size) = one (size) in every row: a constant or a weight per sample (layers/common.c) */
bf_status bf_run_rows_of(bf_run *r, float *out, const float *one, int rows, long size);

/* out = act(z) (N,C) with the node's parameters; dz = act'(z or out) * dout (layers/activation.c) */
bf_status bf_run_act_forward(bf_run *r, const bf_layer *L, float *out, const float *z, bf_act act, long N, int C);
bf_status bf_run_act_backward(bf_run *r, const bf_layer *L, float *dz, const float *dout, const float *z,
                              const float *out, bf_act act, long N, int C);

#endif
