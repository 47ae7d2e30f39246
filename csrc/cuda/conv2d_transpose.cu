/* conv2d_transpose.cu - Conv2DTranspose on the GPU as the adjoint of the
 * Conv2D g (backend.h): g's input is out (B,H,W,C = filters), its output is
 * inp (B,OH,OW,K), w (KH,KW,C,K) is Keras's kernel as it is. With col the
 * im2col matrix of g (im2col.cu), in chunks of whole samples (cuda_convx.h):
 *   forward   col = inp @ w^T   sgemm(T, N, KK, M, K, w, inp, col); out = col2im(col) + b
 *   backward  col = im2col(dout); dinp = col @ w   sgemm(N, N, K, M, KK, w, col, dinp)
 *             dw += col^T @ inp                     sgemm(N, T, K, KK, M, inp, col, dw)
 *             db += column sums of dout
 * Backward ADDS into dw / db and OVERWRITES dinp; dinp, dw and db may be NULL. */
#include <limits.h>

#include "cuda_convx.h"
#include "cuda_ops.h"

static bf_status check(const bf_conv_geom *g) {
    if (!g) return BF_FAIL(BF_ERR_ARG, "conv2d_transpose: no geometry");
    if (g->B <= 0 || g->H <= 0 || g->W <= 0 || g->C <= 0 || g->OH <= 0 || g->OW <= 0 || g->K <= 0 || g->KH <= 0 ||
        g->KW <= 0 || g->SH <= 0 || g->SW <= 0 || g->PT < 0 || g->PL < 0)
        return BF_FAIL(BF_ERR_SHAPE, "conv2d_transpose: sizes must be positive (B=%d H=%d W=%d C=%d OH=%d OW=%d K=%d)",
                       g->B, g->H, g->W, g->C, g->OH, g->OW, g->K);
    if ((long long)g->KH * g->KW * g->C * g->OH * g->OW > INT_MAX || (long long)g->H * g->W * g->C > INT_MAX)
        return BF_FAIL(BF_ERR_SHAPE, "conv2d_transpose: a sample is too large (H=%d W=%d C=%d)", g->H, g->W, g->C);
    return BF_OK;
}

static bf_cuda_im2col_geom as_im2col(const bf_conv_geom *g) {
    bf_cuda_im2col_geom q = {g->H, g->W, g->C, g->OH, g->OW, g->KH, g->KW, g->SH, g->SW, 1, 1, g->PT, g->PL};
    return q;
}

size_t bf_cuda_conv2d_transpose_workspace_bytes(bf_backend *be, const bf_conv_geom *g, int backward) {
    (void)be;
    (void)backward;
    if (check(g) != BF_OK) return 0;
    const bf_cuda_im2col_geom q = as_im2col(g);
    return (size_t)bf_cuda_im2col_chunk(&q, g->B) * g->OH * g->OW * g->KH * g->KW * g->C * sizeof(float);
}

// out (B,H,W,C) = col2im(inp (B,OH,OW,K) @ w^T) + b (C)
bf_status bf_cuda_conv2d_transpose_forward(bf_backend *be, float *out, void *ws, const float *inp, const float *w,
                                           const float *b, const bf_conv_geom *g) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check(g));
    if (!out || !inp || !w || !ws) return BF_FAIL(BF_ERR_ARG, "conv2d_transpose_forward: NULL tensor or workspace");
    const bf_cuda_im2col_geom q = as_im2col(g);
    const int nb = bf_cuda_im2col_chunk(&q, g->B), K = g->K, kk = g->KH * g->KW * g->C;
    const size_t in_s = (size_t)g->OH * g->OW * K, out_s = (size_t)g->H * g->W * g->C;
    float *col = (float *)ws;
    for (int b0 = 0; b0 < g->B; b0 += nb) {
        const int n = g->B - b0 < nb ? g->B - b0 : nb, M = n * g->OH * g->OW;
        BF_TRY(bf_cuda_gemm(st, CUBLAS_OP_T, CUBLAS_OP_N, kk, M, K, 1.0f, w, K, inp + b0 * in_s, K,
                                        0.0f, col, kk));
        BF_TRY(bf_cuda_col2im(st, out + b0 * out_s, col, n, &q));
    }
    if (b) BF_TRY(bf_cuda_bias_add(st, out, b, (long)g->B * g->H * g->W, g->C));
    return BF_OK;
}

// dinp (B,OH,OW,K) = im2col(dout) @ w; dw (KH,KW,C,K) += im2col(dout)^T @ inp; db (C) += sum dout
bf_status bf_cuda_conv2d_transpose_backward(bf_backend *be, float *dinp, float *dw, float *db, void *ws,
                                            const float *dout, const float *inp, const float *w,
                                            const bf_conv_geom *g) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check(g));
    if (!dout || !inp || !w || !ws) return BF_FAIL(BF_ERR_ARG, "conv2d_transpose_backward: NULL tensor or workspace");
    const bf_cuda_im2col_geom q = as_im2col(g);
    const int nb = bf_cuda_im2col_chunk(&q, g->B), K = g->K, kk = g->KH * g->KW * g->C;
    const size_t in_s = (size_t)g->OH * g->OW * K, out_s = (size_t)g->H * g->W * g->C;
    float *col = (float *)ws;
    if (db) BF_TRY(bf_cuda_colsum_add(st, db, dout, (long)g->B * g->H * g->W, g->C));
    for (int b0 = 0; b0 < g->B && (dw || dinp); b0 += nb) {
        const int n = g->B - b0 < nb ? g->B - b0 : nb, M = n * g->OH * g->OW;
        BF_TRY(bf_cuda_im2col(st, col, dout + b0 * out_s, n, &q));
        if (dinp)
            BF_TRY(bf_cuda_gemm(st, CUBLAS_OP_N, CUBLAS_OP_N, K, M, kk, 1.0f, w, K, col, kk, 0.0f,
                                            dinp + b0 * in_s, K));
        if (dw)
            BF_TRY(bf_cuda_gemm(st, CUBLAS_OP_N, CUBLAS_OP_T, K, kk, M, 1.0f, inp + b0 * in_s, K,
                                            col, kk, 1.0f, dw, K));
    }
    return BF_OK;
}
