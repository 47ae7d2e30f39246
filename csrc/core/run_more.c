/* run_more.c - forward and backward of the layers after the merge kinds in
 * bf_layer_kind: Permute, RepeatVector, ZeroPadding2D, UpSampling2D (one
 * strided gather each way), Rescaling / Normalization (a per-channel affine
 * map), and the random image layers (augment). Also the activation dispatch:
 * Keras 3's other activations go to actx_*, the first five to act_*.
 * Random layers draw per training forward: the node's stream (its seed, or
 * the run's) mixed with the optimizer iteration and the micro-batch within
 * it, so a fresh model with the same seed sees the same augmentations, and
 * backward reuses the forward's draw. */
#include "program.h"

#include <string.h>

#define BUF(r, id) ((float *)((r)->scratch + (r)->bufs[id].offset))

int bf_run_more_kind(bf_layer_kind k) { return k >= BF_L_PERMUTE && k <= BF_L_AUGMENT; }

bf_status bf_run_act_forward(bf_run *r, const bf_layer *L, float *out, const float *z, bf_act act, long N, int C) {
    bf_backend *be = r->be;
    if (bf_act_is_x(act)) return be->actx_forward(be, out, z, act, &L->actp, N * (long)C);
    return be->act_forward(be, out, z, act, N, C);
}

bf_status bf_run_act_backward(bf_run *r, const bf_layer *L, float *dz, const float *dout, const float *z,
                              const float *out, bf_act act, long N, int C) {
    bf_backend *be = r->be;
    if (bf_act_is_x(act)) return be->actx_backward(be, dz, dout, z, out, act, &L->actp, N * (long)C);
    return be->act_backward(be, dz, dout, out, act, N, C);
}

void bf_run_more_begin(bf_run *r) {
    if (r->mode != BF_MODE_TRAIN) return;
    long it = r->m->opt.iterations + 1;
    if (r->aug_it != it) {
        r->aug_it = it;
        r->aug_micro = 0;
    } else {
        r->aug_micro++;
    }
}

void bf_run_augment_geom(const bf_run *r, int i, int rows, bf_augment *a) {
    const bf_layer *L = &r->m->layers[i];
    *a = L->aug;
    a->B = rows;
    a->H = L->in_shape[0];
    a->W = L->in_shape[1];
    a->C = L->in_shape[2];
    a->OH = L->out_shape[0];
    a->OW = L->out_shape[1];
    a->training = r->mode == BF_MODE_TRAIN;
    a->seed = r->aug_seed[i];
}

/* Permute: out (B, o...) from inp (B, s...); backward the inverse */
static void permute_geom(const bf_layer *L, int rows, int backward, bf_strided *g) {
    const int R = L->in_rank;
    long ist[3], ost[3];
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
            g->is[d + 1] = ist[L->perm[d]];
        } else { /* walk the input's axes; input axis k is output axis d with perm[d] == k */
            int k = d, od = 0;
            while (L->perm[od] != k) od++;
            g->n[d + 1] = L->in_shape[k];
            g->os[d + 1] = ist[k];
            g->is[d + 1] = ost[od];
        }
    }
}

static void set3(long *v, long a, long b, long c) { v[0] = a; v[1] = b; v[2] = c; }

bf_status bf_run_more_forward(bf_run *r, int i, int rows, const float *in, float *out) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    bf_strided g;
    memset(&g, 0, sizeof g);
    const long H = L->in_shape[0], W = L->in_rank > 1 ? L->in_shape[1] : 1, C = L->in_rank > 2 ? L->in_shape[2] : 1;
    const long OW = L->out_rank > 1 ? L->out_shape[1] : 1;
    switch (L->kind) {
    case BF_L_PERMUTE:
        permute_geom(L, rows, 0, &g);
        return be->strided_copy(be, out, in, &g);
    case BF_L_REPEAT: { /* (B, D) -> (B, n, D) */
        const long D = L->in_shape[0], n = L->reps;
        g.nd = 3;
        set3(g.n, rows, n, D);
        set3(g.os, n * D, D, 1);
        set3(g.is, D, 0, 1);
        return be->strided_copy(be, out, in, &g);
    }
    case BF_L_ZEROPAD2D: { /* (B,H,W,C) into the middle of (B,OH,OW,C) */
        BF_TRY(be->fill_zero(be, out, sizeof(float) * (size_t)rows * (size_t)L->out_size));
        g.nd = 3;
        set3(g.n, rows, H, W * C);
        set3(g.os, L->out_size, OW * C, 1);
        set3(g.is, L->in_size, W * C, 1);
        return be->strided_copy(be, out + (L->pad[0] * OW + L->pad[2]) * C, in, &g);
    }
    case BF_L_UPSAMPLE2D: { /* (B,H,W,C) -> (B,H*sh,W*sw,C), nearest */
        const long sh = L->sh, sw = L->sw;
        const long n[6] = {rows, H, sh, W, sw, C}, is[6] = {L->in_size, W * C, 0, C, 0, 1};
        g.nd = 6;
        for (int k = 0; k < 6; k++) { g.n[k] = n[k]; g.is[k] = is[k]; }
        g.os[5] = 1;
        for (int k = 4; k >= 0; k--) g.os[k] = g.os[k + 1] * n[k + 1];
        return be->strided_copy(be, out, in, &g);
    }
    case BF_L_RESCALING: {
        const int Cl = L->in_shape[L->in_rank - 1];
        return be->rescale_forward(be, out, in, NULL, NULL, L->rs_scale, L->rs_offset, 0.0f,
                                   (long)rows * L->in_size / Cl, Cl);
    }
    case BF_L_NORMALIZATION: {
        const int Cl = L->in_shape[L->in_rank - 1];
        return be->rescale_forward(be, out, in, r->w + L->params[0].offset, r->w + L->params[1].offset, 1.0f, 0.0f,
                                   1e-7f, (long)rows * L->in_size / Cl, Cl);
    }
    case BF_L_AUGMENT: {
        if (r->mode == BF_MODE_TRAIN) {
            if (!r->aug_base[i])
                r->aug_base[i] = bf_splitmix64(L->aug.seed ? L->aug.seed : r->dropout_seed ^ ((uint64_t)i << 40)) | 1u;
            r->aug_seed[i] = bf_splitmix64(r->aug_base[i] ^ bf_splitmix64((uint64_t)r->aug_it * 4096u + (uint64_t)r->aug_micro));
        }
        bf_augment a;
        bf_run_augment_geom(r, i, rows, &a);
        return be->augment_forward(be, out, in, &a);
    }
    default:
        return BF_FAIL(BF_ERR_INTERNAL, "%s: not a layout or preprocessing layer", L->name);
    }
}

bf_status bf_run_more_backward(bf_run *r, int i, int rows, float *din, const float *dout) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    if (!din) return BF_OK;
    bf_strided g;
    memset(&g, 0, sizeof g);
    const long H = L->in_shape[0], W = L->in_rank > 1 ? L->in_shape[1] : 1, C = L->in_rank > 2 ? L->in_shape[2] : 1;
    const long OW = L->out_rank > 1 ? L->out_shape[1] : 1;
    switch (L->kind) {
    case BF_L_PERMUTE:
        permute_geom(L, rows, 1, &g);
        return be->strided_copy(be, din, dout, &g);
    case BF_L_REPEAT: { /* sum over the n copies */
        const long D = L->in_shape[0], n = L->reps;
        g.nd = 2;
        g.n[0] = rows; g.n[1] = D;
        g.os[0] = D; g.os[1] = 1;
        g.is[0] = n * D; g.is[1] = 1;
        g.nr = 1; g.rn[0] = n; g.rs[0] = D;
        return be->strided_copy(be, din, dout, &g);
    }
    case BF_L_ZEROPAD2D: /* the middle of dout */
        g.nd = 3;
        set3(g.n, rows, H, W * C);
        set3(g.os, L->in_size, W * C, 1);
        set3(g.is, L->out_size, OW * C, 1);
        return be->strided_copy(be, din, dout + (L->pad[0] * OW + L->pad[2]) * C, &g);
    case BF_L_UPSAMPLE2D: { /* sum over each sh x sw block */
        g.nd = 4;
        g.n[0] = rows; g.n[1] = H; g.n[2] = W; g.n[3] = C;
        g.os[0] = L->in_size; g.os[1] = W * C; g.os[2] = C; g.os[3] = 1;
        g.is[0] = L->out_size; g.is[1] = L->sh * OW * C; g.is[2] = L->sw * C; g.is[3] = 1;
        g.nr = 2; g.rn[0] = L->sh; g.rn[1] = L->sw; g.rs[0] = OW * C; g.rs[1] = C;
        return be->strided_copy(be, din, dout, &g);
    }
    case BF_L_RESCALING: {
        const int Cl = L->in_shape[L->in_rank - 1];
        return be->rescale_backward(be, din, dout, NULL, L->rs_scale, 0.0f, (long)rows * L->in_size / Cl, Cl);
    }
    case BF_L_NORMALIZATION: {
        const int Cl = L->in_shape[L->in_rank - 1];
        return be->rescale_backward(be, din, dout, r->w + L->params[1].offset, 1.0f, 1e-7f, (long)rows * L->in_size / Cl, Cl);
    }
    case BF_L_AUGMENT: {
        bf_augment a;
        bf_run_augment_geom(r, i, rows, &a);
        return be->augment_backward(be, din, dout, &a);
    }
    default:
        return BF_FAIL(BF_ERR_INTERNAL, "%s: not a layout or preprocessing layer", L->name);
    }
}
