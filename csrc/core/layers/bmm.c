/* bmm.c - BMM: a matrix product per sample, out (B, M, N) = op(a) (B, M, K)
 * @ op(b) (B, K, N), op the transpose where bf_bmm_cfg.ta / tb: layers.Dot and
 * keras.ops matmul / tensordot / einsum-free batched products of symbolic
 * tensors (python/boundfit/ops.py; rank-1 operands come as (1, K) / (K, 1)
 * through a Reshape). A transposed operand is copied (strided_copy) into the
 * workspace first; each sample is then one dense_forward / dense_backward of
 * the backend (a GEMM), so every backend with Dense runs it. */
#include "layer.h"

#include <string.h>

typedef struct {
    int M, K, N;
} mm_dims;

static bf_status parse(bf_layer *L, const bf_spec *s) {
    BF_TRY(bf_spec_flag(s, "mm_ta", 0, &L->cfg.bmm.ta));
    return bf_spec_flag(s, "mm_tb", 0, &L->cfg.bmm.tb);
}

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    (void)shape;
    if (rank != 2) return BF_FAIL(BF_ERR_SHAPE, "%s: a per-sample matrix product needs (rows, cols) inputs", L->name);
    return BF_OK;
}

static mm_dims dims(const bf_model *m, const bf_layer *L) {
    const bf_bmm_cfg *c = &L->cfg.bmm;
    const int *a = m->t_shape[L->in_ids[0]], *b = m->t_shape[L->in_ids[L->nin > 1]];
    mm_dims d = {c->ta ? a[1] : a[0], c->ta ? a[0] : a[1], c->tb ? b[0] : b[1]};
    return d;
}

static bf_status check(bf_model *m, int i) {
    bf_layer *L = &m->layers[i];
    const bf_bmm_cfg *c = &L->cfg.bmm;
    if (L->nin != 2) return BF_FAIL(BF_ERR_ARG, "%s: a matrix product of 2 inputs, got %d", L->name, L->nin);
    const int *b = m->t_shape[L->in_ids[1]];
    const int kb = c->tb ? b[1] : b[0];
    mm_dims d = dims(m, L);
    if (m->t_rank[L->in_ids[1]] != 2 || kb != d.K) {
        char x[48], y[48];
        bf_shape_str(x, sizeof x, m->t_rank[L->in_ids[0]], m->t_shape[L->in_ids[0]]);
        bf_shape_str(y, sizeof y, m->t_rank[L->in_ids[1]], b);
        return BF_FAIL(BF_ERR_SHAPE, "%s: per-sample shapes %s%s and %s%s do not multiply", L->name, x,
                       c->ta ? " (transposed)" : "", y, c->tb ? " (transposed)" : "");
    }
    L->out_rank = 2;
    L->out_shape[0] = d.M;
    L->out_shape[1] = d.N;
    return BF_OK;
}

static int supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->dense_forward && be->dense_backward && be->strided_copy && be->fill_zero;
}

/* floats of the workspace: forward op(a), op(b) where transposed; backward
 * those and the gradients of op(a), op(b) where transposed */
static size_t ws_floats(const bf_model *m, const bf_layer *L, int B, int backward) {
    const bf_bmm_cfg *c = &L->cfg.bmm;
    mm_dims d = dims(m, L);
    size_t a = (size_t)B * d.M * d.K, b = (size_t)B * d.K * d.N;
    return (c->ta ? a : 0) + (c->tb ? b : 0) + (backward ? (c->ta ? a : 0) + (c->tb ? b : 0) : 0);
}

static bf_status plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    size_t f = ws_floats(r->m, L, r->B, 0), b = ws_floats(r->m, L, r->B, 1);
    if (f) {
        BF_TRY(bf_run_newbuf(r, &r->fws_id[i], f * sizeof(float), BF_BUF_STATE, L->name, " transposed operands"));
        bf_run_use(r, r->fws_id[i], t);
    }
    if (bw && b) {
        BF_TRY(bf_run_newbuf(r, &r->bws_id[i], b * sizeof(float), BF_BUF_STATE,
                             L->name, " transposed operands and gradients"));
        bf_run_use(r, r->bws_id[i], tb);
    }
    return BF_OK;
}

/* out (rows, C, R) = inp (rows, R, C) transposed per sample */
static bf_status transpose(bf_backend *be, float *out, const float *inp, int rows, int R, int C) {
    bf_strided g;
    memset(&g, 0, sizeof g);
    g.nd = 3;
    g.n[0] = rows, g.n[1] = C, g.n[2] = R;
    g.os[0] = (long)R * C, g.os[1] = R, g.os[2] = 1;
    g.is[0] = (long)R * C, g.is[1] = 1, g.is[2] = C;
    return be->strided_copy(be, out, inp, &g);
}

/* op(a), op(b) of rows samples: the inputs, or their transposes at ws (advanced past them) */
static bf_status operands(bf_run *r, int i, int rows, float **ws, const float **A, const float **Bm) {
    const bf_layer *L = &r->m->layers[i];
    const bf_bmm_cfg *c = &L->cfg.bmm;
    mm_dims d = dims(r->m, L);
    *A = bf_step_tensor(r, L->in_ids[0]);
    *Bm = bf_step_tensor(r, L->in_ids[1]);
    if (c->ta) {
        BF_TRY(transpose(r->be, *ws, *A, rows, d.K, d.M));
        *A = *ws;
        *ws += (size_t)rows * d.M * d.K;
    }
    if (c->tb) {
        BF_TRY(transpose(r->be, *ws, *Bm, rows, d.N, d.K));
        *Bm = *ws;
        *ws += (size_t)rows * d.K * d.N;
    }
    return BF_OK;
}

// out (B, M, N) = op(a) (B, M, K) @ op(b) (B, K, N)
static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    mm_dims d = dims(r->m, L);
    float *ws = bf_step_buf(r, r->fws_id[i]), *out = bf_step_out(r, i);
    const float *A, *Bm;
    BF_TRY(operands(r, i, rows, &ws, &A, &Bm));
    for (int s = 0; s < rows; s++)
        BF_TRY(r->be->dense_forward(r->be, out + (size_t)s * d.M * d.N, A + (size_t)s * d.M * d.K,
                                    Bm + (size_t)s * d.K * d.N, NULL, d.M, d.K, d.N));
    return BF_OK;
}

// d op(a) = dout @ op(b)^T, d op(b) = op(a)^T @ dout per sample; transposed back where transposed
static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    const bf_bmm_cfg *c = &L->cfg.bmm;
    bf_backend *be = r->be;
    mm_dims d = dims(r->m, L);
    (void)din;
    float *ws = bf_step_buf(r, r->bws_id[i]);
    const float *A, *Bm;
    BF_TRY(operands(r, i, rows, &ws, &A, &Bm));
    float *da = bf_step_din(r, i, 0), *db = bf_step_din(r, i, 1);
    float *ga = da && c->ta ? ws : da;
    if (c->ta) ws += (size_t)rows * d.M * d.K;
    float *gb = db && c->tb ? ws : db;
    if (gb) BF_TRY(be->fill_zero(be, gb, sizeof(float) * (size_t)rows * d.K * d.N)); /* dense_backward adds */
    for (int s = 0; s < rows; s++)
        BF_TRY(be->dense_backward(be, ga ? ga + (size_t)s * d.M * d.K : NULL, gb ? gb + (size_t)s * d.K * d.N : NULL,
                                  NULL, dout + (size_t)s * d.M * d.N, A + (size_t)s * d.M * d.K,
                                  Bm + (size_t)s * d.K * d.N, d.M, d.K, d.N));
    if (da && c->ta) BF_TRY(transpose(be, da, ga, rows, d.M, d.K));
    if (db && c->tb) BF_TRY(transpose(be, db, gb, rows, d.K, d.N));
    return BF_OK;
}

const bf_layer_ops bf_ops_BMM = {
    .name = "BMM", .flags = BF_LF_MULTI_IN | BF_LF_READS_IN, .parse = parse, .infer = infer, .check = check,
    .supported = supported, .forward = forward, .backward = backward, .plan = plan,
};
