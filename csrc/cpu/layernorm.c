/* layernorm.c - LayerNormalization over the last axis on the CPU, as Keras 3
 * (population variance, eps inside the square root). Row statistics are
 * summed in double; mean and 1/std per row are kept for backward, which adds
 * into dgamma / dbeta and overwrites dinp. */
#include <math.h>

#include "attn_ops.h"

// out (N,C) = (inp - mean) * invstd * gamma + beta; mean, invstd (N)
bf_status bf_cpu_layernorm_forward(bf_backend *be, float *out, float *mean, float *invstd, const float *inp,
                                   const float *gamma, const float *beta, long N, int C, float eps) {
    (void)be;
    if (N <= 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "layernorm: bad sizes N=%ld C=%d", N, C);
    for (long n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *y = out + (size_t)n * C;
        double s = 0.0, ss = 0.0;
        for (int c = 0; c < C; c++) s += x[c];
        const double mu = s / C;
        for (int c = 0; c < C; c++) ss += (x[c] - mu) * (x[c] - mu);
        const float m = (float)mu, is = (float)(1.0 / sqrt(ss / C + (double)eps));
        mean[n] = m;
        invstd[n] = is;
        for (int c = 0; c < C; c++) {
            float v = (x[c] - m) * is;
            if (gamma) v *= gamma[c];
            if (beta) v += beta[c];
            y[c] = v;
        }
    }
    return BF_OK;
}

// xhat = (inp - mean) * invstd; dxhat = dout * gamma;
// dinp = invstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)); dgamma += sum dout*xhat; dbeta += sum dout
bf_status bf_cpu_layernorm_backward(bf_backend *be, float *dinp, float *dgamma, float *dbeta, const float *dout,
                                    const float *inp, const float *mean, const float *invstd, const float *gamma,
                                    long N, int C) {
    (void)be;
    if (N <= 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "layernorm: bad sizes N=%ld C=%d", N, C);
    for (long n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
        const float m = mean[n], is = invstd[n];
        double a = 0.0, b = 0.0;
        for (int c = 0; c < C; c++) {
            float xh = (x[c] - m) * is, g = dy[c] * (gamma ? gamma[c] : 1.0f);
            a += g;
            b += (double)g * xh;
            if (dgamma) dgamma[c] += dy[c] * xh;
            if (dbeta) dbeta[c] += dy[c];
        }
        if (!dinp) continue;
        const float ma = (float)(a / C), mb = (float)(b / C);
        float *dx = dinp + (size_t)n * C;
        for (int c = 0; c < C; c++) {
            float xh = (x[c] - m) * is, g = dy[c] * (gamma ? gamma[c] : 1.0f);
            dx[c] = is * (g - ma - xh * mb);
        }
    }
    return BF_OK;
}
