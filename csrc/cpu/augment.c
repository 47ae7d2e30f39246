/* augment.c - RandomFlip, RandomCrop, RandomTranslation, RandomRotation,
 * RandomZoom, RandomContrast, GaussianNoise and GaussianDropout on the CPU (geometry and draws in
 * core/augment_geom.h, shared with CUDA). Forward gathers each output pixel
 * from its (up to 2 x 2) source taps; backward zeroes dinp and scatters each
 * output gradient back onto the same taps with the same weights (the
 * transpose; taps in the fill region get nothing). RandomContrast has no
 * geometry: per (sample, channel) a mean over the image, then an affine map
 * and a clip; its backward is f g + (1 - f) mean(g) over the unclipped pixels.
 * GaussianNoise / GaussianDropout add / multiply per-element normal noise. */
#include <string.h>

#include "augment_geom.h"
#include "cpu_ops.h"

static bf_status check(const char *op, const bf_augment *a) {
    if (!a || a->B < 0 || a->H <= 0 || a->W <= 0 || a->C <= 0 || a->OH <= 0 || a->OW <= 0 || a->OH > a->H ||
        a->OW > a->W || ((a->contrast || a->noise) && (a->OH != a->H || a->OW != a->W)))
        return BF_FAIL(BF_ERR_INTERNAL, "%s: bad geometry", op);
    return BF_OK;
}

// out (B,H,W,C) = clip((inp - m) * f_b + m), m (B,C) the mean over (H,W)
static void contrast_forward(float *out, const float *inp, const bf_augment *a) {
    const long HW = (long)a->H * a->W;
    const int C = a->C;
    for (int b = 0; b < a->B; b++) {
        bf_aug_sample s;
        bf_aug_sample_of(a, b, &s);
        const float *x = inp + (long)b * HW * C;
        float *o = out + (long)b * HW * C;
        for (int c = 0; c < C; c++) {
            double sum = 0.0;
            for (long p = 0; p < HW; p++) sum += x[p * C + c];
            const float m = (float)(sum / (double)HW);
            for (long p = 0; p < HW; p++) {
                float v = (x[p * C + c] - m) * s.contrast + m;
                o[p * C + c] = v < a->v_lo ? a->v_lo : v > a->v_hi ? a->v_hi : v;
            }
        }
    }
}

// dinp (B,H,W,C) = f g + (1 - f) mean(g) per (b, c), g = dout where out (B,H,W,C) was not clipped, else 0
static void contrast_backward(float *dinp, const float *dout, const bf_augment *a) {
    const long HW = (long)a->H * a->W;
    const int C = a->C;
    for (int b = 0; b < a->B; b++) {
        bf_aug_sample s;
        bf_aug_sample_of(a, b, &s);
        const float *g = dout + (long)b * HW * C, *y = a->out + (long)b * HW * C;
        float *d = dinp + (long)b * HW * C;
        for (int c = 0; c < C; c++) {
            double sum = 0.0;
            for (long p = 0; p < HW; p++)
                if (y[p * C + c] > a->v_lo && y[p * C + c] < a->v_hi) sum += g[p * C + c];
            const float mg = (float)(sum / (double)HW) * (1.0f - s.contrast);
            for (long p = 0; p < HW; p++) {
                const float gi = y[p * C + c] > a->v_lo && y[p * C + c] < a->v_hi ? g[p * C + c] : 0.0f;
                d[p * C + c] = s.contrast * gi + mg;
            }
        }
    }
}

// out (N) = inp + stddev z (GaussianNoise), inp (1 + stddev z) (GaussianDropout) or a draw (keras.random), N = B*H*W*C
static void noise_forward(float *out, const float *inp, const bf_augment *a) {
    const long n = (long)a->B * a->H * a->W * a->C;
    if (a->noise == 3) { /* keras.random: the draw itself */
        for (long e = 0; e < n; e++) out[e] = bf_aug_draw(a, (uint64_t)e);
        return;
    }
    for (long e = 0; e < n; e++)
        out[e] = a->noise == 1 ? inp[e] + a->stddev * bf_aug_normal(a->seed, (uint64_t)e)
                               : inp[e] * bf_aug_noise_scale(a, (uint64_t)e);
}

// out (B,OH,OW,C) = inp (B,H,W,C) sampled at each sample's source coordinates
bf_status bf_cpu_augment_forward(bf_backend *be, float *out, const float *inp, const bf_augment *a) {
    (void)be;
    BF_TRY(check("augment_forward", a));
    if (a->noise) {
        noise_forward(out, inp, a);
        return BF_OK;
    }
    if (a->contrast) {
        contrast_forward(out, inp, a);
        return BF_OK;
    }
    const int C = a->C;
    for (int b = 0; b < a->B; b++) {
        bf_aug_sample s;
        bf_aug_sample_of(a, b, &s);
        const float *img = inp + (long)b * a->H * a->W * C;
        for (int y = 0; y < a->OH; y++)
            for (int x = 0; x < a->OW; x++) {
                float fy, fx, wy[2], wx[2];
                long iy[2], ix[2];
                float *o = out + (((long)b * a->OH + y) * a->OW + x) * C;
                bf_aug_source(a, &s, y, x, &fy, &fx);
                int ny = bf_aug_taps(fy, a->H, a->fill, a->bilinear, iy, wy);
                int nx = bf_aug_taps(fx, a->W, a->fill, a->bilinear, ix, wx);
                for (int c = 0; c < C; c++) {
                    float v = 0.0f;
                    for (int i = 0; i < ny; i++)
                        for (int j = 0; j < nx; j++) {
                            float t = iy[i] >= 0 && ix[j] >= 0 ? img[(iy[i] * a->W + ix[j]) * C + c] : a->fill_value;
                            v = (i | j) ? v + wy[i] * wx[j] * t : wy[i] * wx[j] * t;
                        }
                    o[c] = v;
                }
            }
    }
    return BF_OK;
}

// dinp (B,H,W,C) = transpose of the forward sampling applied to dout (B,OH,OW,C)
bf_status bf_cpu_augment_backward(bf_backend *be, float *dinp, const float *dout, const bf_augment *a) {
    (void)be;
    BF_TRY(check("augment_backward", a));
    if (!dinp) return BF_OK;
    if (a->noise) { /* dinp = dout times the forward's factor (1 for GaussianNoise, 0 for a draw) */
        const long n = (long)a->B * a->H * a->W * a->C;
        if (a->noise == 3) {
            memset(dinp, 0, sizeof(float) * (size_t)n);
            return BF_OK;
        }
        for (long e = 0; e < n; e++) dinp[e] = dout[e] * bf_aug_noise_scale(a, (uint64_t)e);
        return BF_OK;
    }
    if (a->contrast) {
        if (!a->out) return BF_FAIL(BF_ERR_INTERNAL, "augment_backward: RandomContrast needs its forward's output");
        contrast_backward(dinp, dout, a);
        return BF_OK;
    }
    const int C = a->C;
    memset(dinp, 0, sizeof(float) * (size_t)a->B * (size_t)a->H * (size_t)a->W * (size_t)C);
    for (int b = 0; b < a->B; b++) {
        bf_aug_sample s;
        bf_aug_sample_of(a, b, &s);
        float *img = dinp + (long)b * a->H * a->W * C;
        for (int y = 0; y < a->OH; y++)
            for (int x = 0; x < a->OW; x++) {
                float fy, fx, wy[2], wx[2];
                long iy[2], ix[2];
                const float *g = dout + (((long)b * a->OH + y) * a->OW + x) * C;
                bf_aug_source(a, &s, y, x, &fy, &fx);
                int ny = bf_aug_taps(fy, a->H, a->fill, a->bilinear, iy, wy);
                int nx = bf_aug_taps(fx, a->W, a->fill, a->bilinear, ix, wx);
                for (int i = 0; i < ny; i++)
                    for (int j = 0; j < nx; j++) {
                        if (iy[i] < 0 || ix[j] < 0) continue;
                        float w = wy[i] * wx[j];
                        float *d = img + (iy[i] * a->W + ix[j]) * C;
                        for (int c = 0; c < C; c++) d[c] += w * g[c];
                    }
            }
    }
    return BF_OK;
}
