/* batchnorm.c - BatchNormalization over the last axis: gamma, beta (when
 * scale / center), moving mean and variance (not trainable). The batch's
 * mean and inverse std are kept (aux, 2C floats) for backward. A frozen
 * layer runs in inference mode (Keras) and its backward is the affine
 * map's, which does not read the input; so is a call given training=False
 * (python/boundfit/layers/normalization.py allows it on a frozen layer only).
 * The backends' batchnorm ops take epsilon and momentum as checked here. */
#include <math.h>

#include "layer.h"

/* BatchNormalization and LayerNormalization (attention.c; it reads no momentum) */
bf_status bf_parse_norm(bf_layer *L, const bf_spec *s) {
    bf_norm_cfg *c = &L->cfg.norm;
    BF_TRY(bf_spec_float(s, "momentum", 0.99f, &c->momentum));
    BF_TRY(bf_spec_float(s, "eps", 1e-3f, &c->eps));
    BF_TRY(bf_spec_flag(s, "center", 1, &c->center));
    return bf_spec_flag(s, "scale", 1, &c->scale);
}

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    int C = shape[rank - 1];
    if (!(L->cfg.norm.eps >= 0.0f) || !isfinite(L->cfg.norm.eps))
        return BF_FAIL(BF_ERR_ARG, "%s: BatchNormalization epsilon must be >= 0, got %g", L->name,
                       (double)L->cfg.norm.eps);
    if (L->cfg.norm.scale) bf_add_param(L, 0, "gamma", 1, &C, 1, BF_INIT_ONES, 0, 0);
    if (L->cfg.norm.center) bf_add_param(L, 1, "beta", 1, &C, 1, BF_INIT_ZEROS, 0, 0);
    bf_add_param(L, 2, "moving_mean", 1, &C, 0, BF_INIT_ZEROS, 0, 0);
    bf_add_param(L, 3, "moving_variance", 1, &C, 0, BF_INIT_ONES, 0, 0);
    return BF_OK;
}

static int supported(const bf_backend *be, const bf_layer *L) {
    return be->batchnorm_forward && be->batchnorm_backward &&
           (!(L->frozen || L->train_mode == 2) || be->batchnorm_backward_frozen);
}

static unsigned node_flags(const bf_run *r, int i) {
    return (r->m->layers[i].frozen || !bf_node_training(r, i) ? 0 : BF_LF_READS_IN);
}

static bf_status plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    (void)tb;
    if (bw && !L->frozen && !bf_node_training(r, i))
        return BF_FAIL(BF_ERR_ARG, "%s: BatchNormalization called with training=False while trainable: its "
                       "inference mode gives no gradient to gamma and beta yet; freeze it (layer.trainable = False, as "
                       "Keras's fine-tuning guide does), or call it without training=", L->name);
    if (bf_node_training(r, i) && !L->frozen && !(L->cfg.norm.momentum >= 0.0f && L->cfg.norm.momentum <= 1.0f))
        return BF_FAIL(BF_ERR_ARG, "%s: BatchNormalization momentum must be in [0, 1] to train, got %g", L->name,
                       (double)L->cfg.norm.momentum);
    int C = L->in_shape[L->in_rank - 1];
    BF_TRY(bf_run_newbuf(r, &r->aux_id[i], 2 * (size_t)C * sizeof(float), BF_BUF_STATE,
                         L->name, " batch mean / inverse std"));
    bf_run_use(r, r->aux_id[i], t);
    return BF_OK;
}

static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    const bf_norm_cfg *c = &L->cfg.norm;
    long rows_in = (long)rows * L->in_size;
    int C = L->in_shape[L->in_rank - 1];
    float *st = BF_BUF(r, r->aux_id[i]);
    int j = 0;
    float *gamma = c->scale ? bf_step_param(r, L, j++) : NULL;
    float *beta = c->center ? bf_step_param(r, L, j++) : NULL;
    /* a frozen BatchNormalization runs in inference mode (Keras) */
    return r->be->batchnorm_forward(r->be, bf_step_out(r, i), st, st + C, bf_step_param(r, L, j),
                                    bf_step_param(r, L, j + 1), bf_step_in(r, i), gamma, beta, rows_in / C, C,
                                    c->momentum, c->eps, bf_node_training(r, i) && !L->frozen);
}

static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    const bf_norm_cfg *c = &L->cfg.norm;
    long rows_in = (long)rows * L->in_size;
    int C = L->in_shape[L->in_rank - 1];
    float *st = BF_BUF(r, r->aux_id[i]);
    int j = 0;
    float *gamma = c->scale ? bf_step_param(r, L, j) : NULL, *dgamma = c->scale ? bf_step_grad(r, L, j++) : NULL;
    float *dbeta = c->center ? bf_step_grad(r, L, j) : NULL;
    if (L->frozen || !bf_node_training(r, i)) { /* inference mode (forward): the affine map's backward */
        if (din) BF_TRY(r->be->batchnorm_backward_frozen(r->be, din, dout, st + C, gamma, rows_in / C, C));
        return BF_OK;
    }
    return r->be->batchnorm_backward(r->be, din, dgamma, dbeta, dout, bf_step_in(r, i), st, st + C, gamma, rows_in / C,
                                     C);
}

const bf_layer_ops bf_ops_BATCHNORM = {
    .name = "BATCHNORM",
    .flags = BF_LF_READS_IN,
    .parse = bf_parse_norm,
    .infer = infer,
    .mask = bf_mask_keep,
    .supported = supported,
    .node_flags = node_flags,
    .plan = plan,
    .forward = forward,
    .backward = backward,
};
