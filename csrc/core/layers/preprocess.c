/* preprocess.c - Normalization (a per-channel affine map, rescale_*;
 * Rescaling is composed in Python, layers/preprocessing.py), and the random
 * layers RandomFlip, RandomCrop, RandomTranslation, RandomRotation, RandomZoom, RandomContrast, GaussianNoise
 * and GaussianDropout (one kind, bf_augment). Random layers draw per training
 * forward: the node's stream (its seed, or the run's) mixed with the
 * optimizer iteration and the micro-batch within it, so a fresh model with
 * the same seed sees the same augmentations, and backward reuses the
 * forward's draw. Outside training all but RandomCrop are views (RandomCrop
 * crops the centre). */
#include "layer.h"

#include <math.h>

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
    *a = L->cfg.augment.aug;
    a->B = rows;
    if (a->noise) { /* any shape: (1, elements, 1) per sample */
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

/* the draws' configuration (aug_*), RandomCrop's size (kh, kw) */
static bf_status augment_parse(bf_layer *L, const bf_spec *s) {
    bf_augment_cfg *c = &L->cfg.augment;
    bf_augment *a = &c->aug;
    BF_TRY(bf_spec_size(s, "kh", 1, &c->crop_h));
    BF_TRY(bf_spec_size(s, "kw", 1, &c->crop_w));
    BF_TRY(s->get_seed(s, "aug_seed", &a->seed));
    const struct { const char *key; int *v, dflt; } ints[] = {
        {"aug_flip", &a->flip, 0}, {"aug_crop", &a->crop, 0}, {"aug_translate", &a->translate, 0},
        {"aug_fill", &a->fill, 0}, {"aug_bilinear", &a->bilinear, 1}, {"aug_rotate", &a->rotate, 0},
        {"aug_zoom", &a->zoom, 0}, {"aug_zoom_same", &a->zoom_same, 0}, {"aug_contrast", &a->contrast, 0},
        {"aug_noise", &a->noise, 0},
    };
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        BF_TRY(bf_spec_int(s, ints[k].key, ints[k].dflt, ints[k].v));
    const struct { const char *key; float *v, dflt; } floats[] = {
        {"aug_fill_value", &a->fill_value, 0.0f}, {"aug_h_lo", &a->h_lo, 0.0f}, {"aug_h_hi", &a->h_hi, 0.0f},
        {"aug_w_lo", &a->w_lo, 0.0f}, {"aug_w_hi", &a->w_hi, 0.0f}, {"aug_rot_lo", &a->rot_lo, 0.0f},
        {"aug_rot_hi", &a->rot_hi, 0.0f}, {"aug_zh_lo", &a->zh_lo, 1.0f}, {"aug_zh_hi", &a->zh_hi, 1.0f},
        {"aug_zw_lo", &a->zw_lo, 1.0f}, {"aug_zw_hi", &a->zw_hi, 1.0f}, {"aug_c_lo", &a->c_lo, 1.0f},
        {"aug_c_hi", &a->c_hi, 1.0f}, {"aug_v_lo", &a->v_lo, -INFINITY}, {"aug_v_hi", &a->v_hi, INFINITY},
        {"aug_stddev", &a->stddev, 0.0f},
    };
    for (size_t k = 0; k < sizeof floats / sizeof floats[0]; k++)
        BF_TRY(bf_spec_float(s, floats[k].key, floats[k].dflt, floats[k].v));
    if (a->fill < BF_FILL_REFLECT || a->fill > BF_FILL_WRAP)
        return BF_FAIL(BF_ERR_ARG, "%s: unknown fill mode %d", L->name, a->fill);
    return BF_OK;
}

static bf_status augment_infer(bf_layer *L, int rank, const int *shape) {
    const bf_augment_cfg *c = &L->cfg.augment;
    if (c->aug.noise) {
        if (!(c->aug.stddev >= 0.0f && c->aug.stddev <= 3.4e38f))
            return BF_FAIL(BF_ERR_ARG, "%s: the noise's standard deviation must be finite and >= 0", L->name);
        return BF_OK;
    }
    if (rank != 3)
        return BF_FAIL(BF_ERR_SHAPE, "%s expects input of rank 3 (H, W, C) per sample, got rank %d", L->name, rank);
    if (c->aug.crop) {
        if (c->crop_h <= 0 || c->crop_w <= 0 || c->crop_h > shape[0] || c->crop_w > shape[1])
            return BF_FAIL(BF_ERR_SHAPE, "%s: a %dx%d crop does not fit input %dx%d (a larger crop would be resized "
                           "in Keras; not supported)", L->name, c->crop_h, c->crop_w, shape[0], shape[1]);
        L->out_shape[0] = c->crop_h;
        L->out_shape[1] = c->crop_w;
    }
    return BF_OK;
}

static int augment_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->augment_forward && be->augment_backward;
}

/* outside training all but RandomCrop are views; RandomContrast's backward reads its output (the clipped pixels) */
static unsigned augment_flags(const bf_run *r, int i) {
    const bf_augment *a = &r->m->layers[i].cfg.augment.aug;
    if (!bf_node_training(r, i)) return a->crop ? 0 : BF_LF_VIEW;
    return a->contrast ? BF_LF_READS_OUT : 0;
}

static bf_status augment_forward(bf_run *r, int i, int rows) {
    const uint64_t seed = r->m->layers[i].cfg.augment.aug.seed;
    if (bf_node_training(r, i)) {
        if (!r->aug_base[i])
            r->aug_base[i] = bf_splitmix64(seed ? seed : r->dropout_seed ^ ((uint64_t)i << 40)) | 1u;
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

const bf_layer_ops bf_ops_NORMALIZATION = {
    .name = "NORMALIZATION", .infer = normalization_infer, .supported = rescale_supported,
    .forward = normalization_forward, .backward = normalization_backward,
};
const bf_layer_ops bf_ops_AUGMENT = {
    .name = "AUGMENT", .parse = augment_parse, .infer = augment_infer, .supported = augment_supported, .node_flags = augment_flags,
    .forward = augment_forward, .backward = augment_backward,
};
