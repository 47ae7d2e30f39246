/* conv_check.h - host-only validation of a convolution or pooling geometry
 * (bf_conv_geom), written once for every backend: each backend's conv2d,
 * conv2d_transpose and pooling ops call it before touching memory. Header
 * only (static inline), since the CUDA module links none of the core's
 * objects; plain C, compiled as C++ by nvcc too. */
#ifndef BF_CONV_CHECK_H
#define BF_CONV_CHECK_H

#include <limits.h>

/* the core's headers are C; give them C linkage in the CUDA module's C++ */
#ifdef __cplusplus
extern "C" {
#endif
#include "backend.h"
#ifdef __cplusplus
}
#endif

/* out == ceil(in / s) with Keras's 'same' padding split (the smaller half on top / left) */
static inline int bf_conv_same_dim(int in, int out, int k, int s, int pad) {
    int total = (out - 1) * s + k - in;
    if (total < 0) total = 0;
    return out == (in + s - 1) / s && pad == total / 2;
}

/* positive sizes, 'valid' or 'same' output sizes, pooling keeps the channels,
 * and per-sample sizes that fit an int (BLAS leading dimensions) */
static inline bf_status bf_conv_check_geom(const bf_conv_geom *g, const char *op, int pooling) {
    if (!g) return BF_FAIL(BF_ERR_ARG, "%s: no geometry", op);
    if (g->B <= 0 || g->H <= 0 || g->W <= 0 || g->C <= 0 || g->OH <= 0 || g->OW <= 0 ||
        g->K <= 0 || g->KH <= 0 || g->KW <= 0 || g->SH <= 0 || g->SW <= 0 || g->PT < 0 ||
        g->PL < 0)
        return BF_FAIL(BF_ERR_SHAPE,
                       "%s: sizes must be positive (B=%d H=%d W=%d C=%d OH=%d OW=%d K=%d "
                       "window %dx%d strides %dx%d padding %d,%d)",
                       op, g->B, g->H, g->W, g->C, g->OH, g->OW, g->K, g->KH, g->KW, g->SH,
                       g->SW, g->PT, g->PL);
    if (pooling && g->K != g->C)
        return BF_FAIL(BF_ERR_SHAPE, "%s: output channels %d must equal input channels %d", op,
                       g->K, g->C);
    int valid_h = g->KH <= g->H && g->PT == 0 && g->OH == (g->H - g->KH) / g->SH + 1;
    int valid_w = g->KW <= g->W && g->PL == 0 && g->OW == (g->W - g->KW) / g->SW + 1;
    int ok_h = valid_h || bf_conv_same_dim(g->H, g->OH, g->KH, g->SH, g->PT);
    int ok_w = valid_w || bf_conv_same_dim(g->W, g->OW, g->KW, g->SW, g->PL);
    if (!ok_h || !ok_w)
        return BF_FAIL(BF_ERR_SHAPE,
                       "%s: output %dx%d with padding %d,%d does not follow from input %dx%d, "
                       "window %dx%d, strides %dx%d ('valid' or 'same')",
                       op, g->OH, g->OW, g->PT, g->PL, g->H, g->W, g->KH, g->KW, g->SH, g->SW);
    /* every index is computed in long / size_t; the per-sample sizes must
     * still fit an int for the BLAS leading dimensions */
    if ((long long)g->KH * g->KW * g->C > INT_MAX / 2 || (long long)g->H * g->W * g->C > INT_MAX ||
        (long long)g->OH * g->OW * g->K > INT_MAX)
        return BF_FAIL(BF_ERR_SHAPE, "%s: a sample is too large (H=%d W=%d C=%d K=%d)", op, g->H,
                       g->W, g->C, g->K);
    return BF_OK;
}

#endif
