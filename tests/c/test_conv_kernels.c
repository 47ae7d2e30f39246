/* test_conv_kernels.c - standalone checks of the CPU convolutional kernels
 * (csrc/cpu/conv2d.c, pool.c, batchnorm.c, dropout.c) against naive
 * double-precision references and finite differences, plus a timing of
 * Conv2D forward / backward. Built and run by tests/c/build_and_run.sh.
 * Memory comes from a static pool (no malloc, as in csrc/). Prints one line
 * per failed check, PASS / FAIL counts, and returns non-zero on failure. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "conv2d_direct.h"
#include "cpu_conv.h"
#include "cpu_isa.h"

/* ---- harness ---- */

static int n_pass, n_fail;

static void check(int ok, const char *what, const char *fmt, double a, double b) {
    if (ok) {
        n_pass++;
        return;
    }
    n_fail++;
    printf("FAIL %s: ", what);
    printf(fmt, a, b);
    printf("\n");
}

/* bump allocator over a static pool; pool_reset() frees everything. Each block
 * is followed by a canary zone, checked at reset, so a kernel writing past a
 * buffer (e.g. a workspace smaller than it uses) fails the run. */
#define POOL_FLOATS (48u << 20) /* 192 MiB of floats */
#define CANARY_FLOATS 16
#define MAX_BLOCKS 4096
static float pool[POOL_FLOATS];
static size_t pool_top, canary_at[MAX_BLOCKS];
static int n_blocks;
static const uint32_t canary_bits = 0x7fc0beefu; /* a NaN payload no kernel writes */
static float *talloc(size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (pool_top + n + CANARY_FLOATS > POOL_FLOATS || n_blocks == MAX_BLOCKS) return NULL;
    float *p = pool + pool_top;
    memset(p, 0, n * sizeof(float));
    canary_at[n_blocks++] = pool_top + n;
    for (int i = 0; i < CANARY_FLOATS; i++) memcpy(p + n + i, &canary_bits, sizeof canary_bits);
    pool_top += n + CANARY_FLOATS;
    return p;
}
static void pool_reset(void) {
    int broken = 0;
    for (int b = 0; b < n_blocks; b++)
        for (int i = 0; i < CANARY_FLOATS; i++)
            broken += memcmp(pool + canary_at[b] + i, &canary_bits, sizeof canary_bits) != 0;
    check(broken == 0, "no writes past any buffer (canaries)", "%g canary floats overwritten%.0g",
          (double)broken, 0);
    pool_top = 0;
    n_blocks = 0;
}

static uint64_t rng_state = 12345;
static double urand(void) { /* [0,1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}
static void fill(float *x, size_t n, double lo, double hi) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(lo + (hi - lo) * urand());
}
static double dot(const float *a, const float *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}
/* max |a - ref| relative to (1 + max |ref|) */
static double relerr(const float *a, const double *ref, size_t n) {
    double m = 0, s = 1;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(a[i] - ref[i]);
        m = d > m ? d : m;
        s = fabs(ref[i]) + 1 > s ? fabs(ref[i]) + 1 : s;
    }
    return m / s;
}

/* Keras geometry: valid or same */
static bf_conv_geom geom(int B, int H, int W, int C, int K, int KH, int KW, int SH, int SW,
                         int same) {
    bf_conv_geom g = {B, H, W, C, 0, 0, K, KH, KW, SH, SW, 0, 0};
    if (same) {
        g.OH = (H + SH - 1) / SH;
        g.OW = (W + SW - 1) / SW;
        int ph = (g.OH - 1) * SH + KH - H, pw = (g.OW - 1) * SW + KW - W;
        g.PT = ph > 0 ? ph / 2 : 0;
        g.PL = pw > 0 ? pw / 2 : 0;
    } else {
        g.OH = (H - KH) / SH + 1;
        g.OW = (W - KW) / SW + 1;
    }
    return g;
}

#define IDX4(a, b, c, d, B_, C_, D_) ((((size_t)(a) * (B_) + (b)) * (C_) + (c)) * (D_) + (d))

/* ---- naive references (double) ---- */

static void ref_conv_fwd(double *out, const float *x, const float *w, const float *b,
                         const bf_conv_geom *g) {
    for (int n = 0; n < g->B; n++)
        for (int oh = 0; oh < g->OH; oh++)
            for (int ow = 0; ow < g->OW; ow++)
                for (int k = 0; k < g->K; k++) {
                    double s = b ? b[k] : 0.0;
                    for (int kh = 0; kh < g->KH; kh++)
                        for (int kw = 0; kw < g->KW; kw++) {
                            int ih = oh * g->SH - g->PT + kh, iw = ow * g->SW - g->PL + kw;
                            if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                            for (int c = 0; c < g->C; c++)
                                s += (double)x[IDX4(n, ih, iw, c, g->H, g->W, g->C)] *
                                     w[IDX4(kh, kw, c, k, g->KW, g->C, g->K)];
                        }
                    out[IDX4(n, oh, ow, k, g->OH, g->OW, g->K)] = s;
                }
}

static void ref_conv_bwd(double *dx, double *dw, double *db, const float *dout, const float *x,
                         const float *w, const bf_conv_geom *g) {
    for (int n = 0; n < g->B; n++)
        for (int oh = 0; oh < g->OH; oh++)
            for (int ow = 0; ow < g->OW; ow++)
                for (int k = 0; k < g->K; k++) {
                    double d = dout[IDX4(n, oh, ow, k, g->OH, g->OW, g->K)];
                    db[k] += d;
                    for (int kh = 0; kh < g->KH; kh++)
                        for (int kw = 0; kw < g->KW; kw++) {
                            int ih = oh * g->SH - g->PT + kh, iw = ow * g->SW - g->PL + kw;
                            if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                            for (int c = 0; c < g->C; c++) {
                                size_t xi = IDX4(n, ih, iw, c, g->H, g->W, g->C);
                                size_t wi = IDX4(kh, kw, c, k, g->KW, g->C, g->K);
                                dx[xi] += d * w[wi];
                                dw[wi] += d * x[xi];
                            }
                        }
                }
}

/* pooling reference: max (first max wins in backward) or mean over valid cells */
static void ref_pool(double *out, double *dx, const float *x, const float *dout, int is_max,
                     const bf_conv_geom *g) {
    for (int n = 0; n < g->B; n++)
        for (int oh = 0; oh < g->OH; oh++)
            for (int ow = 0; ow < g->OW; ow++)
                for (int c = 0; c < g->C; c++) {
                    double acc = is_max ? -INFINITY : 0.0;
                    int cnt = 0;
                    size_t arg = 0;
                    for (int kh = 0; kh < g->KH; kh++)
                        for (int kw = 0; kw < g->KW; kw++) {
                            int ih = oh * g->SH - g->PT + kh, iw = ow * g->SW - g->PL + kw;
                            if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                            size_t xi = IDX4(n, ih, iw, c, g->H, g->W, g->C);
                            cnt++;
                            if (is_max) {
                                if (x[xi] > acc) acc = x[xi], arg = xi;
                            } else {
                                acc += x[xi];
                            }
                        }
                    size_t oi = IDX4(n, oh, ow, c, g->OH, g->OW, g->C);
                    out[oi] = is_max ? acc : acc / cnt;
                    if (!dx) continue;
                    if (is_max) {
                        dx[arg] += dout[oi];
                        continue;
                    }
                    for (int kh = 0; kh < g->KH; kh++)
                        for (int kw = 0; kw < g->KW; kw++) {
                            int ih = oh * g->SH - g->PT + kh, iw = ow * g->SW - g->PL + kw;
                            if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                            dx[IDX4(n, ih, iw, c, g->H, g->W, g->C)] += dout[oi] / cnt;
                        }
                }
}

static size_t in_size(const bf_conv_geom *g) { return (size_t)g->B * g->H * g->W * g->C; }
static size_t out_size(const bf_conv_geom *g) { return (size_t)g->B * g->OH * g->OW * g->K; }
static size_t w_size(const bf_conv_geom *g) { return (size_t)g->KH * g->KW * g->C * g->K; }

static double *dalloc(size_t n) { return (double *)talloc(2 * n); }

/* ---- Conv2D ---- */

static void test_conv_case(const bf_conv_geom *g, const char *name) {
    char what[160];
    const size_t nx = in_size(g), ny = out_size(g), nw = w_size(g);
    float *x = talloc(nx), *w = talloc(nw), *b = talloc(g->K), *y = talloc(ny),
          *dy = talloc(ny), *dx = talloc(nx), *dw = talloc(nw), *db = talloc(g->K);
    double *ry = dalloc(ny), *rdx = dalloc(nx), *rdw = dalloc(nw), *rdb = dalloc(g->K);
    fill(x, nx, -1, 1);
    fill(w, nw, -0.5, 0.5);
    fill(b, g->K, -1, 1);
    fill(dy, ny, -1, 1);
    ref_conv_fwd(ry, x, w, b, g);
    ref_conv_bwd(rdx, rdw, rdb, dy, x, w, g);
    double *ryn = dalloc(ny);
    ref_conv_fwd(ryn, x, w, NULL, g);

    const size_t saved_cap = bf_cpu_conv2d_ws_cap;
    const size_t kk = (size_t)g->KH * g->KW * g->C;
    /* caps: default; 1 byte (tile = one output row); OW+3 rows (tiles cut rows
     * and samples); one sample + 5 rows */
    const size_t caps[4] = {saved_cap, 1, (size_t)(g->OW + 3) * (kk + 1) * 4,
                            ((size_t)g->OH * g->OW + 5) * (kk + 1) * 4};
    for (int ci = 0; ci < 4; ci++)
        for (int batch = 0; batch < 2; batch++) {
            bf_cpu_conv2d_ws_cap = caps[ci];
            bf_cpu_conv2d_batch = batch;
            size_t wsf = bf_cpu_conv2d_workspace_bytes(NULL, g, 0), wsb = bf_cpu_conv2d_workspace_bytes(NULL, g, 1);
            float *ws = talloc((wsf > wsb ? wsf : wsb) / sizeof(float) + 1);
            long tile = bf_cpu_conv2d_tile_rows(g);
            snprintf(what, sizeof what, "conv %s cap#%d batch=%d tile=%ld", name, ci, batch, tile);

            bf_status s = bf_cpu_conv2d_forward(NULL, y, ws, x, w, b, g);
            check(s == BF_OK, what, "forward status %g %g", s, 0);
            char w2[200];
            snprintf(w2, sizeof w2, "%s forward+bias", what);
            double e = relerr(y, ry, ny);
            check(e < 1e-5, w2, "rel err %.3g (tol %.0e)", e, 1e-5);
            bf_cpu_conv2d_forward(NULL, y, ws, x, w, NULL, g);
            snprintf(w2, sizeof w2, "%s forward no bias", what);
            e = relerr(y, ryn, ny);
            check(e < 1e-5, w2, "rel err %.3g (tol %.0e)", e, 1e-5);

            /* backward ADDS into dw/db: start from 0.5 / -0.25 */
            for (size_t i = 0; i < nw; i++) dw[i] = 0.5f;
            for (int k = 0; k < g->K; k++) db[k] = -0.25f;
            for (size_t i = 0; i < nx; i++) dx[i] = 1e9f; /* must be overwritten */
            s = bf_cpu_conv2d_backward(NULL, dx, dw, db, ws, dy, x, w, g);
            check(s == BF_OK, what, "backward status %g %g", s, 0);
            for (size_t i = 0; i < nw; i++) dw[i] -= 0.5f;
            for (int k = 0; k < g->K; k++) db[k] += 0.25f;
            snprintf(w2, sizeof w2, "%s dw", what);
            e = relerr(dw, rdw, nw);
            check(e < 1e-5, w2, "rel err %.3g (tol %.0e)", e, 1e-5);
            snprintf(w2, sizeof w2, "%s db", what);
            e = relerr(db, rdb, g->K);
            check(e < 1e-5, w2, "rel err %.3g (tol %.0e)", e, 1e-5);
            snprintf(w2, sizeof w2, "%s dinp", what);
            e = relerr(dx, rdx, nx);
            check(e < 1e-5, w2, "rel err %.3g (tol %.0e)", e, 1e-5);

            /* dinp = NULL and db = NULL are allowed */
            memset(dw, 0, nw * sizeof(float));
            s = bf_cpu_conv2d_backward(NULL, NULL, dw, NULL, ws, dy, x, w, g);
            snprintf(w2, sizeof w2, "%s dw (dinp, db NULL)", what);
            e = relerr(dw, rdw, nw);
            check(s == BF_OK && e < 1e-5, w2, "rel err %.3g status %g", e, s);
        }
    bf_cpu_conv2d_ws_cap = saved_cap;
    bf_cpu_conv2d_batch = 1;
}

/* finite differences of L = sum(conv(x, w) + b) * R) along random directions */
static void test_conv_fd(const bf_conv_geom *g, const char *name) {
    char what[160];
    const size_t nx = in_size(g), ny = out_size(g), nw = w_size(g);
    float *x = talloc(nx), *w = talloc(nw), *b = talloc(g->K), *y = talloc(ny), *R = talloc(ny),
          *dx = talloc(nx), *dw = talloc(nw), *db = talloc(g->K);
    float *vx = talloc(nx), *vw = talloc(nw), *vb = talloc(g->K);
    float *xp = talloc(nx), *wp = talloc(nw), *bp = talloc(g->K);
    float *ws = talloc(bf_cpu_conv2d_workspace_bytes(NULL, g, 1) / 4 + 1);
    fill(x, nx, -1, 1);
    fill(w, nw, -0.5, 0.5);
    fill(b, g->K, -1, 1);
    fill(R, ny, -1, 1);
    fill(vx, nx, -1, 1);
    fill(vw, nw, -1, 1);
    fill(vb, g->K, -1, 1);
    bf_cpu_conv2d_backward(NULL, dx, dw, db, ws, R, x, w, g);
    const double h = 1e-2;
    const char *arg[3] = {"x", "w", "b"};
    double an[3] = {dot(dx, vx, nx), dot(dw, vw, nw), dot(db, vb, g->K)};
    for (int a = 0; a < 3; a++) {
        double Lv[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            double t = sgn ? -h : h;
            for (size_t i = 0; i < nx; i++) xp[i] = (float)(x[i] + (a == 0 ? t * vx[i] : 0));
            for (size_t i = 0; i < nw; i++) wp[i] = (float)(w[i] + (a == 1 ? t * vw[i] : 0));
            for (int k = 0; k < g->K; k++) bp[k] = (float)(b[k] + (a == 2 ? t * vb[k] : 0));
            bf_cpu_conv2d_forward(NULL, y, ws, xp, wp, bp, g);
            Lv[sgn] = dot(y, R, ny);
        }
        double num = (Lv[0] - Lv[1]) / (2 * h);
        snprintf(what, sizeof what, "conv FD %s d/d%s", name, arg[a]);
        check(fabs(num - an[a]) <= 1e-2 * (fabs(an[a]) + 1), what, "numeric %.6g analytic %.6g",
              num, an[a]);
    }
}

static void test_conv(void) {
    struct {
        int B, H, W, C, K, KH, KW, SH, SW, same;
        const char *name;
    } cs[] = {
        {2, 7, 5, 3, 4, 3, 3, 1, 1, 0, "7x5x3 k3 s1 valid"},
        {2, 7, 5, 3, 4, 3, 3, 1, 1, 1, "7x5x3 k3 s1 same"},
        {2, 7, 5, 3, 4, 3, 3, 2, 2, 1, "7x5x3 k3 s2 same"},
        {2, 7, 5, 3, 4, 3, 3, 2, 2, 0, "7x5x3 k3 s2 valid"},
        {3, 7, 5, 1, 1, 2, 3, 1, 1, 1, "7x5x1 k2x3 s1 same K1"},
        {3, 7, 5, 1, 4, 2, 3, 2, 1, 0, "7x5x1 k2x3 s2x1 valid"},
        {2, 6, 6, 3, 4, 1, 1, 1, 1, 0, "1x1 s1 (direct)"},
        {2, 6, 6, 3, 4, 1, 1, 2, 2, 1, "1x1 s2 same"},
        {2, 5, 4, 3, 2, 5, 4, 1, 1, 0, "full window (direct)"},
        {4, 8, 8, 1, 8, 3, 3, 1, 1, 1, "digits 8x8x1 k3 same"},
        {2, 9, 11, 20, 40, 3, 3, 1, 1, 1, "9x11x20 k3 same K40 (no bias column)"},
        {3, 12, 10, 16, 6, 3, 3, 2, 1, 1, "12x10x16 k3 s2x1 same"},
        {4, 70, 70, 3, 4, 3, 3, 1, 1, 0, "70x70x3 k3 valid (batched GEMM)"},
        {2, 64, 64, 16, 16, 1, 1, 1, 1, 0, "64x64x16 1x1 (direct, batched)"},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        bf_conv_geom g = geom(cs[i].B, cs[i].H, cs[i].W, cs[i].C, cs[i].K, cs[i].KH, cs[i].KW,
                              cs[i].SH, cs[i].SW, cs[i].same);
        pool_reset();
        test_conv_case(&g, cs[i].name);
        pool_reset();
        if (in_size(&g) < 100000) test_conv_fd(&g, cs[i].name);
    }
    pool_reset();

    /* workspace bounded independently of the batch size; validation */
    bf_conv_geom g64 = geom(64, 100, 100, 3, 32, 3, 3, 1, 1, 0);
    bf_conv_geom g4k = geom(4096, 100, 100, 3, 32, 3, 3, 1, 1, 0);
    check(bf_cpu_conv2d_workspace_bytes(NULL, &g64, 1) == bf_cpu_conv2d_workspace_bytes(NULL, &g4k, 1),
          "conv workspace independent of B", "B=64: %g bytes, B=4096: %g bytes",
          (double)bf_cpu_conv2d_workspace_bytes(NULL, &g64, 1),
          (double)bf_cpu_conv2d_workspace_bytes(NULL, &g4k, 1));
    check(bf_cpu_conv2d_workspace_bytes(NULL, &g64, 1) <= bf_cpu_conv2d_ws_cap + (1u << 20),
          "conv workspace under cap + 1 MiB", "%g bytes, cap %g",
          (double)bf_cpu_conv2d_workspace_bytes(NULL, &g64, 1), (double)bf_cpu_conv2d_ws_cap);
    bf_conv_geom bad = g64;
    bad.OH = 97;
    float dummy[16] = {0};
    check(bf_cpu_conv2d_forward(NULL, dummy, dummy, dummy, dummy, NULL, &bad) == BF_ERR_SHAPE,
          "conv rejects inconsistent OH", "%g %g", 0, 0);
    check(bf_cpu_conv2d_workspace_bytes(NULL, &bad, 0) == 0, "conv workspace 0 for bad geometry",
          "%g %g", 0, 0);
    bad = g64;
    bad.KH = 0;
    check(bf_cpu_conv2d_backward(NULL, NULL, dummy, NULL, dummy, dummy, dummy, dummy, &bad) ==
              BF_ERR_SHAPE,
          "conv rejects zero window", "%g %g", 0, 0);
    bad = geom(2, 7, 5, 3, 4, 3, 3, 1, 1, 1);
    bad.PT = 0; /* same needs PT = 1 */
    check(bf_cpu_conv2d_forward(NULL, dummy, dummy, dummy, dummy, NULL, &bad) == BF_ERR_SHAPE,
          "conv rejects wrong padding", "%g %g", 0, 0);
    bad = geom(2, 7, 5, 3, 4, 3, 3, 1, 1, 0);
    check(bf_cpu_conv2d_backward(NULL, dummy, dummy, dummy, NULL, dummy, dummy, dummy, &bad) == BF_ERR_ARG,
          "conv backward rejects missing workspace", "%g %g", 0, 0);
    bf_cpu_conv2d_direct = 0; /* the direct forward needs none; im2col does */
    check(bf_cpu_conv2d_forward(NULL, dummy, NULL, dummy, dummy, NULL, &bad) == BF_ERR_ARG,
          "conv rejects missing workspace", "%g %g", 0, 0);
    bf_cpu_conv2d_direct = 1;
}

/* ---- pooling ---- */

static void test_pool_case(const bf_conv_geom *g, int is_max, const char *name) {
    char what[160];
    const size_t nx = in_size(g), ny = out_size(g);
    float *x = talloc(nx), *y = talloc(ny), *dy = talloc(ny), *dx = talloc(nx);
    double *ry = dalloc(ny), *rdx = dalloc(nx);
    /* distinct values on a grid of 2^-7 (shuffled, centred on 0) so maxima are
     * unique; the finite-difference steps below are +-2^-9, exact in float,
     * and cannot change which cell is the maximum */
    for (size_t i = 0; i < nx; i++) x[i] = (float)(((double)i - (double)nx / 2) / 128.0);
    for (size_t i = nx; i > 1; i--) {
        size_t j = (size_t)(urand() * (double)i);
        float t = x[i - 1];
        x[i - 1] = x[j];
        x[j] = t;
    }
    fill(dy, ny, -1, 1);
    ref_pool(ry, rdx, x, dy, is_max, g);
    bf_status s = is_max ? bf_cpu_maxpool_forward(NULL, y, x, g) : bf_cpu_avgpool_forward(NULL, y, x, g);
    snprintf(what, sizeof what, "%s %s forward", is_max ? "maxpool" : "avgpool", name);
    double e = relerr(y, ry, ny);
    check(s == BF_OK && e < 1e-6, what, "rel err %.3g status %g", e, s);
    for (size_t i = 0; i < nx; i++) dx[i] = 7.0f; /* must be overwritten */
    s = is_max ? bf_cpu_maxpool_backward(NULL, dx, dy, y, x, g) : bf_cpu_avgpool_backward(NULL, dx, dy, g);
    snprintf(what, sizeof what, "%s %s backward", is_max ? "maxpool" : "avgpool", name);
    e = relerr(dx, rdx, nx);
    check(s == BF_OK && e < 1e-6, what, "rel err %.3g status %g", e, s);

    /* finite differences of L = sum(pool(x) * dy) along a random +-1 direction */
    float *v = talloc(nx), *xp = talloc(nx);
    for (size_t i = 0; i < nx; i++) v[i] = urand() < 0.5 ? -1.0f : 1.0f;
    const double h = 1.0 / 512;
    double Lv[2];
    for (int sgn = 0; sgn < 2; sgn++) {
        for (size_t i = 0; i < nx; i++) xp[i] = (float)(x[i] + (sgn ? -h : h) * v[i]);
        if (is_max) bf_cpu_maxpool_forward(NULL, y, xp, g);
        else bf_cpu_avgpool_forward(NULL, y, xp, g);
        Lv[sgn] = dot(y, dy, ny);
    }
    double num = (Lv[0] - Lv[1]) / (2 * h), an = dot(dx, v, nx);
    snprintf(what, sizeof what, "%s %s FD", is_max ? "maxpool" : "avgpool", name);
    check(fabs(num - an) <= 1e-2 * (fabs(an) + 1), what, "numeric %.6g analytic %.6g", num, an);
}

static void test_pool(void) {
    struct {
        int B, H, W, C, KH, KW, SH, SW, same;
        const char *name;
    } cs[] = {
        {2, 6, 6, 3, 2, 2, 2, 2, 0, "2x2 s2 valid"},
        {2, 7, 5, 3, 2, 2, 2, 2, 0, "7x5 2x2 s2 valid (odd)"},
        {2, 7, 5, 3, 2, 2, 2, 2, 1, "7x5 2x2 s2 same"},
        {2, 7, 7, 4, 3, 3, 2, 2, 1, "3x3 s2 same (overlapping)"},
        {2, 7, 7, 4, 3, 3, 1, 1, 1, "3x3 s1 same"},
        {3, 5, 6, 2, 2, 3, 1, 2, 0, "2x3 s1x2 valid"},
        {2, 9, 9, 300, 2, 2, 2, 2, 1, "C=300 (two channel blocks)"},
        {4, 6, 5, 8, 6, 5, 6, 5, 0, "global (KH=H, KW=W)"},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        for (int is_max = 0; is_max < 2; is_max++) {
            bf_conv_geom g = geom(cs[i].B, cs[i].H, cs[i].W, cs[i].C, cs[i].C, cs[i].KH, cs[i].KW,
                                  cs[i].SH, cs[i].SW, cs[i].same);
            pool_reset();
            test_pool_case(&g, is_max, cs[i].name);
        }
    pool_reset();
    /* ties: the gradient goes to the first maximum only */
    bf_conv_geom g = geom(1, 2, 2, 1, 1, 2, 2, 2, 2, 0);
    float x[4] = {1, 3, 3, 2}, y[1], dy[1] = {5}, dx[4];
    bf_cpu_maxpool_forward(NULL, y, x, &g);
    bf_cpu_maxpool_backward(NULL, dx, dy, y, x, &g);
    check(y[0] == 3 && dx[0] == 0 && dx[1] == 5 && dx[2] == 0 && dx[3] == 0,
          "maxpool tie goes to the first max", "dx[1]=%g dx[2]=%g", dx[1], dx[2]);
    /* bad geometry */
    g = geom(1, 4, 4, 2, 2, 2, 2, 2, 2, 0);
    g.K = 3;
    float buf[64];
    check(bf_cpu_maxpool_forward(NULL, buf, buf, &g) == BF_ERR_SHAPE, "pool rejects K != C",
          "%g %g", 0, 0);
    g = geom(1, 4, 4, 2, 2, 2, 2, 2, 2, 0);
    g.OW = 3;
    check(bf_cpu_avgpool_forward(NULL, buf, buf, &g) == BF_ERR_SHAPE, "pool rejects bad OW",
          "%g %g", 0, 0);
}

/* ---- batch normalization ---- */

static void test_bn_case(long N, int C, int use_gamma, int use_beta) {
    char what[160];
    const size_t n = (size_t)N * C;
    float *x = talloc(n), *y = talloc(n), *R = talloc(n), *dx = talloc(n), *y2 = talloc(n);
    float *gamma = talloc(C), *beta = talloc(C), *mean = talloc(C), *invstd = talloc(C),
          *mm = talloc(C), *mv = talloc(C), *dg = talloc(C), *dbt = talloc(C);
    /* channels with an offset (mean ~ 3c) so the variance is computed around it */
    for (long i = 0; i < N; i++)
        for (int c = 0; c < C; c++) x[(size_t)i * C + c] = (float)(3.0 * c + (0.5 + 0.1 * c) * (2 * urand() - 1));
    fill(gamma, C, 0.5, 1.5);
    fill(beta, C, -1, 1);
    fill(R, n, -1, 1);
    for (int c = 0; c < C; c++) mm[c] = 0.5f, mv[c] = 2.0f;
    const float *G = use_gamma ? gamma : NULL, *Bt = use_beta ? beta : NULL;
    const float momentum = 0.99f, eps = 1e-3f;
    bf_status s = bf_cpu_batchnorm_forward(NULL, y, mean, invstd, mm, mv, x, G, Bt, N, C, momentum, eps, 1);
    /* reference */
    double e_out = 0, e_stat = 0, e_mov = 0;
    for (int c = 0; c < C; c++) {
        double m = 0, v = 0;
        for (long i = 0; i < N; i++) m += x[(size_t)i * C + c];
        m /= N;
        for (long i = 0; i < N; i++) v += (x[(size_t)i * C + c] - m) * (x[(size_t)i * C + c] - m);
        v /= N;
        double is = 1 / sqrt(v + eps);
        e_stat = fmax(e_stat, fabs(mean[c] - m) / (1 + fabs(m)) + fabs(invstd[c] - is) / is);
        e_mov = fmax(e_mov, fabs(mm[c] - (0.5 * momentum + m * (1 - momentum))) +
                                fabs(mv[c] - (2.0 * momentum + v * (1 - momentum))));
        for (long i = 0; i < N; i++) {
            double r = (use_gamma ? gamma[c] : 1) * (x[(size_t)i * C + c] - m) * is + (use_beta ? beta[c] : 0);
            e_out = fmax(e_out, fabs(y[(size_t)i * C + c] - r));
        }
    }
    snprintf(what, sizeof what, "batchnorm N=%ld C=%d gamma=%d beta=%d", N, C, use_gamma, use_beta);
    check(s == BF_OK && e_out < 1e-4, what, "forward max err %.3g status %g", e_out, s);
    check(e_stat < 1e-5, what, "mean/invstd err %.3g %g", e_stat, 0);
    check(e_mov < 1e-5, what, "moving stats err %.3g %g", e_mov, 0);

    /* inference uses the moving statistics */
    s = bf_cpu_batchnorm_forward(NULL, y2, NULL, NULL, mm, mv, x, G, Bt, N, C, momentum, eps, 0);
    double e_inf = 0;
    for (long i = 0; i < N; i++)
        for (int c = 0; c < C; c++) {
            double r = (use_gamma ? gamma[c] : 1) * (x[(size_t)i * C + c] - mm[c]) / sqrt(mv[c] + (double)eps) +
                       (use_beta ? beta[c] : 0);
            e_inf = fmax(e_inf, fabs(y2[(size_t)i * C + c] - r) / (1 + fabs(r)));
        }
    check(s == BF_OK && e_inf < 1e-5, what, "inference err %.3g status %g", e_inf, s);

    /* backward vs finite differences of L = sum(bn(x) * R) */
    for (int c = 0; c < C; c++) dg[c] = 1.0f, dbt[c] = -1.0f; /* ADD semantics */
    s = bf_cpu_batchnorm_backward(NULL, dx, use_gamma ? dg : NULL, use_beta ? dbt : NULL, R, x,
                                  mean, invstd, G, N, C);
    for (int c = 0; c < C; c++) dg[c] -= 1.0f, dbt[c] += 1.0f;
    float *v = talloc(n), *xp = talloc(n), *gp = talloc(C), *bp = talloc(C), *vg = talloc(C),
          *vb = talloc(C), *t1 = talloc(C), *t2 = talloc(C), *t3 = talloc(C), *t4 = talloc(C);
    fill(v, n, -1, 1);
    fill(vg, C, -1, 1);
    fill(vb, C, -1, 1);
    const double h = 1e-2;
    for (int a = 0; a < 3; a++) {
        if ((a == 1 && !use_gamma) || (a == 2 && !use_beta)) continue;
        double Lv[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            double t = sgn ? -h : h;
            for (size_t i = 0; i < n; i++) xp[i] = (float)(x[i] + (a == 0 ? t * v[i] : 0));
            for (int c = 0; c < C; c++) {
                gp[c] = (float)(gamma[c] + (a == 1 ? t * vg[c] : 0));
                bp[c] = (float)(beta[c] + (a == 2 ? t * vb[c] : 0));
                t3[c] = 0, t4[c] = 1;
            }
            bf_cpu_batchnorm_forward(NULL, y2, t1, t2, t3, t4, xp, use_gamma ? gp : NULL,
                                     use_beta ? bp : NULL, N, C, momentum, eps, 1);
            Lv[sgn] = dot(y2, R, n);
        }
        double num = (Lv[0] - Lv[1]) / (2 * h);
        double an = a == 0 ? dot(dx, v, n) : a == 1 ? dot(dg, vg, C) : dot(dbt, vb, C);
        char w2[200];
        snprintf(w2, sizeof w2, "%s FD d/d%s", what, a == 0 ? "x" : a == 1 ? "gamma" : "beta");
        check(s == BF_OK && fabs(num - an) <= 1e-2 * (fabs(an) + 1), w2,
              "numeric %.6g analytic %.6g", num, an);
    }
    /* in place: out == inp, dinp == dout */
    memcpy(y2, x, n * sizeof(float));
    for (int c = 0; c < C; c++) t3[c] = 0, t4[c] = 1;
    bf_cpu_batchnorm_forward(NULL, y2, t1, t2, t3, t4, y2, G, Bt, N, C, momentum, eps, 1);
    double e_ip = 0;
    for (size_t i = 0; i < n; i++) e_ip = fmax(e_ip, fabs(y2[i] - y[i]));
    check(e_ip == 0, what, "in-place forward differs by %.3g %g", e_ip, 0);
    memcpy(y2, R, n * sizeof(float));
    bf_cpu_batchnorm_backward(NULL, y2, NULL, NULL, y2, x, mean, invstd, G, N, C);
    e_ip = 0;
    for (size_t i = 0; i < n; i++) e_ip = fmax(e_ip, fabs(y2[i] - dx[i]));
    check(e_ip == 0, what, "in-place backward differs by %.3g %g", e_ip, 0);
}

static void test_bn(void) {
    pool_reset();
    test_bn_case(64, 5, 1, 1);
    pool_reset();
    test_bn_case(300, 3, 0, 1);
    pool_reset();
    test_bn_case(50, 4, 1, 0);
    pool_reset();
    test_bn_case(7, 2, 0, 0);
    pool_reset();
    test_bn_case(40, 300, 1, 1); /* two channel blocks */
}

/* ---- dropout ---- */

static void test_dropout(void) {
    pool_reset();
    const long n = 1000000;
    float *x = talloc(n), *y = talloc(n), *m = talloc(n), *m2 = talloc(n), *dx = talloc(n);
    for (long i = 0; i < n; i++) x[i] = 1.0f + (float)(i % 7);
    const float rate = 0.3f;
    bf_status s = bf_cpu_dropout_forward(NULL, y, m, x, n, rate, 42);
    double kept = 0, sx = 0, sy = 0;
    long bad = 0;
    for (long i = 0; i < n; i++) {
        kept += m[i];
        sx += x[i];
        sy += y[i];
        float want = m[i] != 0.0f ? x[i] / (1 - rate) : 0.0f;
        if ((m[i] != 0.0f && m[i] != 1.0f) || fabsf(y[i] - want) > 1e-6f * want) bad++;
        if ((bf_dropout_uniform(42, (uint64_t)i) >= rate) != (m[i] == 1.0f)) bad++;
    }
    check(s == BF_OK && bad == 0, "dropout out = inp*mask/(1-rate), mask from the hash",
          "%g bad elements status %g", (double)bad, s);
    check(fabs(kept / n - 0.7) < 0.003, "dropout keep fraction", "%.5f (want 0.7) %g", kept / n, 0);
    check(fabs(sy / sx - 1) < 0.01, "dropout preserves the mean", "ratio %.5f %g", sy / sx, 0);
    /* determinism: same seed -> same mask; other seed -> different mask */
    bf_cpu_dropout_forward(NULL, y, m2, x, n, rate, 42);
    check(memcmp(m, m2, n * sizeof(float)) == 0, "dropout deterministic in the seed", "%g %g", 0, 0);
    bf_cpu_dropout_forward(NULL, y, m2, x, n, rate, 43);
    long diff = 0;
    for (long i = 0; i < n; i++) diff += m[i] != m2[i];
    check(diff > n / 5, "dropout seeds differ", "%g of %g elements differ", (double)diff, (double)n);
    /* the mask of element i does not depend on n (counter-based) */
    bf_cpu_dropout_forward(NULL, y, m2, x, 1000, rate, 42);
    check(memcmp(m, m2, 1000 * sizeof(float)) == 0, "dropout mask independent of n", "%g %g", 0, 0);
    /* known answer: splitmix64(0) = 0xE220A8397B1DCDAF -> u = 0xE220A8 / 2^24 */
    check(bf_dropout_uniform(0, 0) == (float)0xE220A8 / 16777216.0f, "dropout hash known answer",
          "u(0,0) = %.9g, want %.9g", bf_dropout_uniform(0, 0), (float)0xE220A8 / 16777216.0f);
    /* backward */
    bf_cpu_dropout_forward(NULL, y, m, x, n, rate, 42);
    s = bf_cpu_dropout_backward(NULL, dx, x, m, n, rate);
    bad = 0;
    for (long i = 0; i < n; i++)
        if (fabsf(dx[i] - y[i]) > 1e-6f * fabsf(y[i])) bad++;
    check(s == BF_OK && bad == 0, "dropout backward = dout*mask/(1-rate)", "%g bad status %g",
          (double)bad, s);
    /* rate 0: copy */
    s = bf_cpu_dropout_forward(NULL, y, m, x, n, 0.0f, 7);
    check(s == BF_OK && memcmp(x, y, n * sizeof(float)) == 0 && m[0] == 1.0f && m[n - 1] == 1.0f,
          "dropout rate 0 copies", "%g %g", s, 0);
    /* in place */
    memcpy(y, x, n * sizeof(float));
    bf_cpu_dropout_forward(NULL, y, m2, y, n, rate, 42);
    bf_cpu_dropout_forward(NULL, dx, m, x, n, rate, 42);
    check(memcmp(y, dx, n * sizeof(float)) == 0, "dropout in place", "%g %g", 0, 0);
    check(bf_cpu_dropout_forward(NULL, y, m, x, n, 1.0f, 1) == BF_ERR_ARG &&
              bf_cpu_dropout_forward(NULL, y, m, x, n, -0.1f, 1) == BF_ERR_ARG &&
              bf_cpu_dropout_backward(NULL, dx, x, NULL, n, 0.5f) == BF_ERR_ARG,
          "dropout rejects bad rate / missing mask", "%g %g", 0, 0);
}

/* ---- timing ---- */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void time_conv(int B, int H, int W, int C, int K, int KH, int KW, int same, int reps) {
    pool_reset();
    bf_conv_geom g = geom(B, H, W, C, K, KH, KW, 1, 1, same);
    const size_t nx = in_size(&g), ny = out_size(&g), nw = w_size(&g);
    size_t wsb = bf_cpu_conv2d_workspace_bytes(NULL, &g, 1);
    float *x = talloc(nx), *w = talloc(nw), *b = talloc(K), *y = talloc(ny), *dx = talloc(nx),
          *dw = talloc(nw), *db = talloc(K), *ws = talloc(wsb / 4 + 1);
    if (!x || !y || !ws) {
        printf("timing skipped: test pool too small\n");
        return;
    }
    fill(x, nx, 0, 1);
    fill(w, nw, -0.1, 0.1);
    double tf = 1e30, tb = 1e30, td = 1e30;
    for (int r = 0; r < reps + 1; r++) {
        double t0 = now();
        bf_cpu_conv2d_forward(NULL, y, ws, x, w, b, &g);
        double t1 = now();
        bf_cpu_conv2d_backward(NULL, NULL, dw, db, ws, y, x, w, &g); /* y as dout */
        double t2 = now();
        bf_cpu_conv2d_backward(NULL, dx, dw, db, ws, y, x, w, &g);
        double t3 = now();
        if (r == 0) continue; /* warm-up */
        tf = fmin(tf, t1 - t0);
        tb = fmin(tb, t2 - t1);
        td = fmin(td, t3 - t2);
    }
    const double fl = 2.0 * (double)ny * KH * KW * C; /* one GEMM-sized pass */
    printf("conv2d B=%d %dx%dx%d -> %d %dx%d %s, workspace %.2f MiB (min of %d):\n", B, H, W, C, K,
           KH, KW, same ? "same" : "valid", wsb / 1048576.0, reps);
    printf("  forward                 %8.2f ms  %6.1f GFLOP/s\n", tf * 1e3, fl / tf * 1e-9);
    printf("  backward (dw, db)       %8.2f ms  %6.1f GFLOP/s\n", tb * 1e3, fl / tb * 1e-9);
    printf("  backward (dw, db, dinp) %8.2f ms  %6.1f GFLOP/s\n", td * 1e3, 2 * fl / td * 1e-9);
    printf("  forward + backward(dw, db) %5.2f ms  %6.1f GFLOP/s\n", (tf + tb) * 1e3,
           2 * fl / (tf + tb) * 1e-9);
}

int main(int argc, char **argv) {
    int timing = !(argc > 1 && strcmp(argv[1], "--no-timing") == 0);
    test_conv();
    test_pool();
    test_bn();
    test_dropout();
    printf("%d PASS, %d FAIL\n", n_pass, n_fail);
    if (timing) {
        time_conv(64, 100, 100, 3, 32, 3, 3, 0, 5);
        time_conv(256, 8, 8, 1, 32, 3, 3, 1, 20);
        time_conv(64, 32, 32, 32, 32, 3, 3, 1, 5);
        time_conv(64, 32, 32, 16, 16, 3, 3, 1, 5);
    }
    return n_fail ? 1 : 0;
}
