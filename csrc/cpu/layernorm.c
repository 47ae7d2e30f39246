/* layernorm.c - LayerNormalization over the last axis on the CPU, as Keras 3
 * (population variance, eps inside the square root). Row statistics are
 * summed in double, in 8 partial sums the compiler vectorizes (one serial
 * chain of 256 double adds was most of a row's time); mean and 1/std per row
 * are kept for backward, which adds into dgamma / dbeta and overwrites dinp. */
#include <math.h>

#include "attn_ops.h"

#define LANES 8

// sum of x (C) in double; with mu: of (x - mu)^2
static double row_sum(const float *restrict x, int C, const double *mu) {
    double a[LANES] = {0};
    int c = 0;
    if (mu)
        for (; c + LANES <= C; c += LANES)
            for (int l = 0; l < LANES; l++) a[l] += ((double)x[c + l] - *mu) * ((double)x[c + l] - *mu);
    else
        for (; c + LANES <= C; c += LANES)
            for (int l = 0; l < LANES; l++) a[l] += (double)x[c + l];
    for (; c < C; c++) a[0] += mu ? ((double)x[c] - *mu) * ((double)x[c] - *mu) : (double)x[c];
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

// out (N,C) = (inp - mean) * invstd * gamma + beta; mean, invstd (N)
bf_status bf_cpu_layernorm_forward(bf_backend *be, float *out, float *mean, float *invstd, const float *inp,
                                   const float *gamma, const float *beta, long N, int C, float eps) {
    (void)be;
    if (N <= 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "layernorm: bad sizes N=%ld C=%d", N, C);
    for (long n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *y = out + (size_t)n * C;
        const double mu = row_sum(x, C, NULL) / C, ss = row_sum(x, C, &mu);
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
        double a[LANES] = {0}, b[LANES] = {0};
        int c = 0;
        for (; c + LANES <= C; c += LANES)
            for (int l = 0; l < LANES; l++) {
                const float xh = (x[c + l] - m) * is, g = dy[c + l] * (gamma ? gamma[c + l] : 1.0f);
                a[l] += g;
                b[l] += (double)g * xh;
            }
        for (; c < C; c++) {
            const float xh = (x[c] - m) * is, g = dy[c] * (gamma ? gamma[c] : 1.0f);
            a[0] += g;
            b[0] += (double)g * xh;
        }
        for (c = 0; c < C && (dgamma || dbeta); c++) {
            const float xh = (x[c] - m) * is;
            if (dgamma) dgamma[c] += dy[c] * xh;
            if (dbeta) dbeta[c] += dy[c];
        }
        const double sa = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
        const double sb = ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]));
        if (!dinp) continue;
        const float ma = (float)(sa / C), mb = (float)(sb / C);
        float *dx = dinp + (size_t)n * C;
        for (int c = 0; c < C; c++) {
            float xh = (x[c] - m) * is, g = dy[c] * (gamma ? gamma[c] : 1.0f);
            dx[c] = is * (g - ma - xh * mb);
        }
    }
    return BF_OK;
}
