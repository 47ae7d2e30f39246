/* image_resize.c - tf.image.resize's 'bilinear' and 'nearest' (half-pixel
 * centers, antialias=False) from uint8 to float32, for the image folder
 * data sets' worker threads (called without the GIL). The arithmetic is
 * TensorFlow's (and tests/test_image_resize.py's NumPy reference's) in
 * float32, step for step and without fused multiply-adds (the build targets
 * x86-64-v2, which has none): source x = (i + 0.5) * scale - 0.5, lerp
 * a + (b - a) * w along the width and then the height. */
#include <math.h>

#include "image_resize.h"

/* One axis: the source coordinate of output index i, as float32. */
static inline float src_coord(long i, float scale) { return ((float)i + 0.5f) * scale - 0.5f; }

/* One axis' lower / upper source index and weight for output index i (TensorFlow's half-pixel rule). */
static inline void axis_taps(long i, float scale, long n_in, long *lo, long *hi, float *w) {
    float x = src_coord(i, scale), f = floorf(x);
    *w = x - f;
    *lo = f < 0.0f ? 0 : (long)f;
    if (*lo > n_in - 1) *lo = n_in - 1;
    *hi = (long)fminf(ceilf(x), (float)(n_in - 1));
    if (*hi < 0) *hi = 0;
    if (*hi > n_in - 1) *hi = n_in - 1;   /* n_in - 1 above 2^24 may round up as a float */
}

/* One output row of nj pixels: the width lerps of the top and bottom source rows, then the height lerp
 * (inlined twice by bilinear: for packed RGB, whose constant strides the compiler unrolls, and any strides). */
static inline void lerp_row(float *o, const unsigned char *top, const unsigned char *bot, const ptrdiff_t *xlo,
                            const ptrdiff_t *xhi, const float *wxs, float wy, long nj, long C, ptrdiff_t ic,
                            ptrdiff_t oj, ptrdiff_t oc) {
    for (long j = 0; j < nj; j++) {
        const unsigned char *tl = top + xlo[j], *tr = top + xhi[j], *bl = bot + xlo[j], *br = bot + xhi[j];
        float wx = wxs[j], *oo = o + j * oj;
        for (long c = 0; c < C; c++) {
            float a = (float)tl[c * ic], b = (float)tr[c * ic];
            float t = a + (b - a) * wx;
            a = (float)bl[c * ic];
            b = (float)br[c * ic];
            float u = a + (b - a) * wx;
            oo[c * oc] = t + (u - t) * wy;
        }
    }
}

enum { COL_TILE = 256 };   /* columns whose taps are computed once per tile, on the stack (6 KiB) */

static void bilinear(float *out, const unsigned char *inp, long H, long W, long C, const ptrdiff_t is[3], long th,
                     long tw, const ptrdiff_t os[3]) {
    float sy = (float)((double)H / (double)th), sx = (float)((double)W / (double)tw);
    ptrdiff_t xlo[COL_TILE], xhi[COL_TILE];
    float wxs[COL_TILE];
    for (long j0 = 0; j0 < tw; j0 += COL_TILE) {
        long nj = tw - j0 < COL_TILE ? tw - j0 : COL_TILE;
        for (long j = 0; j < nj; j++) {
            long lo, hi;
            axis_taps(j0 + j, sx, W, &lo, &hi, &wxs[j]);
            xlo[j] = lo * is[1];
            xhi[j] = hi * is[1];
        }
        for (long i = 0; i < th; i++) {
            long ylo, yhi;
            float wy;
            axis_taps(i, sy, H, &ylo, &yhi, &wy);
            const unsigned char *top = inp + ylo * is[0], *bot = inp + yhi * is[0];
            float *orow = out + i * os[0] + j0 * os[1];
            if (C == 3 && is[2] == 1 && os[2] == 1) lerp_row(orow, top, bot, xlo, xhi, wxs, wy, nj, 3, 1, os[1], 1);
            else lerp_row(orow, top, bot, xlo, xhi, wxs, wy, nj, C, is[2], os[1], os[2]);
        }
    }
}

/* Source index floor((i + 0.5) * scale), at most n_in - 1. */
static inline long nearest_index(long i, float scale, long n_in) {
    long k = (long)floorf(((float)i + 0.5f) * scale);
    return k > n_in - 1 ? n_in - 1 : k;
}

static void nearest(float *out, const unsigned char *inp, long H, long W, long C, const ptrdiff_t is[3], long th,
                    long tw, const ptrdiff_t os[3]) {
    float sy = (float)((double)H / (double)th), sx = (float)((double)W / (double)tw);
    for (long i = 0; i < th; i++) {
        const unsigned char *row = inp + nearest_index(i, sy, H) * is[0];
        for (long j = 0; j < tw; j++) {
            const unsigned char *p = row + nearest_index(j, sx, W) * is[1];
            float *o = out + i * os[0] + j * os[1];
            for (long c = 0; c < C; c++) o[c * os[2]] = (float)p[c * is[2]];
        }
    }
}

bf_status bf_cpu_image_resize(float *out, const unsigned char *inp, long H, long W, long C, const ptrdiff_t is[3],
                              long th, long tw, const ptrdiff_t os[3], bf_resize_mode mode) {
    if (!out || !inp) return BF_FAIL(BF_ERR_ARG, "image_resize: null buffer");
    if (H <= 0 || W <= 0 || C <= 0 || th <= 0 || tw <= 0)
        return BF_FAIL(BF_ERR_SHAPE, "image_resize: sizes must be positive, got input (%ld, %ld, %ld), output (%ld, %ld)",
                       H, W, C, th, tw);
    if (mode == BF_RESIZE_BILINEAR) bilinear(out, inp, H, W, C, is, th, tw, os);
    else if (mode == BF_RESIZE_NEAREST) nearest(out, inp, H, W, C, is, th, tw, os);
    else return BF_FAIL(BF_ERR_ARG, "image_resize: unknown mode %d", (int)mode);
    return BF_OK;
}
