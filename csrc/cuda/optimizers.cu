/* optimizers.cu - Keras 3 update rules applied in place to n parameters, as
 * csrc/cpu/optimizers.c: decoupled weight decay (w -= w*wd*lr) first, then
 * SGD (momentum, Nesterov), Adam (AMSGrad), RMSprop (momentum, centered),
 * Adagrad or Nadam, use_ema's moving average (the later Keras rules: optimizers_more.cu); host-side scalars (Adam's alpha, Nadam's u products) come
 * computed in float as the CPU does. Gradient clipping: sums of squares into
 * device memory (sumsq) and a scale read from there (grad_clip), so nothing
 * waits. Products are rounded separately (__fmul_rn) so results match the
 * CPU's up to the last bits. */
#include <math.h>

#include "blocksum.cuh"
#include "cuda_ops.h"

#define FMUL __fmul_rn

// out (1) += sum x^2 over x (n): per-block sums in double, atomically added
__global__ void sumsq_kernel(double *out, const float *x, long n) {
    double s = 0.0;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        s += (double)x[i] * x[i];
    bf_block_sum_add(out, s);
}

// g (n) clipped in place (mode: bf_clip_mode), sumsq (1) on the device
__global__ void grad_clip_kernel(float *g, const double *sumsq, long n, int mode, float c) {
    float scale = 1.0f;
    if (mode == BF_CLIP_NORM || mode == BF_CLIP_GLOBAL_NORM) {
        const float norm = (float)sqrt(*sumsq);
        if (mode == BF_CLIP_GLOBAL_NORM) {
            const float inv = 1.0f / norm, ic = 1.0f / c;
            scale = FMUL(c, inv < ic ? inv : ic);
        } else {
            scale = norm > c ? norm : c; /* divisor */
        }
    }
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float gi = g[i];
        if (mode == BF_CLIP_VALUE) g[i] = gi < -c ? -c : gi > c ? c : gi;
        else if (mode == BF_CLIP_NORM) g[i] = FMUL(gi, c) / scale;
        else g[i] = FMUL(gi, scale);
    }
}

// use_ema: avg (n) = mom * avg + (1 - mom) * w (n); overwrite: w = avg
__global__ void ema_kernel(float *w, float *avg, long n, float mom, int overwrite) {
    const float m1 = 1.0f - mom;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        if (overwrite) w[i] = avg[i];
        else avg[i] = FMUL(mom, avg[i]) + FMUL(m1, w[i]);
    }
}

// w (n) and its state s0, s1, s2 (n each, NULL when unused) updated from g (n)
__global__ void opt_update_kernel(float *w, float *s0, float *s1, float *s2, const float *g, long n,
                                  bf_update_args a, float alpha, float b2p) {
    const float lr = a.lr;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float wi = w[i];
        const float gi = g[i];
        if (a.weight_decay != 0.0f) wi = wi - FMUL(FMUL(wi, a.weight_decay), lr);
        switch (a.kind) {
        case BF_UPD_SGD:
            if (!s0) {
                wi -= FMUL(gi, lr);
            } else {
                const float m = FMUL(s0[i], a.momentum) - FMUL(gi, lr);
                s0[i] = m;
                wi += a.nesterov ? FMUL(m, a.momentum) - FMUL(gi, lr) : m;
            }
            break;
        case BF_UPD_ADAM: {
            const float mi = s0[i] + FMUL(gi - s0[i], 1.0f - a.beta1);
            float vi = s1[i] + FMUL(FMUL(gi, gi) - s1[i], 1.0f - a.beta2);
            s0[i] = mi;
            s1[i] = vi;
            if (s2) {
                vi = s2[i] > vi ? s2[i] : vi;
                s2[i] = vi;
            }
            wi -= FMUL(mi, alpha) / (sqrtf(vi) + a.eps);
            break;
        }
        case BF_UPD_RMSPROP: {
            const float v = FMUL(a.rho, s0[i]) + FMUL(1.0f - a.rho, FMUL(gi, gi));
            s0[i] = v;
            float den;
            if (s2) {
                const float ag = FMUL(a.rho, s2[i]) + FMUL(1.0f - a.rho, gi);
                s2[i] = ag;
                den = v - FMUL(ag, ag) + a.eps;
            } else {
                den = v + a.eps;
            }
            const float inc = FMUL(lr, gi) / sqrtf(den);
            if (s1) {
                const float mo = FMUL(a.momentum, s1[i]) + inc;
                s1[i] = mo;
                wi -= mo;
            } else {
                wi -= inc;
            }
            break;
        }
        case BF_UPD_ADAGRAD: {
            const float acc = s0[i] + FMUL(gi, gi);
            s0[i] = acc;
            wi -= FMUL(lr, gi) / sqrtf(acc + a.eps);
            break;
        }
        case BF_UPD_NADAM: {
            const float mi = s0[i] + FMUL(gi - s0[i], 1.0f - a.beta1);
            const float vi = s1[i] + FMUL(FMUL(gi, gi) - s1[i], 1.0f - a.beta2);
            s0[i] = mi;
            s1[i] = vi;
            const float m_hat = FMUL(a.u_t1, mi) / (1.0f - a.u_prod1) + FMUL(1.0f - a.u_t, gi) / (1.0f - a.u_prod);
            const float v_hat = vi / (1.0f - b2p);
            wi -= FMUL(m_hat, lr) / (sqrtf(v_hat) + a.eps);
            break;
        }
        }
        w[i] = wi;
    }
}

static bf_status check_n(const char *op, long n) {
    if (n < 0) return BF_FAIL(BF_ERR_SHAPE, "%s: negative size %ld", op, n);
    return BF_OK;
}

bf_status bf_cuda_sumsq(bf_backend *be, double *out, const float *x, long n) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check_n("sumsq", n));
    if (n == 0) return BF_OK;
    unsigned G = bf_cuda_grid(n, 256);
    if (G > 1024) G = 1024;
    sumsq_kernel<<<G, 256, 0, st->stream>>>(out, x, n);
    BF_CUDA_LAUNCHED(st, sumsq_kernel);
    return BF_OK;
}

bf_status bf_cuda_grad_clip(bf_backend *be, float *g, const double *sumsq, long n, bf_clip_mode mode, float c) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check_n("grad_clip", n));
    if (n == 0 || mode == BF_CLIP_NONE) return BF_OK;
    if (mode != BF_CLIP_VALUE && !sumsq) return BF_FAIL(BF_ERR_ARG, "grad_clip: norm clipping needs the sum of squares");
    grad_clip_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(g, sumsq, n, (int)mode, c);
    BF_CUDA_LAUNCHED(st, grad_clip_kernel);
    return BF_OK;
}

bf_status bf_cuda_opt_update(bf_backend *be, float *w, float *s0, float *s1, float *s2, const float *g, long n,
                             const bf_update_args *a) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check_n("opt_update", n));
    if ((int)a->kind < BF_UPD_SGD || a->kind > BF_UPD_LAST)
        return BF_FAIL(BF_ERR_ARG, "unknown optimizer update %d", (int)a->kind);
    if (a->kind == BF_UPD_EMA || a->kind == BF_UPD_EMA_OVERWRITE) {
        if (!s0) return BF_FAIL(BF_ERR_ARG, "opt_update: the moving average missing");
        if (n == 0) return BF_OK;
        ema_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(w, s0, n, a->momentum, a->kind == BF_UPD_EMA_OVERWRITE);
        BF_CUDA_LAUNCHED(st, ema_kernel);
        return BF_OK;
    }
    if (a->kind > BF_UPD_NADAM) return bf_cuda_opt_update_more(st, w, s0, s1, g, n, a);
    if (a->kind != BF_UPD_SGD && (!s0 || ((a->kind == BF_UPD_ADAM || a->kind == BF_UPD_NADAM) && !s1)))
        return BF_FAIL(BF_ERR_ARG, "opt_update: optimizer state missing");
    if (n == 0) return BF_OK;
    const float t = (float)a->t;
    const float alpha = a->lr * sqrtf(1.0f - powf(a->beta2, t)) / (1.0f - powf(a->beta1, t));
    const float b2p = powf(a->beta2, t);
    opt_update_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(w, s0, s1, s2, g, n, *a, alpha, b2p);
    BF_CUDA_LAUNCHED(st, opt_update_kernel);
    return BF_OK;
}
