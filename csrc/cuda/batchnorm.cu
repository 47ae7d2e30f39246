/* batchnorm.cu - batch normalization over N rows of C channels (NHWC
 * flattened), as csrc/cpu/batchnorm.c. Training: batch mean and BIASED
 * variance per channel (shifted by the first row, summed in double),
 * invstd = 1/sqrt(var + eps), moving = moving*momentum + batch*(1-momentum)
 * (Keras 3); inference uses the moving statistics. mean / invstd (C) are
 * written for backward. gamma / beta may be NULL (1 and 0). Backward ADDS
 * into dgamma / dbeta (either may be NULL) and OVERWRITES dinp (may be NULL,
 * may alias dout); forward may run in place. A frozen layer (inference mode
 * in fit, Keras) has the affine map's backward, dinp = dout * gamma * invstd.
 * Statistics are deterministic column reductions (colreduce.cuh) in the
 * scratch; backward also keeps three coefficients per channel there, so C is
 * limited to BF_BN_MAX_C. Elementwise passes round each product separately
 * (__fmul_rn) like the CPU. */
#include <math.h>

#include "colreduce.cuh"

#define BF_BN_MAX_C 65536

struct bf_bn_stats_f { /* sum (x - k), sum (x - k)^2 with k = x[0, c] */
    const float *x;
    int C;
    __device__ void operator()(long r, int c, double *acc) const {
        const float t = x[r * C + c] - x[c];
        acc[0] += t;
        acc[1] += __fmul_rn(t, t);
    }
};

struct bf_bn_grad_f { /* sum dy, sum dy * (x - mean) */
    const float *x, *dy, *mean;
    int C;
    __device__ void operator()(long r, int c, double *acc) const {
        const float g = dy[r * C + c];
        acc[0] += g;
        acc[1] += __fmul_rn(g, x[r * C + c] - mean[c]);
    }
};

// part (2,S,C) = per-split shifted sums of inp (N,C)
__global__ void bn_stats_partial_kernel(double *part, const float *inp, long N, int C) {
    bf_colreduce<2>(part, N, C, bf_bn_stats_f{inp, C});
}

// part (2,S,C) = per-split sums of dout and dout * (inp - mean), (N,C) each
__global__ void bn_grad_partial_kernel(double *part, const float *dout, const float *inp, const float *mean,
                                       long N, int C) {
    bf_colreduce<2>(part, N, C, bf_bn_grad_f{inp, dout, mean, C});
}

// mean, invstd (C) from part (2,S,C); moving_mean, moving_var (C) updated
__global__ void bn_stats_finish_kernel(float *mean, float *invstd, float *moving_mean, float *moving_var,
                                       const double *part, const float *inp, int S, long N, int C,
                                       float momentum, float eps) {
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < C; c += gridDim.x * blockDim.x) {
        const double m = bf_col_total(part, 0, S, C, c) / (double)N;
        double var = bf_col_total(part, 1, S, C, c) / (double)N - m * m;
        if (var < 0.0) var = 0.0;
        const float mu = (float)(inp[c] + m);
        mean[c] = mu;
        invstd[c] = (float)(1.0 / sqrt(var + (double)eps));
        const float keep = 1.0f - momentum;
        moving_mean[c] = __fmul_rn(moving_mean[c], momentum) + __fmul_rn(mu, keep);
        moving_var[c] = __fmul_rn(moving_var[c], momentum) + __fmul_rn((float)var, keep);
    }
}

// mean, invstd (C) from the moving statistics (inference)
__global__ void bn_infer_stats_kernel(float *mean, float *invstd, const float *moving_mean,
                                      const float *moving_var, int C, float eps) {
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < C; c += gridDim.x * blockDim.x) {
        mean[c] = moving_mean[c];
        invstd[c] = (float)(1.0 / sqrt((double)moving_var[c] + (double)eps));
    }
}

// out (N,C) = (inp - mean) * (gamma * invstd) + beta
__global__ void bn_affine_kernel(float *out, const float *inp, const float *mean, const float *invstd,
                                 const float *gamma, const float *beta, long n, int C) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const int c = (int)(i % C);
        const float a = __fmul_rn(gamma ? gamma[c] : 1.0f, invstd[c]);
        out[i] = __fmul_rn(inp[i] - mean[c], a) + (beta ? beta[c] : 0.0f);
    }
}

// dgamma, dbeta (C) += ...; coef (3,C) = A, Bx, D of dx = A*dy + Bx*(x-mean) + D
__global__ void bn_grad_finish_kernel(float *dgamma, float *dbeta, float *coef, const double *part,
                                      const float *invstd, const float *gamma, int S, long N, int C) {
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < C; c += gridDim.x * blockDim.x) {
        const double sdy = bf_col_total(part, 0, S, C, c), sdyx = bf_col_total(part, 1, S, C, c);
        const double is = invstd[c], g = gamma ? gamma[c] : 1.0;
        const double sum_dy_xhat = sdyx * is;
        if (dgamma) dgamma[c] += (float)sum_dy_xhat;
        if (dbeta) dbeta[c] += (float)sdy;
        const double gi = g * is, mdy = sdy / (double)N, mdyx = sum_dy_xhat / (double)N;
        coef[c] = (float)gi;
        coef[C + c] = (float)(-gi * is * mdyx);
        coef[2 * C + c] = (float)(-gi * mdy);
    }
}

// dinp (N,C) = A*dout + Bx*(inp - mean) + D, coefficients coef (3,C)
__global__ void bn_dinp_kernel(float *dinp, const float *dout, const float *inp, const float *mean,
                               const float *coef, long n, int C) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const int c = (int)(i % C);
        dinp[i] = __fmul_rn(coef[c], dout[i]) + __fmul_rn(coef[C + c], inp[i] - mean[c]) + coef[2 * C + c];
    }
}

// dinp (N,C) = dout (N,C) * (gamma * invstd) (C): a frozen (inference-mode) batchnorm
__global__ void bn_frozen_dinp_kernel(float *dinp, const float *dout, const float *invstd, const float *gamma,
                                      long n, int C) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const int c = (int)(i % C);
        dinp[i] = __fmul_rn(dout[i], __fmul_rn(gamma ? gamma[c] : 1.0f, invstd[c]));
    }
}

/* C fits the run scratch (its coefficients): the one limit of this backend the layer cannot know */
static bf_status bn_check(const char *op, int C) {
    if (C > BF_BN_MAX_C)
        return BF_FAIL(BF_ERR_SHAPE, "%s: %d channels; the CUDA backend normalizes at most %d", op, C,
                       BF_BN_MAX_C);
    return BF_OK;
}

// out (N,C) = gamma * (inp - mean) * invstd + beta; mean, invstd (C); moving_* (C) updated
bf_status bf_cuda_batchnorm_forward(bf_backend *be, float *out, float *mean, float *invstd,
                                    float *moving_mean, float *moving_var, const float *inp,
                                    const float *gamma, const float *beta, long N, int C,
                                    float momentum, float eps, int training) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(bn_check("batchnorm_forward", C));
    BF_TRY(bf_cuda_need_scratch(st, "batchnorm_forward"));
    /* without mean / invstd buffers (inference only) the scratch holds them */
    float *mu = mean ? mean : (float *)st->scratch;
    float *is = invstd ? invstd : (float *)st->scratch + C;
    const unsigned cgrid = bf_cuda_grid(C, 128);
    if (training) {
        const int S = bf_col_splits(N, C, 2, 0);
        dim3 grid((unsigned)((C + 31) / 32), (unsigned)S), block(32, BF_COL_TY);
        bn_stats_partial_kernel<<<grid, block, 0, st->stream>>>(st->scratch, inp, N, C);
        BF_CUDA_LAUNCHED(st, bn_stats_partial_kernel);
        bn_stats_finish_kernel<<<cgrid, 128, 0, st->stream>>>(mu, is, moving_mean, moving_var, st->scratch,
                                                              inp, S, N, C, momentum, eps);
        BF_CUDA_LAUNCHED(st, bn_stats_finish_kernel);
    } else {
        bn_infer_stats_kernel<<<cgrid, 128, 0, st->stream>>>(mu, is, moving_mean, moving_var, C, eps);
        BF_CUDA_LAUNCHED(st, bn_infer_stats_kernel);
    }
    const long n = N * (long)C;
    bn_affine_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(out, inp, mu, is, gamma, beta, n, C);
    BF_CUDA_LAUNCHED(st, bn_affine_kernel);
    return BF_OK;
}

// dinp (N,C) = d out / d inp through the batch statistics; dgamma, dbeta (C) +=
bf_status bf_cuda_batchnorm_backward(bf_backend *be, float *dinp, float *dgamma, float *dbeta,
                                     const float *dout, const float *inp, const float *mean,
                                     const float *invstd, const float *gamma, long N, int C) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(bn_check("batchnorm_backward", C));
    BF_TRY(bf_cuda_need_scratch(st, "batchnorm_backward"));
    /* scratch: partials (2,S,C) doubles, then the coefficients (3,C) floats */
    const long coef_doubles = (3L * C + 1) / 2;
    const int S = bf_col_splits(N, C, 2, coef_doubles);
    double *part = st->scratch;
    float *coef = (float *)(st->scratch + 2L * S * C);
    dim3 grid((unsigned)((C + 31) / 32), (unsigned)S), block(32, BF_COL_TY);
    bn_grad_partial_kernel<<<grid, block, 0, st->stream>>>(part, dout, inp, mean, N, C);
    BF_CUDA_LAUNCHED(st, bn_grad_partial_kernel);
    bn_grad_finish_kernel<<<bf_cuda_grid(C, 128), 128, 0, st->stream>>>(dgamma, dbeta, coef, part, invstd,
                                                                        gamma, S, N, C);
    BF_CUDA_LAUNCHED(st, bn_grad_finish_kernel);
    if (!dinp) return BF_OK;
    const long n = N * (long)C;
    bn_dinp_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(dinp, dout, inp, mean, coef, n, C);
    BF_CUDA_LAUNCHED(st, bn_dinp_kernel);
    return BF_OK;
}

// dinp (N,C) = dout * gamma * invstd: backward of a frozen (inference-mode) batchnorm
bf_status bf_cuda_batchnorm_backward_frozen(bf_backend *be, float *dinp, const float *dout, const float *invstd,
                                            const float *gamma, long N, int C) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(bn_check("batchnorm_backward_frozen", C));
    const long n = N * (long)C;
    bn_frozen_dinp_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(dinp, dout, invstd, gamma, n, C);
    BF_CUDA_LAUNCHED(st, bn_frozen_dinp_kernel);
    return BF_OK;
}
