/* depthwise.c - DepthwiseConv2D (Keras 3): each input channel convolved with
 * its own depth_multiplier (M, kept in bf_conv_cfg.filters) kernels; out (H', W', C*M)
 * (DepthwiseConv1D: a (T, C) sample as a 1 x T image, kh = sh = 1)
 * with channel c*M + m, depthwise_kernel (kh, kw, C, M), bias (C*M), then the
 * activation, as Conv2D. Window geometry and 'valid' / 'same' padding as
 * Conv2D's (conv.c). A Conv2D(filters, groups=C) on C channels is this map
 * (M = filters / C): its kernel (kh, kw, 1, C*M) is the same memory as
 * (kh, kw, C, M), named and fanned as Conv2D's (groups > 0). */
#include "layer.h"

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    const bf_conv_cfg *c = &L->cfg.conv;
    if (c->filters <= 0)
        return BF_FAIL(BF_ERR_ARG, "%s: depth_multiplier must be positive, got %d", L->name, c->filters);
    BF_TRY(bf_infer_window(L, &c->win, rank, shape, 1));
    const int C = shape[rank - 1], M = c->filters, K = C * M, one_d = rank == 2;
    L->out_shape[rank - 1] = K;
    float rf = (float)(c->win.kh * c->win.kw);
    if (c->groups > 0) {
        if (c->groups != C || one_d)
            return BF_FAIL(BF_ERR_ARG, "%s: groups=%d on an input of %d channels: boundfit's grouped Conv2D needs "
                           "groups equal to the input channels (a depthwise convolution); use groups=1 or %d",
                           L->name, c->groups, C, C);
        int gs[4] = {c->win.kh, c->win.kw, 1, K};
        bf_add_param(L, 0, "kernel", 4, gs, 1, BF_INIT_GLOROT_UNIFORM, rf, rf * K);
    } else {
        int ks[4] = {c->win.kh, c->win.kw, C, M};
        /* DepthwiseConv1D: its kernel (kw, C, M), the same memory */
        bf_add_param(L, 0, "depthwise_kernel", 4 - one_d, ks + one_d, 1, BF_INIT_GLOROT_UNIFORM, rf * C, rf * M);
    }
    if (c->use_bias) bf_add_param(L, 1, "bias", 1, &K, 1, BF_INIT_ZEROS, 0, 0);
    return BF_OK;
}

static int supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->depthwise_forward && be->depthwise_backward;
}

static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    const bf_conv_cfg *c = &L->cfg.conv;
    bf_conv_geom g;
    bf_layer_geom(L, &c->win, rows, &g);
    float *out = bf_step_out(r, i), *z = bf_step_pre_act(r, i, out);
    BF_TRY(r->be->depthwise_forward(r->be, z, bf_step_in(r, i), bf_step_param(r, L, 0),
                                    c->use_bias ? bf_step_param(r, L, 1) : NULL, &g));
    bf_act act = bf_step_act(r, i);
    if (act == BF_ACT_LINEAR) return BF_OK;
    return bf_run_act_forward(r, L, out, z, act, (long)rows * g.OH * g.OW, g.K);
}

static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    const bf_conv_cfg *c = &L->cfg.conv;
    bf_conv_geom g;
    bf_layer_geom(L, &c->win, rows, &g);
    bf_act act = bf_step_act(r, i);
    if (act != BF_ACT_LINEAR)
        BF_TRY(bf_run_act_backward(r, L, dout, dout, bf_step_pre_act(r, i, NULL), bf_step_out(r, i), act,
                                   (long)rows * g.OH * g.OW, g.K));
    return r->be->depthwise_backward(r->be, din, bf_step_grad(r, L, 0), c->use_bias ? bf_step_grad(r, L, 1) : NULL,
                                     dout, bf_step_in(r, i), bf_step_param(r, L, 0), &g);
}

const bf_layer_ops bf_ops_DEPTHWISE2D = {
    .name = "DEPTHWISE2D",
    .flags = BF_LF_LINEAR_ACT,
    .parse = bf_parse_conv,
    .infer = infer,
    .supported = supported,
    .forward = forward,
    .backward = backward,
};
