/* specnorm.c - SpectralNormalization on the CPU (backend_ops.h): the power
 * iteration on the wrapped layer's kernel W (K,N) as Keras 3 writes it
 * (normalize: x * min(rsqrt(sum x^2), 1/epsilon), epsilon 1e-7), sums in
 * double; the output is the wrapped layer's linear map divided by sigma,
 * plus its bias. Backward OVERWRITES dinp and ADDS into dW and db. Serial:
 * the power iteration is a few matrix-vector products of the kernel. */
#include <math.h>
#include <string.h>

#include "cpu_ops.h"

/* x (n) *= min(1 / sqrt(sum x^2), 1e7) */
static void normalize(float *x, long n) {
    double ss = 0.0;
    for (long i = 0; i < n; i++) ss += (double)x[i] * x[i];
    const float inv = ss > 0.0 ? (float)fmin(1.0 / sqrt(ss), 1.0e7) : 1.0e7f;
    for (long i = 0; i < n; i++) x[i] *= inv;
}

static int all_zero(const float *W, long n) {
    for (long i = 0; i < n; i++)
        if (W[i] != 0.0f) return 0;
    return 1;
}

// out (M,N) = inp (M,N) / sigma + b (N); u (C), s (K+1) = v (K), sigma; W (K,C)
bf_status bf_cpu_specnorm_forward(bf_backend *be, float *out, float *u, float *s, const float *inp, const float *W,
                                  const float *b, long M, int N, int K, int C, int iters, int training) {
    (void)be;
    float sigma = 1.0f, *v = s;
    if (training) {
        memset(v, 0, sizeof(float) * (size_t)K);
        if (!all_zero(W, (long)K * C)) {
            for (int it = 0; it < iters; it++) {
                for (int k = 0; k < K; k++) { /* v = u W^T */
                    double a = 0.0;
                    for (int c = 0; c < C; c++) a += (double)u[c] * W[(size_t)k * C + c];
                    v[k] = (float)a;
                }
                normalize(v, K);
                for (int c = 0; c < C; c++) { /* u = v W */
                    double a = 0.0;
                    for (int k = 0; k < K; k++) a += (double)v[k] * W[(size_t)k * C + c];
                    u[c] = (float)a;
                }
                normalize(u, C);
            }
            double sg = 0.0; /* sigma = (v W) . u */
            for (int c = 0; c < C; c++) {
                double a = 0.0;
                for (int k = 0; k < K; k++) a += (double)v[k] * W[(size_t)k * C + c];
                sg += a * u[c];
            }
            sigma = (float)sg;
        }
        s[K] = sigma;
    }
    for (long m = 0; m < M; m++) {
        const float *x = inp + (size_t)m * N;
        float *y = out + (size_t)m * N;
        for (int n = 0; n < N; n++) y[n] = (training ? x[n] / sigma : x[n]) + (b ? b[n] : 0.0f);
    }
    return BF_OK;
}

// dinp (M,N) = dout / sigma; db (N) += sum dout; dW (K,C) += -(sum dout*inp) / sigma^2 * v^T u
bf_status bf_cpu_specnorm_backward(bf_backend *be, float *dinp, float *dW, float *db, const float *dout,
                                   const float *inp, const float *u, const float *s, long M, int N, int K, int C,
                                   int training) {
    (void)be;
    const float sigma = training ? s[K] : 1.0f;
    double dot = 0.0;
    for (long m = 0; m < M; m++) {
        const float *g = dout + (size_t)m * N, *x = inp + (size_t)m * N;
        for (int n = 0; n < N; n++) {
            if (dinp) dinp[(size_t)m * N + n] = training ? g[n] / sigma : g[n];
            if (db) db[n] += g[n];
            dot += (double)g[n] * x[n];
        }
    }
    if (dW && training) {
        const float *v = s;
        const float c = (float)(-dot / ((double)sigma * sigma));
        for (int k = 0; k < K; k++)
            for (int j = 0; j < C; j++) dW[(size_t)k * C + j] += c * v[k] * u[j];
    }
    return BF_OK;
}
