/* test_convx_kernels.c - standalone checks of the CPU Conv1D (conv1d.c) and
 * Conv2DTranspose (conv2d_transpose.c) kernels against naive double-precision
 * loops written from the definitions, for valid / same / causal padding,
 * strides and dilations, under the default workspace cap and under caps so
 * small that im2col tiles cut across output rows and samples. Backward is
 * checked accumulating into dw / db (which start nonzero) and with dinp /
 * dw / db NULL. Prints one line per failed check and the PASS / FAIL counts;
 * returns non-zero on failure. Built and run by tests/test_c_programs.py. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_convx.h"

static int n_pass, n_fail;

static void close_to(const char *what, const float *got, const double *want, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(got[i] - want[i]) / (fabs(want[i]) + 1e-3);
        if (!(e <= worst)) worst = e; /* NaN counts */
    }
    if (worst <= 1e-4) {
        n_pass++;
    } else {
        n_fail++;
        printf("FAIL %s: relative error %g\n", what, worst);
    }
}

static unsigned long long rng = 12345;
static float *rnd(size_t n) {
    float *x = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((rng >> 40) * (1.0 / 16777216.0) * 2.0 - 1.0);
    }
    return x;
}
static double *zeros(size_t n) { return calloc(n ? n : 1, sizeof(double)); }
static float *copyf(const float *x, size_t n) {
    float *y = malloc((n ? n : 1) * sizeof(float));
    memcpy(y, x, n * sizeof(float));
    return y;
}
static double *widen(const float *x, size_t n) {
    double *y = zeros(n);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    return y;
}

/* ---- Conv1D: out[b,o,k] = b[k] + sum_{j,c} x[b, o*S - PL + j*D, c] w[j,c,k] ---- */
static void conv1d_case(bf_conv1d_geom g, const char *name) {
    const size_t nx = (size_t)g.B * g.T * g.C, ny = (size_t)g.B * g.OT * g.K, nw = (size_t)g.KW * g.C * g.K;
    float *x = rnd(nx), *w = rnd(nw), *b = rnd(g.K), *dy = rnd(ny), *dw0 = rnd(nw), *db0 = rnd(g.K);
    double *y = zeros(ny), *dx = zeros(nx), *dw = widen(dw0, nw), *db = widen(db0, g.K);
    for (int n = 0; n < g.B; n++)
        for (int o = 0; o < g.OT; o++)
            for (int k = 0; k < g.K; k++) {
                const size_t yi = ((size_t)n * g.OT + o) * g.K + k;
                y[yi] = b[k];
                db[k] += dy[yi];
                for (int j = 0; j < g.KW; j++) {
                    const int t = o * g.S - g.PL + j * g.D;
                    if (t < 0 || t >= g.T) continue;
                    for (int c = 0; c < g.C; c++) {
                        const size_t xi = ((size_t)n * g.T + t) * g.C + c, wi = ((size_t)j * g.C + c) * g.K + k;
                        y[yi] += (double)x[xi] * w[wi];
                        dx[xi] += (double)dy[yi] * w[wi];
                        dw[wi] += (double)dy[yi] * x[xi];
                    }
                }
            }
    const size_t caps[] = {(size_t)4 << 20, 3 * g.KW * g.C * sizeof(float) + 4, 1};
    char what[200];
    for (int ci = 0; ci < 3; ci++) {
        bf_cpu_conv2d_ws_cap = caps[ci];
        size_t wsb = bf_cpu_conv1d_workspace_bytes(NULL, &g, 0), wsb1 = bf_cpu_conv1d_workspace_bytes(NULL, &g, 1);
        void *ws = malloc((wsb > wsb1 ? wsb : wsb1) + 16);
        float *out = rnd(ny), *gx = rnd(nx), *gw = copyf(dw0, nw), *gb = copyf(db0, g.K);
        snprintf(what, sizeof what, "conv1d %s cap %zu forward", name, caps[ci]);
        if (bf_cpu_conv1d_forward(NULL, out, ws, x, w, b, &g) != BF_OK) printf("FAIL %s: status\n", what), n_fail++;
        close_to(what, out, y, ny);
        snprintf(what, sizeof what, "conv1d %s cap %zu backward", name, caps[ci]);
        if (bf_cpu_conv1d_backward(NULL, gx, gw, gb, ws, dy, x, w, &g) != BF_OK) printf("FAIL %s: status\n", what), n_fail++;
        close_to(what, gx, dx, nx);
        close_to(what, gw, dw, nw);
        close_to(what, gb, db, g.K);
        snprintf(what, sizeof what, "conv1d %s cap %zu backward, dinp and db NULL", name, caps[ci]);
        memcpy(gw, dw0, nw * sizeof(float));
        if (bf_cpu_conv1d_backward(NULL, NULL, gw, NULL, ws, dy, x, w, &g) != BF_OK) printf("FAIL %s\n", what), n_fail++;
        close_to(what, gw, dw, nw);
        free(ws), free(out), free(gx), free(gw), free(gb);
    }
    bf_cpu_conv2d_ws_cap = caps[0];
    free(x), free(w), free(b), free(dy), free(dw0), free(db0), free(y), free(dx), free(dw), free(db);
}

/* ---- Conv2DTranspose: y[b, o*SH - PT + i, p*SW - PL + j, c] += x[b,o,p,k] w[i,j,c,k]; y += bias ---- */
static void convt_case(bf_conv_geom g, const char *name) {
    const size_t nx = (size_t)g.B * g.OH * g.OW * g.K, ny = (size_t)g.B * g.H * g.W * g.C;
    const size_t nw = (size_t)g.KH * g.KW * g.C * g.K;
    float *x = rnd(nx), *w = rnd(nw), *b = rnd(g.C), *dy = rnd(ny), *dw0 = rnd(nw), *db0 = rnd(g.C);
    double *y = zeros(ny), *dx = zeros(nx), *dw = widen(dw0, nw), *db = widen(db0, g.C);
    for (size_t i = 0; i < ny; i++) {
        y[i] = b[i % g.C];
        db[i % g.C] += dy[i];
    }
    for (int n = 0; n < g.B; n++)
        for (int o = 0; o < g.OH; o++)
            for (int p = 0; p < g.OW; p++)
                for (int i = 0; i < g.KH; i++)
                    for (int j = 0; j < g.KW; j++) {
                        const int h = o * g.SH - g.PT + i, v = p * g.SW - g.PL + j;
                        if (h < 0 || h >= g.H || v < 0 || v >= g.W) continue;
                        for (int c = 0; c < g.C; c++)
                            for (int k = 0; k < g.K; k++) {
                                const size_t xi = (((size_t)n * g.OH + o) * g.OW + p) * g.K + k;
                                const size_t yi = (((size_t)n * g.H + h) * g.W + v) * g.C + c;
                                const size_t wi = (((size_t)i * g.KW + j) * g.C + c) * g.K + k;
                                y[yi] += (double)x[xi] * w[wi];
                                dx[xi] += (double)dy[yi] * w[wi];
                                dw[wi] += (double)dy[yi] * x[xi];
                            }
                    }
    const size_t caps[] = {(size_t)4 << 20, 1};
    char what[200];
    for (int ci = 0; ci < 2; ci++) {
        bf_cpu_conv2d_ws_cap = caps[ci];
        void *ws = malloc(bf_cpu_conv2d_transpose_workspace_bytes(NULL, &g, 1) + 16);
        float *out = rnd(ny), *gx = rnd(nx), *gw = copyf(dw0, nw), *gb = copyf(db0, g.C);
        snprintf(what, sizeof what, "conv2d_transpose %s cap %zu forward", name, caps[ci]);
        if (bf_cpu_conv2d_transpose_forward(NULL, out, ws, x, w, b, &g) != BF_OK) printf("FAIL %s\n", what), n_fail++;
        close_to(what, out, y, ny);
        snprintf(what, sizeof what, "conv2d_transpose %s cap %zu backward", name, caps[ci]);
        if (bf_cpu_conv2d_transpose_backward(NULL, gx, gw, gb, ws, dy, x, w, &g) != BF_OK)
            printf("FAIL %s\n", what), n_fail++;
        close_to(what, gx, dx, nx);
        close_to(what, gw, dw, nw);
        close_to(what, gb, db, g.C);
        snprintf(what, sizeof what, "conv2d_transpose %s cap %zu backward, dw NULL", name, caps[ci]);
        float *gx2 = rnd(nx);
        if (bf_cpu_conv2d_transpose_backward(NULL, gx2, NULL, NULL, ws, dy, x, w, &g) != BF_OK)
            printf("FAIL %s\n", what), n_fail++;
        close_to(what, gx2, dx, nx);
        free(ws), free(out), free(gx), free(gx2), free(gw), free(gb);
    }
    bf_cpu_conv2d_ws_cap = caps[0];
    free(x), free(w), free(b), free(dy), free(dw0), free(db0), free(y), free(dx), free(dw), free(db);
}

/* the Conv2D geometry of a Conv2DTranspose from (h, w, k) with kernel, strides, same */
static bf_conv_geom convt(int B, int h, int w, int k, int C, int KH, int KW, int SH, int SW, int same) {
    bf_conv_geom g = {.B = B, .OH = h, .OW = w, .K = k, .C = C, .KH = KH, .KW = KW, .SH = SH, .SW = SW};
    g.H = same ? h * SH : (h - 1) * SH + (KH > SH ? KH : SH);
    g.W = same ? w * SW : (w - 1) * SW + (KW > SW ? KW : SW);
    g.PT = same && KH > SH ? (KH - SH) / 2 : 0;
    g.PL = same && KW > SW ? (KW - SW) / 2 : 0;
    return g;
}

int main(void) {
    /* B, T, C, OT, K, KW, S, D, PL */
    conv1d_case((bf_conv1d_geom){3, 17, 3, 17, 4, 3, 1, 2, 4}, "causal dilation 2");
    conv1d_case((bf_conv1d_geom){2, 20, 2, 14, 3, 3, 1, 3, 0}, "valid dilation 3");
    conv1d_case((bf_conv1d_geom){4, 15, 3, 5, 2, 3, 3, 1, 2}, "causal stride 3");
    conv1d_case((bf_conv1d_geom){2, 16, 5, 16, 6, 3, 1, 2, 2}, "same dilation 2");
    conv1d_case((bf_conv1d_geom){2, 16, 5, 8, 6, 4, 2, 1, 1}, "same stride 2 (Conv2D kernels)");
    conv1d_case((bf_conv1d_geom){3, 9, 4, 7, 5, 3, 1, 1, 0}, "valid (Conv2D kernels)");
    conv1d_case((bf_conv1d_geom){2, 9, 4, 9, 3, 1, 1, 1, 0}, "1 wide (Conv2D direct path)");
    convt_case(convt(3, 5, 4, 3, 4, 3, 3, 2, 2, 1), "same k3 s2");
    convt_case(convt(2, 3, 3, 2, 3, 4, 4, 2, 2, 1), "same k4 s2");
    convt_case(convt(2, 4, 3, 3, 2, 2, 3, 3, 1, 0), "valid k2x3 s3x1 (stride above the kernel)");
    convt_case(convt(2, 5, 4, 4, 3, 3, 3, 1, 1, 0), "valid k3 s1");
    convt_case(convt(2, 3, 4, 3, 2, 5, 2, 2, 3, 1), "same k5x2 s2x3");
    printf("%d PASS, %d FAIL\n", n_pass, n_fail);
    return n_fail != 0;
}
