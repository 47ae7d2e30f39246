/* dropout.cu - inverted dropout with the counter-based mask of the CPU
 * (csrc/cpu/dropout.c; the bits of core/counter_hash.h), bit for bit: element i
 * is kept iff k >= ceil(rate * 2^24), k = top 24 bits of
 * splitmix64(seed ^ i * 0x9E3779B97F4A7C15); kept elements are scaled by
 * 1/(1-rate), dropped ones are +0 (also for Inf), the 0/1 mask is stored for
 * backward. rate == 0 is a copy (mask, when given, all ones). In place allowed. */
#include <math.h>

#include "counter_hash.h"
#include "cuda_ops.h"


// out (n) = inp * mask * scale; mask (n) = [bits(seed, i) >= thr] or NULL
__global__ void dropout_forward_kernel(float *out, float *mask, const float *inp, long n, unsigned thr,
                                       float scale, unsigned long long seed) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const unsigned keep = 0u - (unsigned)(bf_counter_bits(seed, (unsigned long long)i) >= thr);
        const float v = __fmul_rn(inp[i], scale);
        out[i] = __uint_as_float(__float_as_uint(v) & keep);
        if (mask) mask[i] = __uint_as_float(0x3f800000u & keep);
    }
}

// mask (n) = 1
__global__ void fill_ones_kernel(float *mask, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        mask[i] = 1.0f;
}

// dinp (n) = mask != 0 ? dout * scale : 0
__global__ void dropout_backward_kernel(float *dinp, const float *dout, const float *mask, long n,
                                        float scale) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        dinp[i] = mask[i] != 0.0f ? __fmul_rn(dout[i], scale) : 0.0f;
}

static bf_status check_rate(const char *op, long n, float rate) {
    if (n < 0) return BF_FAIL(BF_ERR_SHAPE, "%s: negative size %ld", op, n);
    if (!(rate >= 0.0f && rate < 1.0f))
        return BF_FAIL(BF_ERR_ARG, "%s: rate must be in [0, 1), got %g", op, (double)rate);
    return BF_OK;
}

// out (n) = inp * mask / (1-rate); mask (n) = [u(seed, i) >= rate]
bf_status bf_cuda_dropout_forward(bf_backend *be, float *out, float *mask, const float *inp,
                                  long n, float rate, uint64_t seed) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check_rate("dropout_forward", n, rate));
    if (n == 0) return BF_OK;
    if (!out || !inp) return BF_FAIL(BF_ERR_ARG, "dropout_forward: NULL tensor");
    if (rate == 0.0f) {
        if (out != inp)
            BF_CUDA_CHECK(st, cudaMemcpyAsync(out, inp, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice,
                                              st->stream));
        if (mask) {
            fill_ones_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(mask, n);
            BF_CUDA_LAUNCHED(st, fill_ones_kernel);
        }
        return BF_OK;
    }
    const float scale = 1.0f / (1.0f - rate);
    const unsigned thr = (unsigned)ceil((double)rate * 16777216.0);
    dropout_forward_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(out, mask, inp, n, thr, scale,
                                                                         (unsigned long long)seed);
    BF_CUDA_LAUNCHED(st, dropout_forward_kernel);
    return BF_OK;
}

// dinp (n) = dout * mask / (1-rate)
bf_status bf_cuda_dropout_backward(bf_backend *be, float *dinp, const float *dout,
                                   const float *mask, long n, float rate) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check_rate("dropout_backward", n, rate));
    if (n == 0 || !dinp) return BF_OK;
    if (!dout) return BF_FAIL(BF_ERR_ARG, "dropout_backward: NULL tensor");
    if (rate == 0.0f) {
        if (dinp != dout)
            BF_CUDA_CHECK(st, cudaMemcpyAsync(dinp, dout, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice,
                                              st->stream));
        return BF_OK;
    }
    if (!mask) return BF_FAIL(BF_ERR_ARG, "dropout_backward: the mask is required when rate > 0");
    const float scale = 1.0f / (1.0f - rate);
    dropout_backward_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(dinp, dout, mask, n, scale);
    BF_CUDA_LAUNCHED(st, dropout_backward_kernel);
    return BF_OK;
}
