/* rescale.cu - Normalization on CUDA, as csrc/cpu/rescale.c:
 * out = (x - mean[c]) / max(sqrt(var[c]), eps) * scale + offset, mean / var
 * optional; backward dinp = dout / max(sqrt(var[c]), eps) * scale. */
#include "cuda_ops.h"

// out (N,C)
__global__ void rescale_forward_kernel(float *out, const float *inp, const float *mean, const float *var, float scale,
                                       float offset, float eps, long n, int C) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const int c = (int)(i % C);
        float x = inp[i];
        if (mean) x = __fsub_rn(x, mean[c]);
        if (var) x = __fdiv_rn(x, fmaxf(sqrtf(var[c]), eps));
        out[i] = __fadd_rn(__fmul_rn(x, scale), offset);
    }
}

// dinp (N,C)
__global__ void rescale_backward_kernel(float *dinp, const float *dout, const float *var, float scale, float eps,
                                        long n, int C) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float d = dout[i];
        if (var) d = __fdiv_rn(d, fmaxf(sqrtf(var[(int)(i % C)]), eps));
        dinp[i] = __fmul_rn(d, scale);
    }
}

bf_status bf_cuda_rescale_forward(bf_backend *be, float *out, const float *inp, const float *mean, const float *var,
                                  float scale, float offset, float eps, long N, int C) {
    BF_CUDA_ENTER(st, be);
    if (N < 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "rescale_forward: bad sizes N=%ld C=%d", N, C);
    const long n = N * (long)C;
    if (n == 0) return BF_OK;
    rescale_forward_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(out, inp, mean, var, scale, offset, eps, n, C);
    BF_CUDA_LAUNCHED(st, rescale_forward_kernel);
    return BF_OK;
}

bf_status bf_cuda_rescale_backward(bf_backend *be, float *dinp, const float *dout, const float *var, float scale,
                                   float eps, long N, int C) {
    BF_CUDA_ENTER(st, be);
    if (N < 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "rescale_backward: bad sizes N=%ld C=%d", N, C);
    const long n = N * (long)C;
    if (n == 0 || !dinp) return BF_OK;
    rescale_backward_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(dinp, dout, var, scale, eps, n, C);
    BF_CUDA_LAUNCHED(st, rescale_backward_kernel);
    return BF_OK;
}
