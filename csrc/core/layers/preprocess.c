/* preprocess.c - Rescaling and Normalization (a per-channel affine map,
 * rescale_*), and the random layers RandomFlip, RandomCrop,
 * RandomTranslation, RandomRotation, RandomZoom, RandomContrast, GaussianNoise
 * and GaussianDropout (one kind, bf_augment). Random layers draw per training
 * forward: the node's stream (its seed, or the run's) mixed with the
 * optimizer iteration and the micro-batch within it, so a fresh model with
 * the same seed sees the same augmentations, and backward reuses the
 * forward's draw. Outside training all but RandomCrop are views (RandomCrop
 * crops the centre). */
#include "layer.h"

static bf_status rescaling_infer(bf_layer *L, int rank, const int *shape) {
    (void)L;
    (void)rank;
    (void)shape;
    return BF_OK;
}

static bf_status normalization_infer(bf_layer *L, int rank, const int *shape) {
    int C = shape[rank - 1];
    bf_add_param(L, 0, "mean", 1, &C, 0, BF_INIT_ZEROS, 0, 0);
    bf_add_param(L, 1, "variance", 1, &C, 0, BF_INIT_ONES, 0, 0);
    bf_add_param(L, 2, "count", 0, &C, 0, BF_INIT_ZEROS, 0, 0);
    return BF_OK;
}

static int rescale_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->rescale_forward && be->rescale_backward;
}

static bf_status rescaling_forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    const int Cl = bf_last_dim(L);
    return r->be->rescale_forward(r->be, bf_step_out(r, i), bf_step_in(r, i), NULL, NULL, L->rs_scale, L->rs_offset,
                                  0.0f, (long)rows * L->in_size / Cl, Cl);
}

static bf_status rescaling_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    const int Cl = bf_last_dim(L);
    if (!din) return BF_OK;
    return r->be->rescale_backward(r->be, din, dout, NULL, L->rs_scale, 0.0f, (long)rows * L->in_size / Cl, Cl);
}

static bf_status normalization_forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    const int Cl = L->in_shape[L->in_rank - 1];
    return r->be->rescale_forward(r->be, bf_step_out(r, i), bf_step_in(r, i), r->w + L->params[0].offset,
                                  r->w + L->params[1].offset, 1.0f, 0.0f, 1e-7f, (long)rows * L->in_size / Cl, Cl);
}

static bf_status normalization_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    const int Cl = L->in_shape[L->in_rank - 1];
    if (!din) return BF_OK;
    return r->be->rescale_backward(r->be, din, dout, r->w + L->params[1].offset, 1.0f, 1e-7f,
                                   (long)rows * L->in_size / Cl, Cl);
}

/* ---- random image layers ---- */

void bf_run_augment_begin(bf_run *r) {
    long it = r->mode == BF_MODE_TRAIN ? r->m->opt.iterations + 1 : 0; /* evaluate / predict: its forwards counted */
    if (r->aug_it != it) {
        r->aug_it = it;
        r->aug_micro = 0;
    } else {
        r->aug_micro++;
    }
}

void bf_run_augment_geom(const bf_run *r, int i, int rows, bf_augment *a) {
    const bf_layer *L = &r->m->layers[i];
    *a = L->aug;
    a->B = rows;
    if (L->aug.noise) { /* any shape: (1, elements, 1) per sample */
        a->H = a->OH = a->C = 1;
        a->W = a->OW = (int)L->in_size;
    } else {
        a->H = L->in_shape[0];
        a->W = L->in_shape[1];
        a->C = L->in_shape[2];
        a->OH = L->out_shape[0];
        a->OW = L->out_shape[1];
    }
    a->training = bf_node_training(r, i);
    a->seed = r->aug_seed[i];
}

static bf_status augment_infer(bf_layer *L, int rank, const int *shape) {
    if (L->aug.noise) {
        if (!(L->aug.stddev >= 0.0f && L->aug.stddev <= 3.4e38f))
            return BF_FAIL(BF_ERR_ARG, "%s: the noise's standard deviation must be finite and >= 0", L->name);
        return BF_OK;
    }
    if (rank != 3)
        return BF_FAIL(BF_ERR_SHAPE, "%s expects input of rank 3 (H, W, C) per sample, got rank %d", L->name, rank);
    if (L->aug.crop) {
        if (L->kh <= 0 || L->kw <= 0 || L->kh > shape[0] || L->kw > shape[1])
            return BF_FAIL(BF_ERR_SHAPE, "%s: a %dx%d crop does not fit input %dx%d (a larger crop would be resized "
                           "in Keras; not supported)", L->name, L->kh, L->kw, shape[0], shape[1]);
        L->out_shape[0] = L->kh;
        L->out_shape[1] = L->kw;
    }
    return BF_OK;
}

static int augment_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->augment_forward && be->augment_backward;
}

/* outside training all but RandomCrop are views; RandomContrast's backward reads its output (the clipped pixels) */
static unsigned augment_flags(const bf_run *r, int i) {
    const bf_augment *a = &r->m->layers[i].aug;
    if (!bf_node_training(r, i)) return a->crop ? 0 : BF_LF_VIEW;
    return a->contrast ? BF_LF_READS_OUT : 0;
}

static bf_status augment_forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    if (bf_node_training(r, i)) {
        if (!r->aug_base[i])
            r->aug_base[i] = bf_splitmix64(L->aug.seed ? L->aug.seed : r->dropout_seed ^ ((uint64_t)i << 40)) | 1u;
        r->aug_seed[i] = bf_splitmix64(r->aug_base[i] ^ bf_splitmix64((uint64_t)r->aug_it * 4096u + (uint64_t)r->aug_micro));
    }
    bf_augment a;
    bf_run_augment_geom(r, i, rows, &a);
    return r->be->augment_forward(r->be, bf_step_out(r, i), bf_step_in(r, i), &a);
}

static bf_status augment_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    bf_augment a;
    if (!din) return BF_OK;
    bf_run_augment_geom(r, i, rows, &a);
    if (a.contrast) a.out = bf_step_out(r, i);
    return r->be->augment_backward(r->be, din, dout, &a);
}

const bf_layer_ops bf_ops_RESCALING = {
    .name = "RESCALING", .flags = BF_LF_SCALAR, .infer = rescaling_infer, .supported = rescale_supported,
    .forward = rescaling_forward, .backward = rescaling_backward,
};
const bf_layer_ops bf_ops_NORMALIZATION = {
    .name = "NORMALIZATION", .infer = normalization_infer, .supported = rescale_supported,
    .forward = normalization_forward, .backward = normalization_backward,
};
const bf_layer_ops bf_ops_AUGMENT = {
    .name = "AUGMENT", .infer = augment_infer, .supported = augment_supported, .node_flags = augment_flags,
    .forward = augment_forward, .backward = augment_backward,
};
