/* argsort.c - ARGSORT: the positions (as floats) of the first k elements of a
 * stable sort of its input along one per-sample axis, ascending or descending
 * (python/boundfit/ops_index.py: keras.ops argsort; sort and top_k are a
 * GATHER at these positions, so their values' gradient is the gather's
 * scatter-add). Ties keep their order, NaN sorts above every number (JAX's).
 * The positions are piecewise constant in the input: no gradient flows back. */
#include "layer.h"

static bf_status parse(bf_layer *L, const bf_spec *s) {
    BF_TRY(bf_spec_int(s, "a_axis", 0, &L->cfg.sort.axis));
    BF_TRY(bf_spec_size(s, "a_k", 0, &L->cfg.sort.k));
    return bf_spec_flag(s, "a_desc", 0, &L->cfg.sort.descending);
}

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    const bf_sort_cfg *c = &L->cfg.sort;
    if (c->axis < 0 || c->axis >= rank)
        return BF_FAIL(BF_ERR_ARG, "%s: axis %d is not a sample axis of a rank-%d tensor (0 to %d)", L->name,
                       c->axis + 1, rank, rank);
    if (c->k < 1 || c->k > shape[c->axis])
        return BF_FAIL(BF_ERR_ARG, "%s: k=%d must be in 1 .. %d (the length of axis %d)", L->name, c->k,
                       shape[c->axis], c->axis + 1);
    L->out_shape[c->axis] = c->k;
    return BF_OK;
}

static int supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->argsort && be->argsort_workspace_bytes;
}

static void geom(const bf_layer *L, int rows, bf_axis_geom *g) {
    bf_axis_geom_of(L, L->cfg.sort.axis, rows, g);
    g->k = L->cfg.sort.k;
    g->descending = L->cfg.sort.descending;
}

/* the backend's scratch for a batch */
static bf_status plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    (void)tb;
    (void)bw;
    bf_axis_geom g;
    geom(L, r->B, &g);
    const size_t bytes = r->be->argsort_workspace_bytes(r->be, &g);
    if (!bytes) return BF_OK;
    BF_TRY(bf_run_newbuf(r, &r->fws_id[i], bytes, BF_BUF_WORKSPACE, L->name, " sort scratch"));
    bf_run_use(r, r->fws_id[i], t);
    return BF_OK;
}

// out (B, ..., k, ...) = the positions along axis of the first k of inp (B, ..., n, ...) sorted
static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    bf_axis_geom g;
    geom(L, rows, &g);
    return r->be->argsort(r->be, bf_step_out(r, i), bf_step_buf(r, r->fws_id[i]), bf_step_in(r, i), &g);
}

const bf_layer_ops bf_ops_ARGSORT = {
    .name = "ARGSORT", .flags = BF_LF_NO_GRAD_IN, .parse = parse, .infer = infer, .supported = supported,
    .plan = plan, .forward = forward,
};
