/* pool.c - max and average pooling on the CPU, NHWC, Keras semantics.
 * Geometry (bf_conv_geom with K == C): window KH x KW, strides SH x SW,
 * padding PT / PL ('valid' or 'same', checked by bf_cpu_check_geom). The
 * window of output (oh, ow) covers input rows oh*SH - PT .. + KH-1 and columns
 * ow*SW - PL .. + KW-1, clipped to the image: padded cells never count, so
 * max pooling ignores them and average pooling divides by the number of valid
 * cells (as Keras / TensorFlow 'same' does). Every window holds at least one
 * valid cell under Keras geometry.
 * GlobalAveragePooling2D is avgpool with KH = H, KW = W: one pass over the input.
 * Backward OVERWRITES dinp (zeroed, then gradients are added, so overlapping
 * windows accumulate); maxpool routes each gradient to the first maximum of its
 * window in row-major window order, recomputed from inp and out (no argmax
 * buffer). Inner loops run over the contiguous channel axis. No allocation. */
#include <string.h>

#include "cpu_conv.h"

/* valid part [*a, *z) of the window starting at s (length k) in [0, n) */
static inline void clip(int s, int k, int n, int *a, int *z) {
    *a = s < 0 ? 0 : s;
    *z = s + k > n ? n : s + k;
}

// out (B,OH,OW,C) = max over the valid cells of each window of inp (B,H,W,C)
bf_status bf_cpu_maxpool_forward(bf_backend *be, float *out, const float *inp,
                                 const bf_conv_geom *g) {
    (void)be;
    BF_TRY(bf_cpu_check_geom(g, "maxpool", 1));
    if (!out || !inp) return BF_FAIL(BF_ERR_ARG, "maxpool_forward: NULL tensor");
    const int H = g->H, W = g->W, C = g->C, OH = g->OH, OW = g->OW;
    for (long b = 0; b < g->B; b++) {
        const float *im = inp + (size_t)b * H * W * C;
        for (int oh = 0; oh < OH; oh++) {
            int h0, h1;
            clip(oh * g->SH - g->PT, g->KH, H, &h0, &h1);
            for (int ow = 0; ow < OW; ow++) {
                int w0, w1;
                clip(ow * g->SW - g->PL, g->KW, W, &w0, &w1);
                float *restrict o = out + (((size_t)b * OH + oh) * OW + ow) * C;
                memcpy(o, im + ((size_t)h0 * W + w0) * C, (size_t)C * sizeof(float));
                for (int ih = h0; ih < h1; ih++)
                    for (int iw = (ih == h0 ? w0 + 1 : w0); iw < w1; iw++) {
                        const float *restrict x = im + ((size_t)ih * W + iw) * C;
                        for (int c = 0; c < C; c++) o[c] = x[c] > o[c] ? x[c] : o[c];
                    }
            }
        }
    }
    return BF_OK;
}

/* channels handled per pass of maxpool_backward (a stack buffer per channel) */
#define BF_POOL_CBLK 256

// dinp (B,H,W,C) = dout (B,OH,OW,C) routed to the first max of each window
bf_status bf_cpu_maxpool_backward(bf_backend *be, float *dinp, const float *dout,
                                  const float *out, const float *inp, const bf_conv_geom *g) {
    (void)be;
    BF_TRY(bf_cpu_check_geom(g, "maxpool", 1));
    if (!dinp) return BF_OK;
    if (!dout || !out || !inp) return BF_FAIL(BF_ERR_ARG, "maxpool_backward: NULL tensor");
    const int H = g->H, W = g->W, C = g->C, OH = g->OH, OW = g->OW;
    memset(dinp, 0, (size_t)g->B * H * W * C * sizeof(float));
    /* rem[c]: gradient not yet routed; the first cell equal to the max takes it
     * and zeroes it (branch-free, so the channel loop vectorizes) */
    float rem[BF_POOL_CBLK];
    for (long b = 0; b < g->B; b++) {
        const float *im = inp + (size_t)b * H * W * C;
        float *dim = dinp + (size_t)b * H * W * C;
        for (int oh = 0; oh < OH; oh++) {
            int h0, h1;
            clip(oh * g->SH - g->PT, g->KH, H, &h0, &h1);
            for (int ow = 0; ow < OW; ow++) {
                int w0, w1;
                clip(ow * g->SW - g->PL, g->KW, W, &w0, &w1);
                const size_t oi = (((size_t)b * OH + oh) * OW + ow) * C;
                for (int c0 = 0; c0 < C; c0 += BF_POOL_CBLK) {
                    const int n = C - c0 < BF_POOL_CBLK ? C - c0 : BF_POOL_CBLK;
                    const float *restrict o = out + oi + c0;
                    memcpy(rem, dout + oi + c0, (size_t)n * sizeof(float));
                    for (int ih = h0; ih < h1; ih++)
                        for (int iw = w0; iw < w1; iw++) {
                            const size_t ii = ((size_t)ih * W + iw) * C + c0;
                            const float *restrict x = im + ii;
                            float *restrict dx = dim + ii;
                            for (int c = 0; c < n; c++) {
                                const int hit = x[c] == o[c];
                                dx[c] += hit ? rem[c] : 0.0f;
                                rem[c] = hit ? 0.0f : rem[c];
                            }
                        }
                }
            }
        }
    }
    return BF_OK;
}

// out (B,OH,OW,C) = mean over the valid cells of each window of inp (B,H,W,C)
bf_status bf_cpu_avgpool_forward(bf_backend *be, float *out, const float *inp,
                                 const bf_conv_geom *g) {
    (void)be;
    BF_TRY(bf_cpu_check_geom(g, "avgpool", 1));
    if (!out || !inp) return BF_FAIL(BF_ERR_ARG, "avgpool_forward: NULL tensor");
    const int H = g->H, W = g->W, C = g->C, OH = g->OH, OW = g->OW;
    for (long b = 0; b < g->B; b++) {
        const float *im = inp + (size_t)b * H * W * C;
        for (int oh = 0; oh < OH; oh++) {
            int h0, h1;
            clip(oh * g->SH - g->PT, g->KH, H, &h0, &h1);
            for (int ow = 0; ow < OW; ow++) {
                int w0, w1;
                clip(ow * g->SW - g->PL, g->KW, W, &w0, &w1);
                float *restrict o = out + (((size_t)b * OH + oh) * OW + ow) * C;
                memset(o, 0, (size_t)C * sizeof(float));
                for (int ih = h0; ih < h1; ih++) {
                    /* the window's cells of one input row are contiguous: (w1-w0)*C floats */
                    const float *restrict x = im + ((size_t)ih * W + w0) * C;
                    for (int iw = w0; iw < w1; iw++, x += C)
                        for (int c = 0; c < C; c++) o[c] += x[c];
                }
                const float inv = 1.0f / (float)((h1 - h0) * (w1 - w0));
                for (int c = 0; c < C; c++) o[c] *= inv;
            }
        }
    }
    return BF_OK;
}

// dinp (B,H,W,C) = dout (B,OH,OW,C) / count spread over the valid cells of each window
bf_status bf_cpu_avgpool_backward(bf_backend *be, float *dinp, const float *dout,
                                  const bf_conv_geom *g) {
    (void)be;
    BF_TRY(bf_cpu_check_geom(g, "avgpool", 1));
    if (!dinp) return BF_OK;
    if (!dout) return BF_FAIL(BF_ERR_ARG, "avgpool_backward: NULL tensor");
    const int H = g->H, W = g->W, C = g->C, OH = g->OH, OW = g->OW;
    memset(dinp, 0, (size_t)g->B * H * W * C * sizeof(float));
    for (long b = 0; b < g->B; b++) {
        float *dim = dinp + (size_t)b * H * W * C;
        for (int oh = 0; oh < OH; oh++) {
            int h0, h1;
            clip(oh * g->SH - g->PT, g->KH, H, &h0, &h1);
            for (int ow = 0; ow < OW; ow++) {
                int w0, w1;
                clip(ow * g->SW - g->PL, g->KW, W, &w0, &w1);
                const float *restrict go = dout + (((size_t)b * OH + oh) * OW + ow) * C;
                const float inv = 1.0f / (float)((h1 - h0) * (w1 - w0));
                for (int ih = h0; ih < h1; ih++) {
                    float *restrict dx = dim + ((size_t)ih * W + w0) * C;
                    for (int iw = w0; iw < w1; iw++, dx += C)
                        for (int c = 0; c < C; c++) dx[c] += go[c] * inv;
                }
            }
        }
    }
    return BF_OK;
}
