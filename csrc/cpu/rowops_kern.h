/* rowops_kern.h - the row kernels of rowops.h, written once in plain C that
 * the compiler vectorizes, and compiled per instruction set: the including
 * file sets the target (#pragma GCC target) and defines
 *   SFX  the table's name suffix (bf_rowops_<SFX>)
 *   VL   float partial sums / maxima per row (16 on AVX-512, 8 below)
 *   DL   double partial sums of LayerNorm's statistics (16 on AVX-512, 8 below)
 * Shapes: LayerNorm rows (N,C); softmax tiles (TQ,TK), keys past the causal
 * limit n (= i + 1 or TK) are 0; a query with nothing to attend gets the
 * uniform row (or zero, zero_empty) forward and zero gradient backward.
 * Partial sums are combined by halving (l += l + w), a fixed order. */
#include <math.h>

#include "counter_hash.h"
#include "rowops.h"
#include "vec_exp.h"

#define BF_CAT_(a, b) a##b
#define BF_CAT(a, b) BF_CAT_(a, b)
#define ROWOPS BF_CAT(bf_rowops_, SFX)

/* ---- LayerNormalization ---- */

// sum of x (C) in double; with mu: of (x - mu)^2
static double ln_sum(const float *restrict x, int C, const double *mu) {
    double a[DL] = {0};
    int c = 0;
    if (mu) {
        const double m = *mu;
        for (; c + DL <= C; c += DL)
            for (int l = 0; l < DL; l++) a[l] += ((double)x[c + l] - m) * ((double)x[c + l] - m);
        for (; c < C; c++) a[0] += ((double)x[c] - m) * ((double)x[c] - m);
    } else {
        for (; c + DL <= C; c += DL)
            for (int l = 0; l < DL; l++) a[l] += (double)x[c + l];
        for (; c < C; c++) a[0] += (double)x[c];
    }
    for (int w = DL / 2; w > 0; w /= 2)
        for (int l = 0; l < w; l++) a[l] += a[l + w];
    return a[0];
}

static void ln_fwd(float *out, float *mean, float *invstd, const float *inp, const float *gamma, const float *beta,
                   long N, int C, float eps) {
    for (long n = 0; n < N; n++) {
        const float *restrict x = inp + (size_t)n * C;
        float *restrict y = out + (size_t)n * C;
        const double mu = ln_sum(x, C, NULL) / C, ss = ln_sum(x, C, &mu);
        const float m = (float)mu, is = (float)(1.0 / sqrt(ss / C + (double)eps));
        mean[n] = m;
        invstd[n] = is;
        if (gamma && beta)
            for (int c = 0; c < C; c++) y[c] = (x[c] - m) * is * gamma[c] + beta[c];
        else if (gamma)
            for (int c = 0; c < C; c++) y[c] = (x[c] - m) * is * gamma[c];
        else if (beta)
            for (int c = 0; c < C; c++) y[c] = (x[c] - m) * is + beta[c];
        else
            for (int c = 0; c < C; c++) y[c] = (x[c] - m) * is;
    }
}

// xhat = (inp - mean) * invstd; dxhat = dout * gamma;
// dinp = invstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)); dgamma += sum dout*xhat; dbeta += sum dout
static void ln_bwd(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp, const float *mean,
                   const float *invstd, const float *gamma, long N, int C) {
    for (long n = 0; n < N; n++) {
        const float *restrict x = inp + (size_t)n * C, *restrict dy = dout + (size_t)n * C;
        const float m = mean[n], is = invstd[n];
        for (int c = 0; c < C && (dgamma || dbeta); c++) {
            if (dgamma) dgamma[c] += dy[c] * ((x[c] - m) * is);
            if (dbeta) dbeta[c] += dy[c];
        }
        if (!dinp) continue;
        double a[DL] = {0}, b[DL] = {0};
        int c = 0;
        for (; c + DL <= C; c += DL)
            for (int l = 0; l < DL; l++) {
                const float xh = (x[c + l] - m) * is, g = dy[c + l] * (gamma ? gamma[c + l] : 1.0f);
                a[l] += g;
                b[l] += (double)g * xh;
            }
        for (; c < C; c++) {
            const float xh = (x[c] - m) * is, g = dy[c] * (gamma ? gamma[c] : 1.0f);
            a[0] += g;
            b[0] += (double)g * xh;
        }
        for (int w = DL / 2; w > 0; w /= 2)
            for (int l = 0; l < w; l++) {
                a[l] += a[l + w];
                b[l] += b[l + w];
            }
        const float ma = (float)(a[0] / C), mb = (float)(b[0] / C);
        float *restrict dx = dinp + (size_t)n * C;
        if (gamma)
            for (c = 0; c < C; c++) dx[c] = is * (dy[c] * gamma[c] - ma - ((x[c] - m) * is) * mb);
        else
            for (c = 0; c < C; c++) dx[c] = is * (dy[c] - ma - ((x[c] - m) * is) * mb);
    }
}

/* ---- attention's softmax ---- */

/* Key j attends query i when the query's step, attention_mask (i, j), the
 * value's and the key's steps and the causal rule all allow it. The key-side
 * masks of row i are three (TK) rows read with a branch-free test, a missing
 * one replaced by one that is there. */
typedef struct {
    const float *a, *b, *c; /* NULL: no key-side mask */
} key_rows;

static key_rows keys_of(const bf_row_masks *rm, int i) {
    const float *m = rm->m ? rm->m + (size_t)i * rm->TK : NULL;
    const float *any = m ? m : rm->v ? rm->v : rm->k;
    key_rows k = {any, rm->v ? rm->v : any, rm->k ? rm->k : any};
    return k;
}

static inline int key_ok(const key_rows *k, int j) { return (k->a[j] > 0.5f) & (k->b[j] > 0.5f) & (k->c[j] > 0.5f); }

// query i has no key to attend by its own step mask
static int query_off(const bf_row_masks *rm, int i) { return rm->q && !(rm->q[i] > 0.5f); }

static float lanes_max(float *m) {
    for (int w = VL / 2; w > 0; w /= 2)
        for (int l = 0; l < w; l++) m[l] = m[l + w] > m[l] ? m[l + w] : m[l];
    return m[0];
}

static float lanes_sum(float *a) {
    for (int w = VL / 2; w > 0; w /= 2)
        for (int l = 0; l < w; l++) a[l] += a[l + w];
    return a[0];
}

// max of x (n) over the keys k allows (all when k->a is NULL); -Inf when none
static float row_max(const float *restrict x, const key_rows *k, int n) {
    float m[VL];
    for (int l = 0; l < VL; l++) m[l] = -INFINITY;
    int j = 0;
    if (k->a) {
        for (; j + VL <= n; j += VL)
            for (int l = 0; l < VL; l++) {
                const float v = key_ok(k, j + l) ? x[j + l] : -INFINITY;
                m[l] = v > m[l] ? v : m[l];
            }
        for (; j < n; j++) {
            const float v = key_ok(k, j) ? x[j] : -INFINITY;
            m[0] = v > m[0] ? v : m[0];
        }
    } else {
        for (; j + VL <= n; j += VL)
            for (int l = 0; l < VL; l++) m[l] = x[j + l] > m[l] ? x[j + l] : m[l];
        for (; j < n; j++) m[0] = x[j] > m[0] ? x[j] : m[0];
    }
    return lanes_max(m);
}

// sum of x (n) * y (n), or of x alone when y is NULL
static float row_dot(const float *restrict x, const float *restrict y, int n) {
    float a[VL] = {0};
    int j = 0;
    if (y) {
        for (; j + VL <= n; j += VL)
            for (int l = 0; l < VL; l++) a[l] += x[j + l] * y[j + l];
        for (; j < n; j++) a[0] += x[j] * y[j];
    } else {
        for (; j + VL <= n; j += VL)
            for (int l = 0; l < VL; l++) a[l] += x[j + l];
        for (; j < n; j++) a[0] += x[j];
    }
    return lanes_sum(a);
}

static void softmax(float *s, const bf_row_masks *rm, const bf_soft_tile *t) {
    const int TQ = t->TQ, TK = t->TK;
    for (int i = 0; i < TQ; i++) {
        float *restrict row = s + (size_t)i * TK;
        const int n = t->causal && i + 1 < TK ? i + 1 : TK;
        const key_rows k = keys_of(rm, i);
        const float mx = query_off(rm, i) ? -INFINITY : row_max(row, &k, n);
        if (mx == -INFINITY) { /* nothing to attend: uniform, or zero (zero_empty) */
            const float u = t->zero_empty ? 0.0f : 1.0f / (float)TK;
            for (int j = 0; j < TK; j++) row[j] = u;
            continue;
        }
        if (k.a)
            for (int j = 0; j < n; j++) row[j] = key_ok(&k, j) ? bf_exp_neg(row[j] - mx) : 0.0f;
        else
            for (int j = 0; j < n; j++) row[j] = bf_exp_neg(row[j] - mx);
        const float inv = 1.0f / row_dot(row, NULL, n);
        for (int j = 0; j < n; j++) row[j] *= inv;
        for (int j = n; j < TK; j++) row[j] = 0.0f;
    }
}

static void softmax_bwd(float *dp, const float *p, const bf_row_masks *rm, const bf_soft_tile *t) {
    const int TQ = t->TQ, TK = t->TK;
    for (int i = 0; i < TQ; i++) {
        float *restrict d = dp + (size_t)i * TK;
        const float *restrict pr = p + (size_t)i * TK;
        if (t->rate > 0.0f) {
            const uint64_t base = t->base + (uint64_t)i * TK;
            for (int c = 0; c < TK; c++)
                d[c] = bf_counter_uniform(t->seed, base + (uint64_t)c) >= t->rate ? d[c] * t->drop_scale : 0.0f;
        }
        const float s = row_dot(pr, d, TK);
        const int n = query_off(rm, i) ? 0 : t->causal && i + 1 < TK ? i + 1 : TK;
        const key_rows k = keys_of(rm, i);
        if (k.a)
            for (int c = 0; c < n; c++) d[c] = key_ok(&k, c) ? pr[c] * (d[c] - s) : 0.0f;
        else
            for (int c = 0; c < n; c++) d[c] = pr[c] * (d[c] - s);
        for (int c = n; c < TK; c++) d[c] = 0.0f;
    }
}

const bf_rowops_t ROWOPS = {ln_fwd, ln_bwd, softmax, softmax_bwd};
