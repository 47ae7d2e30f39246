/* run_attn.c - LayerNormalization and MultiHeadAttention nodes in a run.
 * MultiHeadAttention (inputs query, value, key, optional mask) is three Dense
 * GEMMs over all positions (Qp, Kp, Vp), the attention core per (b, h)
 * (backend attention_*), and the output GEMM. Its planned buffers: aux_id
 * holds Qp, Kp, Vp, O and the weights P (kept for backward, or one tile when
 * no backward runs); fws_id the forward scratch (transposed keys, dropout tile); bws_id dO,
 * dQp, dKp, dVp and the backward scratch. Each input's gradient goes where
 * program.c planned it (a query used as value and key gets three
 * contributions, summed by the core); the mask gets none. The step masks of
 * query, value and key (Embedding mask_zero) join attention_mask in the core. */
#include "run_attn.h"

#include <math.h>

#include "seq_run.h"

#define BUF(r, id) ((float *)((r)->scratch + (r)->bufs[id].offset))
#define SEC(n) (((size_t)(n) + 63) / 64 * 64) /* floats, sections 256-byte aligned */

static float *tb(bf_run *r, int t) { return r->t_buf[t] == BF_X_NONE ? r->xslot[r->cur] : BUF(r, r->t_buf[t]); }
static float *prm(bf_run *r, const bf_layer *L, int j) { return r->w + L->params[j].offset; }
static float *grd(bf_run *r, const bf_layer *L, int j) {
    return L->params[j].trainable ? r->grads + L->params[j].grad_offset : NULL;
}
static float *din(bf_run *r, int i, int j) {
    int g = r->gtmp[i][j];
    if (g == -3) return NULL;
    return BUF(r, g == -2 ? r->t_grad[r->m->layers[i].in_ids[j]] : g);
}

void bf_mha_geom(const bf_model *m, const bf_layer *L, int rows, int train, int keep, bf_attn_geom *g) {
    g->B = rows;
    g->H = L->heads;
    g->TQ = m->t_shape[L->in_ids[0]][0];
    g->TK = m->t_shape[L->in_ids[1]][0];
    g->DK = L->key_dim;
    g->DV = L->value_dim;
    g->scale = (float)(1.0 / sqrt((double)L->key_dim));
    g->causal = L->causal;
    g->rate = train ? L->rate : 0.0f;
    g->seed = 0;
    g->p_tile = !keep;
    g->qmask = g->vmask = g->kmask = NULL; /* set per run (mha_parts_of) */
    g->zero_empty = L->rate > 0.0f;
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

size_t bf_mha_keep_bytes(const bf_attn_geom *g) {
    size_t s[5];
    keep_sections(g, s);
    return sizeof(float) * (s[0] + s[1] + s[2] + s[3] + s[4]);
}

size_t bf_mha_backward_bytes(bf_backend *be, const bf_attn_geom *g) {
    size_t s[5];
    keep_sections(g, s);
    /* dO as O, dQp as Qp, dKp as Kp, dVp as Vp */
    return sizeof(float) * (s[3] + s[0] + s[1] + s[2]) + be->attention_workspace_bytes(be, g, 1);
}

static bf_status layernorm(bf_run *r, int i, int rows, int backward) {
    bf_backend *be = r->be;
    bf_layer *L = &r->m->layers[i];
    const int C = L->in_shape[L->in_rank - 1];
    const long N = (long)rows * L->in_size / C;
    float *st = BUF(r, r->aux_id[i]), *in = tb(r, L->in_ids[0]);
    int j = 0;
    float *gamma = L->scale ? prm(r, L, j) : NULL, *dgamma = L->scale ? grd(r, L, j++) : NULL;
    float *beta = L->center ? prm(r, L, j) : NULL, *dbeta = L->center ? grd(r, L, j) : NULL;
    if (!backward)
        return be->layernorm_forward(be, tb(r, r->m->n_inputs + i), st, st + N, in, gamma, beta, N, C, L->eps);
    return be->layernorm_backward(be, din(r, i, 0), dgamma, dbeta, BUF(r, r->t_grad[r->m->n_inputs + i]), in, st,
                                  st + N, gamma, N, C);
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
    bf_layer *L = &m->layers[i];
    bf_mha_geom(m, L, rows, r->mode == BF_MODE_TRAIN, r->node_bw[i], &p->g);
    p->q = tb(r, L->in_ids[0]);
    p->v = tb(r, L->in_ids[1]);
    p->k = tb(r, L->in_ids[2]);
    p->mask = L->nin > 3 ? tb(r, L->in_ids[3]) : NULL;
    p->g.qmask = bf_seq_mask(r, L->in_ids[0]); /* Embedding(mask_zero=True) masks the inputs carry */
    p->g.vmask = bf_seq_mask(r, L->in_ids[1]);
    p->g.kmask = bf_seq_mask(r, L->in_ids[2]);
    size_t s[5];
    keep_sections(&p->g, s);
    p->Qp = BUF(r, r->aux_id[i]);
    p->Kp = p->Qp + s[0];
    p->Vp = p->Kp + s[1];
    p->O = p->Vp + s[2];
    p->P = p->O + s[3];
    p->DQ = m->t_shape[L->in_ids[0]][1];
    p->DVin = m->t_shape[L->in_ids[1]][1];
    p->DKin = m->t_shape[L->in_ids[2]][1];
    p->DOUT = L->out_shape[1];
    p->nb = L->use_bias ? 2 : 1;
}

static bf_status mha_forward(bf_run *r, int i, int rows) {
    bf_backend *be = r->be;
    bf_layer *L = &r->m->layers[i];
    mha_parts p;
    mha_parts_of(r, i, rows, &p);
    const int nb = p.nb, H = L->heads, NQ = rows * p.g.TQ, NK = rows * p.g.TK;
    if (p.g.rate > 0.0f) { /* a fresh mask every step, the same for this step's backward */
        r->attn_seed[i] = bf_splitmix64(r->dropout_seed ^ ((uint64_t)(i + 1) << 40));
        r->dropout_seed = bf_splitmix64(r->dropout_seed + 1);
    }
    p.g.seed = r->attn_seed[i];
#define BIAS(j) (L->use_bias ? prm(r, L, (j) * nb + 1) : NULL)
    BF_TRY(be->dense_forward(be, p.Qp, p.q, prm(r, L, 0), BIAS(0), NQ, p.DQ, H * L->key_dim));
    BF_TRY(be->dense_forward(be, p.Kp, p.k, prm(r, L, nb), BIAS(1), NK, p.DKin, H * L->key_dim));
    BF_TRY(be->dense_forward(be, p.Vp, p.v, prm(r, L, 2 * nb), BIAS(2), NK, p.DVin, H * L->value_dim));
    BF_TRY(be->attention_forward(be, p.O, p.P, r->fws_id[i] >= 0 ? BUF(r, r->fws_id[i]) : NULL, p.Qp, p.Kp, p.Vp,
                                 p.mask, &p.g));
    BF_TRY(be->dense_forward(be, tb(r, r->m->n_inputs + i), p.O, prm(r, L, 3 * nb), BIAS(3), NQ, H * L->value_dim,
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

static bf_status mha_backward(bf_run *r, int i, int rows) {
    bf_backend *be = r->be;
    bf_layer *L = &r->m->layers[i];
    mha_parts p;
    mha_parts_of(r, i, rows, &p);
    p.g.seed = r->attn_seed[i];
    const int nb = p.nb, H = L->heads, NQ = rows * p.g.TQ, NK = rows * p.g.TK;
    size_t s[5];
    keep_sections(&p.g, s);
    float *dO = BUF(r, r->bws_id[i]), *dQ = dO + s[3], *dK = dQ + s[0], *dV = dK + s[1], *ws = dV + s[2];
    const float *dout = BUF(r, r->t_grad[r->m->n_inputs + i]);
#define DB(j) (L->use_bias ? grd(r, L, (j) * nb + 1) : NULL)
    BF_TRY(proj_backward(r, dO, grd(r, L, 3 * nb), DB(3), dout, p.O, prm(r, L, 3 * nb), NQ, H * L->value_dim, p.DOUT));
    BF_TRY(be->attention_backward(be, dQ, dK, dV, ws, dO, p.Qp, p.Kp, p.Vp, p.P, p.mask, &p.g));
    BF_TRY(proj_backward(r, din(r, i, 0), grd(r, L, 0), DB(0), dQ, p.q, prm(r, L, 0), NQ, p.DQ, H * L->key_dim));
    BF_TRY(proj_backward(r, din(r, i, 1), grd(r, L, 2 * nb), DB(2), dV, p.v, prm(r, L, 2 * nb), NK, p.DVin,
                         H * L->value_dim));
    BF_TRY(proj_backward(r, din(r, i, 2), grd(r, L, nb), DB(1), dK, p.k, prm(r, L, nb), NK, p.DKin, H * L->key_dim));
#undef DB
    float *dm = L->nin > 3 ? din(r, i, 3) : NULL; /* no gradient flows into a mask */
    if (dm) BF_TRY(be->fill_zero(be, dm, sizeof(float) * (size_t)rows * r->m->t_size[L->in_ids[3]]));
    return BF_OK;
}

bf_status bf_run_attn_forward(bf_run *r, int i, int rows) {
    return r->m->layers[i].kind == BF_L_LAYERNORM ? layernorm(r, i, rows, 0) : mha_forward(r, i, rows);
}

bf_status bf_run_attn_backward(bf_run *r, int i, int rows) {
    return r->m->layers[i].kind == BF_L_LAYERNORM ? layernorm(r, i, rows, 1) : mha_backward(r, i, rows);
}
