/* reduce.c - REDUCE and BATCH_REDUCE: keras.ops' reductions (sum, mean, max,
 * min, prod, argmax, argmin, any, all, logsumexp) over any set of a sample's
 * axes, with keepdims, through the backend's reduce_forward / _backward
 * (bf_reduce_geom). REDUCE keeps the batch axis. BATCH_REDUCE reduces it too:
 * its result, Keras's tensor without a batch axis (or with a batch axis of 1
 * under keepdims), is held in every row of the output, so it mixes the
 * samples of a batch (BF_LF_BATCH: micro-batches and data-parallel ranks
 * refuse the model); its backward first sums the output's gradient over the
 * rows (each row's consumers read the same value) into a planned workspace.
 * The layer folds its geometry once: size-1 axes dropped, neighbouring axes
 * of one kind (reduced or kept) merged. Argmax and the others without a
 * gradient pass none back (BF_LF_NO_GRAD_IN). */
#include "layer.h"

/* the batch and every per-sample axis fit bf_reduce_geom */
typedef char bf_reduce_rank_fits[BF_MAX_RANK + 1 <= BF_REDUCE_MAXD ? 1 : -1];

/* rop (bf_reduce_op), raxes (the reduced per-sample axes, 0-based) or rall (every one), keepdims */
static bf_status parse(bf_layer *L, const bf_spec *s) {
    bf_reduce_cfg *c = &L->cfg.reduce;
    int n, axes[BF_MAX_RANK];
    BF_TRY(bf_spec_int(s, "rop", 0, &c->op));
    BF_TRY(bf_spec_flag(s, "keepdims", 0, &c->keepdims));
    BF_TRY(bf_spec_flag(s, "rall", 0, &c->all));
    BF_TRY(s->get_len(s, "raxes", &n));
    if (n > BF_MAX_RANK)
        return BF_FAIL(BF_ERR_ARG, "%s: raxes names %d axes, a sample has at most %d", L->name, n, BF_MAX_RANK);
    if (n > 0) BF_TRY(bf_spec_ints(s, "raxes", n, 0, BF_MAX_RANK - 1, axes));
    c->axes = 0;
    for (int k = 0; k < n; k++) c->axes |= 1u << axes[k];
    return BF_OK;
}

static int is_batch(const bf_layer *L) { return L->kind == BF_L_BATCH_REDUCE; }

/* the reduced per-sample axes of an input of `rank` (bit d: axis d) */
static unsigned axes_of(const bf_layer *L, int rank) {
    return L->cfg.reduce.all ? (1u << rank) - 1u : L->cfg.reduce.axes;
}

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    const bf_reduce_cfg *c = &L->cfg.reduce;
    if (c->op < 0 || c->op > BF_RED_LAST) return BF_FAIL(BF_ERR_ARG, "%s: unknown reduction rop=%d", L->name, c->op);
    const unsigned axes = axes_of(L, rank);
    if (axes >> rank)
        return BF_FAIL(BF_ERR_ARG, "%s: raxes names a per-sample axis beyond its input's %d", L->name, rank);
    if (!axes && !is_batch(L)) return BF_FAIL(BF_ERR_ARG, "%s: raxes names no axis to reduce", L->name);
    int n = 0;
    for (int d = 0; d < rank; d++)
        if (!(axes >> d & 1u)) L->out_shape[n++] = shape[d];
        else if (c->keepdims) L->out_shape[n++] = 1;
    L->out_rank = n; /* 0: one number per sample */
    return BF_OK;
}

/* rows samples: (rows, in_shape) with the reduced axes marked, folded */
static void geom(const bf_layer *L, int rows, bf_reduce_geom *g) {
    g->op = (bf_reduce_op)L->cfg.reduce.op;
    g->nd = 0;
    g->mask = 0;
    int last = -1; /* the kind of the last axis kept in g: 1 reduced, 0 kept */
    for (int d = -1; d < L->in_rank; d++) {
        const long n = d < 0 ? rows : L->in_shape[d];
        const int red = d < 0 ? is_batch(L) : (int)(axes_of(L, L->in_rank) >> d & 1u);
        if (n == 1) continue;
        if (red == last) {
            g->n[g->nd - 1] *= n;
            continue;
        }
        g->n[g->nd] = n;
        g->mask |= (unsigned)red << g->nd;
        g->nd++;
        last = red;
    }
    if (g->nd == 0) g->n[g->nd++] = 1; /* one element */
}

static int reads_in(int op) {
    return op == BF_RED_MAX || op == BF_RED_MIN || op == BF_RED_PROD || op == BF_RED_LOGSUMEXP;
}

static unsigned node_flags(const bf_run *r, int i) {
    const bf_layer *L = &r->m->layers[i];
    const int op = L->cfg.reduce.op;
    unsigned f = bf_layer_ops_of(L->kind)->flags;
    if (op == BF_RED_ARGMAX || op == BF_RED_ARGMIN || op == BF_RED_ANY || op == BF_RED_ALL) return f | BF_LF_NO_GRAD_IN;
    if (reads_in(op)) f |= BF_LF_READS_IN;
    if (reads_in(op) && op != BF_RED_PROD) f |= BF_LF_READS_OUT;
    return f;
}

static int supported(const bf_backend *be, const bf_layer *L) {
    return be->reduce_forward && be->reduce_backward && (!is_batch(L) || be->strided_copy);
}

/* BATCH_REDUCE's backward: the output's gradient summed over the rows, one sample's worth */
static bf_status plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    (void)t;
    if (!bw || !is_batch(L)) return BF_OK;
    BF_TRY(bf_run_newbuf(r, &r->bws_id[i], (size_t)L->out_size * sizeof(float), BF_BUF_WORKSPACE, L->name,
                         " output gradient summed over the batch"));
    bf_run_use(r, r->bws_id[i], tb);
    return BF_OK;
}

// out (rows, out_size) = the reduction of inp (rows, in_shape); BATCH_REDUCE: row 0's in every row
static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    bf_reduce_geom g;
    geom(L, rows, &g);
    float *out = bf_step_out(r, i);
    BF_TRY(r->be->reduce_forward(r->be, out, bf_step_in(r, i), &g));
    return is_batch(L) && rows > 1 ? bf_run_rows_of(r, out + L->out_size, out, rows - 1, L->out_size) : BF_OK;
}

// dout (rows, out_size) summed over the rows: ws (out_size)
static bf_status sum_rows(bf_run *r, float *ws, const float *dout, int rows, long size) {
    bf_strided s = {.nd = 1, .nr = 1};
    s.n[0] = size;
    s.os[0] = s.is[0] = 1;
    s.rn[0] = rows;
    s.rs[0] = size;
    return r->be->strided_copy(r->be, ws, dout, &s);
}

// din (rows, in_shape) = the reduction's gradient times dout, overwritten
static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    if (!din) return BF_OK;
    bf_reduce_geom g;
    geom(L, rows, &g);
    const float *gout = dout;
    if (is_batch(L)) {
        float *ws = bf_step_buf(r, r->bws_id[i]);
        BF_TRY(sum_rows(r, ws, dout, rows, L->out_size));
        gout = ws;
    }
    return r->be->reduce_backward(r->be, din, gout, bf_step_in(r, i), bf_step_out(r, i), &g);
}

#define BF_REDUCE_OPS(kind_flags)                                                                                  \
    .flags = BF_LF_SCALAR | (kind_flags), .parse = parse, .infer = infer, .supported = supported,                 \
    .node_flags = node_flags, .plan = plan, .forward = forward, .backward = backward

const bf_layer_ops bf_ops_REDUCE = {.name = "REDUCE", BF_REDUCE_OPS(BF_LF_ANY_RANK)};
const bf_layer_ops bf_ops_BATCH_REDUCE = {.name = "BATCH_REDUCE", BF_REDUCE_OPS(BF_LF_BATCH | BF_LF_ANY_RANK)};
