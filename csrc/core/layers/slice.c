/* slice.c - Slice: per sample axis d, the elements begin[d] + k*step[d] for
 * k < len[d] (step > 0; len -1 with begin 0, step 1: the whole axis, whatever
 * its length): the basic slicing of a symbolic tensor (x[:, 1:5:2],
 * x[:, 0] with the axis then dropped by a Reshape; python/boundfit/ops.py).
 * Forward is one strided gather; backward zeroes dinp and scatters dout back
 * (the positions are distinct, so nothing is summed). */
#include "layer.h"

#include <string.h>

_Static_assert(BF_STRIDED_MAXD >= BF_MAX_RANK + 1, "a strided copy holds the batch axis and every sample axis");

static bf_status parse(bf_layer *L, const bf_spec *s) {
    bf_slice_cfg *c = &L->cfg.slice;
    BF_TRY(bf_spec_ints(s, "sl_begin", BF_MAX_RANK, INT_MIN, INT_MAX, c->begin));
    BF_TRY(bf_spec_ints(s, "sl_step", BF_MAX_RANK, INT_MIN, INT_MAX, c->step));
    return bf_spec_ints(s, "sl_len", BF_MAX_RANK, INT_MIN, INT_MAX, c->len);
}

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    const bf_slice_cfg *c = &L->cfg.slice;
    for (int d = 0; d < rank; d++) {
        if (c->len[d] == -1 && c->begin[d] == 0 && c->step[d] == 1) { /* the whole axis (any length) */
            L->out_shape[d] = shape[d];
            continue;
        }
        const int b = c->begin[d], s = c->step[d], n = c->len[d];
        if (s <= 0 || n <= 0 || b < 0 || b + (long)(n - 1) * s >= shape[d])
            return BF_FAIL(BF_ERR_SHAPE, "%s: slice %d:%ld:%d of axis %d (size %d) is empty or out of range",
                           L->name, b, b + (long)n * s, s, d + 1, shape[d]);
        L->out_shape[d] = n;
    }
    return BF_OK;
}

static int supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->strided_copy != NULL;
}

/* the gather (forward) or scatter (backward) of the sliced elements; *first:
 * the offset of element (begin...) in a sample of the input */
static void geom(const bf_layer *L, int rows, int backward, bf_strided *g, long *first) {
    const bf_slice_cfg *c = &L->cfg.slice;
    const int R = L->in_rank;
    long ist[BF_MAX_RANK], ost[BF_MAX_RANK];
    ist[R - 1] = ost[R - 1] = 1;
    for (int d = R - 2; d >= 0; d--) {
        ist[d] = ist[d + 1] * L->in_shape[d + 1];
        ost[d] = ost[d + 1] * L->out_shape[d + 1];
    }
    memset(g, 0, sizeof *g);
    g->nd = R + 1;
    g->n[0] = rows;
    *first = 0;
    long *in_side = backward ? g->os : g->is, *out_side = backward ? g->is : g->os;
    in_side[0] = L->in_size;
    out_side[0] = L->out_size;
    for (int d = 0; d < R; d++) {
        g->n[d + 1] = L->out_shape[d];
        in_side[d + 1] = ist[d] * c->step[d];
        out_side[d + 1] = ost[d];
        *first += ist[d] * c->begin[d];
    }
}

// out (B, len...) = inp (B, shape...)[:, begin::step, ...]
static bf_status forward(bf_run *r, int i, int rows) {
    bf_strided g;
    long first;
    geom(&r->m->layers[i], rows, 0, &g, &first);
    return r->be->strided_copy(r->be, bf_step_out(r, i), bf_step_in(r, i) + first, &g);
}

// dinp (B, shape...) = 0, then dout at the sliced positions
static bf_status backward(bf_run *r, int i, int rows, float *din, float *dout) {
    const bf_layer *L = &r->m->layers[i];
    if (!din) return BF_OK;
    bf_strided g;
    long first;
    geom(L, rows, 1, &g, &first);
    BF_TRY(r->be->fill_zero(r->be, din, sizeof(float) * (size_t)rows * (size_t)L->in_size));
    return r->be->strided_copy(r->be, din + first, dout, &g);
}

const bf_layer_ops bf_ops_SLICE = {
    .name = "SLICE", .flags = BF_LF_ANY_RANK, .parse = parse, .infer = infer, .supported = supported, .forward = forward, .backward = backward,
};
