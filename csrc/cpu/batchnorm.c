/* batchnorm.c - batch normalization on the CPU over N rows of C channels
 * (NHWC flattened: N = B*H*W for images, N = B after Dense).
 * Training: batch mean and biased variance per channel,
 *   out = gamma * (x - mean) * invstd + beta,  invstd = 1 / sqrt(var + eps),
 * mean / invstd (C) are written for backward, and the moving statistics follow
 * Keras 3: moving = moving * momentum + batch * (1 - momentum), where the batch
 * variance is the BIASED one (Keras's ops.moments; PyTorch would use N-1).
 * Inference: the moving statistics replace the batch ones (mean / invstd are
 * still written from them). gamma / beta may be NULL (scale / center = False):
 * 1 and 0. Backward is the batch-statistics gradient and ADDS into dgamma /
 * dbeta (either may be NULL); it OVERWRITES dinp (may be NULL; may alias dout).
 * A frozen layer (trainable=False, Keras: inference mode even in fit) has the
 * affine map's backward, dinp = dout * gamma * invstd (invstd of the moving
 * variance, as its forward wrote it).
 * Forward may run in place (out == inp). Sizes, epsilon, momentum and the
 * tensors given are the caller's to check (backend_ops.h; layers/batchnorm.c).
 * Sums run in float over short row chunks (vectorized), shifted by the first
 * row for the variance, totalled in double per one of BF_BN_SEGS fixed row
 * segments, and the segments' sums added in order; channels are processed in
 * blocks of BF_BN_CBLK with stack buffers, so nothing is allocated.
 * Threads: the segments' sums, and the row-wise passes, run on the engine's
 * pool (par.h); the segments depend on N only, so every result is the same
 * bits on any number of threads. */
#include <math.h>
#include <string.h>

#include "cpu_conv.h"
#include "par.h"

#define BF_BN_CBLK 256 /* channels per block (stack buffers) */
#define BF_BN_ROWS 128 /* rows per float partial sum */
#define BF_BN_SEGS 16  /* row segments summed apart (fixed: the bits must not follow the threads) */
#define BF_BN_GRAIN 16384L /* elements per task of a row-wise pass at least */

/* ---- the pool: segment sums and row-wise passes ---- */

typedef struct {
    const float *a, *b; /* forward: x, NULL; backward: x, dy */
    const float *k;     /* forward: the shift; backward: the mean */
    double (*s)[BF_BN_CBLK], (*q)[BF_BN_CBLK]; /* per segment */
    long N, segs;
    int C, c0, n;
} sums_job;

/* segment t: s = sum (a - k), q = sum (a - k)^2 (forward) or s = sum b,
 * q = sum b * (a - k) (backward), in float over BF_BN_ROWS rows, in double over those */
static void sums_part(void *ctx, long t, int slot) {
    (void)slot;
    const sums_job *j = ctx;
    long lo, hi;
    bf_par_range(j->N, j->segs, t, &lo, &hi);
    const int n = j->n, C = j->C, c0 = j->c0;
    const float *k = j->k;
    double *s = j->s[t], *q = j->q[t];
    float fs[BF_BN_CBLK], fq[BF_BN_CBLK];
    for (int c = 0; c < n; c++) s[c] = q[c] = 0.0;
    for (long i0 = lo; i0 < hi; i0 += BF_BN_ROWS) {
        const long i1 = hi - i0 < BF_BN_ROWS ? hi : i0 + BF_BN_ROWS;
        for (int c = 0; c < n; c++) fs[c] = fq[c] = 0.0f;
        if (!j->b) {
            for (long i = i0; i < i1; i++) {
                const float *x = j->a + (size_t)i * C + c0;
                for (int c = 0; c < n; c++) {
                    const float d = x[c] - k[c];
                    fs[c] += d;
                    fq[c] += d * d;
                }
            }
        } else {
            for (long i = i0; i < i1; i++) {
                const float *x = j->a + (size_t)i * C + c0, *dy = j->b + (size_t)i * C + c0;
                for (int c = 0; c < n; c++) {
                    fs[c] += dy[c];
                    fq[c] += dy[c] * (x[c] - k[c]);
                }
            }
        }
        for (int c = 0; c < n; c++) {
            s[c] += fs[c];
            q[c] += fq[c];
        }
    }
}

/* S[c], Q[c] = the sums over all N rows: segments on the pool, added in order */
static void seg_sums(double *S, double *Q, const float *a, const float *b, const float *k, long N, int C,
                     int c0, int n) {
    double s[BF_BN_SEGS][BF_BN_CBLK], q[BF_BN_SEGS][BF_BN_CBLK];
    const long segs = N < BF_BN_SEGS ? N : BF_BN_SEGS;
    sums_job j = {a, b, k, s, q, N, segs, C, c0, n};
    const int threads = (long)n * N >= 2 * BF_BN_GRAIN && !bf_par_in_task() ? bf_par_threads() : 1;
    bf_par_for(segs, threads, sums_part, &j);
    for (int c = 0; c < n; c++) {
        S[c] = s[0][c];
        Q[c] = q[0][c];
    }
    for (long t = 1; t < segs; t++)
        for (int c = 0; c < n; c++) {
            S[c] += s[t][c];
            Q[c] += q[t][c];
        }
}

typedef struct {
    float *out;
    const float *x, *dy; /* dy NULL: out = (x - mu) * A + D; else out = A*dy + Bx*(x - mu) + D */
    const float *mu, *A, *Bx, *D;
    long N, parts;
    int C, c0, n;
} rows_job;

static void rows_part(void *ctx, long t, int slot) {
    (void)slot;
    const rows_job *j = ctx;
    long lo, hi;
    bf_par_range(j->N, j->parts, t, &lo, &hi);
    const int n = j->n, C = j->C, c0 = j->c0;
    const float *mu = j->mu, *A = j->A, *Bx = j->Bx, *D = j->D;
    for (long i = lo; i < hi; i++) {
        const float *x = j->x + (size_t)i * C + c0;
        float *o = j->out + (size_t)i * C + c0;
        if (!j->dy) {
            for (int c = 0; c < n; c++) o[c] = (x[c] - mu[c]) * A[c] + D[c];
        } else {
            const float *dy = j->dy + (size_t)i * C + c0;
            for (int c = 0; c < n; c++) o[c] = A[c] * dy[c] + Bx[c] * (x[c] - mu[c]) + D[c];
        }
    }
}

static void run_rows(rows_job *j) {
    const int threads = bf_par_in_task() ? 1 : bf_par_threads();
    j->parts = bf_par_parts(j->N * (long)j->n, BF_BN_GRAIN, 4L * threads);
    bf_par_for(j->parts, threads, rows_part, j);
}

/* out[i,c] = (x[i,c] - mu[c]) * a[c] + d[c] for the channel block [c0, c0+n) */
static void bn_affine(float *out, const float *inp, const float *mu, const float *a,
                      const float *d, long N, int C, int c0, int n) {
    rows_job j = {out, inp, NULL, mu, a, NULL, d, N, 1, C, c0, n};
    run_rows(&j);
}

// out (N,C) = gamma * (inp - mean) * invstd + beta; mean, invstd (C); moving_* (C) updated
bf_status bf_cpu_batchnorm_forward(bf_backend *be, float *out, float *mean, float *invstd,
                                   float *moving_mean, float *moving_var, const float *inp,
                                   const float *gamma, const float *beta, long N, int C,
                                   float momentum, float eps, int training) {
    (void)be;
    float a[BF_BN_CBLK], d[BF_BN_CBLK];
    for (int c0 = 0; c0 < C; c0 += BF_BN_CBLK) {
        const int n = C - c0 < BF_BN_CBLK ? C - c0 : BF_BN_CBLK;
        float mu[BF_BN_CBLK], is[BF_BN_CBLK];
        if (training) {
            float k[BF_BN_CBLK];
            double s[BF_BN_CBLK], q[BF_BN_CBLK];
            memcpy(k, inp + c0, (size_t)n * sizeof(float)); /* shift: the first row */
            seg_sums(s, q, inp, NULL, k, N, C, c0, n);
            for (int c = 0; c < n; c++) {
                const double m = s[c] / (double)N;
                double var = q[c] / (double)N - m * m;
                if (var < 0.0) var = 0.0;
                mu[c] = (float)(k[c] + m);
                is[c] = (float)(1.0 / sqrt(var + (double)eps));
                moving_mean[c0 + c] = moving_mean[c0 + c] * momentum + mu[c] * (1.0f - momentum);
                moving_var[c0 + c] = moving_var[c0 + c] * momentum + (float)var * (1.0f - momentum);
            }
        } else {
            for (int c = 0; c < n; c++) {
                mu[c] = moving_mean[c0 + c];
                is[c] = (float)(1.0 / sqrt((double)moving_var[c0 + c] + (double)eps));
            }
        }
        for (int c = 0; c < n; c++) {
            if (mean) mean[c0 + c] = mu[c];
            if (invstd) invstd[c0 + c] = is[c];
            a[c] = (gamma ? gamma[c0 + c] : 1.0f) * is[c];
            d[c] = beta ? beta[c0 + c] : 0.0f;
        }
        bn_affine(out, inp, mu, a, d, N, C, c0, n);
    }
    return BF_OK;
}

// dinp (N,C) = d out / d inp through the batch statistics; dgamma, dbeta (C) +=
bf_status bf_cpu_batchnorm_backward(bf_backend *be, float *dinp, float *dgamma, float *dbeta,
                                    const float *dout, const float *inp, const float *mean,
                                    const float *invstd, const float *gamma, long N, int C) {
    (void)be;
    for (int c0 = 0; c0 < C; c0 += BF_BN_CBLK) {
        const int n = C - c0 < BF_BN_CBLK ? C - c0 : BF_BN_CBLK;
        const float *mu = mean + c0;
        double sdy[BF_BN_CBLK], sdyx[BF_BN_CBLK]; /* sum dy, sum dy * (x - mean) */
        seg_sums(sdy, sdyx, inp, dout, mu, N, C, c0, n);
        /* dx = g*is * (dy - mean(dy) - xhat * mean(dy*xhat)) = A*dy + Bx*(x-mean) + D */
        float A[BF_BN_CBLK], Bx[BF_BN_CBLK], D[BF_BN_CBLK];
        for (int c = 0; c < n; c++) {
            const double is = invstd[c0 + c], g = gamma ? gamma[c0 + c] : 1.0;
            const double sum_dy_xhat = sdyx[c] * is;
            if (dgamma) dgamma[c0 + c] += (float)sum_dy_xhat;
            if (dbeta) dbeta[c0 + c] += (float)sdy[c];
            const double gi = g * is, mdy = sdy[c] / (double)N, mdyx = sum_dy_xhat / (double)N;
            A[c] = (float)gi;
            Bx[c] = (float)(-gi * is * mdyx);
            D[c] = (float)(-gi * mdy);
        }
        if (!dinp) continue;
        rows_job j = {dinp, inp, dout, mu, A, Bx, D, N, 1, C, c0, n};
        run_rows(&j);
    }
    return BF_OK;
}

// dinp (N,C) = dout (N,C) * (gamma * invstd) (C): a frozen (inference-mode) batchnorm
bf_status bf_cpu_batchnorm_backward_frozen(bf_backend *be, float *dinp, const float *dout, const float *invstd,
                                           const float *gamma, long N, int C) {
    (void)be;
    float a[BF_BN_CBLK];
    for (int c0 = 0; c0 < C; c0 += BF_BN_CBLK) {
        const int n = C - c0 < BF_BN_CBLK ? C - c0 : BF_BN_CBLK;
        for (int c = 0; c < n; c++) a[c] = (gamma ? gamma[c0 + c] : 1.0f) * invstd[c0 + c];
        for (long i = 0; i < N; i++) {
            const float *dy = dout + (size_t)i * C + c0;
            float *dx = dinp + (size_t)i * C + c0;
            for (int c = 0; c < n; c++) dx[c] = dy[c] * a[c];
        }
    }
    return BF_OK;
}
