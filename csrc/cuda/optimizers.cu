/* optimizers.cu - Keras update rules applied in place to n parameters, as
 * csrc/cpu/optimizers.c: SGD (m = momentum*m - lr*g; w += m, or with Nesterov
 * w += momentum*m - lr*g; momentum 0: w -= lr*g), Adam (alpha = lr *
 * sqrt(1-b2^t) / (1-b1^t), computed on the host in float as the CPU does;
 * m += (g-m)(1-b1); v += (g^2-v)(1-b2); w -= alpha*m/(sqrt(v)+eps)) and
 * RMSprop (Keras 3: v = rho*v + (1-rho)g^2; inc = lr*g/sqrt(v+eps);
 * momentum > 0: mom = momentum*mom + inc, w -= mom; else w -= inc).
 * Products are rounded separately (__fmul_rn) so results match the CPU's. */
#include <math.h>

#include "cuda_ops.h"

#define FMUL __fmul_rn

// w, vel (n) updated from g (n); vel NULL or momentum 0: plain SGD
__global__ void sgd_update_kernel(float *w, float *vel, const float *g, long n, float lr,
                                  float momentum, int nesterov) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float gi = g[i];
        if (!vel) {
            w[i] -= FMUL(lr, gi);
            continue;
        }
        const float m = FMUL(momentum, vel[i]) - FMUL(lr, gi);
        vel[i] = m;
        w[i] += nesterov ? FMUL(momentum, m) - FMUL(lr, gi) : m;
    }
}

// w, m, v (n) updated from g (n)
__global__ void adam_update_kernel(float *w, float *m, float *v, const float *g, long n, float alpha,
                                   float a1, float a2, float eps) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float gi = g[i];
        const float mi = m[i] + FMUL(gi - m[i], a1);
        const float vi = v[i] + FMUL(FMUL(gi, gi) - v[i], a2);
        m[i] = mi;
        v[i] = vi;
        w[i] -= FMUL(alpha, mi) / (sqrtf(vi) + eps);
    }
}

// w, ms, mom (n) updated from g (n); mom NULL or momentum 0: no momentum
__global__ void rmsprop_update_kernel(float *w, float *ms, float *mom, const float *g, long n,
                                      float lr, float rho, float momentum, float eps) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float gi = g[i];
        const float v = FMUL(rho, ms[i]) + FMUL(FMUL(1.0f - rho, gi), gi);
        ms[i] = v;
        const float inc = FMUL(lr, gi) / sqrtf(v + eps);
        if (mom) {
            const float mo = FMUL(momentum, mom[i]) + inc;
            mom[i] = mo;
            w[i] -= mo;
        } else {
            w[i] -= inc;
        }
    }
}

static bf_status check_n(const char *op, long n) {
    if (n < 0) return BF_FAIL(BF_ERR_SHAPE, "%s: negative size %ld", op, n);
    return BF_OK;
}

bf_status bf_cuda_sgd_update(bf_backend *be, float *w, float *vel, const float *g, long n,
                             float lr, float momentum, int nesterov) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check_n("sgd_update", n));
    if (n == 0) return BF_OK;
    if (momentum == 0.0f) vel = NULL;
    sgd_update_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(w, vel, g, n, lr, momentum, nesterov);
    BF_CUDA_LAUNCHED(st, sgd_update_kernel);
    return BF_OK;
}

bf_status bf_cuda_adam_update(bf_backend *be, float *w, float *m, float *v, const float *g,
                              long n, float lr, float beta1, float beta2, float eps, long t) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check_n("adam_update", n));
    if (n == 0) return BF_OK;
    const float alpha = lr * sqrtf(1.0f - powf(beta2, (float)t)) / (1.0f - powf(beta1, (float)t));
    adam_update_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(w, m, v, g, n, alpha, 1.0f - beta1,
                                                                     1.0f - beta2, eps);
    BF_CUDA_LAUNCHED(st, adam_update_kernel);
    return BF_OK;
}

bf_status bf_cuda_rmsprop_update(bf_backend *be, float *w, float *ms, float *mom,
                                 const float *g, long n, float lr, float rho, float momentum,
                                 float eps) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check_n("rmsprop_update", n));
    if (n == 0) return BF_OK;
    if (!(momentum > 0.0f)) mom = NULL;
    rmsprop_update_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(w, ms, mom, g, n, lr, rho,
                                                                        momentum, eps);
    BF_CUDA_LAUNCHED(st, rmsprop_update_kernel);
    return BF_OK;
}
