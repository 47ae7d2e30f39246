/* optimizers_more.cu - Keras 3's Adamax, Adadelta, Ftrl, Lion and Lamb update
 * rules on the device, as csrc/cpu/optimizers_more.c: the decoupled weight
 * decay (w -= w*wd*lr) first, except in Lamb's second pass, then the rule;
 * and Lamb's sum of squares of its update into device memory (per-block sums
 * in double, atomically added), read by its second pass, so nothing waits.
 * Products are rounded separately (__fmul_rn) so results match the CPU's up
 * to the last bits. bf_cuda_opt_update (optimizers.cu) hands these kinds here. */
#include <math.h>

#include "blocksum.cuh"
#include "cuda_ops.h"

#define FMUL __fmul_rn

/* Lamb's update of one element: m_hat / (sqrt(v_hat) + eps), as Keras */
__device__ static inline float lamb_upd(float m, float v, float c1, float c2, float eps) {
    return (m / c1) / (sqrtf(v / c2) + eps);
}

/* x^-p, Ftrl's power of the accumulator (p <= 0) */
__device__ static inline float ftrl_pow(float x, float p) { return p == -0.5f ? sqrtf(x) : powf(x, -p); }

// out (1) += sum of lamb_upd(m[i], v[i])^2 over m, v (n)
__global__ void lamb_sumsq_kernel(double *out, const float *m, const float *v, long n, float c1, float c2, float eps) {
    double s = 0.0;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float u = lamb_upd(m[i], v[i], c1, c2, eps);
        s += (double)u * u;
    }
    bf_block_sum_add(out, s);
}

// w (n) and its state s0, s1 (n each) updated from g (n); c1 = 1 - beta_1^t, c2 = 1 - beta_2^t
__global__ void opt_update_more_kernel(float *w, float *s0, float *s1, const float *g, long n, bf_update_args a,
                                       float c1, float c2) {
    const float lr = a.lr, b1 = a.beta1, b2 = a.beta2, eps = a.eps;
    float ratio_lr = 0.0f;
    if (a.kind == BF_UPD_LAMB_APPLY) {
        const float wn = (float)sqrt(a.norms[0]), un = (float)sqrt(a.norms[1]);
        ratio_lr = FMUL(wn > 0.0f && un > 0.0f ? wn / un : 1.0f, lr);
    }
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float wi = w[i];
        if (a.weight_decay != 0.0f && a.kind != BF_UPD_LAMB_APPLY) wi = wi - FMUL(FMUL(wi, a.weight_decay), lr);
        switch (a.kind) {
        case BF_UPD_ADAMAX: {
            const float gi = g[i], mi = s0[i] + FMUL(gi - s0[i], 1.0f - b1);
            const float bu = FMUL(b2, s1[i]), ag = fabsf(gi), ui = bu > ag ? bu : ag;
            s0[i] = mi;
            s1[i] = ui;
            wi -= FMUL(lr, mi) / FMUL(c1, ui + eps);
            break;
        }
        case BF_UPD_ADADELTA: {
            const float gi = g[i], ag = FMUL(a.rho, s0[i]) + FMUL(1.0f - a.rho, FMUL(gi, gi));
            const float delta = -(FMUL(sqrtf(s1[i] + eps), gi) / sqrtf(ag + eps));
            s0[i] = ag;
            s1[i] = FMUL(a.rho, s1[i]) + FMUL(1.0f - a.rho, FMUL(delta, delta));
            wi += FMUL(lr, delta);
            break;
        }
        case BF_UPD_FTRL: {
            const float p = a.ftrl.lr_power, l1 = a.ftrl.l1;
            const float l2_reg2 = FMUL(2.0f, a.ftrl.l2 + a.ftrl.beta / FMUL(2.0f, lr));
            const float gi = g[i], acc = s0[i], na = acc + FMUL(gi, gi), pn = ftrl_pow(na, p);
            const float lin = s1[i] + ((gi + FMUL(FMUL(2.0f, a.ftrl.l2_shrinkage), wi)) -
                                       FMUL((pn - ftrl_pow(acc, p)) / lr, wi));
            const float quad = pn / lr + l2_reg2;
            const float lc = lin < -l1 ? -l1 : lin > l1 ? l1 : lin;
            s1[i] = lin;
            s0[i] = na;
            wi = (lc - lin) / quad;
            break;
        }
        case BF_UPD_LION: {
            const float gi = g[i], c = FMUL(s0[i], b1) + FMUL(gi, 1.0f - b1);
            wi -= FMUL(lr, (float)((c > 0.0f) - (c < 0.0f)));
            s0[i] = FMUL(s0[i], b2) + FMUL(gi, 1.0f - b2);
            break;
        }
        case BF_UPD_LAMB_MOMENTS: {
            const float gi = g[i];
            s0[i] = s0[i] + FMUL(gi - s0[i], 1.0f - b1);
            s1[i] = s1[i] + FMUL(FMUL(gi, gi) - s1[i], 1.0f - b2);
            break;
        }
        case BF_UPD_LAMB_APPLY:
            wi -= FMUL(ratio_lr, lamb_upd(s0[i], s1[i], c1, c2, eps));
            break;
        default:
            break;
        }
        w[i] = wi;
    }
}

bf_status bf_cuda_opt_update_more(bf_cuda_state *st, float *w, float *s0, float *s1, const float *g, long n,
                                  const bf_update_args *a) {
    if (!s0 || (a->kind != BF_UPD_LION && !s1))
        return BF_FAIL(BF_ERR_ARG, "opt_update: optimizer state missing");
    if (a->kind == BF_UPD_LAMB_APPLY && !a->norms)
        return BF_FAIL(BF_ERR_INTERNAL, "Lamb's step without the norms of its variable");
    if (a->kind != BF_UPD_LAMB_APPLY && !g) return BF_FAIL(BF_ERR_ARG, "opt_update: no gradient");
    if (n == 0) return BF_OK;
    const float t = (float)a->t, c1 = 1.0f - powf(a->beta1, t), c2 = 1.0f - powf(a->beta2, t);
    opt_update_more_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(w, s0, s1, g, n, *a, c1, c2);
    BF_CUDA_LAUNCHED(st, opt_update_more_kernel);
    return BF_OK;
}

bf_status bf_cuda_lamb_sumsq(bf_backend *be, double *out, const float *m, const float *v, long n,
                             const bf_update_args *a) {
    BF_CUDA_ENTER(st, be);
    if (n < 0) return BF_FAIL(BF_ERR_SHAPE, "lamb_sumsq: negative size %ld", n);
    if (n == 0) return BF_OK;
    const float t = (float)a->t, c1 = 1.0f - powf(a->beta1, t), c2 = 1.0f - powf(a->beta2, t);
    unsigned G = bf_cuda_grid(n, 256);
    if (G > 1024) G = 1024;
    lamb_sumsq_kernel<<<G, 256, 0, st->stream>>>(out, m, v, n, c1, c2, a->eps);
    BF_CUDA_LAUNCHED(st, lamb_sumsq_kernel);
    return BF_OK;
}
