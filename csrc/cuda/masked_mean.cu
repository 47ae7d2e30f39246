/* masked_mean.cu - GlobalAveragePooling1D over the steps a mask keeps, as
 * csrc/cpu/masked_mean.c: one thread per (b, c) walks the T steps in order
 * (the CPU's summation order); a row with no step kept is 0/0 = NaN, as
 * Keras. Backward overwrites dinp. */
#include "cuda_ops.h"

// out (B,C) <- inp (B,T,C), mask (B,T)
__global__ void masked_mean_forward_kernel(float *out, const float *inp, const float *mask, int B, int T, int C) {
    const long total = (long)B * C;
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < total; e += (long)gridDim.x * blockDim.x) {
        const long b = e / C;
        const int c = (int)(e % C);
        float s = 0.0f, n = 0.0f;
        for (int t = 0; t < T; t++)
            if (mask[b * T + t] > 0.5f) {
                s += inp[(b * T + t) * C + c];
                n += 1.0f;
            }
        out[e] = s / n;
    }
}

// dinp (B,T,C) <- dout (B,C), mask (B,T)
__global__ void masked_mean_backward_kernel(float *dinp, const float *dout, const float *mask, int B, int T, int C) {
    const long total = (long)B * T * C;
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < total; e += (long)gridDim.x * blockDim.x) {
        const long b = e / ((long)T * C), bt = e / C;
        float n = 0.0f;
        for (int t = 0; t < T; t++) n += mask[b * T + t] > 0.5f ? 1.0f : 0.0f;
        dinp[e] = mask[bt] > 0.5f ? dout[b * C + e % C] / n : 0.0f;
    }
}

bf_status bf_cuda_masked_mean_forward(bf_backend *be, float *out, const float *inp, const float *mask, int B, int T,
                                      int C) {
    BF_CUDA_ENTER(st, be);
    if (B < 0 || T <= 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "masked mean: bad sizes B=%d T=%d C=%d", B, T, C);
    if (B == 0) return BF_OK;
    masked_mean_forward_kernel<<<bf_cuda_grid((long)B * C, 256), 256, 0, st->stream>>>(out, inp, mask, B, T, C);
    BF_CUDA_LAUNCHED(st, masked_mean_forward_kernel);
    return BF_OK;
}

bf_status bf_cuda_masked_mean_backward(bf_backend *be, float *dinp, const float *dout, const float *mask, int B, int T,
                                       int C) {
    BF_CUDA_ENTER(st, be);
    if (B < 0 || T <= 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "masked mean: bad sizes B=%d T=%d C=%d", B, T, C);
    if (B == 0) return BF_OK;
    masked_mean_backward_kernel<<<bf_cuda_grid((long)B * T * C, 256), 256, 0, st->stream>>>(dinp, dout, mask, B, T,
                                                                                           C);
    BF_CUDA_LAUNCHED(st, masked_mean_backward_kernel);
    return BF_OK;
}
