/* step_bufs.h - a node's memory in a step: its inputs' and output's values,
 * its planned buffers, its parameters and their gradients, where it writes
 * its inputs' gradients (run.c and the layer files, through layers/layer.h),
 * and the two calls between run.c and the layer files in a step. */
#ifndef BF_STEP_BUFS_H
#define BF_STEP_BUFS_H

#include "step.h"

#define BF_BUF(r, id) ((float *)((r)->scratch + (r)->bufs[id].offset))
/* tensor t's values (the input batch slot for a single input) */
static inline float *bf_step_tensor(bf_run *r, int t) {
    if (r->cv_on && r->cv_t[t]) return r->cv_t[t]; /* mixed precision: a chunk's float32 rows (mixed.c) */
    return r->t_buf[t] == BF_X_NONE ? r->xslot[r->cur] : BF_BUF(r, r->t_buf[t]);
}
static inline float *bf_step_in(bf_run *r, int i) { return bf_step_tensor(r, r->m->layers[i].in_ids[0]); }
static inline float *bf_step_out(bf_run *r, int i) { return bf_step_tensor(r, r->m->n_inputs + i); }
/* a planned buffer id's memory, NULL for none (< 0) */
static inline float *bf_step_buf(bf_run *r, int id) { return id >= 0 ? BF_BUF(r, id) : NULL; }
/* node i's kept pre-activation, else `none` */
static inline float *bf_step_pre_act(bf_run *r, int i, float *none) {
    if (r->cv_on == i + 1 && r->aux_id[i] >= 0) return BF_BUF(r, r->aux_id[i]) + r->cv_row0 * r->m->layers[i].out_size;
    return r->aux_id[i] >= 0 ? BF_BUF(r, r->aux_id[i]) : none;
}
/* where node i writes its gradient for input j; NULL: not needed */
static inline float *bf_step_din(bf_run *r, int i, int j) {
    if (r->cv_on == i + 1) return r->cv_din[j]; /* mixed precision: the chunk's (mixed.c) */
    int g = r->gtmp[bf_model_edge(r->m, i, j)];
    if (g == -3) return NULL;
    return BF_BUF(r, g == -2 ? r->t_grad[r->m->layers[i].in_ids[j]] : g);
}
/* parameter j of L, NULL past its parameters */
static inline float *bf_step_param(bf_run *r, const bf_layer *L, int j) {
    return j < L->nparam ? r->w + L->params[j].offset : NULL;
}
/* the gradient of parameter j of L, NULL when it has none (not trainable, or a run without gradients) */
static inline float *bf_step_grad(bf_run *r, const bf_layer *L, int j) {
    return j < L->nparam && L->params[j].trainable && r->grads ? r->grads + L->params[j].grad_offset : NULL;
}
/* node i's activation in this run (linear when folded into the loss) */
static inline bf_act bf_step_act(const bf_run *r, int i) {
    return r->node_fused[i] ? BF_ACT_LINEAR : r->m->layers[i].act;
}
/* queue the bound of node i's parameter gradients (BF_LF_BOUND kinds; run.c) */
bf_status bf_run_take_bound(bf_run *r, int i, const float *inp, long n_in, const float *dz, long n_dz, double count);
/* a forward starts: the random image layers' micro-batch counter (layers/preprocess.c) */
void bf_run_augment_begin(bf_run *r);

#endif
