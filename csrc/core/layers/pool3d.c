/* pool3d.c - MaxPooling3D and AveragePooling3D over (D, H, W, C) samples
 * (channels_first: (C, D, H, W), C one-channel volumes), in two passes of
 * the 2D pooling ops: each depth plane over its (kh, kw) window into `mid`
 * (rows, D, OH, OW, C), then `mid` over the depth window kd as an image of
 * D x 1 pixels of OH*OW*C channels. Both are separable: a 3D window's
 * valid cells are the product of its axes' valid ranges, so the maximum of
 * the planes' maxima is the window's, the mean of their means (each over
 * its valid cells) is the mean over the valid cells (Keras 'same'), and
 * max's gradient reaches the first maximum in (d, h, w) order, as Keras
 * (JAX's select-and-scatter). `mid` is planned: a workspace of forward
 * (average), kept for backward (max), and its gradient a backward
 * workspace. */
#include "layer.h"

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    const bf_pool_cfg *c = &L->cfg.pool;
    const bf_window_cfg *w = &c->win;
    if (rank != 4)
        return BF_FAIL(BF_ERR_SHAPE, "%s expects input of rank 4 per sample ((D, H, W, C), or (C, D, H, W) with "
                       "data_format='channels_first'), got rank %d", L->name, rank);
    if (w->kd <= 0 || w->kh <= 0 || w->kw <= 0 || w->sd <= 0 || w->sh <= 0 || w->sw <= 0)
        return BF_FAIL(BF_ERR_ARG, "%s: pool_size and strides must be positive", L->name);
    const int f = c->chan_first, k[3] = {w->kd, w->kh, w->kw}, s[3] = {w->sd, w->sh, w->sw};
    for (int a = 0; a < 3; a++)
        if ((L->out_shape[a + f] = bf_out_len(shape[a + f], k[a], s[a], w->same)) <= 0)
            return BF_FAIL(BF_ERR_SHAPE, "%s: window %dx%dx%d does not fit input %dx%dx%d with padding='valid'",
                           L->name, w->kd, w->kh, w->kw, shape[f], shape[f + 1], shape[f + 2]);
    L->out_shape[f ? 0 : 3] = shape[f ? 0 : 3];
    return BF_OK;
}

/* the two passes' geometries for `rows` samples: g1 the planes, g2 the depth */
static void geoms(const bf_layer *L, int rows, bf_conv_geom *g1, bf_conv_geom *g2) {
    const bf_pool_cfg *c = &L->cfg.pool;
    const bf_window_cfg *w = &c->win;
    const int f = c->chan_first, *x = L->in_shape + f, *y = L->out_shape + f;
    const int C = L->in_shape[f ? 0 : 3], ch = f ? 1 : C, vols = f ? rows * C : rows;
    const int pd = (y[0] - 1) * w->sd + w->kd - x[0], ph = (y[1] - 1) * w->sh + w->kh - x[1],
              pw = (y[2] - 1) * w->sw + w->kw - x[2];
    *g1 = (bf_conv_geom){.B = vols * x[0], .H = x[1], .W = x[2], .C = ch, .OH = y[1], .OW = y[2], .K = ch,
                         .KH = w->kh, .KW = w->kw, .SH = w->sh, .SW = w->sw,
                         .PT = w->same && ph > 0 ? ph / 2 : 0, .PL = w->same && pw > 0 ? pw / 2 : 0};
    *g2 = (bf_conv_geom){.B = vols, .H = x[0], .W = 1, .C = y[1] * y[2] * ch, .OH = y[0], .OW = 1,
                         .K = y[1] * y[2] * ch, .KH = w->kd, .KW = 1, .SH = w->sd, .SW = 1,
                         .PT = w->same && pd > 0 ? pd / 2 : 0, .PL = 0};
}

static int is_max(const bf_layer *L) { return L->kind == BF_L_MAXPOOL3D; }

static int supported(const bf_backend *be, const bf_layer *L) {
    return is_max(L) ? be->maxpool_forward && be->maxpool_backward : be->avgpool_forward && be->avgpool_backward;
}

static bf_status plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    bf_conv_geom g1, g2;
    geoms(L, r->B, &g1, &g2);
    const size_t bytes = (size_t)g1.B * g1.OH * g1.OW * g1.C * sizeof(float);
    const int keep = is_max(L) && bw;
    BF_TRY(bf_run_newbuf(r, &r->fws_id[i], bytes, keep ? BF_BUF_STATE : BF_BUF_WORKSPACE, L->name,
                         " depth-plane pooling"));
    bf_run_use(r, r->fws_id[i], t);
    if (keep) bf_run_use(r, r->fws_id[i], tb);
    if (!bw) return BF_OK;
    BF_TRY(bf_run_newbuf(r, &r->bws_id[i], bytes, BF_BUF_WORKSPACE, L->name, " depth-plane pooling gradient"));
    bf_run_use(r, r->bws_id[i], tb);
    return BF_OK;
}

static bf_status forward(bf_run *r, int i, int rows) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    bf_conv_geom g1, g2;
    geoms(L, rows, &g1, &g2);
    float *mid = bf_step_buf(r, r->fws_id[i]), *out = bf_step_out(r, i);
    const float *in = bf_step_in(r, i);
    if (is_max(L)) {
        BF_TRY(be->maxpool_forward(be, mid, in, &g1));
        return be->maxpool_forward(be, out, mid, &g2);
    }
    BF_TRY(be->avgpool_forward(be, mid, in, &g1));
    return be->avgpool_forward(be, out, mid, &g2);
}

static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    if (!din) return BF_OK;
    bf_conv_geom g1, g2;
    geoms(L, rows, &g1, &g2);
    float *mid = bf_step_buf(r, r->fws_id[i]), *dmid = bf_step_buf(r, r->bws_id[i]);
    if (is_max(L)) {
        const float *in = bf_step_in(r, i), *out = bf_step_out(r, i);
        BF_TRY(be->maxpool_backward(be, dmid, dout, out, mid, &g2));
        return be->maxpool_backward(be, din, dmid, mid, in, &g1);
    }
    BF_TRY(be->avgpool_backward(be, dmid, dout, &g2));
    return be->avgpool_backward(be, din, dmid, &g1);
}

const bf_layer_ops bf_ops_MAXPOOL3D = {
    .name = "MAXPOOL3D",
    .flags = BF_LF_READS_IN | BF_LF_READS_OUT | BF_LF_ANY_RANK,
    .parse = bf_parse_pool,
    .infer = infer,
    .supported = supported,
    .plan = plan,
    .forward = forward,
    .backward = backward,
};

const bf_layer_ops bf_ops_AVGPOOL3D = {
    .name = "AVGPOOL3D",
    .flags = BF_LF_ANY_RANK,
    .parse = bf_parse_pool,
    .infer = infer,
    .supported = supported,
    .plan = plan,
    .forward = forward,
    .backward = backward,
};
