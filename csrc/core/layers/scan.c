/* scan.c - SCAN: the cumulative sum or product of its input along one
 * per-sample axis (python/boundfit/ops_index.py: keras.ops cumsum, cumprod),
 * the tensor seen as (outer, n, inner) (bf_axis_geom, backend.h). Backward:
 * the reversed cumulative sum of dout; a product's gradient reads the input
 * and the output and divides by nothing (exact at zeros, as JAX's). */
#include "layer.h"

#include <string.h>

static bf_status parse(bf_layer *L, const bf_spec *s) {
    BF_TRY(bf_spec_int(s, "s_axis", 0, &L->cfg.scan.axis));
    return bf_spec_flag(s, "s_prod", 0, &L->cfg.scan.prod);
}

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    (void)shape;
    if (L->cfg.scan.axis < 0 || L->cfg.scan.axis >= rank)
        return BF_FAIL(BF_ERR_ARG, "%s: axis %d is not a sample axis of a rank-%d tensor (0 to %d)", L->name,
                       L->cfg.scan.axis + 1, rank, rank);
    return BF_OK;
}

static int supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->scan_forward && be->scan_backward;
}

/* a product's backward reads the input and the output; a sum's neither */
static unsigned node_flags(const bf_run *r, int i) {
    return r->m->layers[i].cfg.scan.prod ? BF_LF_READS_IN | BF_LF_READS_OUT : 0;
}

/* node L's input of rows samples as (outer, n, inner) around its axis */
void bf_axis_geom_of(const bf_layer *L, int axis, int rows, bf_axis_geom *g) {
    memset(g, 0, sizeof *g);
    g->outer = rows;
    g->inner = 1;
    for (int d = 0; d < L->in_rank; d++) {
        if (d < axis) g->outer *= L->in_shape[d];
        if (d > axis) g->inner *= L->in_shape[d];
    }
    g->n = L->in_shape[axis];
}

// out (B, shape...) = cumsum / cumprod of inp along axis
static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    bf_axis_geom g;
    bf_axis_geom_of(L, L->cfg.scan.axis, rows, &g);
    g.prod = L->cfg.scan.prod;
    return r->be->scan_forward(r->be, bf_step_out(r, i), bf_step_in(r, i), &g);
}

// dinp (B, shape...) from dout through the scan
static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    if (!din) return BF_OK;
    bf_axis_geom g;
    bf_axis_geom_of(L, L->cfg.scan.axis, rows, &g);
    g.prod = L->cfg.scan.prod;
    return r->be->scan_backward(r->be, din, dout, g.prod ? bf_step_in(r, i) : NULL,
                                g.prod ? bf_step_out(r, i) : NULL, &g);
}

const bf_layer_ops bf_ops_SCAN = {
    .name = "SCAN", .flags = BF_LF_READS_IN | BF_LF_READS_OUT, .parse = parse, .infer = infer,
    .supported = supported, .node_flags = node_flags, .forward = forward, .backward = backward,
};
