/* dense.c - Dense: out (N, units) = act(inp (N, IN) @ kernel (IN, units) + bias)
 * over the last axis. Forward writes the pre-activation into the output (or
 * the kept pre-activation) and applies the activation; backward turns the
 * output gradient into the pre-activation's in place, then adds into the
 * kernel and bias gradients. */
#include "layer.h"

static bf_status parse(bf_layer *L, const bf_spec *s) {
    bf_dense_cfg *c = &L->cfg.dense;
    BF_TRY(bf_spec_size(s, "units", 0, &c->units));
    return bf_spec_flag(s, "use_bias", 1, &c->use_bias);
}

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    const bf_dense_cfg *c = &L->cfg.dense;
    int C = shape[rank - 1];
    if (c->units <= 0) return BF_FAIL(BF_ERR_ARG, "%s: units must be positive, got %d", L->name, c->units);
    L->out_shape[rank - 1] = c->units;
    int ks[2] = {C, c->units};
    bf_add_param(L, 0, "kernel", 2, ks, 1, BF_INIT_GLOROT_UNIFORM, (float)C, (float)c->units);
    if (c->use_bias) bf_add_param(L, 1, "bias", 1, &c->units, 1, BF_INIT_ZEROS, 0, 0);
    return BF_OK;
}

static bf_status forward(bf_run *r, int i, int rows) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    const bf_dense_cfg *c = &L->cfg.dense;
    float *in = bf_step_in(r, i), *out = bf_step_out(r, i);
    int IN = L->in_shape[L->in_rank - 1];
    int N = (int)((long)rows * L->in_size / IN);
    bf_act act = bf_step_act(r, i);
    float *z = bf_step_pre_act(r, i, out); /* pre-activation kept for backward */
    BF_TRY(be->dense_forward(be, z, in, bf_step_param(r, L, 0), c->use_bias ? bf_step_param(r, L, 1) : NULL, N, IN,
                             c->units));
    if (act != BF_ACT_LINEAR) BF_TRY(bf_run_act_forward(r, L, out, z, act, N, c->units));
    return BF_OK;
}

static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    const bf_dense_cfg *c = &L->cfg.dense;
    float *in = bf_step_in(r, i), *out = bf_step_out(r, i);
    long rows_in = (long)rows * L->in_size;
    int IN = L->in_shape[L->in_rank - 1];
    int N = (int)(rows_in / IN);
    bf_act act = bf_step_act(r, i);
    float *db = c->use_bias ? bf_step_grad(r, L, 1) : NULL;
    if (db && be->act_backward_bias && act != BF_ACT_LINEAR && act != BF_ACT_SOFTMAX && !bf_act_is_x(act)) {
        BF_TRY(be->act_backward_bias(be, dout, dout, out, act, N, c->units, db));
        db = NULL; /* summed */
    } else if (act != BF_ACT_LINEAR) {
        BF_TRY(bf_run_act_backward(r, L, dout, dout, bf_step_pre_act(r, i, NULL), out, act, N, c->units));
    }
    BF_TRY(bf_run_take_bound(r, i, in, rows_in, dout, (long)N * c->units, N));
    BF_TRY(be->dense_backward(be, din, bf_step_grad(r, L, 0), db, dout, in, bf_step_param(r, L, 0), N, IN, c->units));
    return BF_OK;
}

const bf_layer_ops bf_ops_DENSE = {
    .name = "DENSE",
    .flags = BF_LF_LINEAR_ACT | BF_LF_FUSABLE | BF_LF_BOUND | BF_LF_ANY_RANK | BF_LF_ROWS,
    .parse = parse,
    .infer = infer,
    .mask = bf_mask_keep,
    .forward = forward,
    .backward = backward,
};
