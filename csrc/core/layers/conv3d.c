/* conv3d.c - Conv3D and Conv3DTranspose over (D, H, W, C) samples: one
 * linear map then the activation, as Conv2D (conv.c, whose configuration,
 * workspace planning and activation steps they share), with the depth
 * axis's window kd and stride sd. Kernels (kd, kh, kw, C, filters) and,
 * transposed, (kd, kh, kw, filters, C), as Keras. The backend ops are the
 * CPU's (cpu/conv3d.c); on other backends `supported` is 0 and the model is
 * refused naming the layer. */
#include "layer.h"

/* node L's Conv3D geometry for B samples; transpose: the Conv3D whose input is L's output (conv.c's scheme) */
static void geom3d(const bf_layer *L, int B, int transpose, bf_conv3d_geom *g) {
    const bf_window_cfg *w = &L->cfg.conv.win;
    const int *x = transpose ? L->out_shape : L->in_shape, *y = transpose ? L->in_shape : L->out_shape;
    bf_conv_geom *p = &g->p;
    p->B = B;
    g->D = x[0];
    p->H = x[1];
    p->W = x[2];
    p->C = x[3];
    g->OD = y[0];
    p->OH = y[1];
    p->OW = y[2];
    p->K = y[3];
    g->KD = w->kd;
    p->KH = w->kh;
    p->KW = w->kw;
    g->SD = w->sd;
    p->SH = w->sh;
    p->SW = w->sw;
    if (transpose) { /* Keras / JAX 'same': the conv with input in*s pads k - s in all, half in front */
        g->PF = w->same && w->kd > w->sd ? (w->kd - w->sd) / 2 : 0;
        p->PT = w->same && w->kh > w->sh ? (w->kh - w->sh) / 2 : 0;
        p->PL = w->same && w->kw > w->sw ? (w->kw - w->sw) / 2 : 0;
        return;
    }
    const int pd = (g->OD - 1) * g->SD + g->KD - g->D, ph = (p->OH - 1) * p->SH + p->KH - p->H,
              pw = (p->OW - 1) * p->SW + p->KW - p->W;
    g->PF = w->same && pd > 0 ? pd / 2 : 0;
    p->PT = w->same && ph > 0 ? ph / 2 : 0;
    p->PL = w->same && pw > 0 ? pw / 2 : 0;
}

static bf_status infer_any(bf_layer *L, int rank, const int *shape, int transpose) {
    const bf_conv_cfg *c = &L->cfg.conv;
    const bf_window_cfg *w = &c->win;
    if (rank != 4)
        return BF_FAIL(BF_ERR_SHAPE, "%s expects input of rank 4 (D, H, W, C) per sample, got rank %d", L->name, rank);
    if (w->kd <= 0 || w->kh <= 0 || w->kw <= 0 || w->sd <= 0 || w->sh <= 0 || w->sw <= 0 || c->filters <= 0)
        return BF_FAIL(BF_ERR_ARG, "%s: kernel_size, strides and filters must be positive", L->name);
    const int k[3] = {w->kd, w->kh, w->kw}, s[3] = {w->sd, w->sh, w->sw}, C = shape[3];
    for (int a = 0; a < 3; a++) {
        if (transpose) {
            BF_TRY(bf_out_dim(L, bf_convt_len(shape[a], k[a], s[a], w->same), &L->out_shape[a]));
        } else if ((L->out_shape[a] = bf_out_len(shape[a], k[a], s[a], w->same)) <= 0) {
            return BF_FAIL(BF_ERR_SHAPE, "%s: window %dx%dx%d does not fit input %dx%dx%d with padding='valid'",
                           L->name, w->kd, w->kh, w->kw, shape[0], shape[1], shape[2]);
        }
    }
    L->out_rank = 4;
    L->out_shape[3] = c->filters;
    const int ks[5] = {w->kd, w->kh, w->kw, transpose ? c->filters : C, transpose ? C : c->filters};
    const float rf = (float)w->kd * w->kh * w->kw;
    bf_add_param(L, 0, "kernel", 5, ks, 1, BF_INIT_GLOROT_UNIFORM, rf * ks[3], rf * ks[4]);
    if (c->use_bias) bf_add_param(L, 1, "bias", 1, &c->filters, 1, BF_INIT_ZEROS, 0, 0);
    return BF_OK;
}

static bf_status conv3d_infer(bf_layer *L, int rank, const int *shape) { return infer_any(L, rank, shape, 0); }
static bf_status convt3d_infer(bf_layer *L, int rank, const int *shape) { return infer_any(L, rank, shape, 1); }

static int supported(const bf_backend *be, const bf_layer *L) {
    const int t = L->kind == BF_L_CONV3DT;
    return be->conv3d_workspace_bytes && (t ? be->conv3d_transpose_forward && be->conv3d_transpose_backward
                                            : be->conv3d_forward && be->conv3d_backward);
}

static bf_status plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    const int tr = L->kind == BF_L_CONV3DT;
    bf_conv3d_geom g;
    geom3d(L, r->B, tr, &g);
    for (int back = 0; back < 1 + bw; back++)
        BF_TRY(bf_conv_plan_ws(r, i, r->be->conv3d_workspace_bytes(r->be, &g, tr, back), back, t, tb));
    return BF_OK;
}

static bf_status forward(bf_run *r, int i, int rows) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    const bf_conv_cfg *c = &L->cfg.conv;
    const int tr = L->kind == BF_L_CONV3DT;
    bf_conv3d_geom g;
    geom3d(L, rows, tr, &g);
    float *z = bf_step_pre_act(r, i, bf_step_out(r, i)), *ws = bf_step_buf(r, r->fws_id[i]);
    const float *in = bf_step_in(r, i), *w = bf_step_param(r, L, 0), *b = c->use_bias ? bf_step_param(r, L, 1) : NULL;
    BF_TRY(tr ? be->conv3d_transpose_forward(be, z, ws, in, w, b, &g) : be->conv3d_forward(be, z, ws, in, w, b, &g));
    return bf_conv_act_after(r, i, rows, z);
}

static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    const bf_conv_cfg *c = &L->cfg.conv;
    const int tr = L->kind == BF_L_CONV3DT;
    bf_conv3d_geom g;
    geom3d(L, rows, tr, &g);
    BF_TRY(bf_conv_act_back(r, i, rows, dout));
    float *dw = bf_step_grad(r, L, 0), *db = c->use_bias ? bf_step_grad(r, L, 1) : NULL;
    float *ws = bf_step_buf(r, r->bws_id[i]);
    const float *in = bf_step_in(r, i), *w = bf_step_param(r, L, 0);
    return tr ? be->conv3d_transpose_backward(be, din, dw, db, ws, dout, in, w, &g)
              : be->conv3d_backward(be, din, dw, db, ws, dout, in, w, &g);
}

const bf_layer_ops bf_ops_CONV3D = {
    .name = "CONV3D",
    .flags = BF_LF_LINEAR_ACT | BF_LF_ANY_RANK,
    .parse = bf_parse_conv,
    .infer = conv3d_infer,
    .supported = supported,
    .plan = plan,
    .forward = forward,
    .backward = backward,
};

const bf_layer_ops bf_ops_CONV3DT = {
    .name = "CONV3DT",
    .flags = BF_LF_LINEAR_ACT | BF_LF_ANY_RANK,
    .parse = bf_parse_conv,
    .infer = convt3d_infer,
    .supported = supported,
    .plan = plan,
    .forward = forward,
    .backward = backward,
};
