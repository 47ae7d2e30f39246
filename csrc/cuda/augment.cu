/* augment.cu - RandomFlip, RandomCrop, RandomTranslation, RandomRotation,
 * RandomZoom, RandomContrast, GaussianNoise and GaussianDropout on CUDA, with the CPU's draws and sampling
 * (core/augment_geom.h). Forward: one thread per output element gathers its
 * (up to 2 x 2) taps. Backward: dinp zeroed, then one thread per output
 * element scatters onto the same taps (atomicAdd: taps of neighbouring pixels
 * overlap under bilinear sampling). RandomContrast: one block per (sample,
 * channel) reduces the mean (in double) and then maps the block's pixels. */
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

#define AUG_THREADS 256

// out (N) = inp + stddev z, inp (1 + stddev z) or a draw (noise 3); backward (fwd 0): dinp = dout times d out / d inp
__global__ void noise_kernel(float *out, const float *inp, bf_augment a, long n, int fwd) {
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < n; e += (long)gridDim.x * blockDim.x)
        out[e] = a.noise == 3 ? (fwd ? bf_aug_draw(&a, (uint64_t)e) : 0.0f)
                 : fwd && a.noise == 1 ? __fadd_rn(inp[e], __fmul_rn(a.stddev, bf_aug_normal(a.seed, (uint64_t)e)))
                                       : __fmul_rn(inp[e], bf_aug_noise_scale(&a, (uint64_t)e));
}

// the block's sum of each thread's v (all threads get it)
__device__ double aug_block_sum(double v, double *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    const double s = sh[0];
    __syncthreads();
    return s;
}

// out (B,H,W,C) = clip((inp - m) * f_b + m), m the mean over (H,W); block (b, c)
__global__ void contrast_forward_kernel(float *out, const float *inp, bf_augment a) {
    __shared__ double sh[AUG_THREADS];
    const long HW = (long)a.H * a.W, n = (long)a.B * a.C;
    for (long bc = blockIdx.x; bc < n; bc += gridDim.x) {
        const int b = (int)(bc / a.C), c = (int)(bc % a.C);
        bf_aug_sample s;
        bf_aug_sample_of(&a, b, &s);
        const float *x = inp + (long)b * HW * a.C + c;
        float *o = out + (long)b * HW * a.C + c;
        double t = 0.0;
        for (long p = threadIdx.x; p < HW; p += blockDim.x) t += x[p * a.C];
        const float m = (float)(aug_block_sum(t, sh) / (double)HW);
        for (long p = threadIdx.x; p < HW; p += blockDim.x) {
            const float v = __fadd_rn(__fmul_rn(__fsub_rn(x[p * a.C], m), s.contrast), m);
            o[p * a.C] = v < a.v_lo ? a.v_lo : v > a.v_hi ? a.v_hi : v;
        }
    }
}

// dinp (B,H,W,C) = f g + (1 - f) mean(g), g = dout where out was not clipped; block (b, c)
__global__ void contrast_backward_kernel(float *dinp, const float *dout, bf_augment a) {
    __shared__ double sh[AUG_THREADS];
    const long HW = (long)a.H * a.W, n = (long)a.B * a.C;
    for (long bc = blockIdx.x; bc < n; bc += gridDim.x) {
        const int b = (int)(bc / a.C), c = (int)(bc % a.C);
        bf_aug_sample s;
        bf_aug_sample_of(&a, b, &s);
        const long off = (long)b * HW * a.C + c;
        double t = 0.0;
        for (long p = threadIdx.x; p < HW; p += blockDim.x) {
            const float y = a.out[off + p * a.C];
            if (y > a.v_lo && y < a.v_hi) t += dout[off + p * a.C];
        }
        const float mg = __fmul_rn((float)(aug_block_sum(t, sh) / (double)HW), 1.0f - s.contrast);
        for (long p = threadIdx.x; p < HW; p += blockDim.x) {
            const float y = a.out[off + p * a.C];
            const float g = y > a.v_lo && y < a.v_hi ? dout[off + p * a.C] : 0.0f;
            dinp[off + p * a.C] = __fadd_rn(__fmul_rn(s.contrast, g), mg);
        }
    }
}

static bf_status check(const char *op, const bf_augment *a) {
    if (!a || a->B < 0 || a->H <= 0 || a->W <= 0 || a->C <= 0 || a->OH <= 0 || a->OW <= 0 || a->OH > a->H ||
        a->OW > a->W || ((a->contrast || a->noise) && (a->OH != a->H || a->OW != a->W)))
        return BF_FAIL(BF_ERR_INTERNAL, "%s: bad geometry", op);
    return BF_OK;
}

bf_status bf_cuda_augment_forward(bf_backend *be, float *out, const float *inp, const bf_augment *a) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check("augment_forward", a));
    const long total = (long)a->B * a->OH * a->OW * a->C;
    if (total == 0) return BF_OK;
    if (a->noise) {
        noise_kernel<<<bf_cuda_grid(total, 256), 256, 0, st->stream>>>(out, inp, *a, total, 1);
        BF_CUDA_LAUNCHED(st, noise_kernel);
        return BF_OK;
    }
    if (a->contrast) {
        const long n = (long)a->B * a->C;
        contrast_forward_kernel<<<(unsigned)(n < 65535 ? n : 65535), AUG_THREADS, 0, st->stream>>>(out, inp, *a);
        BF_CUDA_LAUNCHED(st, contrast_forward_kernel);
        return BF_OK;
    }
    augment_forward_kernel<<<bf_cuda_grid(total, 256), 256, 0, st->stream>>>(out, inp, *a, total);
    BF_CUDA_LAUNCHED(st, augment_forward_kernel);
    return BF_OK;
}

bf_status bf_cuda_augment_backward(bf_backend *be, float *dinp, const float *dout, const bf_augment *a) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check("augment_backward", a));
    if (!dinp) return BF_OK;
    const long total = (long)a->B * a->OH * a->OW * a->C;
    if (a->noise) {
        if (total == 0) return BF_OK;
        noise_kernel<<<bf_cuda_grid(total, 256), 256, 0, st->stream>>>(dinp, dout, *a, total, 0);
        BF_CUDA_LAUNCHED(st, noise_kernel);
        return BF_OK;
    }
    if (a->contrast) {
        const long n = (long)a->B * a->C;
        if (!a->out) return BF_FAIL(BF_ERR_INTERNAL, "augment_backward: RandomContrast needs its forward's output");
        if (n == 0) return BF_OK;
        contrast_backward_kernel<<<(unsigned)(n < 65535 ? n : 65535), AUG_THREADS, 0, st->stream>>>(dinp, dout, *a);
        BF_CUDA_LAUNCHED(st, contrast_backward_kernel);
        return BF_OK;
    }
    BF_CUDA_CHECK(st, cudaMemsetAsync(dinp, 0, sizeof(float) * (size_t)a->B * a->H * a->W * a->C, st->stream));
    if (total == 0) return BF_OK;
    augment_backward_kernel<<<bf_cuda_grid(total, 256), 256, 0, st->stream>>>(dinp, dout, *a, total);
    BF_CUDA_LAUNCHED(st, augment_backward_kernel);
    return BF_OK;
}
