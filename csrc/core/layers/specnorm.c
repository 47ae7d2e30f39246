/* specnorm.c - SPECNORM: SpectralNormalization (Keras 3) after the wrapped
 * layer's linear map, which runs as its own node without bias or activation
 * (python/boundfit/layers/spectral.py). Its input is that node's output z;
 * it reads that node's kernel W (parameter 0 in Keras's layout, as (K, C)
 * rows of its last axis: a Dense's or convolution's kernel, an Embedding's
 * table; z is linear in it) and, training, adds sigma's part of W's gradient
 * into that node's gradient: out = z / sigma(W) + b, sigma by power
 * iteration from vector_u (1, C), not trainable, updated each training step
 * (u and v stopped, as Keras). Outside training out = z + b: the raw kernel,
 * as Keras's JAX backend reads it. The state (v, sigma) lives from forward
 * to backward. BF_LF_BATCH: u moves once per whole batch, so micro-batches
 * and data-parallel ranks refuse the model (u would move once per part). */
#include "layer.h"

static bf_status parse(bf_layer *L, const bf_spec *s) {
    bf_specnorm_cfg *c = &L->cfg.specnorm;
    BF_TRY(bf_spec_size(s, "power_iterations", 1, &c->power_iterations));
    BF_TRY(bf_spec_size(s, "kernel_cols", 0, &c->cols));
    return bf_spec_flag(s, "use_bias", 1, &c->use_bias);
}

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    const bf_specnorm_cfg *c = &L->cfg.specnorm;
    if (c->power_iterations < 1)
        return BF_FAIL(BF_ERR_ARG, "%s: power_iterations must be >= 1, got %d", L->name, c->power_iterations);
    if (rank < 1) return BF_FAIL(BF_ERR_SHAPE, "%s: needs inputs with a last (units) axis", L->name);
    if (c->cols < 1) return BF_FAIL(BF_ERR_ARG, "%s: kernel_cols (the kernel's last axis) must be >= 1", L->name);
    int u[2] = {1, c->cols};
    bf_add_param(L, 0, "vector_u", 2, u, 0, BF_INIT_TRUNCATED_NORMAL, 1.0f, (float)u[1]);
    if (!L->inits[0].set) {
        L->params[0].init_a = 0.0f;
        L->params[0].init_b = 0.02f;
    }
    if (c->use_bias) bf_add_param(L, 1, "bias", 1, &shape[rank - 1], 1, BF_INIT_ZEROS, 0, 0);
    return BF_OK;
}

/* the wrapped linear map: the node producing input 0 */
static const bf_layer *wrapped(const bf_model *m, const bf_layer *L) {
    const int p = bf_model_producer(m, L->in_ids[0]);
    return p < 0 ? NULL : &m->layers[p];
}

static bf_status check(bf_model *m, int i) {
    bf_layer *L = &m->layers[i];
    const bf_layer *P = wrapped(m, L);
    const int C = L->cfg.specnorm.cols;
    if (!P) return BF_OK; /* shape inference alone (_core.output_shape); a run refuses it (plan) */
    if (P->nparam < 1 || P->params[0].rank < 2 || P->params[0].shape[P->params[0].rank - 1] != C)
        return BF_FAIL(BF_ERR_ARG, "%s: SpectralNormalization follows the linear map of the layer it wraps (a kernel "
                       "whose last axis has %d entries)", L->name, C);
    if (P->act != BF_ACT_LINEAR)
        return BF_FAIL(BF_ERR_ARG, "%s: the wrapped layer '%s' must run without its activation (added after)", L->name,
                       P->name);
    return BF_OK;
}

static int supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->specnorm_forward && be->specnorm_backward;
}

static int kernel_rows(const bf_model *m, const bf_layer *L) {
    return (int)(wrapped(m, L)->params[0].n / L->cfg.specnorm.cols);
}

/* (v, sigma): K + 1 floats, from forward to backward */
static bf_status plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    if (!wrapped(r->m, L))
        return BF_FAIL(BF_ERR_ARG, "%s: SpectralNormalization's step needs the wrapped layer's linear map as its "
                       "input, got a model input", L->name);
    BF_TRY(bf_run_newbuf(r, &r->aux_id[i], ((size_t)kernel_rows(r->m, L) + 1) * sizeof(float), BF_BUF_STATE, L->name,
                         " power iteration (v, sigma)"));
    bf_run_use(r, r->aux_id[i], t);
    if (bw) bf_run_use(r, r->aux_id[i], tb);
    return BF_OK;
}

// out (rows, ..., N) = z / sigma + b (training), z + b (not)
static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    const bf_layer *P = wrapped(r->m, L);
    const int N = L->in_shape[L->in_rank - 1];
    return r->be->specnorm_forward(r->be, bf_step_out(r, i), bf_step_param(r, L, 0), BF_BUF(r, r->aux_id[i]),
                                   bf_step_in(r, i), bf_step_param(r, P, 0),
                                   L->cfg.specnorm.use_bias ? bf_step_param(r, L, 1) : NULL,
                                   (long)rows * (L->in_size / N), N, kernel_rows(r->m, L), L->cfg.specnorm.cols,
                                   L->cfg.specnorm.power_iterations, bf_node_training(r, i));
}

// dz = dout / sigma; db += sum dout; dW (the wrapped node's) += sigma's part
static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    const bf_layer *P = wrapped(r->m, L);
    const int N = L->in_shape[L->in_rank - 1];
    return r->be->specnorm_backward(r->be, din, bf_step_grad(r, P, 0),
                                    L->cfg.specnorm.use_bias ? bf_step_grad(r, L, 1) : NULL, dout, bf_step_in(r, i),
                                    bf_step_param(r, L, 0), BF_BUF(r, r->aux_id[i]),
                                    (long)rows * (L->in_size / N), N, kernel_rows(r->m, L), L->cfg.specnorm.cols,
                                    bf_node_training(r, i));
}

const bf_layer_ops bf_ops_SPECNORM = {
    .name = "SPECNORM",
    .flags = BF_LF_READS_IN | BF_LF_BATCH | BF_LF_ANY_RANK,
    .parse = parse,
    .infer = infer,
    .check = check,
    .mask = bf_mask_keep,
    .supported = supported,
    .plan = plan,
    .forward = forward,
    .backward = backward,
};
