/* activations.cu - elementwise activations and the row softmax, as the CPU
 * (csrc/cpu/activations.c): sigmoid in its stable two-branch form; softmax
 * subtracts the row max. Backward uses the forward output only (relu: out>0,
 * sigmoid: out(1-out), tanh: 1-out^2, softmax: out*(dout - sum(dout*out))).
 * One warp per softmax row. In place (out == inp, dinp == dout) is allowed. */
#include "cuda_ops.h"

#define BF_WARP 32
#define BF_ROWS_PER_BLOCK 8 /* warps per block in the row kernels */

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) {
        float u = __shfl_xor_sync(0xffffffffu, v, o);
        v = u > v ? u : v;
    }
    return v;
}

// out (n) = act(inp (n)) for relu / sigmoid / tanh
__global__ void act_forward_kernel(float *out, const float *inp, int act, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float x = inp[i];
        float y;
        if (act == BF_ACT_RELU) {
            y = x > 0.0f ? x : 0.0f;
        } else if (act == BF_ACT_SIGMOID) {
            if (x >= 0) y = 1.0f / (1.0f + expf(-x));
            else {
                const float e = expf(x);
                y = e / (1.0f + e);
            }
        } else {
            y = tanhf(x);
        }
        out[i] = y;
    }
}

// dinp (n) = act'(out (n)) * dout (n) for relu / sigmoid / tanh
__global__ void act_backward_kernel(float *dinp, const float *dout, const float *out, int act, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float y = out[i], dy = dout[i];
        float d;
        if (act == BF_ACT_RELU) d = y > 0.0f ? dy : 0.0f;
        else if (act == BF_ACT_SIGMOID) d = __fmul_rn(__fmul_rn(dy, y), 1.0f - y);
        else d = __fmul_rn(dy, 1.0f - __fmul_rn(y, y));
        dinp[i] = d;
    }
}

// out (N,C) = softmax over C of inp (N,C); one warp per row
__global__ void softmax_forward_kernel(float *out, const float *inp, long N, int C) {
    const int lane = threadIdx.x % BF_WARP;
    const long warps = (long)gridDim.x * (blockDim.x / BF_WARP);
    for (long r = blockIdx.x * (long)(blockDim.x / BF_WARP) + threadIdx.x / BF_WARP; r < N; r += warps) {
        const float *x = inp + r * C;
        float *y = out + r * C;
        float mx = -INFINITY;
        for (int j = lane; j < C; j += BF_WARP) mx = x[j] > mx ? x[j] : mx;
        mx = warp_max(mx);
        float s = 0.0f;
        for (int j = lane; j < C; j += BF_WARP) {
            const float e = expf(x[j] - mx);
            y[j] = e;
            s += e;
        }
        const float inv = 1.0f / warp_sum(s);
        for (int j = lane; j < C; j += BF_WARP) y[j] *= inv;
    }
}

// dinp (N,C) = out * (dout - sum_C(dout*out)); one warp per row
__global__ void softmax_backward_kernel(float *dinp, const float *dout, const float *out, long N, int C) {
    const int lane = threadIdx.x % BF_WARP;
    const long warps = (long)gridDim.x * (blockDim.x / BF_WARP);
    for (long r = blockIdx.x * (long)(blockDim.x / BF_WARP) + threadIdx.x / BF_WARP; r < N; r += warps) {
        const float *y = out + r * C, *dy = dout + r * C;
        float *dx = dinp + r * C;
        float dot = 0.0f;
        for (int j = lane; j < C; j += BF_WARP) dot += dy[j] * y[j];
        dot = warp_sum(dot);
        for (int j = lane; j < C; j += BF_WARP) dx[j] = __fmul_rn(y[j], dy[j] - dot);
    }
}

static bf_status check_sizes(const char *op, long N, int C, bf_act act) {
    if (N < 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "%s: bad sizes N=%ld C=%d", op, N, C);
    if ((int)act < BF_ACT_LINEAR || (int)act > BF_ACT_SOFTMAX)
        return BF_FAIL(BF_ERR_ARG, "unknown activation %d", (int)act);
    return BF_OK;
}

static unsigned row_blocks(long N) { return bf_cuda_grid(N, BF_ROWS_PER_BLOCK); }

// out (N,C) = act(inp (N,C)); in place allowed
bf_status bf_cuda_act_forward(bf_backend *be, float *out, const float *inp, bf_act act, long N,
                              int C) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check_sizes("act_forward", N, C, act));
    const long n = N * (long)C;
    if (n == 0) return BF_OK;
    if (act == BF_ACT_LINEAR) {
        if (out != inp)
            BF_CUDA_CHECK(st, cudaMemcpyAsync(out, inp, (size_t)n * sizeof(float),
                                              cudaMemcpyDeviceToDevice, st->stream));
    } else if (act == BF_ACT_SOFTMAX) {
        softmax_forward_kernel<<<row_blocks(N), BF_ROWS_PER_BLOCK * BF_WARP, 0, st->stream>>>(out, inp, N, C);
        BF_CUDA_LAUNCHED(st, softmax_forward_kernel);
    } else {
        act_forward_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(out, inp, (int)act, n);
        BF_CUDA_LAUNCHED(st, act_forward_kernel);
    }
    return BF_OK;
}

// dinp (N,C) = act'(out) * dout; in place on dout allowed
bf_status bf_cuda_act_backward(bf_backend *be, float *dinp, const float *dout, const float *out,
                               bf_act act, long N, int C) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check_sizes("act_backward", N, C, act));
    const long n = N * (long)C;
    if (n == 0 || !dinp) return BF_OK;
    if (act == BF_ACT_LINEAR) {
        if (dinp != dout)
            BF_CUDA_CHECK(st, cudaMemcpyAsync(dinp, dout, (size_t)n * sizeof(float),
                                              cudaMemcpyDeviceToDevice, st->stream));
    } else if (act == BF_ACT_SOFTMAX) {
        softmax_backward_kernel<<<row_blocks(N), BF_ROWS_PER_BLOCK * BF_WARP, 0, st->stream>>>(dinp, dout, out, N, C);
        BF_CUDA_LAUNCHED(st, softmax_backward_kernel);
    } else {
        act_backward_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(dinp, dout, out, (int)act, n);
        BF_CUDA_LAUNCHED(st, act_backward_kernel);
    }
    return BF_OK;
}
