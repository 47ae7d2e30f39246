/* conv.c - Conv2D, Conv1D and Conv2DTranspose (one linear map then the
 * activation, as Dense), their configuration (bf_parse_conv, shared with
 * DepthwiseConv2D), and the window's configuration and geometry shared with
 * pooling (bf_parse_window, bf_layer_geom). Their workspaces come from the
 * backend's *_workspace_bytes and are planned per node, forward and backward
 * apart. */
#include "layer.h"

bf_status bf_parse_window(const bf_spec *s, bf_window_cfg *w) {
    BF_TRY(bf_spec_size(s, "kh", 1, &w->kh));
    BF_TRY(bf_spec_size(s, "kw", 1, &w->kw));
    BF_TRY(bf_spec_size(s, "sh", 1, &w->sh));
    BF_TRY(bf_spec_size(s, "sw", 1, &w->sw));
    BF_TRY(bf_spec_size(s, "kd", 1, &w->kd));
    BF_TRY(bf_spec_size(s, "sd", 1, &w->sd));
    return bf_spec_flag(s, "same", 0, &w->same);
}

/* a k x k window with strides over an (H, W, C) input; pooling of a (T, C)
 * input (allow_1d) is a 1 x T image (MaxPooling1D, AveragePooling1D) */
bf_status bf_infer_window(bf_layer *L, const bf_window_cfg *w, int rank, const int *shape, int allow_1d) {
    const int one_d = allow_1d && rank == 2 && w->kh == 1 && w->sh == 1;
    if (rank != 3 && !one_d)
        return BF_FAIL(BF_ERR_SHAPE, "%s expects input of rank 3 (H, W, C) per sample, got rank %d", L->name, rank);
    if (w->kh <= 0 || w->kw <= 0 || w->sh <= 0 || w->sw <= 0)
        return BF_FAIL(BF_ERR_ARG, "%s: window and strides must be positive", L->name);
    const int H = one_d ? 1 : shape[0], W = one_d ? shape[0] : shape[1];
    int oh = bf_out_len(H, w->kh, w->sh, w->same), ow = bf_out_len(W, w->kw, w->sw, w->same);
    if (oh <= 0 || ow <= 0)
        return BF_FAIL(BF_ERR_SHAPE, "%s: window %dx%d does not fit input %dx%d with padding='valid'",
                       L->name, w->kh, w->kw, H, W);
    if (one_d) {
        L->out_shape[0] = ow;
        return BF_OK;
    }
    L->out_shape[0] = oh;
    L->out_shape[1] = ow;
    return BF_OK;
}

void bf_layer_geom(const bf_layer *L, const bf_window_cfg *w, int B, bf_conv_geom *g) {
    const int one_d = L->in_rank == 2; /* a (T, C) input is a 1 x T image */
    g->B = B;
    g->H = one_d ? 1 : L->in_shape[0];
    g->W = L->in_shape[one_d ? 0 : 1];
    g->C = L->in_shape[one_d ? 1 : 2];
    if (!w) { /* the whole input: a global pooling */
        g->OH = g->OW = 1;
        g->KH = g->SH = g->H;
        g->KW = g->SW = g->W;
        g->K = g->C;
        g->PT = g->PL = 0;
        return;
    }
    g->OH = one_d ? 1 : L->out_shape[0];
    g->OW = L->out_shape[one_d ? 0 : 1];
    g->K = L->out_shape[one_d ? 1 : 2];
    g->KH = w->kh;
    g->KW = w->kw;
    g->SH = w->sh;
    g->SW = w->sw;
    int ph = (g->OH - 1) * g->SH + g->KH - g->H, pw = (g->OW - 1) * g->SW + g->KW - g->W;
    g->PT = w->same && ph > 0 ? ph / 2 : 0;
    g->PL = w->same && pw > 0 ? pw / 2 : 0;
}

void bf_layer_conv1d_geom(const bf_layer *L, int B, bf_conv1d_geom *g) {
    const bf_conv_cfg *c = &L->cfg.conv;
    g->B = B;
    g->T = L->in_shape[0];
    g->C = L->in_shape[1];
    g->OT = L->out_shape[0];
    g->K = L->out_shape[1];
    g->KW = c->win.kw;
    g->S = c->win.sw;
    g->D = c->dil;
    const int span = (c->win.kw - 1) * c->dil + 1, total = (g->OT - 1) * g->S + span - g->T;
    g->PL = c->causal ? span - 1 : c->win.same && total > 0 ? total / 2 : 0;
}

void bf_layer_convt_geom(const bf_layer *L, int B, bf_conv_geom *g) {
    const bf_window_cfg *w = &L->cfg.conv.win;
    const int one_d = L->in_rank == 2; /* Conv1DTranspose: a (T, C) sample is a 1 x T image */
    g->B = B;
    g->H = one_d ? 1 : L->out_shape[0];
    g->W = L->out_shape[one_d ? 0 : 1];
    g->C = L->out_shape[one_d ? 1 : 2];
    g->OH = one_d ? 1 : L->in_shape[0];
    g->OW = L->in_shape[one_d ? 0 : 1];
    g->K = L->in_shape[one_d ? 1 : 2];
    g->KH = w->kh;
    g->KW = w->kw;
    g->SH = w->sh;
    g->SW = w->sw;
    /* Keras / JAX 'same': the conv with input in*s pads k - s in all, half on top */
    g->PT = w->same && w->kh > w->sh ? (w->kh - w->sh) / 2 : 0;
    g->PL = w->same && w->kw > w->sw ? (w->kw - w->sw) / 2 : 0;
}

bf_status bf_parse_conv(bf_layer *L, const bf_spec *s) {
    bf_conv_cfg *c = &L->cfg.conv;
    BF_TRY(bf_parse_window(s, &c->win));
    BF_TRY(bf_spec_size(s, "filters", 0, &c->filters));
    BF_TRY(bf_spec_flag(s, "use_bias", 1, &c->use_bias));
    BF_TRY(bf_spec_size(s, "dil", 1, &c->dil));
    BF_TRY(bf_spec_size(s, "groups", 0, &c->groups));
    return bf_spec_flag(s, "causal", 0, &c->causal);
}

/* a workspace of w bytes (none when 0): forward at t, or backward at tb */
bf_status bf_conv_plan_ws(bf_run *r, int i, size_t w, int back, int t, int tb) {
    if (!w) return BF_OK;
    int *id = back ? &r->bws_id[i] : &r->fws_id[i];
    BF_TRY(bf_run_newbuf(r, id, w, BF_BUF_WORKSPACE,
                         r->m->layers[i].name, back ? " backward workspace" : " forward workspace"));
    bf_run_use(r, *id, back ? tb : t);
    return BF_OK;
}

/* the activation after the linear map, in place (forward) */
bf_status bf_conv_act_after(bf_run *r, int i, int rows, float *z) {
    const bf_layer *L = &r->m->layers[i];
    const bf_conv_cfg *c = &L->cfg.conv;
    bf_act act = bf_step_act(r, i);
    if (act == BF_ACT_LINEAR) return BF_OK;
    return bf_run_act_forward(r, L, bf_step_out(r, i), z, act, (long)rows * L->out_size / c->filters, c->filters);
}

/* dout of the activation into dz of the linear map, in place (backward) */
bf_status bf_conv_act_back(bf_run *r, int i, int rows, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    const bf_conv_cfg *c = &L->cfg.conv;
    bf_act act = bf_step_act(r, i);
    if (act == BF_ACT_LINEAR) return BF_OK;
    return bf_run_act_backward(r, L, dout, dout, bf_step_pre_act(r, i, NULL), bf_step_out(r, i), act,
                               (long)rows * L->out_size / c->filters, c->filters);
}

/* ---- Conv2D: kernel (kh, kw, C, filters) ---- */

static bf_status conv2d_infer(bf_layer *L, int rank, const int *shape) {
    const bf_conv_cfg *c = &L->cfg.conv;
    const bf_window_cfg *w = &c->win;
    BF_TRY(bf_infer_window(L, w, rank, shape, 0));
    int C = shape[rank - 1];
    if (c->filters <= 0) return BF_FAIL(BF_ERR_ARG, "%s: filters must be positive", L->name);
    L->out_shape[2] = c->filters;
    int ks[4] = {w->kh, w->kw, C, c->filters};
    float rf = (float)(w->kh * w->kw);
    bf_add_param(L, 0, "kernel", 4, ks, 1, BF_INIT_GLOROT_UNIFORM, rf * C, rf * c->filters);
    if (c->use_bias) bf_add_param(L, 1, "bias", 1, &c->filters, 1, BF_INIT_ZEROS, 0, 0);
    return BF_OK;
}

static int conv2d_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->conv2d_forward && be->conv2d_backward && be->conv2d_workspace_bytes;
}

static bf_status conv2d_plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    bf_conv_geom g;
    bf_layer_geom(L, &L->cfg.conv.win, r->B, &g);
    BF_TRY(bf_conv_plan_ws(r, i, r->be->conv2d_workspace_bytes(r->be, &g, 0), 0, t, tb));
    if (bw) BF_TRY(bf_conv_plan_ws(r, i, r->be->conv2d_workspace_bytes(r->be, &g, 1), 1, t, tb));
    return BF_OK;
}

static bf_status conv2d_forward(bf_run *r, int i, int rows) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    const bf_conv_cfg *c = &L->cfg.conv;
    bf_conv_geom g;
    float *z = bf_step_pre_act(r, i, bf_step_out(r, i));
    bf_layer_geom(L, &c->win, rows, &g);
    BF_TRY(be->conv2d_forward(be, z, bf_step_buf(r, r->fws_id[i]), bf_step_in(r, i), bf_step_param(r, L, 0),
                              c->use_bias ? bf_step_param(r, L, 1) : NULL, &g));
    return bf_conv_act_after(r, i, rows, z);
}

static bf_status conv2d_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    const bf_conv_cfg *c = &L->cfg.conv;
    float *in = bf_step_in(r, i);
    bf_conv_geom g;
    bf_layer_geom(L, &c->win, rows, &g);
    BF_TRY(bf_conv_act_back(r, i, rows, dout));
    BF_TRY(bf_run_take_bound(r, i, in, (long)rows * L->in_size, dout, (long)rows * L->out_size,
                             (double)rows * g.OH * g.OW));
    return be->conv2d_backward(be, din, bf_step_grad(r, L, 0), c->use_bias ? bf_step_grad(r, L, 1) : NULL,
                               bf_step_buf(r, r->bws_id[i]), dout, in, bf_step_param(r, L, 0), &g);
}

const bf_layer_ops bf_ops_CONV2D = {
    .name = "CONV2D",
    .flags = BF_LF_LINEAR_ACT | BF_LF_FUSABLE | BF_LF_BOUND | BF_LF_ROWS,
    .parse = bf_parse_conv,
    .infer = conv2d_infer,
    .supported = conv2d_supported,
    .plan = conv2d_plan,
    .forward = conv2d_forward,
    .backward = conv2d_backward,
};

/* ---- Conv1D: kernel (kw, C, filters); dilation, 'same' / 'causal' ---- */

static bf_status conv1d_infer(bf_layer *L, int rank, const int *shape) {
    const bf_conv_cfg *c = &L->cfg.conv;
    const bf_window_cfg *w = &c->win;
    int C = shape[rank - 1];
    if (rank != 2)
        return BF_FAIL(BF_ERR_SHAPE, "%s expects input of rank 2 (steps, channels) per sample, got rank %d", L->name, rank);
    if (w->kw <= 0 || w->sw <= 0 || c->dil <= 0 || c->filters <= 0)
        return BF_FAIL(BF_ERR_ARG, "%s: kernel_size, strides, dilation_rate and filters must be positive", L->name);
    if ((long long)(w->kw - 1) * c->dil + 1 > INT_MAX)
        return BF_FAIL(BF_ERR_ARG, "%s: kernel_size %d with dilation_rate %d spans more than %d steps", L->name, w->kw,
                       c->dil, INT_MAX);
    const int span = (w->kw - 1) * c->dil + 1;
    const int ot = w->same || c->causal ? (shape[0] - 1) / w->sw + 1 : (shape[0] - span) / w->sw + 1;
    if (ot <= 0 || (!w->same && !c->causal && shape[0] < span))
        return BF_FAIL(BF_ERR_SHAPE, "%s: kernel %d with dilation %d does not fit %d steps with padding='valid'",
                       L->name, w->kw, c->dil, shape[0]);
    L->out_shape[0] = ot;
    L->out_shape[1] = c->filters;
    int ks[3] = {w->kw, C, c->filters};
    bf_add_param(L, 0, "kernel", 3, ks, 1, BF_INIT_GLOROT_UNIFORM, (float)w->kw * C, (float)w->kw * c->filters);
    if (c->use_bias) bf_add_param(L, 1, "bias", 1, &c->filters, 1, BF_INIT_ZEROS, 0, 0);
    return BF_OK;
}

static int conv1d_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->conv1d_forward && be->conv1d_backward && be->conv1d_workspace_bytes;
}

static bf_status conv1d_plan(bf_run *r, int i, int t, int tb, int bw) {
    bf_conv1d_geom g;
    bf_layer_conv1d_geom(&r->m->layers[i], r->B, &g);
    for (int back = 0; back < 1 + bw; back++)
        BF_TRY(bf_conv_plan_ws(r, i, r->be->conv1d_workspace_bytes(r->be, &g, back), back, t, tb));
    return BF_OK;
}

static bf_status conv1d_forward(bf_run *r, int i, int rows) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    const bf_conv_cfg *c = &L->cfg.conv;
    bf_conv1d_geom g;
    bf_layer_conv1d_geom(L, rows, &g);
    float *z = bf_step_pre_act(r, i, bf_step_out(r, i));
    BF_TRY(be->conv1d_forward(be, z, bf_step_buf(r, r->fws_id[i]), bf_step_in(r, i), bf_step_param(r, L, 0),
                              c->use_bias ? bf_step_param(r, L, 1) : NULL, &g));
    return bf_conv_act_after(r, i, rows, z);
}

static bf_status conv1d_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    const bf_conv_cfg *c = &L->cfg.conv;
    bf_conv1d_geom g;
    bf_layer_conv1d_geom(L, rows, &g);
    BF_TRY(bf_conv_act_back(r, i, rows, dout));
    return be->conv1d_backward(be, din, bf_step_grad(r, L, 0), c->use_bias ? bf_step_grad(r, L, 1) : NULL,
                               bf_step_buf(r, r->bws_id[i]), dout, bf_step_in(r, i), bf_step_param(r, L, 0), &g);
}

const bf_layer_ops bf_ops_CONV1D = {
    .name = "CONV1D",
    .flags = BF_LF_LINEAR_ACT,
    .parse = bf_parse_conv,
    .infer = conv1d_infer,
    .supported = conv1d_supported,
    .plan = conv1d_plan,
    .forward = conv1d_forward,
    .backward = conv1d_backward,
};

/* ---- Conv2DTranspose: kernel (kh, kw, filters, C); the adjoint of a Conv2D.
 * Conv1DTranspose is the same kind on a (T, C) input with kh = sh = 1: a
 * 1 x T image, kernel (k, filters, C) (Keras's layout, the same memory). ---- */

/* Keras (output_padding=None): 'same' in*s, 'valid' (in-1)*s + max(k, s) */
long long bf_convt_len(int in, int k, int s, int same) {
    return same ? (long long)in * s : (long long)(in - 1) * s + (k > s ? k : s);
}

static bf_status convt_infer(bf_layer *L, int rank, const int *shape) {
    const bf_conv_cfg *c = &L->cfg.conv;
    const bf_window_cfg *w = &c->win;
    int C = shape[rank - 1];
    const int one_d = rank == 2 && w->kh == 1 && w->sh == 1;
    if (rank != 3 && !one_d)
        return BF_FAIL(BF_ERR_SHAPE, "%s expects input of rank 3 (H, W, C) per sample (rank 2 (T, C) for "
                       "Conv1DTranspose), got rank %d", L->name, rank);
    if (w->kh <= 0 || w->kw <= 0 || w->sh <= 0 || w->sw <= 0 || c->filters <= 0)
        return BF_FAIL(BF_ERR_ARG, "%s: kernel_size, strides and filters must be positive", L->name);
    float rf = (float)(w->kh * w->kw);
    if (one_d) {
        BF_TRY(bf_out_dim(L, bf_convt_len(shape[0], w->kw, w->sw, w->same), &L->out_shape[0]));
        L->out_shape[1] = c->filters;
        int ks[3] = {w->kw, c->filters, C};
        bf_add_param(L, 0, "kernel", 3, ks, 1, BF_INIT_GLOROT_UNIFORM, rf * c->filters, rf * C);
    } else {
        BF_TRY(bf_out_dim(L, bf_convt_len(shape[0], w->kh, w->sh, w->same), &L->out_shape[0]));
        BF_TRY(bf_out_dim(L, bf_convt_len(shape[1], w->kw, w->sw, w->same), &L->out_shape[1]));
        L->out_shape[2] = c->filters;
        int ks[4] = {w->kh, w->kw, c->filters, C};
        bf_add_param(L, 0, "kernel", 4, ks, 1, BF_INIT_GLOROT_UNIFORM, rf * c->filters, rf * C);
    }
    if (c->use_bias) bf_add_param(L, 1, "bias", 1, &c->filters, 1, BF_INIT_ZEROS, 0, 0);
    return BF_OK;
}

static int convt_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->conv2d_transpose_forward && be->conv2d_transpose_backward && be->conv2d_transpose_workspace_bytes;
}

static bf_status convt_plan(bf_run *r, int i, int t, int tb, int bw) {
    bf_conv_geom g;
    bf_layer_convt_geom(&r->m->layers[i], r->B, &g);
    for (int back = 0; back < 1 + bw; back++)
        BF_TRY(bf_conv_plan_ws(r, i, r->be->conv2d_transpose_workspace_bytes(r->be, &g, back), back, t, tb));
    return BF_OK;
}

static bf_status convt_forward(bf_run *r, int i, int rows) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    const bf_conv_cfg *c = &L->cfg.conv;
    bf_conv_geom g;
    bf_layer_convt_geom(L, rows, &g);
    float *z = bf_step_pre_act(r, i, bf_step_out(r, i));
    BF_TRY(be->conv2d_transpose_forward(be, z, bf_step_buf(r, r->fws_id[i]), bf_step_in(r, i), bf_step_param(r, L, 0),
                                        c->use_bias ? bf_step_param(r, L, 1) : NULL, &g));
    return bf_conv_act_after(r, i, rows, z);
}

static bf_status convt_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    const bf_conv_cfg *c = &L->cfg.conv;
    bf_conv_geom g;
    bf_layer_convt_geom(L, rows, &g);
    BF_TRY(bf_conv_act_back(r, i, rows, dout));
    return be->conv2d_transpose_backward(be, din, bf_step_grad(r, L, 0), c->use_bias ? bf_step_grad(r, L, 1) : NULL,
                                         bf_step_buf(r, r->bws_id[i]), dout, bf_step_in(r, i),
                                         bf_step_param(r, L, 0), &g);
}

const bf_layer_ops bf_ops_CONV2DT = {
    .name = "CONV2DT",
    .flags = BF_LF_LINEAR_ACT,
    .parse = bf_parse_conv,
    .infer = convt_infer,
    .supported = convt_supported,
    .plan = convt_plan,
    .forward = convt_forward,
    .backward = convt_backward,
};
