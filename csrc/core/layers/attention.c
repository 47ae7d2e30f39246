/* attention.c - LayerNormalization and MultiHeadAttention: shapes, weights, plan and steps.
 * MultiHeadAttention (inputs query, value, key, optional mask) is three Dense
 * GEMMs over all positions (Qp, Kp, Vp), the attention core per (b, h)
 * (backend attention_*), and the output GEMM. Its planned buffers: aux_id
 * holds Qp, Kp, Vp, O and the weights P (kept for backward, or one tile when
 * no backward runs); fws_id the forward scratch (transposed keys, dropout tile); bws_id dO,
 * dQp, dKp, dVp and the backward scratch. Each input's gradient goes where
 * program.c planned it (a query used as value and key gets three
 * contributions, summed by the core); the mask gets none. The step masks of
 * query, value and key (Embedding mask_zero) join attention_mask in the core. */
#include "layer.h"

#include <math.h>
#include <stdio.h>

#define SEC(n) (((size_t)(n) + 63) / 64 * 64) /* floats, sections 256-byte aligned */

static void mha_geom(const bf_model *m, const bf_layer *L, int rows, int train, int keep, bf_attn_geom *g) {
    const bf_attn_cfg *c = &L->cfg.attn;
    g->B = rows;
    g->H = c->heads;
    g->TQ = m->t_shape[L->in_ids[0]][0];
    g->TK = m->t_shape[L->in_ids[1]][0];
    g->DK = c->key_dim;
    g->DV = c->value_dim;
    g->scale = (float)(1.0 / sqrt((double)c->key_dim));
    g->causal = c->causal;
    g->rate = train ? c->rate : 0.0f;
    g->seed = 0;
    g->p_tile = !keep;
    g->qmask = g->vmask = g->kmask = NULL; /* set per run (mha_parts_of) */
    g->zero_empty = c->rate > 0.0f;
}

/* section sizes in floats: Qp, Kp, Vp, O, P */
static void keep_sections(const bf_attn_geom *g, size_t s[5]) {
    size_t B = (size_t)g->B, H = (size_t)g->H;
    s[0] = SEC(B * g->TQ * H * g->DK);
    s[1] = SEC(B * g->TK * H * g->DK);
    s[2] = SEC(B * g->TK * H * g->DV);
    s[3] = SEC(B * g->TQ * H * g->DV);
    s[4] = SEC((g->p_tile ? 1 : B * H) * (size_t)g->TQ * g->TK);
}

static size_t mha_keep_bytes(const bf_attn_geom *g) {
    size_t s[5];
    keep_sections(g, s);
    return sizeof(float) * (s[0] + s[1] + s[2] + s[3] + s[4]);
}

static size_t mha_backward_bytes(bf_backend *be, const bf_attn_geom *g) {
    size_t s[5];
    keep_sections(g, s);
    /* dO as O, dQp as Qp, dKp as Kp, dVp as Vp */
    return sizeof(float) * (s[3] + s[0] + s[1] + s[2]) + be->attention_workspace_bytes(be, g, 1);
}

static bf_status layernorm(bf_run *r, int i, int rows, float *dout) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    const bf_norm_cfg *c = &L->cfg.norm;
    const int C = L->in_shape[L->in_rank - 1];
    const long N = (long)rows * L->in_size / C;
    float *st = BF_BUF(r, r->aux_id[i]), *in = bf_step_in(r, i);
    int j = 0;
    float *gamma = c->scale ? bf_step_param(r, L, j) : NULL, *dgamma = c->scale ? bf_step_grad(r, L, j++) : NULL;
    float *beta = c->center ? bf_step_param(r, L, j) : NULL, *dbeta = c->center ? bf_step_grad(r, L, j) : NULL;
    if (!dout) return be->layernorm_forward(be, bf_step_out(r, i), st, st + N, in, gamma, beta, N, C, c->eps);
    return be->layernorm_backward(be, bf_step_din(r, i, 0), dgamma, dbeta, dout, in, st, st + N, gamma, N, C);
}

/* MultiHeadAttention's pieces for node i */
typedef struct {
    bf_attn_geom g;
    float *q, *v, *k, *mask;     /* inputs */
    float *Qp, *Kp, *Vp, *O, *P; /* kept block */
    int DQ, DKin, DVin, DOUT, nb; /* nb: parameters per projection (kernel[, bias]) */
} mha_parts;

static void mha_parts_of(bf_run *r, int i, int rows, mha_parts *p) {
    bf_model *m = r->m;
    const bf_layer *L = &m->layers[i];
    mha_geom(m, L, rows, bf_node_training(r, i), r->node_bw[i], &p->g);
    p->q = bf_step_tensor(r, L->in_ids[0]);
    p->v = bf_step_tensor(r, L->in_ids[1]);
    p->k = bf_step_tensor(r, L->in_ids[2]);
    p->mask = L->nin > 3 ? bf_step_tensor(r, L->in_ids[3]) : NULL;
    p->g.qmask = bf_seq_mask(r, L->in_ids[0]); /* Embedding(mask_zero=True) masks the inputs carry */
    p->g.vmask = bf_seq_mask(r, L->in_ids[1]);
    p->g.kmask = bf_seq_mask(r, L->in_ids[2]);
    size_t s[5];
    keep_sections(&p->g, s);
    p->Qp = BF_BUF(r, r->aux_id[i]);
    p->Kp = p->Qp + s[0];
    p->Vp = p->Kp + s[1];
    p->O = p->Vp + s[2];
    p->P = p->O + s[3];
    p->DQ = m->t_shape[L->in_ids[0]][1];
    p->DVin = m->t_shape[L->in_ids[1]][1];
    p->DKin = m->t_shape[L->in_ids[2]][1];
    p->DOUT = L->out_shape[1];
    p->nb = L->cfg.attn.use_bias ? 2 : 1;
}

static bf_status mha_forward(bf_run *r, int i, int rows) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    const bf_attn_cfg *c = &L->cfg.attn;
    mha_parts p;
    mha_parts_of(r, i, rows, &p);
    const int nb = p.nb, H = c->heads, NQ = rows * p.g.TQ, NK = rows * p.g.TK;
    if (p.g.rate > 0.0f) { /* a fresh mask every step, the same for this step's backward */
        r->attn_seed[i] = bf_splitmix64(r->dropout_seed ^ ((uint64_t)(i + 1) << 40));
        r->dropout_seed = bf_splitmix64(r->dropout_seed + 1);
    }
    p.g.seed = r->attn_seed[i];
#define BIAS(j) (c->use_bias ? bf_step_param(r, L, (j) * nb + 1) : NULL)
    BF_TRY(be->dense_forward(be, p.Qp, p.q, bf_step_param(r, L, 0), BIAS(0), NQ, p.DQ, H * c->key_dim));
    BF_TRY(be->dense_forward(be, p.Kp, p.k, bf_step_param(r, L, nb), BIAS(1), NK, p.DKin, H * c->key_dim));
    BF_TRY(be->dense_forward(be, p.Vp, p.v, bf_step_param(r, L, 2 * nb), BIAS(2), NK, p.DVin, H * c->value_dim));
    BF_TRY(be->attention_forward(be, p.O, p.P, bf_step_buf(r, r->fws_id[i]), p.Qp, p.Kp, p.Vp,
                                 p.mask, &p.g));
    BF_TRY(be->dense_forward(be, bf_step_out(r, i), p.O, bf_step_param(r, L, 3 * nb), BIAS(3), NQ, H * c->value_dim,
                             p.DOUT));
#undef BIAS
    return BF_OK;
}

/* a frozen layer's projections: dw NULL, dinp only */
static bf_status proj_backward(bf_run *r, float *dinp, float *dw, float *db, const float *dout, const float *inp,
                               const float *w, int N, int IN, int OUT) {
    if (!dw && !dinp) return BF_OK;
    return r->be->dense_backward(r->be, dinp, dw, db, dout, inp, w, N, IN, OUT);
}

static bf_status mha_backward(bf_run *r, int i, int rows, const float *dout) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    const bf_attn_cfg *c = &L->cfg.attn;
    mha_parts p;
    mha_parts_of(r, i, rows, &p);
    p.g.seed = r->attn_seed[i];
    const int nb = p.nb, H = c->heads, NQ = rows * p.g.TQ, NK = rows * p.g.TK;
    size_t s[5];
    keep_sections(&p.g, s);
    float *dO = BF_BUF(r, r->bws_id[i]), *dQ = dO + s[3], *dK = dQ + s[0], *dV = dK + s[1], *ws = dV + s[2];
#define DB(j) (c->use_bias ? bf_step_grad(r, L, (j) * nb + 1) : NULL)
    BF_TRY(proj_backward(r, dO, bf_step_grad(r, L, 3 * nb), DB(3), dout, p.O, bf_step_param(r, L, 3 * nb), NQ, H * c->value_dim, p.DOUT));
    BF_TRY(be->attention_backward(be, dQ, dK, dV, ws, dO, p.Qp, p.Kp, p.Vp, p.P, p.mask, &p.g));
    BF_TRY(proj_backward(r, bf_step_din(r, i, 0), bf_step_grad(r, L, 0), DB(0), dQ, p.q, bf_step_param(r, L, 0), NQ, p.DQ, H * c->key_dim));
    BF_TRY(proj_backward(r, bf_step_din(r, i, 1), bf_step_grad(r, L, 2 * nb), DB(2), dV, p.v, bf_step_param(r, L, 2 * nb), NK, p.DVin,
                         H * c->value_dim));
    BF_TRY(proj_backward(r, bf_step_din(r, i, 2), bf_step_grad(r, L, nb), DB(1), dK, p.k, bf_step_param(r, L, nb), NK, p.DKin, H * c->key_dim));
#undef DB
    float *dm = L->nin > 3 ? bf_step_din(r, i, 3) : NULL; /* no gradient flows into a mask */
    if (dm) BF_TRY(be->fill_zero(be, dm, sizeof(float) * (size_t)rows * r->m->t_size[L->in_ids[3]]));
    return BF_OK;
}

/* ---- LayerNormalization over the last axis ---- */

static bf_status layernorm_infer(bf_layer *L, int rank, const int *shape) {
    int C = shape[rank - 1];
    if (L->cfg.norm.scale) bf_add_param(L, 0, "gamma", 1, &C, 1, BF_INIT_ONES, 0, 0);
    if (L->cfg.norm.center) bf_add_param(L, 1, "beta", 1, &C, 1, BF_INIT_ZEROS, 0, 0);
    return BF_OK;
}

static int layernorm_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->layernorm_forward && be->layernorm_backward;
}

static bf_status layernorm_plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    (void)tb;
    (void)bw;
    size_t N = (size_t)r->B * (size_t)L->in_size / (size_t)L->in_shape[L->in_rank - 1];
    BF_TRY(bf_run_newbuf(r, &r->aux_id[i], 2 * N * sizeof(float), BF_BUF_STATE, L->name, " row mean / inverse std"));
    bf_run_use(r, r->aux_id[i], t);
    return BF_OK;
}

static bf_status layernorm_forward(bf_run *r, int i, int rows) { return layernorm(r, i, rows, NULL); }

static bf_status layernorm_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    (void)din;
    return layernorm(r, i, rows, dout);
}

const bf_layer_ops bf_ops_LAYERNORM = {
    .name = "LAYERNORM",
    .flags = BF_LF_READS_IN | BF_LF_WHOLE16,
    .parse = bf_parse_norm,
    .infer = layernorm_infer,
    .mask = bf_mask_keep,
    .supported = layernorm_supported,
    .plan = layernorm_plan,
    .forward = layernorm_forward,
    .backward = layernorm_backward,
};

/* ---- MultiHeadAttention ---- */

static bf_status mha_parse(bf_layer *L, const bf_spec *s) {
    bf_attn_cfg *c = &L->cfg.attn;
    BF_TRY(bf_spec_size(s, "heads", 0, &c->heads));
    BF_TRY(bf_spec_size(s, "key_dim", 0, &c->key_dim));
    BF_TRY(bf_spec_size(s, "value_dim", 0, &c->value_dim));
    BF_TRY(bf_spec_size(s, "out_dim", 0, &c->out_dim));
    BF_TRY(bf_spec_flag(s, "causal", 0, &c->causal));
    BF_TRY(bf_spec_flag(s, "use_bias", 1, &c->use_bias));
    return bf_spec_float(s, "rate", 0.0f, &c->rate);
}

static bf_status mha_infer(bf_layer *L, int rank, const int *shape) {
    (void)L;
    (void)rank;
    (void)shape;
    return BF_OK; /* shapes and weights from all its inputs: mha_check */
}

/* query (TQ, DQ), value (TK, DV), key (TK, DK), mask (TQ, TK) optional;
 * Keras's weights in its order, kernels (D, heads, dim) and (heads,
 * value_dim, out), fans as Keras's compute_fans */
static bf_status mha_check(bf_model *m, int i) {
    bf_layer *L = &m->layers[i];
    const bf_attn_cfg *c = &L->cfg.attn;
    if (L->nin != 3 && L->nin != 4)
        return BF_FAIL(BF_ERR_ARG, "%s: MultiHeadAttention takes query, value, key and an optional mask, got %d inputs",
                       L->name, L->nin);
    if (c->heads <= 0 || c->key_dim <= 0 || c->value_dim <= 0 || c->out_dim < 0)
        return BF_FAIL(BF_ERR_ARG, "%s: num_heads, key_dim and value_dim must be positive", L->name);
    if (!(c->rate >= 0.0f && c->rate < 1.0f))
        return BF_FAIL(BF_ERR_ARG, "%s: dropout must be in [0, 1), got %g", L->name, (double)c->rate);
    const int *q = m->t_shape[L->in_ids[0]], *v = m->t_shape[L->in_ids[1]], *k = m->t_shape[L->in_ids[2]];
    for (int j = 0; j < 3; j++)
        if (m->t_rank[L->in_ids[j]] != 2)
            return BF_FAIL(BF_ERR_SHAPE, "%s: %s must have shape (batch, T, dim), got rank %d per sample", L->name,
                           j == 0 ? "query" : j == 1 ? "value" : "key", m->t_rank[L->in_ids[j]]);
    if (k[0] != v[0])
        return BF_FAIL(BF_ERR_SHAPE, "%s: key and value must have the same length, got %d and %d", L->name, k[0], v[0]);
    if (L->nin == 4) {
        const int *a = m->t_shape[L->in_ids[3]];
        if (m->t_rank[L->in_ids[3]] != 2 || a[0] != q[0] || a[1] != v[0])
            return BF_FAIL(BF_ERR_SHAPE, "%s: attention_mask must have shape (batch, %d, %d)", L->name, q[0], v[0]);
    }
    const int H = c->heads, out = c->out_dim ? c->out_dim : q[1];
    if ((long long)H * c->key_dim > INT_MAX || (long long)H * c->value_dim > INT_MAX) /* the heads side by side */
        return BF_FAIL(BF_ERR_ARG, "%s: num_heads * key_dim and num_heads * value_dim must be at most %d, got %d * %d "
                       "and %d * %d", L->name, INT_MAX, H, c->key_dim, H, c->value_dim);
    const int dims[3] = {q[1], k[1], v[1]}, per[3] = {c->key_dim, c->key_dim, c->value_dim};
    const char *names[3] = {"query", "key", "value"};
    char nm[32];
    L->nparam = 0;
    for (int j = 0; j < 3; j++) {
        int ks[3] = {dims[j], H, per[j]}, bs[2] = {H, per[j]};
        snprintf(nm, sizeof nm, "%s/kernel", names[j]);
        bf_add_param(L, 0, nm, 3, ks, 1, BF_INIT_GLOROT_UNIFORM, (float)H * dims[j], (float)per[j] * dims[j]);
        snprintf(nm, sizeof nm, "%s/bias", names[j]);
        if (c->use_bias) bf_add_param(L, 1, nm, 2, bs, 1, BF_INIT_ZEROS, (float)H, (float)per[j]);
    }
    int os[3] = {H, c->value_dim, out};
    bf_add_param(L, 0, "attention_output/kernel", 3, os, 1, BF_INIT_GLOROT_UNIFORM, (float)c->value_dim * H,
                 (float)out * H);
    if (c->use_bias) bf_add_param(L, 1, "attention_output/bias", 1, &out, 1, BF_INIT_ZEROS, 0, 0);
    L->out_rank = 2;
    L->out_shape[0] = q[0];
    L->out_shape[1] = out;
    return BF_OK;
}

/* the query, value and key masks join attention_mask in the core */
static int mha_mask_reads(const bf_layer *L) {
    (void)L;
    return 3;
}

static int mha_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->attention_forward && be->attention_backward && be->attention_workspace_bytes;
}

/* projections and weights: kept for backward, else freed after forward */
static bf_status mha_plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    bf_backend *be = r->be;
    bf_attn_geom g;
    mha_geom(r->m, L, r->B, bf_node_training(r, i), bw, &g);
    BF_TRY(bf_run_newbuf(r, &r->aux_id[i], mha_keep_bytes(&g), BF_BUF_STATE,
                         L->name, " projections and attention weights"));
    bf_run_use(r, r->aux_id[i], t);
    size_t w = be->attention_workspace_bytes(be, &g, 0);
    if (w) {
        BF_TRY(bf_run_newbuf(r, &r->fws_id[i], w, BF_BUF_STATE, L->name, " attention scratch"));
        bf_run_use(r, r->fws_id[i], t);
    }
    if (bw) {
        BF_TRY(bf_run_newbuf(r, &r->bws_id[i], mha_backward_bytes(be, &g), BF_BUF_STATE, L->name,
                             " backward projections and scratch"));
        bf_run_use(r, r->bws_id[i], tb);
    }
    return BF_OK;
}

static bf_status mha_backward_op(bf_run *r, int i, int rows, float *din, float *dout) {
    (void)din;
    return mha_backward(r, i, rows, dout);
}

const bf_layer_ops bf_ops_MHA = {
    .name = "MHA",
    .flags = BF_LF_MULTI_IN | BF_LF_READS_IN | BF_LF_WHOLE16,
    .parse = mha_parse,
    .infer = mha_infer,
    .check = mha_check,
    .mask = bf_mask_keep, /* masks the attention; the output carries the query's mask */
    .mask_reads = mha_mask_reads,
    .supported = mha_supported,
    .plan = mha_plan,
    .forward = mha_forward,
    .backward = mha_backward_op,
};
