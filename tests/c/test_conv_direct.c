/* test_conv_direct.c - the direct Conv2D path (csrc/cpu/conv2d_direct*.c)
 * on every instruction set this CPU has (scalar: the im2col + GEMM path),
 * forced in turn with bf_cpu_isa_set: forward, dinp, dw and db against a
 * naive double reference over odd sizes, channel counts off the vector width,
 * 'same' / 'valid' padding, even and non-square windows, and strides (which
 * keep to im2col); the workspace planned is exactly the workspace used (all
 * of it written, nothing past it); the same bits on 1 and 2 threads; and the
 * largest difference from the im2col path. Memory from a static pool. Prints
 * failed checks and PASS / FAIL counts; non-zero exit on failure. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "conv2d_direct.h"
#include "cpu_conv.h"
#include "cpu_isa.h"
#include "par.h"

static int n_pass, n_fail;
static void check(int ok, const char *what, const char *name, double v) {
    if (ok) {
        n_pass++;
        return;
    }
    n_fail++;
    printf("FAIL %s [%s]: %.3g\n", what, name, v);
}

#define POOL_FLOATS (8u << 20)
static float pool[POOL_FLOATS];
static size_t top;
static float *take(size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (top + n > POOL_FLOATS) return NULL;
    float *p = pool + top;
    top += n;
    return p;
}
static double *dtake(size_t n) { return (double *)take(2 * n); }

static uint64_t rs = 777;
static void fill(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        rs = rs * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(rs >> 11) / 9007199254740992.0 * 2 - 1);
    }
}
static double relerr(const float *a, const double *r, size_t n) {
    double m = 0, s = 1;
    for (size_t i = 0; i < n; i++) {
        m = fmax(m, fabs(a[i] - r[i]));
        s = fmax(s, fabs(r[i]) + 1);
    }
    return m / s;
}
static double maxdiff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

static bf_conv_geom geom(int B, int H, int W, int C, int K, int KH, int KW, int S, int same) {
    bf_conv_geom g = {B, H, W, C, 0, 0, K, KH, KW, S, S, 0, 0};
    if (same) {
        g.OH = (H + S - 1) / S;
        g.OW = (W + S - 1) / S;
        int ph = (g.OH - 1) * S + KH - H, pw = (g.OW - 1) * S + KW - W;
        g.PT = ph > 0 ? ph / 2 : 0;
        g.PL = pw > 0 ? pw / 2 : 0;
    } else {
        g.OH = (H - KH) / S + 1;
        g.OW = (W - KW) / S + 1;
    }
    return g;
}

#define X4(a, b, c, d, B_, C_, D_) ((((size_t)(a) * (B_) + (b)) * (C_) + (c)) * (D_) + (d))

// y (B,OH,OW,K), dx, dw, db: the naive sums in double
static void ref(double *y, double *dx, double *dw, double *db, const float *x, const float *w,
                const float *b, const float *dy, const bf_conv_geom *g) {
    for (int n = 0; n < g->B; n++)
        for (int oh = 0; oh < g->OH; oh++)
            for (int ow = 0; ow < g->OW; ow++)
                for (int k = 0; k < g->K; k++) {
                    const size_t o = X4(n, oh, ow, k, g->OH, g->OW, g->K);
                    double s = b[k];
                    db[k] += dy[o];
                    for (int kh = 0; kh < g->KH; kh++)
                        for (int kw = 0; kw < g->KW; kw++) {
                            int ih = oh * g->SH - g->PT + kh, iw = ow * g->SW - g->PL + kw;
                            if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                            for (int c = 0; c < g->C; c++) {
                                size_t xi = X4(n, ih, iw, c, g->H, g->W, g->C), wi = X4(kh, kw, c, k, g->KW, g->C, g->K);
                                s += (double)x[xi] * w[wi];
                                dx[xi] += (double)dy[o] * w[wi];
                                dw[wi] += (double)dy[o] * x[xi];
                            }
                        }
                    y[o] = s;
                }
}

#define SENTINEL 0x7fc0dead
static void sentinel(float *p, size_t n) {
    const uint32_t v = SENTINEL;
    for (size_t i = 0; i < n; i++) memcpy(p + i, &v, 4);
}
static size_t count_sentinel(const float *p, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += memcmp(p + i, &(uint32_t){SENTINEL}, 4) == 0;
    return c;
}

/* forward + backward on ws; results in y, dx, dw, db (dw, db start at 0) */
static int run(float *y, float *dx, float *dw, float *db, float *ws, const float *x, const float *w,
               const float *b, const float *dy, const bf_conv_geom *g) {
    memset(dw, 0, (size_t)g->KH * g->KW * g->C * g->K * sizeof(float));
    memset(db, 0, (size_t)g->K * sizeof(float));
    return bf_cpu_conv2d_forward(NULL, y, ws, x, w, b, g) == BF_OK &&
           bf_cpu_conv2d_backward(NULL, dx, dw, db, ws, dy, x, w, g) == BF_OK;
}

static double worst_vs_im2col; /* over all direct cases */

static void test_case(const bf_conv_geom *g, const char *name) {
    const size_t saved = top;
    const size_t nx = (size_t)g->B * g->H * g->W * g->C, ny = (size_t)g->B * g->OH * g->OW * g->K;
    const size_t nw = (size_t)g->KH * g->KW * g->C * g->K, K = (size_t)g->K;
    float *x = take(nx), *w = take(nw), *b = take(K), *dy = take(ny);
    fill(x, nx), fill(w, nw), fill(b, K), fill(dy, ny);
    double *ry = dtake(ny), *rdx = dtake(nx), *rdw = dtake(nw), *rdb = dtake(K);
    memset(rdx, 0, nx * 8), memset(rdw, 0, nw * 8), memset(rdb, 0, K * 8);
    ref(ry, rdx, rdw, rdb, x, w, b, dy, g);
    float *out[2][4];
    const int direct = bf_cpu_conv2d_direct_ok(g);
    const size_t wsf = bf_cpu_conv2d_workspace_bytes(NULL, g, 0) / 4;
    const size_t wsb = bf_cpu_conv2d_workspace_bytes(NULL, g, 1) / 4;
    const size_t nws = (wsf > wsb ? wsf : wsb) + 64;
    float *ws = take(nws);
    for (int t = 0; t < 2; t++) {
        float *y = take(ny), *dx = take(nx), *dw = take(nw), *db = take(K);
        out[t][0] = y, out[t][1] = dx, out[t][2] = dw, out[t][3] = db;
        bf_par_set_threads(t + 1);
        sentinel(ws, nws);
        check(run(y, dx, dw, db, ws, x, w, b, dy, g), "status OK", name, 0);
        if (direct) { /* planned == used: every float written, none past the plan */
            const size_t left = count_sentinel(ws, wsb);
            check(left == 0 && wsf == 0, "direct: the whole planned backward workspace is used", name, (double)left);
        }
        const size_t past = count_sentinel(ws + wsb, 64);
        check(past == 64, "nothing written past the planned workspace", name, (double)(64 - past));
        const double e[4] = {relerr(y, ry, ny), relerr(dx, rdx, nx), relerr(dw, rdw, nw), relerr(db, rdb, K)};
        check(e[0] < 1e-5, "forward vs naive", name, e[0]);
        check(e[1] < 1e-5, "dinp vs naive", name, e[1]);
        check(e[2] < 1e-5, "dw vs naive", name, e[2]);
        check(e[3] < 1e-5, "db vs naive", name, e[3]);
    }
    bf_par_set_threads(bf_par_slots());
    const size_t n4[4] = {ny, nx, nw, K};
    int same = 1;
    for (int i = 0; i < 4; i++) same &= memcmp(out[0][i], out[1][i], n4[i] * sizeof(float)) == 0;
    check(same, "same bits on 1 and 2 threads", name, 0);
    if (direct) { /* against the im2col path: the difference is float rounding */
        bf_cpu_conv2d_direct = 0;
        const size_t wsi = bf_cpu_conv2d_workspace_bytes(NULL, g, 0) > bf_cpu_conv2d_workspace_bytes(NULL, g, 1)
                               ? bf_cpu_conv2d_workspace_bytes(NULL, g, 0) : bf_cpu_conv2d_workspace_bytes(NULL, g, 1);
        float *wi = take(wsi / 4 + 1), *y = take(ny), *dx = take(nx), *dw = take(nw), *db = take(K);
        run(y, dx, dw, db, wi, x, w, b, dy, g);
        bf_cpu_conv2d_direct = 1;
        const float *ref4[4] = {y, dx, dw, db};
        for (int i = 0; i < 4; i++) {
            double m = maxdiff(out[1][i], ref4[i], n4[i]);
            worst_vs_im2col = m > worst_vs_im2col ? m : worst_vs_im2col;
        }
    }
    top = saved;
}

int main(void) {
    static const struct { int B, H, W, C, K, KH, KW, S, same; } cases[] = {
        {2, 7, 5, 3, 4, 3, 3, 1, 1},    {3, 9, 11, 3, 16, 3, 3, 1, 0},  {2, 8, 8, 16, 16, 3, 3, 1, 1},
        {2, 6, 7, 16, 32, 3, 3, 1, 1},  {1, 10, 9, 32, 32, 3, 3, 1, 1}, {2, 5, 6, 17, 33, 3, 3, 1, 1},
        {2, 6, 6, 5, 64, 3, 3, 1, 0},   {1, 7, 8, 64, 7, 3, 3, 1, 1},   {2, 9, 9, 1, 1, 5, 5, 1, 1},
        {2, 8, 7, 4, 20, 2, 2, 1, 1},   {2, 6, 9, 3, 49, 1, 3, 1, 1},   {2, 4, 3, 2, 8, 3, 3, 1, 1},
        {1, 3, 3, 6, 18, 3, 3, 1, 0},   {2, 2, 2, 3, 5, 5, 5, 1, 1},    {2, 13, 12, 8, 24, 4, 3, 1, 1},
        {2, 9, 10, 3, 16, 3, 3, 2, 1},  {2, 8, 8, 16, 70, 3, 3, 1, 1},  {1, 5, 5, 65, 8, 3, 3, 1, 1},
        {3, 8, 8, 8, 16, 1, 1, 1, 0},
    };
    const bf_isa best = bf_cpu_isa_detected();
    for (int isa = BF_ISA_SCALAR; isa <= (int)best; isa++) {
        bf_cpu_isa_set(isa);
        int n_direct = 0;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const bf_conv_geom g = geom(cases[i].B, cases[i].H, cases[i].W, cases[i].C, cases[i].K, cases[i].KH,
                                        cases[i].KW, cases[i].S, cases[i].same);
            char name[128];
            snprintf(name, sizeof name, "%s B%d %dx%dx%d->%d %dx%d s%d %s", bf_cpu_isa_name((bf_isa)isa), g.B, g.H,
                     g.W, g.C, g.K, g.KH, g.KW, g.SH, cases[i].same ? "same" : "valid");
            n_direct += bf_cpu_conv2d_direct_ok(&g);
            check(isa != BF_ISA_SCALAR || !bf_cpu_conv2d_direct_ok(&g), "scalar keeps to im2col", name, 0);
            test_case(&g, name);
        }
        printf("isa %s: %d of %zu cases on the direct path\n", bf_cpu_isa_name((bf_isa)isa), n_direct,
               sizeof cases / sizeof cases[0]);
    }
    bf_cpu_isa_set(-1);
    printf("threads: %d; largest |direct - im2col| over all outputs and gradients: %.3g\n", bf_par_slots(),
           worst_vs_im2col);
    printf("%d PASS, %d FAIL\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
