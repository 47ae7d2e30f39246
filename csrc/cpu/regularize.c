/* regularize.c - Keras weight regularizers and constraints on the CPU:
 * L1/L2 penalties (value in double, gradient added into the parameter
 * gradient) and MaxNorm / NonNeg / UnitNorm / MinMaxNorm applied in place
 * after an update, in Keras's float32 formulas (epsilon 1e-7). */
#include <math.h>

#include "cpu_ops.h"

// penalty (1) += l1*sum|w| + l2*sum w^2 (penalty may be NULL); g (n) += l1*sign(w) + 2*l2*w (g may be NULL)
bf_status bf_cpu_regularize(bf_backend *be, double *penalty, float *g, const float *w, long n, float l1, float l2) {
    (void)be;
    if (n < 0) return BF_FAIL(BF_ERR_SHAPE, "regularize: negative size %ld", n);
    if (penalty) {
        double a = 0.0, q = 0.0;
        for (long i = 0; i < n; i++) { a += fabs((double)w[i]); q += (double)w[i] * w[i]; }
        *penalty += (double)l1 * a + (double)l2 * q;
    }
    if (g) {
        const float l2x2 = 2.0f * l2;
        for (long i = 0; i < n; i++) {
            const float wi = w[i];
            g[i] += l1 * (float)((wi > 0.0f) - (wi < 0.0f)) + l2x2 * wi;
        }
    }
    return BF_OK;
}

// w (A, R, B) in place: per (a, b) the norm over R, or NonNeg element-wise
bf_status bf_cpu_constrain(bf_backend *be, float *w, long A, long R, long B, const bf_constraint *c) {
    (void)be;
    if (A < 0 || R < 0 || B < 0) return BF_FAIL(BF_ERR_SHAPE, "constrain: negative size (%ld, %ld, %ld)", A, R, B);
    if (c->kind == BF_CON_NONE) return BF_OK;
    if (c->kind == BF_CON_NON_NEG) {
        for (long i = 0; i < A * R * B; i++) w[i] = w[i] >= 0.0f ? w[i] : 0.0f;
        return BF_OK;
    }
    if (c->kind < 0 || c->kind > BF_CON_LAST) return BF_FAIL(BF_ERR_ARG, "constrain: unknown constraint kind %d", (int)c->kind);
    for (long a = 0; a < A; a++)
        for (long b = 0; b < B; b++) {
            float *v = w + a * R * B + b;
            double s = 0.0;
            for (long r = 0; r < R; r++) s += (double)v[r * B] * v[r * B];
            const float norm = sqrtf((float)s);
            float desired;
            switch (c->kind) {
            case BF_CON_MAX_NORM: desired = norm < c->max_value ? norm : c->max_value; break;
            case BF_CON_UNIT_NORM: desired = 1.0f; break;
            default: {
                const float cl = norm < c->min_value ? c->min_value : norm > c->max_value ? c->max_value : norm;
                desired = c->rate * cl + (1.0f - c->rate) * norm;
                break;
            }
            }
            const float f = desired / (1e-7f + norm);
            for (long r = 0; r < R; r++) v[r * B] = v[r * B] * f;
        }
    return BF_OK;
}
