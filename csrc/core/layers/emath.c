/* emath.c - the elementwise primitives of keras.ops on symbolic tensors
 * (python/boundfit/ops_elementwise.py), through the backend's unary_map /
 * unary_grad and binary_map / binary_grad (ops and their keras.ops names:
 * emap_ops.h; values and derivatives: emap_math.h), and WEIGHT:
 * - UNARY: op(x) elementwise (bf_emath_cfg.op a BF_UN_* code with its
 *   parameters param, param2, param3), or a binary op with the number param
 *   as one operand (op = BF_UN_COUNT + its BF_BIN_* code, left: param is
 *   the left operand): x - 2, 2 ** x, mod(x, 3), x > 0.5;
 * - BINARY: op(a, b) (a BF_BIN_* code) of two inputs with NumPy's
 *   broadcasting of their per-sample shapes, right-aligned (the batch axes
 *   agree): each axis equal, 1, or missing from the shorter one. Nothing is
 *   copied out: the kernels read each operand through its strides (0 along a
 *   broadcast axis), and an operand's gradient sums its broadcast axes;
 * - WEIGHT: a custom layer's trainable weight (add_weight), its shape in
 *   target_shape, the same for every sample: forward a broadcast copy,
 *   backward adds the batch's sum of dout into its gradient. Its input gives
 *   only the batch size and gets a zero gradient. */
#include "layer.h"

#include <string.h>

#include "../emap_ops.h"

_Static_assert(BF_MAX_RANK + 1 <= BF_BCAST_MAXD, "a broadcast geometry holds the batch axis and a sample's axes");

/* the op (eop) and UNARY's parameters (eleft, eparam, eparam2, eparam3) */
bf_status bf_parse_emath(bf_layer *L, const bf_spec *s) {
    bf_emath_cfg *c = &L->cfg.emath;
    BF_TRY(bf_spec_int(s, "eop", 0, &c->op));
    BF_TRY(bf_spec_flag(s, "eleft", 0, &c->left));
    BF_TRY(bf_spec_float(s, "eparam", 0.0f, &c->param));
    BF_TRY(bf_spec_float(s, "eparam2", 0.0f, &c->param2));
    return bf_spec_float(s, "eparam3", 0.0f, &c->param3);
}

static int unary_ok(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->unary_map && be->unary_grad;
}

/* ---- UNARY ---- */

static bf_status u_infer(bf_layer *L, int rank, const int *shape) {
    const int op = L->cfg.emath.op;
    (void)rank;
    (void)shape;
    if (op < 0 || op >= BF_UN_COUNT + BF_BIN_COUNT)
        return BF_FAIL(BF_ERR_ARG, "%s: unknown elementwise op %d", L->name, op);
    return BF_OK;
}

static bf_map_op u_op(const bf_layer *L) {
    const bf_emath_cfg *c = &L->cfg.emath;
    bf_map_op m = {.op = c->op, .left = c->left, .p = c->param, .q = c->param2, .r = c->param3};
    return m;
}

// out (B, shape) = op(inp)
static bf_status u_forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    const bf_map_op m = u_op(L);
    return r->be->unary_map(r->be, bf_step_out(r, i), bf_step_in(r, i), &m, (long)rows * L->out_size);
}

/* a number added, subtracted, multiplied, divided by (x / c), or a negation (Rescaling, x + c, x * c): the
 * derivative is a constant, read of neither x nor y, so neither is kept for backward */
static int u_linear(const bf_emath_cfg *c) {
    const int b = c->op - BF_UN_COUNT;
    return c->op == BF_UN_NEGATIVE || b == BF_BIN_ADD || b == BF_BIN_SUBTRACT || b == BF_BIN_MULTIPLY ||
           (b == BF_BIN_DIVIDE && !c->left);
}

// din (B, shape) = op'(x, y) * dout (a linear op: x and y not kept, the kernel reads dout in their place)
static bf_status u_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    if (!din) return BF_OK;
    const bf_map_op m = u_op(L);
    const int lin = u_linear(&L->cfg.emath);
    return r->be->unary_grad(r->be, din, lin ? dout : bf_step_in(r, i), lin ? dout : bf_step_out(r, i), dout, &m,
                             (long)rows * L->out_size);
}

/* stop_gradient passes no gradient back: the nodes after it need none (a metric's traced statistics); a linear
 * op keeps neither its input nor its output for backward */
static unsigned u_node_flags(const bf_run *r, int i) {
    const bf_layer *L = &r->m->layers[i];
    const unsigned f = bf_layer_ops_of(L->kind)->flags;
    if (u_linear(&L->cfg.emath)) return f & ~(unsigned)(BF_LF_READS_IN | BF_LF_READS_OUT);
    return L->cfg.emath.op == BF_UN_STOP_GRADIENT ? f | BF_LF_NO_GRAD_IN : f;
}

const bf_layer_ops bf_ops_UNARY = {
    .name = "UNARY", .flags = BF_LF_READS_IN | BF_LF_READS_OUT | BF_LF_SCALAR | BF_LF_ANY_RANK,
    .parse = bf_parse_emath, .infer = u_infer,
    .supported = unary_ok, .node_flags = u_node_flags,
    .forward = u_forward, .backward = u_backward,
};

/* ---- BINARY ---- */

static int binary_ok(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->binary_map && be->binary_grad;
}

static bf_status b_infer(bf_layer *L, int rank, const int *shape) {
    const int op = L->cfg.emath.op;
    (void)rank;
    (void)shape;
    if (op < 0 || op >= BF_BIN_COUNT) return BF_FAIL(BF_ERR_ARG, "%s: unknown elementwise op %d", L->name, op);
    return BF_OK;
}

/* operand t's size along axis d of an output of rank R (right-aligned: 1 where it has no such axis) */
static int b_dim(const bf_model *m, int t, int R, int d) {
    const int k = d - (R - m->t_rank[t]);
    return k < 0 ? 1 : m->t_shape[t][k];
}

/* the per-sample shapes broadcast, right-aligned: each axis equal, 1 or missing; the output takes the larger */
static bf_status b_check(bf_model *m, int i) {
    bf_layer *L = &m->layers[i];
    if (L->nin != 2) return BF_FAIL(BF_ERR_ARG, "%s: an elementwise op of 2 inputs, got %d", L->name, L->nin);
    const int a = L->in_ids[0], b = L->in_ids[1];
    const int R = m->t_rank[a] > m->t_rank[b] ? m->t_rank[a] : m->t_rank[b];
    int ok = 1;
    for (int d = 0; d < R; d++) {
        const int p = b_dim(m, a, R, d), q = b_dim(m, b, R, d);
        ok = ok && (p == q || p == 1 || q == 1);
        L->out_shape[d] = p > q ? p : q;
    }
    L->out_rank = R;
    if (!ok) {
        char x[48], y[48];
        bf_shape_str(x, sizeof x, m->t_rank[a], m->t_shape[a]);
        bf_shape_str(y, sizeof y, m->t_rank[b], m->t_shape[b]);
        return BF_FAIL(BF_ERR_SHAPE, "%s: per-sample shapes %s and %s do not broadcast (right-aligned, each axis "
                       "equal or 1)", L->name, x, y);
    }
    return BF_OK;
}

/* the output (rows, shape) and each operand's strides, 0 along the axes it broadcasts */
static void b_geom(const bf_model *m, const bf_layer *L, int rows, bf_bcast *g) {
    const int R = L->out_rank;
    memset(g, 0, sizeof *g);
    g->nd = R + 1;
    g->n[0] = rows;
    for (int d = 0; d < R; d++) g->n[d + 1] = L->out_shape[d];
    for (int j = 0; j < 2; j++) {
        const int t = L->in_ids[j];
        long s = 1;
        for (int d = R; d >= 0; d--) {
            const int own = d ? b_dim(m, t, R, d - 1) : rows;
            g->s[j][d] = own == 1 && g->n[d] > 1 ? 0 : s;
            s *= own;
        }
    }
}

// out (B, shape) = op(a, b) broadcast
static bf_status b_forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    bf_bcast g;
    b_geom(r->m, L, rows, &g);
    return r->be->binary_map(r->be, bf_step_out(r, i), bf_step_tensor(r, L->in_ids[0]), bf_step_tensor(r, L->in_ids[1]),
                             L->cfg.emath.op, &g);
}

// din_j = the sum over input j's broadcast axes of d op / d input_j * dout
static bf_status b_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    const float *a = bf_step_tensor(r, L->in_ids[0]), *b = bf_step_tensor(r, L->in_ids[1]), *y = bf_step_out(r, i);
    bf_bcast g;
    (void)din;
    b_geom(r->m, L, rows, &g);
    for (int j = 0; j < 2; j++) {
        float *d = bf_step_din(r, i, j);
        if (d) BF_TRY(r->be->binary_grad(r->be, d, j, a, b, y, dout, L->cfg.emath.op, &g));
    }
    return BF_OK;
}

const bf_layer_ops bf_ops_BINARY = {
    .name = "BINARY", .flags = BF_LF_MULTI_IN | BF_LF_READS_IN | BF_LF_READS_OUT | BF_LF_SCALAR | BF_LF_ANY_RANK,
    .parse = bf_parse_emath, .infer = b_infer,
    .check = b_check, .supported = binary_ok, .forward = b_forward, .backward = b_backward,
};

/* ---- WEIGHT ---- */

static int weight_ok(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->ewise && be->strided_copy && be->fill_zero;
}


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
    .name = "WEIGHT", .flags = BF_LF_OUT_GIVEN | BF_LF_SCALAR, .infer = w_infer, .supported = weight_ok, .plan = w_plan,
    .forward = w_forward, .backward = w_backward,
};
