/* gather.c - GATHER: its first input x at the positions its second input
 * holds (ids as floats, one tensor per sample: symbolic ids, or a Const of
 * constant indices) along per-sample axis `axis` of x (python/boundfit/
 * ops_index.py: keras.ops take, take_along_axis, the values of sort and
 * top_k). take: the ids' axes replace that axis, out = x[:a] + ids + x[a+1:];
 * along (take_along_axis): the ids have x's rank, the other axes broadcast
 * (equal or 1) and out's axis a is the ids'. An id counts from the end when
 * negative; one out of range gives NaN (jnp.take's mode "fill", Keras on JAX).
 * Backward: the scatter-add of dout into dx (bf_gather_geom, backend.h: a
 * fixed order, the same bits on every backend); the ids get a zero gradient. */
#include "layer.h"

#include <string.h>

#if BF_MAX_RANK + 1 > BF_GATHER_MAXD
#error "bf_gather_geom holds the batch axis and BF_MAX_RANK sample axes"
#endif

static bf_status parse(bf_layer *L, const bf_spec *s) {
    BF_TRY(bf_spec_int(s, "g_axis", 0, &L->cfg.gather.axis));
    return bf_spec_flag(s, "g_along", 0, &L->cfg.gather.along);
}

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    (void)shape;
    if (L->cfg.gather.axis < 0 || L->cfg.gather.axis >= rank)
        return BF_FAIL(BF_ERR_ARG, "%s: axis %d is not a sample axis of a rank-%d tensor (0 to %d)", L->name,
                       L->cfg.gather.axis + 1, rank, rank);
    return BF_OK;
}

/* the output's shape from x's and the ids' */
static bf_status check(bf_model *m, int i) {
    bf_layer *L = &m->layers[i];
    if (L->nin != 2) return BF_FAIL(BF_ERR_ARG, "%s: a gather of 2 inputs (values, ids), got %d", L->name, L->nin);
    const int a = L->cfg.gather.axis, xr = m->t_rank[L->in_ids[0]], ir = m->t_rank[L->in_ids[1]];
    const int *xs = m->t_shape[L->in_ids[0]], *is = m->t_shape[L->in_ids[1]];
    char x[48], y[48];
    bf_shape_str(x, sizeof x, xr, xs);
    bf_shape_str(y, sizeof y, ir, is);
    if (!L->cfg.gather.along) {
        if (xr - 1 + ir > BF_MAX_RANK)
            return BF_FAIL(BF_ERR_SHAPE, "%s: taking ids %s from %s along axis %d gives %d axes per sample, more "
                           "than %d", L->name, y, x, a + 1, xr - 1 + ir, BF_MAX_RANK);
        int n = 0;
        for (int d = 0; d < a; d++) L->out_shape[n++] = xs[d];
        for (int d = 0; d < ir; d++) L->out_shape[n++] = is[d];
        for (int d = a + 1; d < xr; d++) L->out_shape[n++] = xs[d];
        L->out_rank = n;
        return BF_OK;
    }
    for (int d = 0; d < xr; d++)
        if (ir != xr || (d != a && xs[d] != is[d] && xs[d] != 1 && is[d] != 1))
            return BF_FAIL(BF_ERR_SHAPE, "%s: ids %s do not go along axis %d of %s (one rank, the other axes "
                           "equal or 1)", L->name, y, a + 1, x);
    L->out_rank = xr;
    for (int d = 0; d < xr; d++) L->out_shape[d] = d == a ? is[d] : xs[d] > is[d] ? xs[d] : is[d];
    return BF_OK;
}

static int supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->gather_forward && be->gather_backward && be->fill_zero;
}

/* row-major strides of a per-sample shape */
static void strides(int rank, const int *shape, long *st) {
    if (rank > 0) st[rank - 1] = 1;
    for (int d = rank - 2; d >= 0; d--) st[d] = st[d + 1] * shape[d + 1];
}

/* the gather of node L over rows samples: the batch axis, then the output's */
static void geom(const bf_model *m, const bf_layer *L, int rows, bf_gather_geom *g) {
    const int a = L->cfg.gather.axis, tx = L->in_ids[0], ti = L->in_ids[1];
    const int xr = m->t_rank[tx], ir = m->t_rank[ti], *xsh = m->t_shape[tx], *ish = m->t_shape[ti];
    long xst[BF_MAX_RANK], ist[BF_MAX_RANK];
    strides(xr, xsh, xst);
    strides(ir, ish, ist);
    memset(g, 0, sizeof *g);
    g->n[0] = rows;
    g->xs[0] = m->t_size[tx];
    g->is[0] = m->t_size[ti];
    int n = 1;
    if (!L->cfg.gather.along) {
        for (int d = 0; d < xr; d++) {
            if (d != a) {
                g->n[n] = xsh[d];
                g->xs[n++] = xst[d];
                continue;
            }
            for (int e = 0; e < ir; e++) {
                g->n[n] = ish[e];
                g->is[n++] = ist[e];
            }
        }
    } else {
        for (int d = 0; d < xr; d++, n++) {
            g->n[n] = L->out_shape[d];
            g->xs[n] = d == a || xsh[d] == 1 ? 0 : xst[d];
            g->is[n] = ish[d] == 1 ? 0 : ist[d];
        }
    }
    g->nd = n;
    g->na = xsh[a];
    g->ax = xst[a];
    g->xn = (long)rows * m->t_size[tx];
}

// out (B, out_shape...) = x (B, x...) at the ids (B, ids...) along axis
static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    bf_gather_geom g;
    geom(r->m, L, rows, &g);
    return r->be->gather_forward(r->be, bf_step_out(r, i), bf_step_in(r, i), bf_step_tensor(r, L->in_ids[1]), &g);
}

// dx (B, x...) = dout scattered back to the gathered positions (added where they repeat); dids = 0
static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    float *dids = bf_step_din(r, i, 1);
    if (dids) BF_TRY(r->be->fill_zero(r->be, dids, sizeof(float) * (size_t)rows * (size_t)r->m->t_size[L->in_ids[1]]));
    if (!din) return BF_OK;
    bf_gather_geom g;
    geom(r->m, L, rows, &g);
    return r->be->gather_backward(r->be, din, dout, bf_step_tensor(r, L->in_ids[1]), &g);
}

const bf_layer_ops bf_ops_GATHER = {
    .name = "GATHER", .flags = BF_LF_MULTI_IN | BF_LF_READS_IN | BF_LF_SCALAR | BF_LF_ANY_RANK, .parse = parse, .infer = infer,
    .check = check, .supported = supported, .forward = forward, .backward = backward,
};
