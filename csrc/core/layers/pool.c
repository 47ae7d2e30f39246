/* pool.c - MaxPooling1D/2D, AveragePooling1D/2D and the global poolings
 * (GlobalAveragePooling1D/2D/3D: GAP, GlobalMaxPooling1D/2D/3D: GMP) over the
 * window geometry of conv.c, channels_last or channels_first;
 * GlobalAveragePooling1D of a masked sequence averages over the unmasked
 * steps only (Keras). */
#include "layer.h"

/* channels_first (bf_pool_cfg.chan_first): a (C, H, W) or (C, T) sample is C one-channel
 * images, so the NHWC ops run on B*C images of 1 channel, in place of any
 * transpose */

/* the window (not for the global poolings), keepdims (the global ones), data_format */
bf_status bf_parse_pool(bf_layer *L, const bf_spec *s) {
    bf_pool_cfg *c = &L->cfg.pool;
    BF_TRY(bf_parse_window(s, &c->win));
    BF_TRY(bf_spec_flag(s, "keepdims", 0, &c->keepdims));
    return bf_spec_flag(s, "chan_first", 0, &c->chan_first);
}

static bf_status window_infer(bf_layer *L, int rank, const int *shape) {
    const bf_pool_cfg *c = &L->cfg.pool;
    if (!c->chan_first) return bf_infer_window(L, &c->win, rank, shape, 1);
    if (rank != 2 && rank != 3)
        return BF_FAIL(BF_ERR_SHAPE, "%s expects input of rank 2 (C, T) or 3 (C, H, W) per sample (channels_first), "
                       "got rank %d", L->name, rank);
    /* the one-channel image of a channel: (H, W, 1), or (T, 1) */
    const int img[3] = {shape[1], rank == 3 ? shape[2] : 1, 1};
    BF_TRY(bf_infer_window(L, &c->win, rank, img, 1));
    if (rank == 3) {
        L->out_shape[2] = L->out_shape[1];
        L->out_shape[1] = L->out_shape[0];
    } else {
        L->out_shape[1] = L->out_shape[0];
    }
    L->out_shape[0] = shape[0];
    return BF_OK;
}

static bf_status global_infer(bf_layer *L, int rank, const int *shape) {
    /* rank 2: GlobalAveragePooling1D / GlobalMaxPooling1D, 4: the 3D ones; keepdims keeps the rank */
    if (rank < 2 || rank > 4)
        return BF_FAIL(BF_ERR_SHAPE, "%s expects input of rank 2 (T, C), 3 (H, W, C) or 4 (D, H, W, C), got rank %d",
                       L->name, rank);
    const bf_pool_cfg *c = &L->cfg.pool;
    const int c_axis = c->chan_first ? 0 : rank - 1;
    if (c->keepdims) {
        for (int d = 0; d < rank; d++)
            if (d != c_axis) L->out_shape[d] = 1;
        return BF_OK;
    }
    L->out_rank = 1;
    L->out_shape[0] = shape[c_axis];
    return BF_OK;
}

/* a global pooling's geometry: the spatial axes (all but the channels') as one image of H = all of them but the
 * last, W = the last; channels_first as rows * C one-channel images */
static void global_geom(const bf_layer *L, int rows, bf_conv_geom *g) {
    const int first = L->cfg.pool.chan_first, n = L->in_rank - 1, *sp = L->in_shape + (first ? 1 : 0);
    const int C = L->in_shape[first ? 0 : n];
    g->B = first ? rows * C : rows;
    g->C = g->K = first ? 1 : C;
    g->H = 1;
    for (int a = 0; a < n - 1; a++) g->H *= sp[a];
    g->W = sp[n - 1];
    g->OH = g->OW = 1;
    g->KH = g->SH = g->H;
    g->KW = g->SW = g->W;
    g->PT = g->PL = 0;
}

/* a window pooling's NHWC geometry for `rows` samples (the global ones: global_geom); channels_first as rows * C
 * one-channel images */
static void pool_geom(const bf_layer *L, int rows, bf_conv_geom *g) {
    const bf_pool_cfg *c = &L->cfg.pool;
    if (L->kind == BF_L_GAP || L->kind == BF_L_GMP) {
        global_geom(L, rows, g);
        return;
    }
    if (!c->chan_first) {
        bf_layer_geom(L, &c->win, rows, g);
        return;
    }
    const int one_d = L->in_rank == 2, C = L->in_shape[0];
    g->B = rows * C;
    g->H = one_d ? 1 : L->in_shape[1];
    g->W = L->in_shape[one_d ? 1 : 2];
    g->C = g->K = 1;
    g->KH = c->win.kh;
    g->KW = c->win.kw;
    g->SH = c->win.sh;
    g->SW = c->win.sw;
    g->OH = one_d ? 1 : L->out_shape[1];
    g->OW = L->out_shape[one_d ? 1 : 2];
    int ph = (g->OH - 1) * g->SH + g->KH - g->H, pw = (g->OW - 1) * g->SW + g->KW - g->W;
    g->PT = c->win.same && ph > 0 ? ph / 2 : 0;
    g->PL = c->win.same && pw > 0 ? pw / 2 : 0;
}

static int max_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->maxpool_forward && be->maxpool_backward;
}

static int avg_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->avgpool_forward && be->avgpool_backward;
}

static bf_status max_forward(bf_run *r, int i, int rows) {
    bf_conv_geom g;
    pool_geom(&r->m->layers[i], rows, &g);
    return r->be->maxpool_forward(r->be, bf_step_out(r, i), bf_step_in(r, i), &g);
}

static bf_status max_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    bf_conv_geom g;
    if (!din) return BF_OK;
    pool_geom(&r->m->layers[i], rows, &g);
    return r->be->maxpool_backward(r->be, din, dout, bf_step_out(r, i), bf_step_in(r, i), &g);
}

/* the mask GlobalAveragePooling1D averages under (NULL: none, another kind, or mask_off: keras.ops.mean) */
static const float *gap_mask(bf_run *r, const bf_layer *L) {
    return L->kind == BF_L_GAP && !L->mask_off ? bf_seq_mask(r, L->in_ids[0]) : NULL;
}

static bf_status avg_forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    bf_backend *be = r->be;
    const float *mask = gap_mask(r, L);
    if (mask && L->cfg.pool.chan_first)
        return BF_FAIL(BF_ERR_ARG, "%s: a masked sequence with data_format='channels_first' is not supported",
                       L->name);
    if (mask) /* over the unmasked steps */
        return be->masked_mean_forward(be, bf_step_out(r, i), bf_step_in(r, i), mask, rows, L->in_shape[0],
                                       L->in_shape[1]);
    bf_conv_geom g;
    pool_geom(L, rows, &g);
    return be->avgpool_forward(be, bf_step_out(r, i), bf_step_in(r, i), &g);
}

static bf_status avg_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    bf_backend *be = r->be;
    const float *mask = gap_mask(r, L);
    if (!din) return BF_OK;
    if (mask) return be->masked_mean_backward(be, din, dout, mask, rows, L->in_shape[0], L->in_shape[1]);
    bf_conv_geom g;
    pool_geom(L, rows, &g);
    return be->avgpool_backward(be, din, dout, &g);
}

/* GlobalAveragePooling1D reads its input's mask (and drops it, as Keras); keras.ops.mean / sum (mask_off) not */
static int gap_mask_reads(const bf_layer *L) { return L->in_rank == 2 && !L->mask_off ? 1 : 0; }

const bf_layer_ops bf_ops_MAXPOOL = {
    .name = "MAXPOOL",
    .parse = bf_parse_pool,
    .flags = BF_LF_READS_IN | BF_LF_READS_OUT | BF_LF_ROWS,
    .infer = window_infer,
    .supported = max_supported,
    .forward = max_forward,
    .backward = max_backward,
};

const bf_layer_ops bf_ops_AVGPOOL = {
    .name = "AVGPOOL",
    .parse = bf_parse_pool,
    .flags = BF_LF_ROWS,
    .infer = window_infer,
    .supported = avg_supported,
    .forward = avg_forward,
    .backward = avg_backward,
};

const bf_layer_ops bf_ops_GAP = {
    .name = "GAP",
    .flags = BF_LF_WHOLE16 | BF_LF_ANY_RANK,
    .parse = bf_parse_pool,
    .infer = global_infer,
    .mask_reads = gap_mask_reads,
    .supported = avg_supported,
    .forward = avg_forward,
    .backward = avg_backward,
};

const bf_layer_ops bf_ops_GMP = {
    .name = "GMP",
    .parse = bf_parse_pool,
    .flags = BF_LF_READS_IN | BF_LF_READS_OUT | BF_LF_ANY_RANK,
    .infer = global_infer,
    .supported = max_supported,
    .forward = max_forward,
    .backward = max_backward,
};
