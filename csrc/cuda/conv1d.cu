/* conv1d.cu - Conv1D on the GPU, NWC: inp (B,T,C), w (KW,C,K) as Keras, out (B,OT,K),
 * dilation D, left padding PL (any: 'causal' is (KW-1)*D). A (T,C) sample is a
 * 1 x T image: im2col (im2col.cu) then cuBLAS, in chunks of whole samples
 * (cuda_convx.h); workspace = one chunk's im2col matrix. Row-major GEMMs run
 * as column-major ones on the transposes (dense.cu):
 *   out = col @ w            sgemm(N, N, K, M, KK, w, col, out)
 *   dw += col^T @ dout       sgemm(N, T, K, KK, M, dout, col, dw)
 *   dcol = dout @ w^T        sgemm(T, N, KK, M, K, w, dout, dcol), then col2im
 * Backward ADDS into dw / db and OVERWRITES dinp; dinp, dw and db may be NULL. */
#include <limits.h>

#include "cuda_convx.h"
#include "cuda_ops.h"

static bf_status check(const bf_conv1d_geom *g) {
    if (!g) return BF_FAIL(BF_ERR_ARG, "conv1d: no geometry");
    if (g->B <= 0 || g->T <= 0 || g->C <= 0 || g->OT <= 0 || g->K <= 0 || g->KW <= 0 || g->S <= 0 || g->D <= 0 ||
        g->PL < 0)
        return BF_FAIL(BF_ERR_SHAPE, "conv1d: sizes must be positive (B=%d T=%d C=%d OT=%d K=%d kernel %d stride %d "
                       "dilation %d padding %d)", g->B, g->T, g->C, g->OT, g->K, g->KW, g->S, g->D, g->PL);
    if ((long long)g->KW * g->C * g->OT > INT_MAX || (long long)g->T * g->C > INT_MAX || (long long)g->OT * g->K > INT_MAX)
        return BF_FAIL(BF_ERR_SHAPE, "conv1d: a sample is too large (T=%d C=%d K=%d)", g->T, g->C, g->K);
    return BF_OK;
}

static bf_cuda_im2col_geom as_image(const bf_conv1d_geom *g) {
    bf_cuda_im2col_geom q = {1, g->T, g->C, 1, g->OT, 1, g->KW, 1, g->S, 1, g->D, 0, g->PL};
    return q;
}

size_t bf_cuda_conv1d_workspace_bytes(bf_backend *be, const bf_conv1d_geom *g, int backward) {
    (void)be;
    (void)backward;
    if (check(g) != BF_OK) return 0;
    const bf_cuda_im2col_geom q = as_image(g);
    return (size_t)bf_cuda_im2col_chunk(&q, g->B) * g->OT * g->KW * g->C * sizeof(float);
}

// out (B,OT,K) = conv(inp (B,T,C), w (KW,C,K)) + b (K)
bf_status bf_cuda_conv1d_forward(bf_backend *be, float *out, void *ws, const float *inp, const float *w,
                                 const float *b, const bf_conv1d_geom *g) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check(g));
    if (!out || !inp || !w || !ws) return BF_FAIL(BF_ERR_ARG, "conv1d_forward: NULL tensor or workspace");
    const bf_cuda_im2col_geom q = as_image(g);
    const int nb = bf_cuda_im2col_chunk(&q, g->B), K = g->K, kk = g->KW * g->C;
    float *col = (float *)ws;
    for (int b0 = 0; b0 < g->B; b0 += nb) {
        const int n = g->B - b0 < nb ? g->B - b0 : nb, M = n * g->OT;
        BF_TRY(bf_cuda_im2col(st, col, inp + (size_t)b0 * g->T * g->C, n, &q));
        BF_TRY(bf_cuda_gemm(st, CUBLAS_OP_N, CUBLAS_OP_N, K, M, kk, 1.0f, w, K, col, kk, 0.0f,
                                        out + (size_t)b0 * g->OT * K, K));
    }
    if (b) BF_TRY(bf_cuda_bias_add(st, out, b, (long)g->B * g->OT, K));
    return BF_OK;
}

// dinp (B,T,C) = col2im(dout @ w^T); dw (KW,C,K) += col^T @ dout; db (K) += sum dout
bf_status bf_cuda_conv1d_backward(bf_backend *be, float *dinp, float *dw, float *db, void *ws, const float *dout,
                                  const float *inp, const float *w, const bf_conv1d_geom *g) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check(g));
    if (!dout || !inp || !w || !ws) return BF_FAIL(BF_ERR_ARG, "conv1d_backward: NULL tensor or workspace");
    const bf_cuda_im2col_geom q = as_image(g);
    const int nb = bf_cuda_im2col_chunk(&q, g->B), K = g->K, kk = g->KW * g->C;
    float *col = (float *)ws;
    if (db) BF_TRY(bf_cuda_colsum_add(st, db, dout, (long)g->B * g->OT, K));
    for (int b0 = 0; b0 < g->B; b0 += nb) {
        const int n = g->B - b0 < nb ? g->B - b0 : nb, M = n * g->OT;
        const float *d = dout + (size_t)b0 * g->OT * K;
        if (dw) {
            BF_TRY(bf_cuda_im2col(st, col, inp + (size_t)b0 * g->T * g->C, n, &q));
            BF_TRY(bf_cuda_gemm(st, CUBLAS_OP_N, CUBLAS_OP_T, K, kk, M, 1.0f, d, K, col, kk, 1.0f,
                                            dw, K));
        }
        if (dinp) {
            BF_TRY(bf_cuda_gemm(st, CUBLAS_OP_T, CUBLAS_OP_N, kk, M, K, 1.0f, w, K, d, K, 0.0f,
                                            col, kk));
            BF_TRY(bf_cuda_col2im(st, dinp + (size_t)b0 * g->T * g->C, col, n, &q));
        }
    }
    return BF_OK;
}
