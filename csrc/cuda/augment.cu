/* augment.cu - RandomFlip, RandomCrop and RandomTranslation on CUDA, with the
 * CPU's draws and sampling (core/augment_geom.h). Forward: one thread per
 * output element gathers its (up to 2 x 2) taps. Backward: dinp zeroed, then
 * one thread per output element scatters onto the same taps (atomicAdd: taps
 * of neighbouring pixels overlap under bilinear sampling). */
#include "cuda_ops.h"  /* first: the core headers with C linkage */
#include "augment_geom.h"

// out (B,OH,OW,C) from inp (B,H,W,C)
__global__ void augment_forward_kernel(float *out, const float *inp, bf_augment a, long total) {
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < total; e += (long)gridDim.x * blockDim.x) {
        const int c = (int)(e % a.C), x = (int)((e / a.C) % a.OW), y = (int)((e / a.C / a.OW) % a.OH);
        const int b = (int)(e / ((long)a.C * a.OW * a.OH));
        bf_aug_sample s;
        bf_aug_sample_of(&a, b, &s);
        float fy, fx, wy[2], wx[2];
        long iy[2], ix[2];
        bf_aug_source(&a, &s, y, x, &fy, &fx);
        const int ny = bf_aug_taps(fy, a.H, a.fill, a.bilinear, iy, wy);
        const int nx = bf_aug_taps(fx, a.W, a.fill, a.bilinear, ix, wx);
        const float *img = inp + (long)b * a.H * a.W * a.C;
        float v = 0.0f;
        for (int i = 0; i < ny; i++)
            for (int j = 0; j < nx; j++) {
                const float t = iy[i] >= 0 && ix[j] >= 0 ? img[(iy[i] * a.W + ix[j]) * a.C + c] : a.fill_value;
                v = (i | j) ? __fadd_rn(v, __fmul_rn(__fmul_rn(wy[i], wx[j]), t)) : __fmul_rn(__fmul_rn(wy[i], wx[j]), t);
            }
        out[e] = v;
    }
}

// dinp (B,H,W,C) += taps' weights * dout (B,OH,OW,C)
__global__ void augment_backward_kernel(float *dinp, const float *dout, bf_augment a, long total) {
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < total; e += (long)gridDim.x * blockDim.x) {
        const int c = (int)(e % a.C), x = (int)((e / a.C) % a.OW), y = (int)((e / a.C / a.OW) % a.OH);
        const int b = (int)(e / ((long)a.C * a.OW * a.OH));
        bf_aug_sample s;
        bf_aug_sample_of(&a, b, &s);
        float fy, fx, wy[2], wx[2];
        long iy[2], ix[2];
        bf_aug_source(&a, &s, y, x, &fy, &fx);
        const int ny = bf_aug_taps(fy, a.H, a.fill, a.bilinear, iy, wy);
        const int nx = bf_aug_taps(fx, a.W, a.fill, a.bilinear, ix, wx);
        float *img = dinp + (long)b * a.H * a.W * a.C;
        for (int i = 0; i < ny; i++)
            for (int j = 0; j < nx; j++)
                if (iy[i] >= 0 && ix[j] >= 0) atomicAdd(img + (iy[i] * a.W + ix[j]) * a.C + c, wy[i] * wx[j] * dout[e]);
    }
}

static bf_status check(const char *op, const bf_augment *a) {
    if (!a || a->B < 0 || a->H <= 0 || a->W <= 0 || a->C <= 0 || a->OH <= 0 || a->OW <= 0 || a->OH > a->H ||
        a->OW > a->W)
        return BF_FAIL(BF_ERR_INTERNAL, "%s: bad geometry", op);
    return BF_OK;
}

bf_status bf_cuda_augment_forward(bf_backend *be, float *out, const float *inp, const bf_augment *a) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check("augment_forward", a));
    const long total = (long)a->B * a->OH * a->OW * a->C;
    if (total == 0) return BF_OK;
    augment_forward_kernel<<<bf_cuda_grid(total, 256), 256, 0, st->stream>>>(out, inp, *a, total);
    BF_CUDA_LAUNCHED(st, augment_forward_kernel);
    return BF_OK;
}

bf_status bf_cuda_augment_backward(bf_backend *be, float *dinp, const float *dout, const bf_augment *a) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check("augment_backward", a));
    if (!dinp) return BF_OK;
    const long total = (long)a->B * a->OH * a->OW * a->C;
    BF_CUDA_CHECK(st, cudaMemsetAsync(dinp, 0, sizeof(float) * (size_t)a->B * a->H * a->W * a->C, st->stream));
    if (total == 0) return BF_OK;
    augment_backward_kernel<<<bf_cuda_grid(total, 256), 256, 0, st->stream>>>(dinp, dout, *a, total);
    BF_CUDA_LAUNCHED(st, augment_backward_kernel);
    return BF_OK;
}
