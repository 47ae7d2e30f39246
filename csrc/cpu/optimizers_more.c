/* optimizers_more.c - Keras 3's Adamax, Adadelta, Ftrl, Lion and Lamb update
 * rules, applied in place to n parameters after the decoupled weight decay
 * (bf_cpu_opt_update_serial applies it and calls here), and Lamb's sum of
 * squares of its update (the trust ratio's norm). Float arithmetic in the
 * order of operations of keras/src/optimizers/<name>.py, so results agree with
 * Keras's float32 to rounding. Lamb is two passes over a variable: the
 * moments, then (norms known) the step; the update is recomputed from m and v
 * in each, the same bits every time. */
#include <math.h>

#include "cpu_ops.h"

/* Lamb's update of one element: m_hat / (sqrt(v_hat) + eps), as Keras */
static inline float lamb_update(float m, float v, float c1, float c2, float eps) {
    return (m / c1) / (sqrtf(v / c2) + eps);
}

/* x^-p, Ftrl's power of the accumulator (p = learning_rate_power <= 0) */
static inline float ftrl_pow(float x, float p) { return p == -0.5f ? sqrtf(x) : powf(x, -p); }

// out (1) += sum over i of lamb_update(m[i], v[i])^2; m, v (n)
bf_status bf_cpu_lamb_sumsq(bf_backend *be, double *out, const float *m, const float *v, long n,
                            const bf_update_args *a) {
    (void)be;
    const float t = (float)a->t, c1 = 1.0f - powf(a->beta1, t), c2 = 1.0f - powf(a->beta2, t), eps = a->eps;
    double s = 0.0;
    for (long i = 0; i < n; i++) {
        const float u = lamb_update(m[i], v[i], c1, c2, eps);
        s += (double)u * u;
    }
    *out += s;
    return BF_OK;
}

bf_status bf_cpu_opt_update_more(float *restrict w, float *restrict s0, float *restrict s1, const float *restrict g,
                                 long n, const bf_update_args *a) {
    const float lr = a->lr, b1 = a->beta1, b2 = a->beta2, eps = a->eps, t = (float)a->t;
    switch (a->kind) {
    case BF_UPD_ADAMAX: { /* s0 m, s1 u */
        const float d = 1.0f - powf(b1, t);
        for (long i = 0; i < n; i++) {
            const float gi = g[i], mi = s0[i] + (gi - s0[i]) * (1.0f - b1);
            const float bu = b2 * s1[i], ag = fabsf(gi), ui = bu > ag ? bu : ag;
            s0[i] = mi;
            s1[i] = ui;
            w[i] -= (lr * mi) / (d * (ui + eps));
        }
        return BF_OK;
    }
    case BF_UPD_ADADELTA: { /* s0 accumulated gradient, s1 accumulated delta */
        const float rho = a->rho, r1 = 1.0f - a->rho;
        for (long i = 0; i < n; i++) {
            const float gi = g[i], ag = rho * s0[i] + r1 * (gi * gi);
            const float delta = -((sqrtf(s1[i] + eps) * gi) / sqrtf(ag + eps));
            s0[i] = ag;
            s1[i] = rho * s1[i] + r1 * (delta * delta);
            w[i] += lr * delta;
        }
        return BF_OK;
    }
    case BF_UPD_FTRL: { /* s0 accumulator, s1 linear */
        const bf_ftrl_args *f = &a->ftrl;
        const float p = f->lr_power, l1 = f->l1, l2s2 = 2.0f * f->l2_shrinkage;
        const float l2_reg2 = 2.0f * (f->l2 + f->beta / (2.0f * lr));
        for (long i = 0; i < n; i++) {
            const float gi = g[i], wi = w[i], acc = s0[i];
            const float na = acc + gi * gi, pn = ftrl_pow(na, p);
            const float lin = s1[i] + ((gi + l2s2 * wi) - ((pn - ftrl_pow(acc, p)) / lr) * wi);
            const float quad = pn / lr + l2_reg2;
            const float lc = lin < -l1 ? -l1 : lin > l1 ? l1 : lin;
            s1[i] = lin;
            s0[i] = na;
            w[i] = (lc - lin) / quad;
        }
        return BF_OK;
    }
    case BF_UPD_LION: /* s0 momentum */
        for (long i = 0; i < n; i++) {
            const float gi = g[i], c = s0[i] * b1 + gi * (1.0f - b1);
            w[i] -= lr * (float)((c > 0.0f) - (c < 0.0f));
            s0[i] = s0[i] * b2 + gi * (1.0f - b2);
        }
        return BF_OK;
    case BF_UPD_LAMB_MOMENTS: /* s0 m, s1 v */
        for (long i = 0; i < n; i++) {
            const float gi = g[i];
            s0[i] = s0[i] + (gi - s0[i]) * (1.0f - b1);
            s1[i] = s1[i] + (gi * gi - s1[i]) * (1.0f - b2);
        }
        return BF_OK;
    case BF_UPD_LAMB_APPLY: {
        if (!a->norms) return BF_FAIL(BF_ERR_INTERNAL, "Lamb's step without the norms of its variable");
        const float c1 = 1.0f - powf(b1, t), c2 = 1.0f - powf(b2, t);
        const float wn = (float)sqrt(a->norms[0]), un = (float)sqrt(a->norms[1]);
        const float ratio = wn > 0.0f && un > 0.0f ? wn / un : 1.0f, step = ratio * lr;
        for (long i = 0; i < n; i++) w[i] -= step * lamb_update(s0[i], s1[i], c1, c2, eps);
        return BF_OK;
    }
    default:
        break;
    }
    return BF_FAIL(BF_ERR_ARG, "unknown optimizer update %d", (int)a->kind);
}
