/* regularize.cu - Keras weight regularizers and constraints on the device,
 * as csrc/cpu/regularize.c: L1/L2 penalty summed in double into device
 * memory (atomically, no wait) and its gradient added into the parameter
 * gradient; MaxNorm / NonNeg / UnitNorm / MinMaxNorm in place after an
 * update, one thread per norm. */
#include <math.h>

#include "blocksum.cuh"
#include "cuda_ops.h"

// penalty (1) += l1*sum|w| + l2*sum w^2 over w (n): per-block sums in double, atomically added
__global__ void reg_penalty_kernel(double *penalty, const float *w, long n, float l1, float l2) {
    double a = 0.0, q = 0.0;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        a += fabs((double)w[i]);
        q += (double)w[i] * w[i];
    }
    bf_block_sum_add(penalty, (double)l1 * a + (double)l2 * q);
}

// g (n) += l1*sign(w) + 2*l2*w
__global__ void reg_grad_kernel(float *g, const float *w, long n, float l1, float l2) {
    const float l2x2 = 2.0f * l2;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float wi = w[i];
        g[i] += __fmul_rn(l1, (float)((wi > 0.0f) - (wi < 0.0f))) + __fmul_rn(l2x2, wi);
    }
}

// w (n) = w * (w >= 0)
__global__ void non_neg_kernel(float *w, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        w[i] = w[i] >= 0.0f ? w[i] : 0.0f;
}

// w (A, R, B): each (a, b) column over R rescaled to its desired norm
__global__ void norm_constraint_kernel(float *w, long A, long R, long B, bf_constraint c) {
    for (long t = blockIdx.x * (long)blockDim.x + threadIdx.x; t < A * B; t += (long)gridDim.x * blockDim.x) {
        float *v = w + (t / B) * R * B + t % B;
        double s = 0.0;
        for (long r = 0; r < R; r++) s += (double)v[r * B] * v[r * B];
        const float norm = sqrtf((float)s);
        float desired;
        if (c.kind == BF_CON_MAX_NORM) desired = norm < c.max_value ? norm : c.max_value;
        else if (c.kind == BF_CON_UNIT_NORM) desired = 1.0f;
        else {
            const float cl = norm < c.min_value ? c.min_value : norm > c.max_value ? c.max_value : norm;
            desired = __fmul_rn(c.rate, cl) + __fmul_rn(1.0f - c.rate, norm);
        }
        const float f = desired / (1e-7f + norm);
        for (long r = 0; r < R; r++) v[r * B] = __fmul_rn(v[r * B], f);
    }
}

bf_status bf_cuda_regularize(bf_backend *be, double *penalty, float *g, const float *w, long n, float l1, float l2) {
    BF_CUDA_ENTER(st, be);
    if (n < 0) return BF_FAIL(BF_ERR_SHAPE, "regularize: negative size %ld", n);
    if (n == 0) return BF_OK;
    if (penalty) {
        unsigned G = bf_cuda_grid(n, 256);
        if (G > 1024) G = 1024;
        reg_penalty_kernel<<<G, 256, 0, st->stream>>>(penalty, w, n, l1, l2);
        BF_CUDA_LAUNCHED(st, reg_penalty_kernel);
    }
    if (g) {
        reg_grad_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(g, w, n, l1, l2);
        BF_CUDA_LAUNCHED(st, reg_grad_kernel);
    }
    return BF_OK;
}

bf_status bf_cuda_constrain(bf_backend *be, float *w, long A, long R, long B, const bf_constraint *c) {
    BF_CUDA_ENTER(st, be);
    if (A < 0 || R < 0 || B < 0) return BF_FAIL(BF_ERR_SHAPE, "constrain: negative size (%ld, %ld, %ld)", A, R, B);
    if (c->kind == BF_CON_NONE || A * R * B == 0) return BF_OK;
    if ((int)c->kind < 0 || c->kind > BF_CON_LAST)
        return BF_FAIL(BF_ERR_ARG, "constrain: unknown constraint kind %d", (int)c->kind);
    if (c->kind == BF_CON_NON_NEG) {
        non_neg_kernel<<<bf_cuda_grid(A * R * B, 256), 256, 0, st->stream>>>(w, A * R * B);
        BF_CUDA_LAUNCHED(st, non_neg_kernel);
        return BF_OK;
    }
    norm_constraint_kernel<<<bf_cuda_grid(A * B, 128), 128, 0, st->stream>>>(w, A, R, B, *c);
    BF_CUDA_LAUNCHED(st, norm_constraint_kernel);
    return BF_OK;
}
