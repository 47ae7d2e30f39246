/* dropout.c - Dropout: in training a kept-mask buffer (B, in) drawn from
 * the run's stream per node and step; outside training, or at rate 0, a
 * view. */
#include "layer.h"

static bf_status parse(bf_layer *L, const bf_spec *s) { return bf_spec_float(s, "rate", 0.0f, &L->cfg.dropout.rate); }

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    const float rate = L->cfg.dropout.rate;
    (void)rank;
    (void)shape;
    if (!(rate >= 0.0f && rate < 1.0f))
        return BF_FAIL(BF_ERR_ARG, "%s: rate must be in [0, 1), got %g", L->name, (double)rate);
    return BF_OK;
}

static int supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->dropout_forward && be->dropout_backward;
}

static unsigned node_flags(const bf_run *r, int i) {
    const bf_layer *L = &r->m->layers[i];
    return !bf_node_training(r, i) || L->cfg.dropout.rate == 0.0f ? BF_LF_VIEW : 0;
}

static bf_status plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    (void)tb;
    (void)bw;
    if (!bf_node_training(r, i) || !(L->cfg.dropout.rate > 0.0f)) return BF_OK;
    BF_TRY(bf_run_newbuf(r, &r->aux_id[i], (size_t)r->B * L->in_size * sizeof(float), BF_BUF_STATE,
                         L->name, " dropout mask"));
    bf_run_use(r, r->aux_id[i], t);
    return BF_OK;
}

static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    if (r->aux_id[i] < 0) return BF_OK;
    uint64_t seed = bf_splitmix64(r->dropout_seed ^ ((uint64_t)i << 48));
    r->dropout_seed = bf_splitmix64(r->dropout_seed + 1);
    return r->be->dropout_forward(r->be, bf_step_out(r, i), BF_BUF(r, r->aux_id[i]), bf_step_in(r, i),
                                  (long)rows * L->in_size, L->cfg.dropout.rate, seed);
}

static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    if (r->aux_id[i] < 0 || !din) return BF_OK;
    return r->be->dropout_backward(r->be, din, dout, BF_BUF(r, r->aux_id[i]), (long)rows * L->in_size, L->cfg.dropout.rate);
}

const bf_layer_ops bf_ops_DROPOUT = {
    .name = "DROPOUT",
    .flags = BF_LF_SCALAR | BF_LF_ANY_RANK,
    .parse = parse,
    .infer = infer,
    .mask = bf_mask_keep,
    .supported = supported,
    .node_flags = node_flags,
    .plan = plan,
    .forward = forward,
    .backward = backward,
};
