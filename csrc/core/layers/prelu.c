/* prelu.c - PReLU (Keras 3): out = max(x, 0) + alpha * min(x, 0), with one
 * weight "alpha" of the input's per-sample shape where the axes of
 * shared_axes (1-based over the per-sample axes, as Keras) have size 1.
 * The backend ops see the batch and the per-sample axes folded into
 * (P, Q, R, S) with alpha (Q, S): runs of shared axes (the batch first) are P
 * and R, runs of alpha's axes Q and S, which covers every pattern of up to
 * three per-sample axes. Backward overwrites the input's gradient, adds into
 * alpha's; either may be absent (a first layer, a frozen one). */
#include "layer.h"

/* shared_axes: 0 to 3 distinct-or-repeated axes, each 1 to 3 (the input's rank is checked by infer) */
static bf_status parse(bf_layer *L, const bf_spec *s) {
    bf_prelu_cfg *c = &L->cfg.prelu;
    int n, axes[3];
    BF_TRY(s->get_len(s, "shared_axes", &n));
    if (n > 3) return BF_FAIL(BF_ERR_ARG, "%s: shared_axes must have at most 3 entries, got %d", L->name, n);
    if (n > 0) BF_TRY(bf_spec_ints(s, "shared_axes", n, 1, 3, axes));
    for (int d = 0; d < 3; d++) c->shared[d] = 0;
    for (int k = 0; k < n; k++) c->shared[axes[k] - 1] = 1;
    return BF_OK;
}

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    const bf_prelu_cfg *c = &L->cfg.prelu;
    int as[3] = {1, 1, 1};
    for (int d = 0; d < 3; d++)
        if (c->shared[d] && d >= rank)
            return BF_FAIL(BF_ERR_ARG, "%s: shared_axes names axis %d, but its input of rank %d per sample has "
                           "axes 1 to %d", L->name, d + 1, rank, rank);
    for (int d = 0; d < rank; d++) as[d] = c->shared[d] ? 1 : shape[d];
    /* Keras's compute_fans (a rank-1 alpha: bf_add_param's own) */
    float fan_in = (float)as[0], fan_out = rank > 1 ? (float)as[1] : fan_in;
    if (rank == 3) fan_in = (float)as[0] * as[1], fan_out = (float)as[0] * as[2];
    bf_add_param(L, 0, "alpha", rank, as, 1, BF_INIT_ZEROS, fan_in, fan_out);
    return BF_OK;
}

/* rows samples folded into inp (P,Q,R,S), alpha (Q,S) (header) */
static void fold(const bf_layer *L, int rows, long *P, int *Q, int *R, int *S) {
    const int *sh = L->cfg.prelu.shared, n = L->in_rank;
    int d = 0;
    *P = rows;
    *Q = *R = *S = 1;
    for (; d < n && sh[d]; d++) *P *= L->in_shape[d];
    for (; d < n && !sh[d]; d++) *Q *= L->in_shape[d];
    for (; d < n && sh[d]; d++) *R *= L->in_shape[d];
    for (; d < n && !sh[d]; d++) *S *= L->in_shape[d];
}

static int supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->prelu_forward && be->prelu_backward;
}

static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    long P;
    int Q, R, S;
    fold(L, rows, &P, &Q, &R, &S);
    return r->be->prelu_forward(r->be, bf_step_out(r, i), bf_step_in(r, i), bf_step_param(r, L, 0), P, Q, R, S);
}

static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    float *dalpha = bf_step_grad(r, L, 0);
    if (!din && !dalpha) return BF_OK;
    long P;
    int Q, R, S;
    fold(L, rows, &P, &Q, &R, &S);
    return r->be->prelu_backward(r->be, din, dalpha, dout, bf_step_in(r, i), bf_step_param(r, L, 0), P, Q, R, S);
}

const bf_layer_ops bf_ops_PRELU = {
    .name = "PRELU",
    .flags = BF_LF_READS_IN,
    .parse = parse,
    .infer = infer,
    .mask = bf_mask_keep,
    .supported = supported,
    .forward = forward,
    .backward = backward,
};
