/* test_rowops.c - the row kernels of LayerNorm and attention's softmax
 * (csrc/cpu/rowops*.c) on each instruction set the CPU has (scalar always;
 * AVX2, AVX-512 when cpu_isa.h detects them), against double-precision
 * loops: LayerNorm forward and backward with and without gamma / beta on
 * widths with vector tails; the softmax forward and backward of a tile with
 * every mask (attention_mask, query, value and key steps), causal, a query
 * with nothing to attend (uniform or zero) and dropout. Also: a row split
 * gives the same bits as one call. Prints "<n> FAIL" last. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "counter_hash.h"
#include "cpu_isa.h"
#include "rowops.h"

static int fails;

static void check(int ok, const char *what, const char *isa, double err) {
    if (!ok) fails++;
    printf("%s %-7s %-58s max err %.3g\n", ok ? "ok  " : "FAIL", isa, what, err);
}

static unsigned rng_state = 12345;
static float rnd(void) { /* uniform in [-1, 1) */
    rng_state = rng_state * 1103515245u + 12345u;
    return (float)((rng_state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

#define NMAX 7
#define CMAX 300
#define T 19

static double rel_err(const float *a, const double *b, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) {
        const double e = fabs(a[i] - b[i]) / (1.0 + fabs(b[i]));
        if (e > m || e != e) m = e != e ? INFINITY : e;
    }
    return m;
}

static void layernorm(const bf_rowops_t *ops, const char *isa, int C, int affine) {
    static float x[NMAX * CMAX], y[NMAX * CMAX], y2[NMAX * CMAX], g[CMAX], bt[CMAX], dy[NMAX * CMAX], dx[NMAX * CMAX];
    static float mean[NMAX], inv[NMAX], mean2[NMAX], inv2[NMAX], dg[CMAX], db[CMAX];
    static double ry[NMAX * CMAX], rdx[NMAX * CMAX], rdg[CMAX], rdb[CMAX];
    const int N = NMAX;
    const float eps = 1e-3f;
    for (int i = 0; i < N * C; i++) x[i] = 3.0f * rnd() + 0.5f, dy[i] = rnd();
    for (int c = 0; c < C; c++) g[c] = 1.0f + 0.5f * rnd(), bt[c] = rnd(), dg[c] = db[c] = 0.0f, rdg[c] = rdb[c] = 0;
    const float *G = affine ? g : NULL, *Bt = affine ? bt : NULL;
    ops->ln_fwd(y, mean, inv, x, G, Bt, N, C, eps);
    ops->ln_bwd(dx, affine ? dg : NULL, affine ? db : NULL, dy, x, mean, inv, G, N, C);
    for (int n = 0; n < N; n++) {
        const float *xr = x + n * C, *dyr = dy + n * C;
        double mu = 0, ss = 0, a = 0, b = 0;
        for (int c = 0; c < C; c++) mu += xr[c];
        mu /= C;
        for (int c = 0; c < C; c++) ss += (xr[c] - mu) * (xr[c] - mu);
        const double is = 1.0 / sqrt(ss / C + eps);
        for (int c = 0; c < C; c++) {
            const double xh = (xr[c] - mu) * is, gg = dyr[c] * (G ? G[c] : 1.0);
            ry[n * C + c] = xh * (G ? G[c] : 1.0) + (Bt ? Bt[c] : 0.0);
            a += gg, b += gg * xh;
            rdg[c] += dyr[c] * xh, rdb[c] += dyr[c];
        }
        for (int c = 0; c < C; c++) {
            const double xh = (xr[c] - mu) * is, gg = dyr[c] * (G ? G[c] : 1.0);
            rdx[n * C + c] = is * (gg - a / C - xh * b / C);
        }
    }
    char what[96];
    double e = rel_err(y, ry, N * C);
    snprintf(what, sizeof what, "layernorm forward C=%d %s", C, affine ? "gamma+beta" : "plain");
    check(e < 2e-5, what, isa, e);
    e = rel_err(dx, rdx, N * C);
    snprintf(what, sizeof what, "layernorm backward dinp C=%d %s", C, affine ? "gamma+beta" : "plain");
    check(e < 5e-5, what, isa, e);
    if (affine) {
        e = fmax(rel_err(dg, rdg, C), rel_err(db, rdb, C));
        snprintf(what, sizeof what, "layernorm backward dgamma, dbeta C=%d", C);
        check(e < 5e-5, what, isa, e);
    }
    /* rows 0..2 and 3..N-1 in two calls: the same bits */
    ops->ln_fwd(y2, mean2, inv2, x, G, Bt, 3, C, eps);
    ops->ln_fwd(y2 + 3 * C, mean2 + 3, inv2 + 3, x + 3 * C, G, Bt, N - 3, C, eps);
    snprintf(what, sizeof what, "layernorm forward C=%d in two row ranges: same bits", C);
    check(!memcmp(y, y2, sizeof(float) * N * C) && !memcmp(inv, inv2, sizeof(float) * N), what, isa, 0);
}

/* double reference of one tile's softmax forward and backward (rowops.h) */
static int allowed(const bf_row_masks *rm, const bf_soft_tile *t, int i, int j) {
    if (rm->q && !(rm->q[i] > 0.5f)) return 0;
    if (t->causal && j > i) return 0;
    if (rm->m && !(rm->m[i * t->TK + j] > 0.5f)) return 0;
    if (rm->v && !(rm->v[j] > 0.5f)) return 0;
    if (rm->k && !(rm->k[j] > 0.5f)) return 0;
    return 1;
}

static void softmax_case(const bf_rowops_t *ops, const char *isa, const char *name, int masks, int causal,
                         int zero_empty, float rate) {
    static float s[T * T], p[T * T], d[T * T], m[T * T], q[T], v[T], k[T];
    static double rp[T * T], rd[T * T];
    for (int i = 0; i < T * T; i++) s[i] = 4.0f * rnd(), d[i] = rnd(), m[i] = rnd() > -0.6f;
    for (int i = 0; i < T; i++) q[i] = i != 5, v[i] = i != 2, k[i] = i != 7;
    for (int j = 0; j < T; j++) m[4 * T + j] = 0.0f; /* query 4 attends nothing */
    const bf_row_masks rm = {masks ? m : NULL, masks ? q : NULL, masks ? v : NULL, masks ? k : NULL, T};
    const bf_soft_tile t = {T, T, causal, zero_empty, rate, rate > 0 ? 1.0f / (1.0f - rate) : 1.0f, 99, 1000};
    for (int i = 0; i < T; i++) {
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < T; j++)
            if (allowed(&rm, &t, i, j) && s[i * T + j] > mx) mx = s[i * T + j];
        for (int j = 0; j < T; j++) {
            rp[i * T + j] = mx == -INFINITY ? (zero_empty ? 0.0 : 1.0 / T)
                            : allowed(&rm, &t, i, j) ? exp(s[i * T + j] - mx) : 0.0;
            sum += rp[i * T + j];
        }
        if (mx != -INFINITY)
            for (int j = 0; j < T; j++) rp[i * T + j] /= sum;
    }
    memcpy(p, s, sizeof s);
    ops->softmax(p, &rm, &t);
    char what[96];
    double e = rel_err(p, rp, T * T);
    snprintf(what, sizeof what, "softmax forward %s", name);
    check(e < 1e-6, what, isa, e);
    /* backward from the kernel's own p: dS = p * (g - sum p g), g = dropout'(dp), 0 where not allowed */
    for (int i = 0; i < T; i++) {
        double g[T], dot = 0;
        for (int j = 0; j < T; j++) {
            const int keep = rate <= 0 || bf_counter_uniform(t.seed, t.base + (uint64_t)(i * T + j)) >= rate;
            g[j] = keep ? d[i * T + j] / (1.0 - rate) : 0.0;
            dot += p[i * T + j] * g[j];
        }
        for (int j = 0; j < T; j++) rd[i * T + j] = allowed(&rm, &t, i, j) ? p[i * T + j] * (g[j] - dot) : 0.0;
    }
    ops->softmax_bwd(d, p, &rm, &t);
    e = rel_err(d, rd, T * T);
    snprintf(what, sizeof what, "softmax backward %s", name);
    check(e < 1e-5, what, isa, e);
}

int main(void) {
    const bf_isa have = bf_cpu_isa_detected();
    const bf_rowops_t *tables[] = {&bf_rowops_scalar, &bf_rowops_avx2, &bf_rowops_avx512};
    for (int isa = BF_ISA_SCALAR; isa <= (int)have; isa++) {
        const char *name = bf_cpu_isa_name((bf_isa)isa);
        bf_cpu_isa_set(isa);
        check(bf_rowops() == tables[isa], "bf_rowops() picks the table of the instruction set", name, 0);
        for (int C = 1; C <= CMAX; C = C < 40 ? C + 13 : C + 128) {
            layernorm(tables[isa], name, C, 1);
            layernorm(tables[isa], name, C, 0);
        }
        softmax_case(tables[isa], name, "no masks", 0, 0, 0, 0.0f);
        softmax_case(tables[isa], name, "causal", 0, 1, 0, 0.0f);
        softmax_case(tables[isa], name, "all masks + causal, empty row uniform", 1, 1, 0, 0.0f);
        softmax_case(tables[isa], name, "all masks, empty row zero, dropout 0.3", 1, 0, 1, 0.3f);
    }
    bf_cpu_isa_set(-1);
    printf("%d FAIL\n", fails);
    return fails != 0;
}
