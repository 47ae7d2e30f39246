/* augment_geom.h - per-sample geometry of the random image augmentations
 * (bf_augment, backend.h), shared by the CPU (csrc/cpu/augment.c) and CUDA
 * (csrc/cuda/augment.cu) kernels so both draw and sample the same way.
 * Draw k of sample b: the top 24 bits of splitmix64(seed ^ (4b+k) * golden)
 * times 2^-24, in [0, 1) (k 0: flip, 1: crop, 2: dy, 3: dx; crop uses b = 0,
 * one window for the batch, as Keras; rotation, zoom y, zoom x and contrast
 * use 2^40 + 4b + k, k = 0..3). Rotation and zoom build Keras's affine
 * matrices (_compute_affine_matrix, _get_zoom_matrix). Sampling follows
 * jax.scipy.ndimage.map_coordinates (what Keras 3's affine_transform calls):
 * nearest rounds half away from zero; bilinear takes floor and floor + 1
 * with weights (1 - f, f); the fill mode maps each tap's index (reflect
 * "d c b a | a b c d | d c b a", nearest clamps, wrap is modulo, constant
 * reads fill_value outside). */
#ifndef BF_AUGMENT_GEOM_H
#define BF_AUGMENT_GEOM_H

#include <math.h>
#include <stdint.h>

#include "backend.h"
#include "counter_hash.h"

#ifdef __CUDACC__
#define BF_AHD __host__ __device__ __forceinline__
#else
#define BF_AHD static inline
#endif

typedef struct {
    int flip_y, flip_x, h0, w0;
    float dy, dx;
    /* rotation / zoom: the source of (y, x) is (b0 x + b1 y + b2, a0 x + a1 y + a2) */
    int affine;
    float a0, a1, a2, b0, b1, b2;
    float contrast;  /* RandomContrast's factor */
} bf_aug_sample;

/* the draws of rotation, zoom and contrast: counters 2^40 + 4b + k, apart from
 * flip / crop / translate's */
#define BF_AUG_MORE (1ull << 40)

/* Keras's _compute_affine_matrix for a rotation by `deg` degrees about the
 * image centre, in float32 as Keras computes it */
BF_AHD void bf_aug_rotation(float deg, int H, int W, bf_aug_sample *s) {
    const float th = deg * (float)(3.14159265358979323846 / 180.0);
    const float cx = 0.5f * (float)(W - 1), cy = 0.5f * (float)(H - 1);
    const float c = cosf(th), sn = sinf(th);
    s->a0 = c;
    s->a1 = -sn;
    s->a2 = cx - cx * s->a0 - cy * s->a1;
    s->b0 = sn;
    s->b1 = c;
    s->b2 = cy - cx * s->b0 - cy * s->b1;
    s->affine = 1;
}

/* Keras's _get_zoom_matrix for zooms (zx, zy) */
BF_AHD void bf_aug_zoom(float zy, float zx, int H, int W, bf_aug_sample *s) {
    s->a0 = zx;
    s->a1 = 0.0f;
    s->a2 = ((float)W - 1.0f) / 2.0f * (1.0f - zx);
    s->b0 = 0.0f;
    s->b1 = zy;
    s->b2 = ((float)H - 1.0f) / 2.0f * (1.0f - zy);
    s->affine = 1;
}

BF_AHD float bf_aug_uniform(uint64_t seed, uint64_t i) { return bf_counter_uniform(seed, i); }

BF_AHD void bf_aug_sample_of(const bf_augment *a, int b, bf_aug_sample *s) {
    s->flip_y = s->flip_x = s->h0 = s->w0 = 0;
    s->dy = s->dx = 0.0f;
    s->affine = 0;
    s->a0 = s->b1 = s->contrast = 1.0f;
    s->a1 = s->a2 = s->b0 = s->b2 = 0.0f;
    const uint64_t k = 4ull * (uint64_t)b;
    if (a->flip) {
        int f = bf_aug_uniform(a->seed, k) <= 0.5f;
        s->flip_x = (a->flip & 1) ? f : 0;
        s->flip_y = (a->flip & 2) ? f : 0;
    }
    if (a->crop) {
        if (a->training && a->H > a->OH && a->W > a->OW) {
            s->h0 = (int)(bf_aug_uniform(a->seed, 1) * (float)(a->H - a->OH + 1));
            s->w0 = (int)(bf_aug_uniform(a->seed, 5) * (float)(a->W - a->OW + 1));
            if (s->h0 > a->H - a->OH) s->h0 = a->H - a->OH;
            if (s->w0 > a->W - a->OW) s->w0 = a->W - a->OW;
        } else {
            s->h0 = (a->H - a->OH) / 2;
            s->w0 = (a->W - a->OW) / 2;
        }
    }
    if (a->translate) {
        s->dy = (a->h_lo + (a->h_hi - a->h_lo) * bf_aug_uniform(a->seed, k + 2)) * (float)a->H;
        s->dx = (a->w_lo + (a->w_hi - a->w_lo) * bf_aug_uniform(a->seed, k + 3)) * (float)a->W;
    }
    if (a->rotate) {
        bf_aug_rotation(a->rot_lo + (a->rot_hi - a->rot_lo) * bf_aug_uniform(a->seed, BF_AUG_MORE + k), a->H, a->W, s);
    }
    if (a->zoom) {
        const float zy = a->zh_lo + (a->zh_hi - a->zh_lo) * bf_aug_uniform(a->seed, BF_AUG_MORE + k + 1);
        const float zx = a->zoom_same ? zy : a->zw_lo + (a->zw_hi - a->zw_lo) * bf_aug_uniform(a->seed, BF_AUG_MORE + k + 2);
        bf_aug_zoom(zy, zx, a->H, a->W, s);
    }
    if (a->contrast) s->contrast = a->c_lo + (a->c_hi - a->c_lo) * bf_aug_uniform(a->seed, BF_AUG_MORE + k + 3);
}

/* GaussianNoise / GaussianDropout's z ~ N(0, 1) of element e: Box-Muller of draws 2e and 2e + 1 */
BF_AHD float bf_aug_normal(uint64_t seed, uint64_t e) { return bf_counter_normal(seed, e); }

/* keras.random's draw (noise 3) for element e of the output, (B, W) elements: the stream's element e0 + e,
 * or (e0 + e) % W when one draw is shared by the batch. The truncated normal takes the first of 16 normals (elements
 * 16e + k) within 2 stddev (each falls outside with p 0.046; the last is clamped). */
#ifdef __CUDA_ARCH__
#define BF_AUG_AXPB(a, x, b) __fadd_rn(__fmul_rn((a), (x)), (b)) /* no fused multiply-add: the CPU's rounding */
#else
#define BF_AUG_AXPB(a, x, b) ((a) * (x) + (b))
#endif
BF_AHD float bf_aug_draw(const bf_augment *a, uint64_t e) {
    e += (uint64_t)a->e0;
    if (a->rshared) e %= (uint64_t)a->W;
    switch (a->rdist) {
    case 0: return BF_AUG_AXPB(a->rb, bf_counter_normal(a->seed, e), a->ra);
    case 1: return BF_AUG_AXPB(a->rb - a->ra, bf_counter_uniform(a->seed, e), a->ra);
    case 2: {
        float z = 0.0f;
        for (int k = 0; k < 16; k++) {
            z = bf_counter_normal(a->seed, 16u * e + (uint64_t)k);
            if (z >= -2.0f && z <= 2.0f) break;
        }
        z = z < -2.0f ? -2.0f : z > 2.0f ? 2.0f : z;
        return BF_AUG_AXPB(a->rb, z, a->ra);
    }
    default: return bf_counter_uniform(a->seed, e) >= a->ra ? a->rb : 0.0f;
    }
}

/* d out / d x of element e of the noise layers */
BF_AHD float bf_aug_noise_scale(const bf_augment *a, uint64_t e) {
    return a->noise == 2 ? 1.0f + a->stddev * bf_aug_normal(a->seed, e) : 1.0f;
}

/* a tap's index through the fill mode; -1: outside (constant) */
BF_AHD long bf_aug_fix(long i, long n, int fill) {
    switch (fill) {
    case BF_FILL_CONSTANT: return i >= 0 && i < n ? i : -1;
    case BF_FILL_NEAREST: return i < 0 ? 0 : i >= n ? n - 1 : i;
    case BF_FILL_WRAP: { long m = i % n; return m < 0 ? m + n : m; }
    default: { /* reflect: floor((mirror(2i+1, 2n+1) - 1) / 2), mirror(j, m) = |(j + m-1) mod 2(m-1) - (m-1)| */
        long s = 2 * n, j = 2 * i + 1, m = (j + s) % (2 * s);
        if (m < 0) m += 2 * s;
        m = m - s;
        if (m < 0) m = -m;
        return (m - 1) >= 0 ? (m - 1) / 2 : -((-(m - 1) + 1) / 2);
    }
    }
}

/* the (up to 2) taps of a coordinate on one axis: indices (-1: fill) and weights */
BF_AHD int bf_aug_taps(float f, long n, int fill, int bilinear, long *idx, float *w) {
    if (!bilinear) {
        float r = roundf(f); /* half away from zero, exactly (floorf(f + 0.5f) rounds 0.49999997 up) */
        idx[0] = bf_aug_fix((long)r, n, fill);
        w[0] = 1.0f;
        return 1;
    }
    float lo = floorf(f);
    w[1] = f - lo;
    w[0] = 1.0f - w[1];
    idx[0] = bf_aug_fix((long)lo, n, fill);
    idx[1] = bf_aug_fix((long)lo + 1, n, fill);
    return 2;
}

/* the source coordinate of output pixel (y, x) of sample s (before sampling) */
BF_AHD void bf_aug_source(const bf_augment *a, const bf_aug_sample *s, int y, int x, float *fy, float *fx) {
    int ys = y + s->h0, xs = x + s->w0;
    if (s->flip_y) ys = a->H - 1 - ys;
    if (s->flip_x) xs = a->W - 1 - xs;
    if (s->affine) { /* as Keras's affine_transform: (y, x) times the matrix, then the offset */
        *fy = ((float)ys * s->b1 + (float)xs * s->b0) + s->b2;
        *fx = ((float)ys * s->a1 + (float)xs * s->a0) + s->a2;
        return;
    }
    *fy = (float)ys - s->dy;
    *fx = (float)xs - s->dx;
}

#endif
