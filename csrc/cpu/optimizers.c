/* optimizers.c - Keras 3 update rules applied in place to n parameters:
 * decoupled weight decay (w -= w*wd*lr, before the rule, as Keras's base
 * optimizer), then SGD (momentum, Nesterov), Adam (AMSGrad), RMSprop
 * (momentum, centered), Adagrad or Nadam (the later Keras rules are in
 * optimizers_more.c); and gradient clipping (clipnorm per tensor,
 * global_clipnorm, clipvalue); use_ema's moving average and its overwrite. Float arithmetic in Keras's
 * order of operations, so results agree with Keras's float32 to rounding. */
#include <math.h>

#include "cpu_ops.h"

// out (1) += sum x^2 over x (n)
bf_status bf_cpu_sumsq(bf_backend *be, double *out, const float *x, long n) {
    (void)be;
    double s = 0.0;
    for (long i = 0; i < n; i++) s += (double)x[i] * x[i];
    *out += s;
    return BF_OK;
}

// g (n) clipped in place; sumsq (1): sum of squares of the tensor (or all tensors: global)
bf_status bf_cpu_grad_clip(bf_backend *be, float *g, const double *sumsq, long n, bf_clip_mode mode, float c) {
    (void)be;
    if (mode == BF_CLIP_VALUE) {
        for (long i = 0; i < n; i++) g[i] = g[i] < -c ? -c : g[i] > c ? c : g[i];
        return BF_OK;
    }
    if (mode != BF_CLIP_NORM && mode != BF_CLIP_GLOBAL_NORM) return BF_OK;
    const float norm = (float)sqrt(*sumsq);
    if (mode == BF_CLIP_NORM) {
        const float den = norm > c ? norm : c;
        for (long i = 0; i < n; i++) g[i] = g[i] * c / den;
    } else {
        const float inv = 1.0f / norm, ic = 1.0f / c;
        const float scale = c * (inv < ic ? inv : ic);
        for (long i = 0; i < n; i++) g[i] *= scale;
    }
    return BF_OK;
}

/* The arrays never overlap (distinct planned buffers) and every scalar is
 * read once into a local, so the loops vectorize; each element's arithmetic
 * is unchanged. */
static void adam(float *restrict w, float *restrict m, float *restrict v, float *restrict vmax,
                 const float *restrict g, long n, float alpha, float a1, float a2, float eps) {
    if (vmax) {
        for (long i = 0; i < n; i++) {
            const float gi = g[i], mi = m[i] + (gi - m[i]) * a1, vi = v[i] + (gi * gi - v[i]) * a2;
            const float vm = vmax[i] > vi ? vmax[i] : vi;
            m[i] = mi;
            v[i] = vi;
            vmax[i] = vm;
            w[i] -= mi * alpha / (sqrtf(vm) + eps);
        }
        return;
    }
    for (long i = 0; i < n; i++) {
        const float gi = g[i], mi = m[i] + (gi - m[i]) * a1, vi = v[i] + (gi * gi - v[i]) * a2;
        m[i] = mi;
        v[i] = vi;
        w[i] -= mi * alpha / (sqrtf(vi) + eps);
    }
}

bf_status bf_cpu_opt_update_serial(bf_backend *be, float *restrict w, float *restrict s0, float *restrict s1,
                                   float *restrict s2, const float *restrict g, long n, const bf_update_args *a) {
    (void)be;
    const float lr = a->lr, eps = a->eps, mom = a->momentum;
    if (a->kind == BF_UPD_EMA) { /* Keras's _update_model_variables_moving_average (s0: the average) */
        const float m1 = 1.0f - mom;
        for (long i = 0; i < n; i++) s0[i] = mom * s0[i] + m1 * w[i];
        return BF_OK;
    }
    if (a->kind == BF_UPD_EMA_OVERWRITE) {
        for (long i = 0; i < n; i++) w[i] = s0[i];
        return BF_OK;
    }
    if (a->weight_decay != 0.0f && a->kind != BF_UPD_LAMB_APPLY) { /* Lamb: decayed by its first pass */
        const float wd = a->weight_decay;
        for (long i = 0; i < n; i++) w[i] = w[i] - w[i] * wd * lr;
    }
    switch (a->kind) {
    case BF_UPD_SGD:
        if (!s0) {
            for (long i = 0; i < n; i++) w[i] -= g[i] * lr;
            return BF_OK;
        }
        if (a->nesterov) {
            for (long i = 0; i < n; i++) {
                const float m = s0[i] * mom - g[i] * lr;
                s0[i] = m;
                w[i] += m * mom - g[i] * lr;
            }
            return BF_OK;
        }
        for (long i = 0; i < n; i++) {
            const float m = s0[i] * mom - g[i] * lr;
            s0[i] = m;
            w[i] += m;
        }
        return BF_OK;
    case BF_UPD_ADAM: {
        const float t = (float)a->t;
        const float alpha = lr * sqrtf(1.0f - powf(a->beta2, t)) / (1.0f - powf(a->beta1, t));
        adam(w, s0, s1, s2, g, n, alpha, 1.0f - a->beta1, 1.0f - a->beta2, eps);
        return BF_OK;
    }
    case BF_UPD_RMSPROP: {
        const float rho = a->rho, r1 = 1.0f - a->rho;
        for (long i = 0; i < n; i++) {
            const float gi = g[i];
            const float v = rho * s0[i] + r1 * (gi * gi);
            s0[i] = v;
            float den;
            if (s2) {
                const float ag = rho * s2[i] + r1 * gi;
                s2[i] = ag;
                den = v - ag * ag + eps;
            } else {
                den = v + eps;
            }
            const float inc = lr * gi / sqrtf(den);
            if (s1) {
                s1[i] = mom * s1[i] + inc;
                w[i] -= s1[i];
            } else {
                w[i] -= inc;
            }
        }
        return BF_OK;
    }
    case BF_UPD_ADAGRAD:
        for (long i = 0; i < n; i++) {
            const float acc = s0[i] + g[i] * g[i];
            s0[i] = acc;
            w[i] -= lr * g[i] / sqrtf(acc + eps);
        }
        return BF_OK;
    case BF_UPD_NADAM: {
        const float b1 = a->beta1, b2 = a->beta2;
        const float b2p = powf(b2, (float)a->t);
        const float u_t1 = a->u_t1, u_prod1 = a->u_prod1, u_t = a->u_t, u_prod = a->u_prod;
        for (long i = 0; i < n; i++) {
            const float gi = g[i];
            const float mi = s0[i] + (gi - s0[i]) * (1.0f - b1);
            const float vi = s1[i] + (gi * gi - s1[i]) * (1.0f - b2);
            s0[i] = mi;
            s1[i] = vi;
            const float m_hat = u_t1 * mi / (1.0f - u_prod1) + (1.0f - u_t) * gi / (1.0f - u_prod);
            const float v_hat = vi / (1.0f - b2p);
            w[i] -= m_hat * lr / (sqrtf(v_hat) + eps);
        }
        return BF_OK;
    }
    default:
        break;
    }
    return bf_cpu_opt_update_more(w, s0, s1, g, n, a);
}
