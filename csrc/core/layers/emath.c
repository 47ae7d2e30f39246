/* emath.c - keras.ops math on symbolic tensors (python/boundfit/ops.py), all
 * through the backend's ewise and strided_copy:
 * - UNARY: one elementwise op of its input (bf_emath_cfg.op, below), with
 *   the scalar bf_emath_cfg.param where one is used (max(x, c), x > c, c / x);
 * - BINARY: an elementwise op (bf_emath_cfg.op) of two inputs of one rank whose axes agree or
 *   are 1 (NumPy's broadcasting with the batch axes aligned): forward copies
 *   a broadcast operand out to the output's shape (workspace), backward
 *   takes the full-shape gradient and sums it over the broadcast axes;
 * - WEIGHT: a custom layer's trainable weight (add_weight), its shape in
 *   target_shape, the same for every sample: forward a broadcast copy,
 *   backward adds the batch's sum of dout into its gradient. Its input gives
 *   only the batch size and gets a zero gradient.
 * Ties of max / min pass the gradient to every input that equals the result. */
#include "layer.h"

#include <string.h>

/* UNARY ops */
enum { U_SQRT = 0, U_SQUARE, U_ABS, U_EXP, U_LOG, U_MAXC, U_MINC, U_GT, U_GE, U_LT, U_LE, U_RDIV, U_LAST = U_RDIV };
/* BINARY ops */
enum { B_ADD = 0, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN, B_GT, B_GE, B_LT, B_LE, B_LAST = B_LE };

static int ewise_ok(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->ewise && be->strided_copy && be->fill_zero;
}

/* the op (eop) and UNARY's scalar (eparam); BATCH_REDUCE's op too (batch.c) */
bf_status bf_parse_emath(bf_layer *L, const bf_spec *s) {
    BF_TRY(bf_spec_int(s, "eop", 0, &L->cfg.emath.op));
    return bf_spec_float(s, "eparam", 0.0f, &L->cfg.emath.param);
}

/* ---- UNARY ---- */

static bf_status u_infer(bf_layer *L, int rank, const int *shape) {
    const int op = L->cfg.emath.op;
    (void)rank;
    (void)shape;
    if (op < 0 || op > U_LAST) return BF_FAIL(BF_ERR_ARG, "%s: unknown elementwise op %d", L->name, op);
    return BF_OK;
}

static const bf_ewise_op u_fwd[] = {BF_EW_SQRT, BF_EW_MUL, BF_EW_ABS, BF_EW_EXP, BF_EW_LOG, BF_EW_MAXC,
                                    BF_EW_MINC, BF_EW_GT,  BF_EW_GE,  BF_EW_LT,  BF_EW_LE,  BF_EW_RDIV};

// out (B, shape) = op(inp)
static bf_status u_forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    const float *x = bf_step_in(r, i);
    const int op = L->cfg.emath.op;
    const float alpha = op >= U_MAXC ? L->cfg.emath.param : 1.0f; /* the scalar of max / min, comparisons, c / x */
    return r->be->ewise(r->be, bf_step_out(r, i), x, op == U_SQUARE ? x : NULL, NULL, u_fwd[op], alpha,
                        (long)rows * L->out_size);
}

// din (B, shape) = op'(x, y) * dout
static bf_status u_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    bf_backend *be = r->be;
    if (!din) return BF_OK;
    const long n = (long)rows * L->out_size;
    const float *x = bf_step_in(r, i), *y = bf_step_out(r, i);
    switch (L->cfg.emath.op) {
    case U_SQRT: return be->ewise(be, din, dout, y, NULL, BF_EW_DIV, 0.5f, n);      /* dout / (2 sqrt(x)) */
    case U_SQUARE: return be->ewise(be, din, dout, x, NULL, BF_EW_MUL, 2.0f, n);    /* 2 x dout */
    case U_ABS: return be->ewise(be, din, dout, x, NULL, BF_EW_MULSIGN, 1.0f, n);   /* sign(x) dout */
    case U_EXP: return be->ewise(be, din, dout, y, NULL, BF_EW_MUL, 1.0f, n);       /* exp(x) dout */
    case U_LOG: return be->ewise(be, din, dout, x, NULL, BF_EW_DIV, 1.0f, n);       /* dout / x */
    case U_MAXC: case U_MINC: return be->ewise(be, din, x, y, dout, BF_EW_SELECT, 1.0f, n);
    case U_RDIV: /* d(c / x) = -(c / x) / x dout */
        BF_TRY(be->ewise(be, din, dout, y, NULL, BF_EW_MUL, 1.0f, n));
        return be->ewise(be, din, din, x, NULL, BF_EW_DIV, -1.0f, n);
    default: return be->fill_zero(be, din, sizeof(float) * (size_t)n); /* comparisons: no gradient */
    }
}

const bf_layer_ops bf_ops_UNARY = {
    .name = "UNARY", .flags = BF_LF_READS_IN | BF_LF_READS_OUT | BF_LF_SCALAR | BF_LF_ANY_RANK, .parse = bf_parse_emath, .infer = u_infer,
    .supported = ewise_ok,
    .forward = u_forward, .backward = u_backward,
};

/* ---- BINARY ---- */

static bf_status b_infer(bf_layer *L, int rank, const int *shape) {
    const int op = L->cfg.emath.op;
    (void)rank;
    (void)shape;
    if (op < 0 || op > B_LAST) return BF_FAIL(BF_ERR_ARG, "%s: unknown elementwise op %d", L->name, op);
    return BF_OK;
}

/* the two inputs have one rank and each axis agrees or is 1; the output takes the larger */
static bf_status b_check(bf_model *m, int i) {
    bf_layer *L = &m->layers[i];
    if (L->nin != 2) return BF_FAIL(BF_ERR_ARG, "%s: an elementwise op of 2 inputs, got %d", L->name, L->nin);
    const int a = L->in_ids[0], b = L->in_ids[1], R = m->t_rank[a];
    int ok = m->t_rank[b] == R;
    for (int d = 0; ok && d < R; d++) {
        const int p = m->t_shape[a][d], q = m->t_shape[b][d];
        ok = p == q || p == 1 || q == 1;
        L->out_shape[d] = p > q ? p : q;
    }
    if (!ok) {
        char x[48], y[48];
        bf_shape_str(x, sizeof x, R, m->t_shape[a]);
        bf_shape_str(y, sizeof y, m->t_rank[b], m->t_shape[b]);
        return BF_FAIL(BF_ERR_SHAPE, "%s: shapes %s and %s do not broadcast (one rank, each axis equal or 1)",
                       L->name, x, y);
    }
    return BF_OK;
}

/* input j's shape is the output's (no copy needed) */
static int b_full(const bf_model *m, const bf_layer *L, int j) { return m->t_size[L->in_ids[j]] == L->out_size; }

/* the broadcast copy of input j (forward) or the sum of a full gradient over
 * the broadcast axes into input j's shape (backward), rows samples */
static void b_geom(const bf_model *m, const bf_layer *L, int j, int rows, int reduce, bf_strided *g) {
    const int t = L->in_ids[j], R = L->out_rank;
    long fs[4], ts[4]; /* strides of the full shape and of input j's, batch axis first */
    int n[4], own[4];
    n[0] = rows;
    own[0] = rows;
    for (int d = 0; d < R; d++) {
        n[d + 1] = L->out_shape[d];
        own[d + 1] = m->t_shape[t][d];
    }
    fs[R] = ts[R] = 1;
    for (int d = R - 1; d >= 0; d--) {
        fs[d] = fs[d + 1] * n[d + 1];
        ts[d] = ts[d + 1] * own[d + 1];
    }
    memset(g, 0, sizeof *g);
    for (int d = 0; d <= R; d++) {
        const int bcast = own[d] == 1 && n[d] > 1;
        if (!reduce) { /* out: the full shape; in: input j, stride 0 on its size-1 axes */
            g->n[g->nd] = n[d];
            g->os[g->nd] = fs[d];
            g->is[g->nd++] = bcast ? 0 : ts[d];
        } else if (!bcast) { /* out: input j's shape, in: the full gradient */
            g->n[g->nd] = n[d];
            g->os[g->nd] = ts[d];
            g->is[g->nd++] = fs[d];
        } else if (g->nr > 0 && g->rs[g->nr - 1] == fs[d] * n[d]) { /* merges with the previous summed axis */
            g->rn[g->nr - 1] *= n[d];
            g->rs[g->nr - 1] = fs[d];
        } else {
            g->rn[g->nr] = n[d];
            g->rs[g->nr++] = fs[d];
        }
    }
}

/* a summed axis group count of at most 2 (b_check's shapes of rank <= 3: size-1 runs) */
static int b_groups(const bf_model *m, const bf_layer *L, int j) {
    bf_strided g;
    b_geom(m, L, j, 1, 1, &g);
    return g.nr;
}

/* floats: forward the broadcast copies; backward those and the full gradient */
static size_t b_ws_floats(const bf_model *m, const bf_layer *L, int B, int backward) {
    size_t n = (size_t)B * (size_t)L->out_size, k = 0;
    for (int j = 0; j < 2; j++) k += !b_full(m, L, j);
    return k ? n * (k + (backward ? 1 : 0)) : 0;
}

static bf_status b_plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    for (int j = 0; j < 2; j++)
        if (b_groups(r->m, L, j) > 2) return BF_FAIL(BF_ERR_SHAPE, "%s: too many broadcast axes", L->name);
    size_t f = b_ws_floats(r->m, L, r->B, 0), b = b_ws_floats(r->m, L, r->B, 1);
    if (f) {
        BF_TRY(bf_run_newbuf(r, &r->fws_id[i], f * sizeof(float), BF_BUF_STATE, L->name, " broadcast operands"));
        bf_run_use(r, r->fws_id[i], t);
    }
    if (bw && b) {
        BF_TRY(bf_run_newbuf(r, &r->bws_id[i], b * sizeof(float), BF_BUF_STATE,
                             L->name, " broadcast operands and gradient"));
        bf_run_use(r, r->bws_id[i], tb);
    }
    return BF_OK;
}

/* the two operands at the output's shape: the inputs, or their copies in ws */
static bf_status b_operands(bf_run *r, int i, int rows, float *ws, const float *op[2]) {
    const bf_layer *L = &r->m->layers[i];
    for (int j = 0; j < 2; j++) {
        op[j] = bf_step_tensor(r, L->in_ids[j]);
        if (b_full(r->m, L, j)) continue;
        bf_strided g;
        b_geom(r->m, L, j, rows, 0, &g);
        BF_TRY(r->be->strided_copy(r->be, ws, op[j], &g));
        op[j] = ws;
        ws += (size_t)rows * (size_t)L->out_size;
    }
    return BF_OK;
}

static const bf_ewise_op b_fwd[] = {BF_EW_ADD, BF_EW_SUB, BF_EW_MUL, BF_EW_DIV, BF_EW_MAX,
                                    BF_EW_MIN, BF_EW_GT,  BF_EW_GE,  BF_EW_LT,  BF_EW_LE};

// out (B, shape) = op(a, b) with size-1 axes broadcast
static bf_status b_forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    const float *op[2];
    BF_TRY(b_operands(r, i, rows, bf_step_buf(r, r->fws_id[i]), op));
    return r->be->ewise(r->be, bf_step_out(r, i), op[0], op[1], NULL, b_fwd[L->cfg.emath.op], 1.0f,
                        (long)rows * L->out_size);
}

// din_j = the sum over input j's broadcast axes of d op / d input_j * dout
static bf_status b_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    bf_backend *be = r->be;
    const long n = (long)rows * L->out_size;
    (void)din;
    float *ws = bf_step_buf(r, r->bws_id[i]);
    const float *op[2], *y = bf_step_out(r, i);
    BF_TRY(b_operands(r, i, rows, ws, op));
    float *full = ws ? ws + (size_t)(b_ws_floats(r->m, L, rows, 1) - (size_t)n) : NULL; /* the last n floats */
    for (int j = 0; j < 2; j++) {
        float *d = bf_step_din(r, i, j);
        if (!d) continue;
        const int direct = b_full(r->m, L, j);
        float *g = direct ? d : full;
        switch (L->cfg.emath.op) {
        case B_ADD: BF_TRY(be->ewise(be, g, dout, NULL, NULL, BF_EW_SCALE, 1.0f, n)); break;
        case B_SUB: BF_TRY(be->ewise(be, g, dout, NULL, NULL, BF_EW_SCALE, j ? -1.0f : 1.0f, n)); break;
        case B_MUL: BF_TRY(be->ewise(be, g, dout, op[1 - j], NULL, BF_EW_MUL, 1.0f, n)); break;
        case B_DIV: /* a / b: dout / b; -dout * (a / b) / b */
            if (j == 0) {
                BF_TRY(be->ewise(be, g, dout, op[1], NULL, BF_EW_DIV, 1.0f, n));
            } else {
                BF_TRY(be->ewise(be, g, dout, y, NULL, BF_EW_MUL, 1.0f, n));
                BF_TRY(be->ewise(be, g, g, op[1], NULL, BF_EW_DIV, -1.0f, n));
            }
            break;
        case B_MAX: case B_MIN: BF_TRY(be->ewise(be, g, op[j], y, dout, BF_EW_SELECT, 1.0f, n)); break;
        default: BF_TRY(be->fill_zero(be, g, sizeof(float) * (size_t)n)); break; /* comparisons */
        }
        if (!direct) {
            bf_strided s;
            b_geom(r->m, L, j, rows, 1, &s);
            BF_TRY(be->strided_copy(be, d, full, &s));
        }
    }
    return BF_OK;
}

const bf_layer_ops bf_ops_BINARY = {
    .name = "BINARY", .flags = BF_LF_MULTI_IN | BF_LF_READS_IN | BF_LF_READS_OUT | BF_LF_SCALAR,
    .parse = bf_parse_emath, .infer = b_infer,
    .check = b_check, .supported = ewise_ok, .plan = b_plan, .forward = b_forward, .backward = b_backward,
};

/* ---- WEIGHT ---- */

static bf_status w_infer(bf_layer *L, int rank, const int *shape) {
    (void)rank;
    (void)shape;
    if (L->out_rank < 1 || L->out_rank > 3) return BF_FAIL(BF_ERR_SHAPE, "%s: a weight of 1 to 3 axes", L->name);
    const int R = L->out_rank, last = L->out_shape[R - 1];
    long rf = 1; /* Keras's fans: the receptive field is the product of the axes before the last two */
    for (int d = 0; d < R - 2; d++) rf *= L->out_shape[d];
    const float fan_in = R == 1 ? (float)last : (float)(rf * L->out_shape[R - 2]);
    bf_add_param(L, 0, "kernel", R, L->out_shape, 1, BF_INIT_GLOROT_UNIFORM, fan_in, (float)(rf * last));
    return BF_OK;
}

static bf_status w_plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    (void)t;
    if (!bw) return BF_OK;
    BF_TRY(bf_run_newbuf(r, &r->bws_id[i], (size_t)L->out_size * sizeof(float), BF_BUF_STATE,
                         L->name, " gradient sum"));
    bf_run_use(r, r->bws_id[i], tb);
    return BF_OK;
}

// out (B, shape) = w (shape) for every sample
static bf_status w_forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    return bf_run_rows_of(r, bf_step_out(r, i), bf_step_param(r, L, 0), rows, L->out_size);
}

// dw (shape) += sum_b dout (B, shape); dinp (anchor) = 0
static bf_status w_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    bf_backend *be = r->be;
    float *dw = bf_step_grad(r, L, 0), *ws = bf_step_buf(r, r->bws_id[i]);
    if (din) BF_TRY(be->fill_zero(be, din, sizeof(float) * (size_t)rows * (size_t)L->in_size));
    if (!dw || !ws) return BF_OK;
    bf_strided g;
    memset(&g, 0, sizeof g);
    g.nd = 1;
    g.n[0] = L->out_size;
    g.os[0] = g.is[0] = 1;
    g.nr = 1;
    g.rn[0] = rows;
    g.rs[0] = L->out_size;
    BF_TRY(be->strided_copy(be, ws, dout, &g));
    return be->ewise(be, dw, dw, ws, NULL, BF_EW_ADD, 1.0f, L->out_size);
}

const bf_layer_ops bf_ops_WEIGHT = {
    .name = "WEIGHT", .flags = BF_LF_OUT_GIVEN | BF_LF_SCALAR, .infer = w_infer, .supported = ewise_ok, .plan = w_plan,
    .forward = w_forward, .backward = w_backward,
};
