/* conv2d_transpose.c - Conv2DTranspose on the CPU as the adjoint of a Conv2D.
 * g is the Conv2D whose input is the transposed conv's output out (B,H,W,C)
 * and whose output is its input inp (B,OH,OW,K) (Keras's output size rules
 * make g a 'valid' or 'same' geometry, backend.h); w (KH,KW,C,K) is Keras's
 * Conv2DTranspose kernel (kh, kw, filters, in_channels), which is the Conv2D
 * kernel of g as it is. With col the im2col matrix of g (one row per inp
 * position, KK = KH*KW*C columns, conv2d.c):
 *   forward   out = col2im(inp @ w^T) + b       (w seen as (KK,K))
 *   backward  col = im2col(dout); dinp = col @ w; dw += col^T @ inp; db += sum dout
 * both in tiles of TILE rows of col (bounded by bf_cpu_conv2d_ws_cap, at
 * least one output row of g), so the workspace does not grow with B.
 * Backward ADDS into dw / db and OVERWRITES dinp; dinp, dw and db may be NULL. */
#include <limits.h>
#include <string.h>

#include "blas.h"
#include "cpu_convx.h"

static long tile_rows(const bf_conv_geom *g) {
    const long kk = (long)g->KH * g->KW * g->C, total = (long)g->B * g->OH * g->OW;
    long tile = (long)(bf_cpu_conv2d_ws_cap / (sizeof(float) * (size_t)kk));
    if (tile < g->OW) tile = g->OW;
    if (tile > INT_MAX / kk) tile = INT_MAX / kk;
    if (tile > total) tile = total;
    return tile < 1 ? 1 : tile;
}

size_t bf_cpu_conv2d_transpose_workspace_bytes(bf_backend *be, const bf_conv_geom *g, int backward) {
    (void)be;
    (void)backward;
    if (bf_cpu_check_geom(g, "conv2d_transpose", 0) != BF_OK) return 0;
    return (size_t)tile_rows(g) * (size_t)g->KH * g->KW * g->C * sizeof(float);
}

// out (B,H,W,C) = col2im(inp (B,OH,OW,K) @ w^T) + b (C)
bf_status bf_cpu_conv2d_transpose_forward(bf_backend *be, float *out, void *ws, const float *inp,
                                          const float *w, const float *b, const bf_conv_geom *g) {
    (void)be;
    BF_TRY(bf_cpu_check_geom(g, "conv2d_transpose", 0));
    if (!out || !inp || !w || !ws) return BF_FAIL(BF_ERR_ARG, "conv2d_transpose_forward: NULL tensor or workspace");
    const int K = g->K, kk = g->KH * g->KW * g->C, C = g->C;
    const long total = (long)g->B * g->OH * g->OW, tile = tile_rows(g);
    const long n_out = (long)g->B * g->H * g->W;
    float *col = (float *)ws;
    memset(out, 0, (size_t)n_out * C * sizeof(float));
    for (long r0 = 0; r0 < total; r0 += tile) {
        const int M = (int)(total - r0 < tile ? total - r0 : tile);
        bf_sgemm(0, 1, M, kk, K, 1.0f, inp + (size_t)r0 * K, K, w, K, 0.0f, col, kk); /* (M,kk) */
        bf_cpu_conv2d_col2im_add(out, col, g, r0, M, kk);
    }
    if (b)
        for (long r = 0; r < n_out; r++)
            for (int c = 0; c < C; c++) out[(size_t)r * C + c] += b[c];
    return BF_OK;
}

// dinp (B,OH,OW,K) = im2col(dout) @ w; dw (KH,KW,C,K) += im2col(dout)^T @ inp; db (C) += sum dout
bf_status bf_cpu_conv2d_transpose_backward(bf_backend *be, float *dinp, float *dw, float *db, void *ws,
                                           const float *dout, const float *inp, const float *w,
                                           const bf_conv_geom *g) {
    (void)be;
    BF_TRY(bf_cpu_check_geom(g, "conv2d_transpose", 0));
    if (!dout || !inp || !w || !ws)
        return BF_FAIL(BF_ERR_ARG, "conv2d_transpose_backward: NULL tensor or workspace");
    const int K = g->K, kk = g->KH * g->KW * g->C, C = g->C;
    const long total = (long)g->B * g->OH * g->OW, tile = tile_rows(g);
    float *col = (float *)ws;
    if (db) {
        const long n_out = (long)g->B * g->H * g->W;
        for (long r = 0; r < n_out; r++)
            for (int c = 0; c < C; c++) db[c] += dout[(size_t)r * C + c];
    }
    for (long r0 = 0; r0 < total; r0 += tile) {
        const int M = (int)(total - r0 < tile ? total - r0 : tile);
        bf_cpu_conv2d_im2col(col, dout, g, r0, M, kk);
        if (dw) bf_sgemm(1, 0, kk, K, M, 1.0f, col, kk, inp + (size_t)r0 * K, K, 1.0f, dw, K);
        if (dinp) bf_sgemm(0, 0, M, K, kk, 1.0f, col, kk, w, K, 0.0f, dinp + (size_t)r0 * K, K);
    }
    return BF_OK;
}
