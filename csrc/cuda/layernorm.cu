/* layernorm.cu - LayerNormalization over the last axis, as csrc/cpu/layernorm.c:
 * one block per row (statistics in double, block reductions in shared
 * memory), mean / invstd per row kept for backward. Backward OVERWRITES dinp
 * (may be NULL) and ADDS into dgamma / dbeta: one thread per column summing
 * over the rows in order (deterministic, no atomics). */
#include "cuda_ops.h"

#define LN_THREADS 256

// sum of v over the block (all threads get it)
__device__ double ln_block_sum(double v, double *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

// out (N,C), mean / invstd (N) <- inp (N,C); one block per row
__global__ void layernorm_forward_kernel(float *out, float *mean, float *invstd, const float *inp, const float *gamma,
                                         const float *beta, long N, int C, float eps) {
    __shared__ double sh[LN_THREADS];
    for (long n = blockIdx.x; n < N; n += gridDim.x) {
        const float *x = inp + n * C;
        double s = 0.0;
        for (int c = threadIdx.x; c < C; c += blockDim.x) s += x[c];
        const double mu = ln_block_sum(s, sh) / C;
        double ss = 0.0;
        for (int c = threadIdx.x; c < C; c += blockDim.x) ss += (x[c] - mu) * (x[c] - mu);
        const double var = ln_block_sum(ss, sh) / C;
        const float m = (float)mu, is = (float)(1.0 / sqrt(var + (double)eps));
        if (threadIdx.x == 0) { mean[n] = m; invstd[n] = is; }
        for (int c = threadIdx.x; c < C; c += blockDim.x) {
            float v = (x[c] - m) * is;
            if (gamma) v *= gamma[c];
            if (beta) v += beta[c];
            out[n * C + c] = v;
        }
    }
}

// dinp (N,C) = invstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * gamma
__global__ void layernorm_dinp_kernel(float *dinp, const float *dout, const float *inp, const float *mean,
                                      const float *invstd, const float *gamma, long N, int C) {
    __shared__ double sh[LN_THREADS];
    for (long n = blockIdx.x; n < N; n += gridDim.x) {
        const float *x = inp + n * C, *dy = dout + n * C;
        const float m = mean[n], is = invstd[n];
        double a = 0.0, b = 0.0;
        for (int c = threadIdx.x; c < C; c += blockDim.x) {
            float xh = (x[c] - m) * is, g = dy[c] * (gamma ? gamma[c] : 1.0f);
            a += g;
            b += (double)g * xh;
        }
        const float ma = (float)(ln_block_sum(a, sh) / C), mb = (float)(ln_block_sum(b, sh) / C);
        for (int c = threadIdx.x; c < C; c += blockDim.x) {
            float xh = (x[c] - m) * is, g = dy[c] * (gamma ? gamma[c] : 1.0f);
            dinp[n * C + c] = is * (g - ma - xh * mb);
        }
    }
}

// dgamma (C) += sum_n dout * xhat; dbeta (C) += sum_n dout
__global__ void layernorm_dparams_kernel(float *dgamma, float *dbeta, const float *dout, const float *inp,
                                         const float *mean, const float *invstd, long N, int C) {
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < C; c += gridDim.x * blockDim.x) {
        float sg = 0.0f, sb = 0.0f;
        for (long n = 0; n < N; n++) {
            const float dy = dout[n * C + c];
            sg += dy * ((inp[n * C + c] - mean[n]) * invstd[n]);
            sb += dy;
        }
        if (dgamma) dgamma[c] += sg;
        if (dbeta) dbeta[c] += sb;
    }
}

static unsigned rows_grid(long N) { return (unsigned)(N < 65535L * 16 ? N : 65535L * 16); }

bf_status bf_cuda_layernorm_forward(bf_backend *be, float *out, float *mean, float *invstd, const float *inp,
                                    const float *gamma, const float *beta, long N, int C, float eps) {
    BF_CUDA_ENTER(st, be);
    if (N <= 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "layernorm: bad sizes N=%ld C=%d", N, C);
    layernorm_forward_kernel<<<rows_grid(N), LN_THREADS, 0, st->stream>>>(out, mean, invstd, inp, gamma, beta, N, C,
                                                                          eps);
    BF_CUDA_LAUNCHED(st, layernorm_forward_kernel);
    return BF_OK;
}

bf_status bf_cuda_layernorm_backward(bf_backend *be, float *dinp, float *dgamma, float *dbeta, const float *dout,
                                     const float *inp, const float *mean, const float *invstd, const float *gamma,
                                     long N, int C) {
    BF_CUDA_ENTER(st, be);
    if (N <= 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "layernorm: bad sizes N=%ld C=%d", N, C);
    if (dgamma || dbeta) {
        layernorm_dparams_kernel<<<bf_cuda_grid(C, 128), 128, 0, st->stream>>>(dgamma, dbeta, dout, inp, mean,
                                                                               invstd, N, C);
        BF_CUDA_LAUNCHED(st, layernorm_dparams_kernel);
    }
    if (dinp) {
        layernorm_dinp_kernel<<<rows_grid(N), LN_THREADS, 0, st->stream>>>(dinp, dout, inp, mean, invstd, gamma, N,
                                                                           C);
        BF_CUDA_LAUNCHED(st, layernorm_dinp_kernel);
    }
    return BF_OK;
}
