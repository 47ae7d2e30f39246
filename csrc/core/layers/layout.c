/* layout.c - Permute, ZeroPadding2D and UpSampling2D (nearest): one strided
 * gather through the backend each way (backward sums where forward copied one
 * value to several places). RepeatVector is composed in Python (a Gather:
 * layers/reshaping.py). */
#include "layer.h"

#include <string.h>

/* Permute: dims (0-based) of 1 to BF_MAX_RANK axes; ZeroPadding2D: padding; UpSampling2D: size */
static bf_status parse(bf_layer *L, const bf_spec *s) {
    bf_layout_cfg *c = &L->cfg.layout;
    int n;
    BF_TRY(s->get_len(s, "perm", &n));
    if (n >= 0 && (n < 1 || n > BF_MAX_RANK))
        return BF_FAIL(BF_ERR_ARG, "%s: dims must have 1 to %d entries", L->name, BF_MAX_RANK);
    if (n >= 0) BF_TRY(bf_spec_ints(s, "perm", n, 0, BF_MAX_RANK - 1, c->perm));
    c->nperm = n;
    BF_TRY(bf_spec_ints(s, "pad", 4, 0, INT_MAX, c->pad));
    BF_TRY(bf_spec_size(s, "sh", 1, &c->size[0]));
    return bf_spec_size(s, "sw", 1, &c->size[1]);
}

static bf_status permute_infer(bf_layer *L, int rank, const int *shape) {
    const bf_layout_cfg *c = &L->cfg.layout;
    int seen = 0;
    if (c->nperm != rank)
        return BF_FAIL(BF_ERR_ARG, "%s: dims must have one entry per axis of the input (%d), got %d", L->name, rank,
                       c->nperm);
    for (int d = 0; d < rank; d++) {
        if (c->perm[d] < 0 || c->perm[d] >= rank || (seen & (1 << c->perm[d])))
            return BF_FAIL(BF_ERR_ARG, "%s: dims must be a permutation of 1..%d, got axis %d at position %d",
                           L->name, rank, c->perm[d] + 1, d);
        seen |= 1 << c->perm[d];
        L->out_shape[d] = shape[c->perm[d]];
    }
    return BF_OK;
}

static bf_status image_rank(const bf_layer *L, int rank) {
    if (rank != 3)
        return BF_FAIL(BF_ERR_SHAPE, "%s expects input of rank 3 (H, W, C) per sample, got rank %d", L->name, rank);
    return BF_OK;
}

static bf_status zeropad_infer(bf_layer *L, int rank, const int *shape) {
    const bf_layout_cfg *c = &L->cfg.layout;
    BF_TRY(image_rank(L, rank));
    for (int k = 0; k < 4; k++)
        if (c->pad[k] < 0) return BF_FAIL(BF_ERR_ARG, "%s: padding must be >= 0, got %d", L->name, c->pad[k]);
    BF_TRY(bf_out_dim(L, (long long)shape[0] + c->pad[0] + c->pad[1], &L->out_shape[0]));
    return bf_out_dim(L, (long long)shape[1] + c->pad[2] + c->pad[3], &L->out_shape[1]);
}

static bf_status upsample_infer(bf_layer *L, int rank, const int *shape) {
    const bf_layout_cfg *c = &L->cfg.layout;
    BF_TRY(image_rank(L, rank));
    if (c->size[0] <= 0 || c->size[1] <= 0) return BF_FAIL(BF_ERR_ARG, "%s: size must be positive", L->name);
    BF_TRY(bf_out_dim(L, (long long)shape[0] * c->size[0], &L->out_shape[0]));
    return bf_out_dim(L, (long long)shape[1] * c->size[1], &L->out_shape[1]);
}

static int supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->strided_copy != NULL;
}

/* Permute: out (B, o...) from inp (B, s...); backward the inverse */
static void permute_geom(const bf_layer *L, int rows, int backward, bf_strided *g) {
    const bf_layout_cfg *c = &L->cfg.layout;
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
    g->os[0] = backward ? L->in_size : L->out_size;
    g->is[0] = backward ? L->out_size : L->in_size;
    for (int d = 0; d < R; d++) {
        if (!backward) {
            g->n[d + 1] = L->out_shape[d];
            g->os[d + 1] = ost[d];
            g->is[d + 1] = ist[c->perm[d]];
        } else { /* walk the input's axes; input axis k is output axis d with perm[d] == k */
            int k = d, od = 0;
            while (c->perm[od] != k) od++;
            g->n[d + 1] = L->in_shape[k];
            g->os[d + 1] = ist[k];
            g->is[d + 1] = ost[od];
        }
    }
}

_Static_assert(BF_STRIDED_MAXD >= BF_MAX_RANK + 1, "a strided copy holds the batch axis and every sample axis");

static void set3(long *v, long a, long b, long c) { v[0] = a; v[1] = b; v[2] = c; }

/* (H, W, C) of the input and OW of the output, 1 for missing axes */
#define DIMS(L)                                                                                                    \
    const long H = (L)->in_shape[0], W = (L)->in_rank > 1 ? (L)->in_shape[1] : 1,                                 \
               C = (L)->in_rank > 2 ? (L)->in_shape[2] : 1, OW = (L)->out_rank > 1 ? (L)->out_shape[1] : 1;       \
    (void)H; (void)W; (void)C; (void)OW

static bf_status permute_forward(bf_run *r, int i, int rows) {
    bf_strided g;
    permute_geom(&r->m->layers[i], rows, 0, &g);
    return r->be->strided_copy(r->be, bf_step_out(r, i), bf_step_in(r, i), &g);
}

static bf_status permute_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    bf_strided g;
    if (!din) return BF_OK;
    permute_geom(&r->m->layers[i], rows, 1, &g);
    return r->be->strided_copy(r->be, din, dout, &g);
}

static bf_status zeropad_forward(bf_run *r, int i, int rows) { /* (B,H,W,C) into the middle of (B,OH,OW,C) */
    const bf_layer *L = &r->m->layers[i];
    const bf_layout_cfg *c = &L->cfg.layout;
    bf_backend *be = r->be;
    float *out = bf_step_out(r, i);
    bf_strided g;
    memset(&g, 0, sizeof g);
    DIMS(L);
    BF_TRY(be->fill_zero(be, out, sizeof(float) * (size_t)rows * (size_t)L->out_size));
    g.nd = 3;
    set3(g.n, rows, H, W * C);
    set3(g.os, L->out_size, OW * C, 1);
    set3(g.is, L->in_size, W * C, 1);
    return be->strided_copy(be, out + (c->pad[0] * OW + c->pad[2]) * C, bf_step_in(r, i), &g);
}

static bf_status zeropad_backward(bf_run *r, int i, int rows, float *din, float *dout) { /* the middle of dout */
    const bf_layer *L = &r->m->layers[i];
    const bf_layout_cfg *c = &L->cfg.layout;
    bf_strided g;
    if (!din) return BF_OK;
    memset(&g, 0, sizeof g);
    DIMS(L);
    g.nd = 3;
    set3(g.n, rows, H, W * C);
    set3(g.os, L->in_size, W * C, 1);
    set3(g.is, L->out_size, OW * C, 1);
    return r->be->strided_copy(r->be, din, dout + (c->pad[0] * OW + c->pad[2]) * C, &g);
}

static bf_status upsample_forward(bf_run *r, int i, int rows) { /* (B,H,W,C) -> (B,H*sh,W*sw,C), nearest */
    const bf_layer *L = &r->m->layers[i];
    const bf_layout_cfg *c = &L->cfg.layout;
    bf_strided g;
    memset(&g, 0, sizeof g);
    DIMS(L);
    const long sh = c->size[0], sw = c->size[1];
    const long n[6] = {rows, H, sh, W, sw, C}, is[6] = {L->in_size, W * C, 0, C, 0, 1};
    g.nd = 6;
    for (int k = 0; k < 6; k++) { g.n[k] = n[k]; g.is[k] = is[k]; }
    g.os[5] = 1;
    for (int k = 4; k >= 0; k--) g.os[k] = g.os[k + 1] * n[k + 1];
    return r->be->strided_copy(r->be, bf_step_out(r, i), bf_step_in(r, i), &g);
}

static bf_status upsample_backward(bf_run *r, int i, int rows, float *din, float *dout) { /* sum over each block */
    const bf_layer *L = &r->m->layers[i];
    const bf_layout_cfg *c = &L->cfg.layout;
    bf_strided g;
    if (!din) return BF_OK;
    memset(&g, 0, sizeof g);
    DIMS(L);
    g.nd = 4;
    g.n[0] = rows; g.n[1] = H; g.n[2] = W; g.n[3] = C;
    g.os[0] = L->in_size; g.os[1] = W * C; g.os[2] = C; g.os[3] = 1;
    g.is[0] = L->out_size; g.is[1] = c->size[0] * OW * C; g.is[2] = c->size[1] * C; g.is[3] = 1;
    g.nr = 2; g.rn[0] = c->size[0]; g.rn[1] = c->size[1]; g.rs[0] = OW * C; g.rs[1] = C;
    return r->be->strided_copy(r->be, din, dout, &g);
}

const bf_layer_ops bf_ops_PERMUTE = {
    .name = "PERMUTE", .flags = BF_LF_ANY_RANK, .parse = parse, .infer = permute_infer, .supported = supported,
    .forward = permute_forward, .backward = permute_backward,
};
const bf_layer_ops bf_ops_ZEROPAD2D = {
    .name = "ZEROPAD2D", .parse = parse, .infer = zeropad_infer, .supported = supported,
    .forward = zeropad_forward, .backward = zeropad_backward,
};
const bf_layer_ops bf_ops_UPSAMPLE2D = {
    .name = "UPSAMPLE2D", .parse = parse, .infer = upsample_infer, .supported = supported,
    .forward = upsample_forward, .backward = upsample_backward,
};
