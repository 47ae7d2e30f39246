/* attention.cu - the core of multi-head attention with cuBLAS, as
 * csrc/cpu/attention.c: per batch row b, one strided-batched GEMM over the
 * heads for the scores (straight into the weights P), a masked softmax kernel
 * (one block per query row; dropout drawn from the CPU's hash, so the same
 * mask on both), and one strided-batched GEMM into the heads' columns of O.
 * When no backward needs P (p_tile) it is one (TQ,TK) tile and the heads go
 * one at a time. Backward recomputes the dropout mask; its workspace holds
 * dP for the H heads (and the dropped weights). Row-major (M,N) matrices are
 * read by column-major cuBLAS as their transposes. Exact FP32. */
#include <math.h>

#include "counter_hash.h"
#include "cuda_ops.h"

#define AT_THREADS 128

__device__ __forceinline__ int at_keep(unsigned long long seed, unsigned long long idx, float rate) {
    return bf_counter_uniform(seed, idx) >= rate;
}

/* query row i of batch row b: its attention_mask row, whether the query's
 * step mask keeps it, and the value's / key's step masks (TK); NULL: none */
struct at_row {
    const float *m, *v, *k;
    int q;
};

__device__ __forceinline__ at_row at_row_of(const float *mask, const float *qmask, const float *vmask,
                                            const float *kmask, int b, int i, int TQ, int TK) {
    at_row r;
    r.m = mask ? mask + ((long)b * TQ + i) * TK : NULL;
    r.q = !qmask || qmask[(long)b * TQ + i] > 0.5f;
    r.v = vmask ? vmask + (long)b * TK : NULL;
    r.k = kmask ? kmask + (long)b * TK : NULL;
    return r;
}

// key j attends query i: every mask and the causal rule allow it
__device__ __forceinline__ int at_allowed(const at_row &r, int causal, int i, int j) {
    return r.q && (!r.m || r.m[j] > 0.5f) && (!r.v || r.v[j] > 0.5f) && (!r.k || r.k[j] > 0.5f) && (!causal || j <= i);
}

// op over the block (max or sum), every thread gets the result
template <int MAX>
__device__ float at_reduce(float v, float *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] = MAX ? fmaxf(sh[threadIdx.x], sh[threadIdx.x + s])
                                                   : sh[threadIdx.x] + sh[threadIdx.x + s];
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

// P rows (nh*TQ, TK) of heads h0.. of batch row b: masked softmax in place;
// Pd (same layout) = P * keep / (1 - rate) when rate > 0
__global__ void attn_softmax_kernel(float *P, float *Pd, const float *mask, const float *qmask, const float *vmask,
                                    const float *kmask, int b, int h0, int nh, int H, int TQ, int TK, int causal,
                                    int zero_empty, float rate, unsigned long long seed) {
    __shared__ float sh[AT_THREADS];
    const long rows = (long)nh * TQ;
    for (long r = blockIdx.x; r < rows; r += gridDim.x) {
        const int i = (int)(r % TQ), h = h0 + (int)(r / TQ);
        float *row = P + r * TK;
        const at_row mr = at_row_of(mask, qmask, vmask, kmask, b, i, TQ, TK);
        float mx = -INFINITY;
        for (int j = threadIdx.x; j < TK; j += blockDim.x)
            if (at_allowed(mr, causal, i, j)) mx = fmaxf(mx, row[j]);
        mx = at_reduce<1>(mx, sh);
        float s = 0.0f;
        for (int j = threadIdx.x; j < TK; j += blockDim.x) {
            float e = mx == -INFINITY ? 1.0f : at_allowed(mr, causal, i, j) ? expf(row[j] - mx) : 0.0f;
            row[j] = e;
            s += e;
        }
        const float tot = at_reduce<0>(s, sh);
        const float inv = mx == -INFINITY && zero_empty ? 0.0f : 1.0f / tot;
        const unsigned long long base = (((unsigned long long)b * H + h) * TQ + i) * TK;
        for (int j = threadIdx.x; j < TK; j += blockDim.x) {
            row[j] *= inv;
            if (Pd) Pd[r * TK + j] = at_keep(seed, base + j, rate) ? row[j] * (1.0f / (1.0f - rate)) : 0.0f;
        }
    }
}

// Pd (H*TQ, TK) = dropout of P (H*TQ, TK) for batch row b
__global__ void attn_drop_kernel(float *Pd, const float *P, int b, int H, int TQ, int TK, float rate,
                                 unsigned long long seed) {
    const long n = (long)H * TQ * TK;
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < n; e += (long)gridDim.x * blockDim.x)
        Pd[e] = at_keep(seed, (unsigned long long)b * n + e, rate) ? P[e] * (1.0f / (1.0f - rate)) : 0.0f;
}

// dP rows (H*TQ, TK) of batch row b -> dS = P * (dP' - sum(P * dP')) where allowed, dP' = dropout of dP
__global__ void attn_softmax_backward_kernel(float *dP, const float *P, const float *mask, const float *qmask,
                                             const float *vmask, const float *kmask, int b, int H, int TQ, int TK,
                                             int causal, float rate, unsigned long long seed) {
    __shared__ float sh[AT_THREADS];
    const long rows = (long)H * TQ;
    for (long r = blockIdx.x; r < rows; r += gridDim.x) {
        const int i = (int)(r % TQ), h = (int)(r / TQ);
        float *d = dP + r * TK;
        const float *p = P + r * TK;
        const at_row mr = at_row_of(mask, qmask, vmask, kmask, b, i, TQ, TK);
        const unsigned long long base = (((unsigned long long)b * H + h) * TQ + i) * TK;
        float s = 0.0f;
        for (int j = threadIdx.x; j < TK; j += blockDim.x) {
            if (rate > 0.0f) d[j] = at_keep(seed, base + j, rate) ? d[j] * (1.0f / (1.0f - rate)) : 0.0f;
            s += p[j] * d[j];
        }
        s = at_reduce<0>(s, sh);
        for (int j = threadIdx.x; j < TK; j += blockDim.x)
            d[j] = at_allowed(mr, causal, i, j) ? p[j] * (d[j] - s) : 0.0f;
    }
}

static unsigned rows_grid(long n) { return (unsigned)(n < 65535L * 16 ? n : 65535L * 16); }

size_t bf_cuda_attention_workspace_bytes(bf_backend *be, const bf_attn_geom *g, int backward) {
    (void)be;
    const size_t heads = sizeof(float) * (size_t)g->H * g->TQ * g->TK;
    if (backward) return heads * (g->rate > 0.0f ? 2 : 1);
    return g->rate > 0.0f ? heads : 0;
}

// O (B,TQ,H,DV), P (B,H,TQ,TK) <- Q (B,TQ,H,DK), K (B,TK,H,DK), V (B,TK,H,DV), mask (B,TQ,TK), g's step masks
bf_status bf_cuda_attention_forward(bf_backend *be, float *O, float *P, void *ws, const float *Q, const float *K,
                                    const float *V, const float *mask, const bf_attn_geom *g) {
    BF_CUDA_ENTER(st, be);
    const int B = g->B, H = g->H, TQ = g->TQ, TK = g->TK, DK = g->DK, DV = g->DV;
    if (B <= 0 || H <= 0 || TQ <= 0 || TK <= 0 || DK <= 0 || DV <= 0)
        return BF_FAIL(BF_ERR_SHAPE, "attention: bad sizes B=%d H=%d TQ=%d TK=%d DK=%d DV=%d", B, H, TQ, TK, DK, DV);
    const long long tile = (long long)TQ * TK;
    const float scale = g->scale;
    const int nh = g->p_tile ? 1 : H;
    for (int b = 0; b < B; b++)
        for (int h0 = 0; h0 < H; h0 += nh) {
            const float *q = Q + (size_t)b * TQ * H * DK + (size_t)h0 * DK, *k = K + (size_t)b * TK * H * DK + (size_t)h0 * DK;
            const float *v = V + (size_t)b * TK * H * DV + (size_t)h0 * DV;
            float *o = O + (size_t)b * TQ * H * DV + (size_t)h0 * DV;
            float *p = P + (g->p_tile ? 0 : ((size_t)b * H + h0) * tile), *pd = g->rate > 0.0f ? (float *)ws : NULL;
            // P^T (TK,TQ) col-major = K_bh^T... : scores of heads h0..h0+nh
            BF_TRY(bf_cuda_gemm_batched(st, CUBLAS_OP_T, CUBLAS_OP_N, TK, TQ, DK, scale, k,
                                                          H * DK, DK, q, H * DK, DK, 0.0f, p, TK, tile, nh));
            attn_softmax_kernel<<<rows_grid((long)nh * TQ), AT_THREADS, 0, st->stream>>>(
                p, pd, mask, g->qmask, g->vmask, g->kmask, b, h0, nh, H, TQ, TK, g->causal, g->zero_empty, g->rate,
                (unsigned long long)g->seed);
            BF_CUDA_LAUNCHED(st, attn_softmax_kernel);
            // O_bh^T (DV,TQ) = V_bh^T (DV,TK) @ P^T (TK,TQ)
            BF_TRY(bf_cuda_gemm_batched(st, CUBLAS_OP_N, CUBLAS_OP_N, DV, TQ, TK, 1.0f, v,
                                                          H * DV, DV, pd ? pd : p, TK, tile, 0.0f, o, H * DV, DV, nh));
        }
    return BF_OK;
}

// dQ, dK, dV (overwritten) <- dO (B,TQ,H,DV) through the kept weights P
bf_status bf_cuda_attention_backward(bf_backend *be, float *dQ, float *dK, float *dV, void *ws, const float *dO,
                                     const float *Q, const float *K, const float *V, const float *P,
                                     const float *mask, const bf_attn_geom *g) {
    BF_CUDA_ENTER(st, be);
    const int B = g->B, H = g->H, TQ = g->TQ, TK = g->TK, DK = g->DK, DV = g->DV;
    if (g->p_tile) return BF_FAIL(BF_ERR_INTERNAL, "attention backward: the weights were not kept");
    const long long tile = (long long)TQ * TK;
    const float scale = g->scale;
    float *dp = (float *)ws, *pd = g->rate > 0.0f ? dp + (size_t)H * tile : NULL;
    for (int b = 0; b < B; b++) {
        const float *p = P + (size_t)b * H * tile;
        const size_t qo = (size_t)b * TQ * H * DK, ko = (size_t)b * TK * H * DK;
        const size_t vo = (size_t)b * TK * H * DV, oo = (size_t)b * TQ * H * DV;
        if (pd) {
            attn_drop_kernel<<<bf_cuda_grid((long)H * tile, 256), 256, 0, st->stream>>>(pd, p, b, H, TQ, TK, g->rate,
                                                                                       (unsigned long long)g->seed);
            BF_CUDA_LAUNCHED(st, attn_drop_kernel);
        }
        // dV^T (DV,TK) = dO^T (DV,TQ) @ Pd (TQ,TK)
        BF_TRY(bf_cuda_gemm_batched(st, CUBLAS_OP_N, CUBLAS_OP_T, DV, TK, TQ, 1.0f, dO + oo,
                                                      H * DV, DV, pd ? pd : p, TK, tile, 0.0f, dV + vo, H * DV, DV, H));
        // dP^T (TK,TQ) = V_bh (TK,DV) @ dO^T (DV,TQ)
        BF_TRY(bf_cuda_gemm_batched(st, CUBLAS_OP_T, CUBLAS_OP_N, TK, TQ, DV, 1.0f, V + vo,
                                                      H * DV, DV, dO + oo, H * DV, DV, 0.0f, dp, TK, tile, H));
        attn_softmax_backward_kernel<<<rows_grid((long)H * TQ), AT_THREADS, 0, st->stream>>>(
            dp, p, mask, g->qmask, g->vmask, g->kmask, b, H, TQ, TK, g->causal, g->rate, (unsigned long long)g->seed);
        BF_CUDA_LAUNCHED(st, attn_softmax_backward_kernel);
        // dQ^T (DK,TQ) = scale * K^T (DK,TK) @ dS^T (TK,TQ)
        BF_TRY(bf_cuda_gemm_batched(st, CUBLAS_OP_N, CUBLAS_OP_N, DK, TQ, TK, scale, K + ko,
                                                      H * DK, DK, dp, TK, tile, 0.0f, dQ + qo, H * DK, DK, H));
        // dK^T (DK,TK) = scale * Q^T (DK,TQ) @ dS (TQ,TK)
        BF_TRY(bf_cuda_gemm_batched(st, CUBLAS_OP_N, CUBLAS_OP_T, DK, TK, TQ, scale, Q + qo,
                                                      H * DK, DK, dp, TK, tile, 0.0f, dK + ko, H * DK, DK, H));
    }
    return BF_OK;
}
