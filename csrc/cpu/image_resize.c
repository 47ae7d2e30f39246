/* image_resize.c - tf.image.resize's 'bilinear' and 'nearest' (half-pixel
 * centers, antialias=False) from uint8 to float32, for the image folder
 * data sets' worker threads (called without the GIL). The arithmetic is
 * TensorFlow's and image_folder.py's reference in float32, step for step
 * and without fused multiply-adds (the build targets x86-64-v2, which has
 * none): source x = (i + 0.5) * scale - 0.5, lerp a + (b - a) * w along the
 * width and then the height. */
#include <math.h>

#include "image_resize.h"

/* One axis: the source coordinate of output index i, as float32. */
static inline float src_coord(long i, float scale) { return ((float)i + 0.5f) * scale - 0.5f; }

static void bilinear(float *out, const unsigned char *inp, long H, long W, long C, const ptrdiff_t is[3], long th,
                     long tw, const ptrdiff_t os[3]) {
    float sy = (float)((double)H / (double)th), sx = (float)((double)W / (double)tw);
    for (long i = 0; i < th; i++) {
        float y = src_coord(i, sy), fy = floorf(y), wy = y - fy;
        long ylo = fy < 0.0f ? 0 : (long)fy, yhi = (long)fminf(ceilf(y), (float)(H - 1));
        if (ylo > H - 1) ylo = H - 1;
        if (yhi < 0) yhi = 0;
        const unsigned char *top = inp + ylo * is[0], *bot = inp + yhi * is[0];
        float *orow = out + i * os[0];
        for (long j = 0; j < tw; j++) {
            float x = src_coord(j, sx), fx = floorf(x), wx = x - fx;
            long xlo = fx < 0.0f ? 0 : (long)fx, xhi = (long)fminf(ceilf(x), (float)(W - 1));
            if (xlo > W - 1) xlo = W - 1;
            if (xhi < 0) xhi = 0;
            const unsigned char *tl = top + xlo * is[1], *tr = top + xhi * is[1];
            const unsigned char *bl = bot + xlo * is[1], *br = bot + xhi * is[1];
            float *o = orow + j * os[1];
            for (long c = 0; c < C; c++) {
                float a = (float)tl[c * is[2]], b = (float)tr[c * is[2]];
                float t = a + (b - a) * wx;
                a = (float)bl[c * is[2]];
                b = (float)br[c * is[2]];
                float u = a + (b - a) * wx;
                o[c * os[2]] = t + (u - t) * wy;
            }
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
