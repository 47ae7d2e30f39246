/* pool.c - MaxPooling1D/2D, AveragePooling1D/2D and the global poolings
 * (GlobalAveragePooling1D/2D: GAP, GlobalMaxPooling1D/2D: GMP) over the
 * window geometry of conv.c; GlobalAveragePooling1D of a masked sequence
 * averages over the unmasked steps only (Keras). */
#include "layer.h"

static bf_status window_infer(bf_layer *L, int rank, const int *shape) { return bf_infer_window(L, rank, shape, 1); }

static bf_status global_infer(bf_layer *L, int rank, const int *shape) {
    /* rank 2: GlobalAveragePooling1D / GlobalMaxPooling1D; keepdims keeps the rank */
    if (rank != 3 && rank != 2)
        return BF_FAIL(BF_ERR_SHAPE, "%s expects input of rank 2 (T, C) or 3 (H, W, C), got rank %d", L->name, rank);
    if (L->keepdims) {
        for (int d = 0; d < rank - 1; d++) L->out_shape[d] = 1;
        return BF_OK;
    }
    L->out_rank = 1;
    L->out_shape[0] = shape[rank - 1];
    return BF_OK;
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
    bf_layer_geom(&r->m->layers[i], rows, &g);
    return r->be->maxpool_forward(r->be, bf_step_out(r, i), bf_step_in(r, i), &g);
}

static bf_status max_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    bf_conv_geom g;
    if (!din) return BF_OK;
    bf_layer_geom(&r->m->layers[i], rows, &g);
    return r->be->maxpool_backward(r->be, din, dout, bf_step_out(r, i), bf_step_in(r, i), &g);
}

static bf_status avg_forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    bf_backend *be = r->be;
    const float *mask = L->kind == BF_L_GAP ? bf_seq_mask(r, L->in_ids[0]) : NULL;
    if (mask) /* over the unmasked steps */
        return be->masked_mean_forward(be, bf_step_out(r, i), bf_step_in(r, i), mask, rows, L->in_shape[0],
                                       L->in_shape[1]);
    bf_conv_geom g;
    bf_layer_geom(L, rows, &g);
    return be->avgpool_forward(be, bf_step_out(r, i), bf_step_in(r, i), &g);
}

static bf_status avg_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    bf_backend *be = r->be;
    const float *mask = L->kind == BF_L_GAP ? bf_seq_mask(r, L->in_ids[0]) : NULL;
    if (!din) return BF_OK;
    if (mask) return be->masked_mean_backward(be, din, dout, mask, rows, L->in_shape[0], L->in_shape[1]);
    bf_conv_geom g;
    bf_layer_geom(L, rows, &g);
    return be->avgpool_backward(be, din, dout, &g);
}

/* GlobalAveragePooling1D reads its input's mask (and drops it, as Keras) */
static int gap_mask_reads(const bf_layer *L) { return L->in_rank == 2 ? 1 : 0; }

const bf_layer_ops bf_ops_MAXPOOL = {
    .name = "MAXPOOL",
    .flags = BF_LF_READS_IN | BF_LF_READS_OUT,
    .infer = window_infer,
    .supported = max_supported,
    .forward = max_forward,
    .backward = max_backward,
};

const bf_layer_ops bf_ops_AVGPOOL = {
    .name = "AVGPOOL",
    .infer = window_infer,
    .supported = avg_supported,
    .forward = avg_forward,
    .backward = avg_backward,
};

const bf_layer_ops bf_ops_GAP = {
    .name = "GAP",
    .infer = global_infer,
    .mask_reads = gap_mask_reads,
    .supported = avg_supported,
    .forward = avg_forward,
    .backward = avg_backward,
};

const bf_layer_ops bf_ops_GMP = {
    .name = "GMP",
    .flags = BF_LF_READS_IN | BF_LF_READS_OUT,
    .infer = global_infer,
    .supported = max_supported,
    .forward = max_forward,
    .backward = max_backward,
};
