/* depthwise.c - DepthwiseConv2D on the CPU, direct loops: out (B,OH,OW,C*M)
 * with channel c*M + m = sum over the window of inp (B,H,W,C) channel c times
 * w (KH,KW,C,M) [.., c, m] (Keras's depthwise_kernel), plus b (C*M). Each
 * output element sums its window in the same order forward and in every
 * run, so results do not depend on threads (there are none here).
 * Backward OVERWRITES dinp and ADDS into dw and db (a layer called twice sums
 * its contributions); any of them may be NULL. */
#include <string.h>

#include "conv_check.h"
#include "cpu_ops.h"

static bf_status check(const bf_conv_geom *g, const char *op) {
    BF_TRY(bf_conv_check_geom(g, op, 0));
    if (g->K % g->C)
        return BF_FAIL(BF_ERR_SHAPE, "%s: %d output channels are not a multiple of the %d input channels", op, g->K,
                       g->C);
    return BF_OK;
}

// out (B,OH,OW,C*M), inp (B,H,W,C), w (KH,KW,C,M), b (C*M) or NULL
bf_status bf_cpu_depthwise_forward(bf_backend *be, float *out, const float *inp, const float *w, const float *b,
                                   const bf_conv_geom *g) {
    (void)be;
    if (!out || !inp || !w) return BF_FAIL(BF_ERR_ARG, "depthwise_forward: NULL tensor");
    BF_TRY(check(g, "depthwise_forward"));
    const int C = g->C, K = g->K, M = K / C;
    for (int n = 0; n < g->B; n++)
        for (int oy = 0; oy < g->OH; oy++)
            for (int ox = 0; ox < g->OW; ox++) {
                float *o = out + (((size_t)n * g->OH + oy) * g->OW + ox) * (size_t)K;
                for (int k = 0; k < K; k++) o[k] = b ? b[k] : 0.0f;
                for (int ky = 0; ky < g->KH; ky++) {
                    const int iy = oy * g->SH - g->PT + ky;
                    if (iy < 0 || iy >= g->H) continue;
                    for (int kx = 0; kx < g->KW; kx++) {
                        const int ix = ox * g->SW - g->PL + kx;
                        if (ix < 0 || ix >= g->W) continue;
                        const float *x = inp + (((size_t)n * g->H + iy) * g->W + ix) * (size_t)C;
                        const float *wk = w + ((size_t)ky * g->KW + kx) * (size_t)K;
                        for (int c = 0; c < C; c++)
                            for (int m = 0; m < M; m++) o[c * M + m] += x[c] * wk[c * M + m];
                    }
                }
            }
    return BF_OK;
}

// dinp (B,H,W,C) = sum of w * dout over the windows that read it; dw, db += their sums
bf_status bf_cpu_depthwise_backward(bf_backend *be, float *dinp, float *dw, float *db, const float *dout,
                                    const float *inp, const float *w, const bf_conv_geom *g) {
    (void)be;
    if (!dout || (dw && !inp) || (dinp && !w)) return BF_FAIL(BF_ERR_ARG, "depthwise_backward: NULL tensor");
    BF_TRY(check(g, "depthwise_backward"));
    const int C = g->C, K = g->K, M = K / C;
    if (dinp) memset(dinp, 0, sizeof(float) * (size_t)g->B * g->H * g->W * C);
    for (int n = 0; n < g->B; n++)
        for (int oy = 0; oy < g->OH; oy++)
            for (int ox = 0; ox < g->OW; ox++) {
                const float *d = dout + (((size_t)n * g->OH + oy) * g->OW + ox) * (size_t)K;
                if (db)
                    for (int k = 0; k < K; k++) db[k] += d[k];
                for (int ky = 0; ky < g->KH; ky++) {
                    const int iy = oy * g->SH - g->PT + ky;
                    if (iy < 0 || iy >= g->H) continue;
                    for (int kx = 0; kx < g->KW; kx++) {
                        const int ix = ox * g->SW - g->PL + kx;
                        if (ix < 0 || ix >= g->W) continue;
                        const size_t at = (((size_t)n * g->H + iy) * g->W + ix) * (size_t)C;
                        const size_t wat = ((size_t)ky * g->KW + kx) * (size_t)K;
                        for (int c = 0; c < C; c++)
                            for (int m = 0; m < M; m++) {
                                if (dw) dw[wat + c * M + m] += inp[at + c] * d[c * M + m];
                                if (dinp) dinp[at + c] += w[wat + c * M + m] * d[c * M + m];
                            }
                    }
                }
            }
    return BF_OK;
}
