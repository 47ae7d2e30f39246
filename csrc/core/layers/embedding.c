/* embedding.c - Embedding: ids (T,) or (T, T2) per sample (or one id) ->
 * (..., output_dim) rows of a table (input_dim, output_dim), uniform +-0.05
 * unless given an initializer. mask_zero: id 0 masks its step; the (B, T)
 * mask is a planned buffer the forward writes and the masked layers
 * downstream read (masks.h). A step reports the lowest row holding an id
 * outside the table (bf_step_stats.layer[i].bad_id) and run.c raises a
 * DataError for it (BF_LF_IDS). reverse (ReversibleEmbedding's reverse call, a
 * node sharing the table of its forward one): vectors (..., D) -> logits
 * (..., V) = x @ table^T, through the backend's dense ops; it reports no ids. */
#include "layer.h"

static bf_status parse(bf_layer *L, const bf_spec *s) {
    bf_embed_cfg *c = &L->cfg.embed;
    BF_TRY(bf_spec_size(s, "input_dim", 0, &c->input_dim));
    BF_TRY(bf_spec_size(s, "units", 0, &c->output_dim));
    BF_TRY(bf_spec_flag(s, "reverse", 0, &c->reverse));
    return bf_spec_flag(s, "mask_zero", 0, &c->mask_zero);
}

/* reverse: (..., D) -> (..., V) */
static bf_status infer_reverse(bf_layer *L, int rank, const int *shape) {
    const bf_embed_cfg *c = &L->cfg.embed;
    if (rank < 1 || shape[rank - 1] != c->output_dim)
        return BF_FAIL(BF_ERR_SHAPE, "%s: a reverse call takes vectors of the embedding's output_dim %d on the last "
                       "axis, got %d", L->name, c->output_dim, rank < 1 ? 0 : shape[rank - 1]);
    L->out_shape[rank - 1] = c->input_dim;
    return BF_OK;
}

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    const bf_embed_cfg *c = &L->cfg.embed;
    (void)shape;
    if (c->output_dim <= 0) return BF_FAIL(BF_ERR_ARG, "%s: units must be positive, got %d", L->name, c->output_dim);
    if (c->input_dim <= 0) return BF_FAIL(BF_ERR_ARG, "%s: input_dim must be positive, got %d", L->name, c->input_dim);
    if (c->reverse) BF_TRY(infer_reverse(L, rank, shape));
    else if (rank > 2) return BF_FAIL(BF_ERR_SHAPE, "%s expects ids of rank 1 or 2 per sample, got rank %d", L->name, rank);
    if (c->mask_zero && rank != 1) /* (a mask of one id per sample would be Keras's (B,) mask) */
        return BF_FAIL(BF_ERR_SHAPE, "%s: mask_zero needs ids of shape (T,) per sample, got rank %d", L->name, rank);
    if (!c->reverse) {
        L->out_rank = rank + 1;
        L->out_shape[rank] = c->output_dim;
    }
    int ts[2] = {c->input_dim, c->output_dim};
    bf_add_param(L, 0, "embeddings", 2, ts, 1, BF_INIT_RANDOM_UNIFORM, (float)c->input_dim, (float)c->output_dim);
    if (!L->inits[0].set) {
        L->params[0].init_a = -0.05f;
        L->params[0].init_b = 0.05f;
    }
    return BF_OK;
}

static bf_status mask(const bf_model *m, int i, int *mask) {
    if (m->layers[i].cfg.embed.reverse) return bf_mask_keep(m, i, mask);
    *mask = m->layers[i].cfg.embed.mask_zero ? i : -1;
    return BF_OK;
}

static int supported(const bf_backend *be, const bf_layer *L) {
    if (L->cfg.embed.reverse) return be->dense_forward && be->dense_backward;
    return be->embedding_forward && be->embedding_backward;
}

/* the mask it writes (mask_zero) */
static bf_status plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    (void)tb;
    (void)bw;
    if (!L->cfg.embed.mask_zero || L->cfg.embed.reverse) return BF_OK;
    BF_TRY(bf_run_newbuf(r, &r->aux_id[i], (size_t)r->B * L->in_size * sizeof(float), BF_BUF_STATE, L->name, " mask"));
    bf_run_use(r, r->aux_id[i], t);
    return BF_OK;
}

// out (B, ids..., D) = table[ids]; mask (B, T) = ids != 0 (mask_zero); reverse: out (n, V) = x (n, D) @ table^T
static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    const bf_embed_cfg *c = &L->cfg.embed;
    if (c->reverse) /* dense_backward's dinp = dout @ w^T with w the table (V, D) */
        return r->be->dense_backward(r->be, bf_step_out(r, i), NULL, NULL, bf_step_in(r, i), NULL,
                                     bf_step_param(r, L, 0), (int)((long)rows * L->in_size / c->output_dim),
                                     c->input_dim, c->output_dim);
    return r->be->embedding_forward(r->be, bf_step_out(r, i), c->mask_zero ? BF_BUF(r, r->aux_id[i]) : NULL,
                                    &r->stats->layer[i].bad_id, &r->stats->layer[i].bad_id_val, bf_step_in(r, i),
                                    bf_step_param(r, L, 0), (long)rows * L->in_size, c->output_dim, c->input_dim);
}

// dtable[ids] += dout; the ids get a zero gradient
static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    const bf_embed_cfg *c = &L->cfg.embed;
    float *dt = bf_step_grad(r, L, 0);
    if (c->reverse) { /* dx (n, D) = dlogits (n, V) @ table; dtable (V, D) += dlogits^T @ x */
        const int n = (int)((long)rows * L->in_size / c->output_dim);
        if (din) BF_TRY(be->dense_forward(be, din, dout, bf_step_param(r, L, 0), NULL, n, c->input_dim, c->output_dim));
        return dt ? be->dense_backward(be, NULL, dt, NULL, bf_step_in(r, i), dout, NULL, n, c->input_dim,
                                       c->output_dim)
                  : BF_OK;
    }
    if (din) BF_TRY(be->fill_zero(be, din, sizeof(float) * (size_t)rows * L->in_size));
    return dt ? be->embedding_backward(be, dt, dout, bf_step_in(r, i), (long)rows * L->in_size, c->output_dim,
                                       c->input_dim)
              : BF_OK;
}

const bf_layer_ops bf_ops_EMBEDDING = {
    .name = "EMBEDDING",
    .flags = BF_LF_READS_IN | BF_LF_IDS | BF_LF_SCALAR | BF_LF_WHOLE16,
    .parse = parse,
    .infer = infer,
    .mask = mask,
    .supported = supported,
    .plan = plan,
    .forward = forward,
    .backward = backward,
};
