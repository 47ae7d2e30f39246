/* optimizers_matrix.c - Keras 3's Adafactor and Muon updates of one variable
 * (the core walks the variables: core/opt_matrix.c), each after its decoupled
 * weight decay. Float arithmetic in the order of keras/src/optimizers/
 * adafactor.py and muon.py; the means and norms are summed in double, so
 * results agree with Keras's float32 to rounding. Muon's Newton-Schulz
 * iteration multiplies its matrices with the engine's GEMM (gemm.c). */
#include <math.h>
#include <string.h>

#include "blas.h"
#include "cpu_ops.h"

static void weight_decay(float *w, long n, float wd, float lr) {
    if (wd == 0.0f) return;
    for (long i = 0; i < n; i++) w[i] = w[i] - w[i] * wd * lr;
}

static float rms(const float *x, long n) {
    double s = 0.0;
    for (long i = 0; i < n; i++) s += (double)x[i] * x[i];
    return sqrtf((float)(s / (double)n));
}

// w, g, v (A,R,C); r (A,R), c (A,C) when factored
bf_status bf_cpu_adafactor_update(bf_backend *be, float *w, float *v, float *r, float *c, const float *g, long A,
                                  long R, long C, int factored, const bf_update_args *a) {
    (void)be;
    const long n = A * R * C;
    const float lr = a->lr, t = (float)a->t, eps1 = a->af.epsilon_1;
    weight_decay(w, n, a->weight_decay, lr);
    const float rho = fminf(lr, 1.0f / sqrtf(t));
    const float alpha = fmaxf(a->af.epsilon_2, rms(w, n)) * rho;
    const float b2 = 1.0f - powf(t, a->af.beta_2_decay), b2c = 1.0f - b2;
    if (factored) {
        for (long k = 0; k < A; k++) {
            const float *gk = g + k * R * C;
            float *rk = r + k * R, *ck = c + k * C, *vk = v + k * R * C;
            double rsum = 0.0;
            for (long i = 0; i < R; i++) { /* r: the mean over the last axis of g^2 + epsilon_1 */
                double s = 0.0;
                for (long j = 0; j < C; j++) s += (double)(gk[i * C + j] * gk[i * C + j] + eps1);
                rk[i] = b2 * rk[i] + b2c * (float)(s / (double)C);
                rsum += rk[i];
            }
            for (long j = 0; j < C; j++) { /* c: the mean over the axis before it */
                double s = 0.0;
                for (long i = 0; i < R; i++) s += (double)(gk[i * C + j] * gk[i * C + j] + eps1);
                ck[j] = b2 * ck[j] + b2c * (float)(s / (double)R);
            }
            const float rmean = (float)(rsum / (double)R);
            for (long i = 0; i < R; i++)
                for (long j = 0; j < C; j++) vk[i * C + j] = (rk[i] / rmean) * ck[j];
        }
    } else {
        for (long i = 0; i < n; i++) v[i] = b2 * v[i] + b2c * (g[i] * g[i] + eps1);
    }
    double s = 0.0; /* rms of u = g / sqrt(v) */
    for (long i = 0; i < n; i++) {
        const float u = g[i] / sqrtf(v[i]);
        s += (double)u * u;
    }
    const float den = fmaxf(1.0f, sqrtf((float)(s / (double)n)) / a->af.clip_threshold);
    for (long i = 0; i < n; i++) w[i] -= alpha * ((g[i] / sqrtf(v[i])) / den);
    return BF_OK;
}

/* x (k,l) = Newton-Schulz's quintic iteration of x / (||x||_F + 1e-7), Keras's zeropower_via_newtonschulz5;
 * ws: a (k,k), b (k,k), y (k,l) */
static void newton_schulz(float *x, float *ws, long k, long l, const bf_muon_args *mu) {
    float *am = ws, *bm = am + k * k, *y = bm + k * k;
    double s = 0.0;
    for (long i = 0; i < k * l; i++) s += (double)x[i] * x[i];
    const float d = sqrtf((float)s) + 1e-7f;
    for (long i = 0; i < k * l; i++) x[i] = x[i] / d;
    for (int it = 0; it < mu->ns_steps; it++) {
        bf_sgemm(0, 1, (int)k, (int)k, (int)l, 1.0f, x, (int)l, x, (int)l, 0.0f, am, (int)k);      /* a = x x^T */
        bf_sgemm(0, 0, (int)k, (int)k, (int)k, mu->c, am, (int)k, am, (int)k, 0.0f, bm, (int)k);  /* (c a) a */
        for (long i = 0; i < k * k; i++) bm[i] = mu->b * am[i] + bm[i];
        bf_sgemm(0, 0, (int)k, (int)l, (int)k, 1.0f, bm, (int)k, x, (int)l, 0.0f, y, (int)l);     /* b x */
        for (long i = 0; i < k * l; i++) x[i] = mu->a * x[i] + y[i];
    }
}

// w, m, g (R,C); v (R*C) for AdamW's variables; ws (2*R*C + 2*min(R,C)^2) for matrices
bf_status bf_cpu_muon_update(bf_backend *be, float *w, float *m, float *v, float *ws, const float *g, long R, long C,
                             int matrix, const bf_update_args *a) {
    (void)be;
    const long n = R * C;
    const float lr = a->lr;
    if (!matrix) { /* Keras's _adamw_update_step at lr * adam_lr_ratio, decayed at lr by adam_weight_decay */
        weight_decay(w, n, a->mu.adam_weight_decay, lr);
        const float alr = lr * a->mu.adam_lr_ratio, t = (float)a->t, b1 = a->beta1, b2 = a->beta2;
        const float alpha = alr * sqrtf(1.0f - powf(b2, t)) / (1.0f - powf(b1, t));
        for (long i = 0; i < n; i++) {
            const float gi = g[i];
            m[i] += (gi - m[i]) * (1.0f - b1);
            v[i] += (gi * gi - v[i]) * (1.0f - b2);
            w[i] -= (m[i] * alpha) / (sqrtf(v[i]) + a->eps);
        }
        return BF_OK;
    }
    weight_decay(w, n, a->weight_decay, lr);
    const float mom = a->momentum;
    const long k = R < C ? R : C, l = R < C ? C : R, tr = R > C; /* x (k,l): the step, transposed when tall */
    float *x = ws + 2 * k * k + k * l;
    for (long i = 0; i < R; i++)
        for (long j = 0; j < C; j++) {
            const long e = i * C + j;
            m[e] += g[e] + m[e] * (mom - 1.0f);
            x[tr ? j * R + i : e] = a->nesterov ? g[e] + mom * m[e] : m[e];
        }
    newton_schulz(x, ws, k, l, &a->mu);
    const float sq = sqrtf((float)l), rr = a->mu.rms_rate; /* lr_adjust: (lr * x) * sqrt(max(R, C)) * rms_rate */
    for (long i = 0; i < R; i++)
        for (long j = 0; j < C; j++) {
            const float u = lr * x[tr ? j * R + i : i * C + j];
            w[i * C + j] -= rr >= 0.0f ? u * sq * rr : u;
        }
    return BF_OK;
}
