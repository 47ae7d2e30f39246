/* optimizers.c - Keras update rules for SGD (momentum, nesterov), Adam and
 * RMSprop, applied in place to one parameter tensor of n floats. */
#include <math.h>

#include "cpu_ops.h"

bf_status bf_cpu_sgd_update(bf_backend *be, float *w, float *vel, const float *g, long n,
                            float lr, float momentum, int nesterov) {
    (void)be;
    if (momentum == 0.0f || !vel) {
        for (long i = 0; i < n; i++) w[i] -= lr * g[i];
        return BF_OK;
    }
    for (long i = 0; i < n; i++) {
        float m = momentum * vel[i] - lr * g[i];
        vel[i] = m;
        w[i] += nesterov ? momentum * m - lr * g[i] : m;
    }
    return BF_OK;
}

bf_status bf_cpu_adam_update(bf_backend *be, float *w, float *m, float *v, const float *g,
                             long n, float lr, float beta1, float beta2, float eps, long t) {
    (void)be;
    float alpha = lr * sqrtf(1.0f - powf(beta2, (float)t)) / (1.0f - powf(beta1, (float)t));
    float a1 = 1.0f - beta1, a2 = 1.0f - beta2;
    for (long i = 0; i < n; i++) {
        float gi = g[i];
        float mi = m[i] + (gi - m[i]) * a1;
        float vi = v[i] + (gi * gi - v[i]) * a2;
        m[i] = mi;
        v[i] = vi;
        w[i] -= alpha * mi / (sqrtf(vi) + eps);
    }
    return BF_OK;
}

bf_status bf_cpu_rmsprop_update(bf_backend *be, float *w, float *ms, float *mom, const float *g,
                                long n, float lr, float rho, float momentum, float eps) {
    (void)be;
    for (long i = 0; i < n; i++) {
        float gi = g[i];
        float v = rho * ms[i] + (1.0f - rho) * gi * gi;
        ms[i] = v;
        float inc = lr * gi / sqrtf(v + eps);
        if (momentum > 0.0f && mom) {
            mom[i] = momentum * mom[i] + inc;
            w[i] -= mom[i];
        } else {
            w[i] -= inc;
        }
    }
    return BF_OK;
}
