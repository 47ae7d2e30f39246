/* half.cu - 16-bit storage on the device (mixed precision, core/mixed.c):
 * conversions between float32 and bfloat16 or float16 (BF_HALF_F16_BIT),
 * accumulation into a 16-bit gradient and the scan for NaN / Inf, with
 * core/half.h's roundings (nearest even, a NaN stays a quiet NaN, float16
 * overflows to Inf): the same bits as the CPU's cpu/bf16.c. Elementwise,
 * grid-stride; in place allowed (each element read then written by one
 * thread). The scan ORs 1 into a device flag and does not wait. */
#include "cuda_ops.h"
#include "half.h"

__device__ __forceinline__ float expand16(uint16_t h, int f16) { return f16 ? bf_f16_expand(h) : bf_bf16_expand(h); }
__device__ __forceinline__ uint16_t round16(float v, int f16) { return f16 ? bf_f16_round(v) : bf_bf16_round(v); }

// out (n) = in (n) converted as op says (bf_bf16_how without the float16 bit); f16: the 16-bit type is float16
__global__ void half_convert_kernel(void *out, const void *in, int op, int f16, long n) {
    uint16_t *o16 = (uint16_t *)out;
    float *o32 = (float *)out;
    const uint16_t *i16 = (const uint16_t *)in;
    const float *i32 = (const float *)in;
    for (long k = blockIdx.x * (long)blockDim.x + threadIdx.x; k < n; k += (long)gridDim.x * blockDim.x) {
        switch (op) {
        case BF_BF16_EXPAND: o32[k] = expand16(i16[k], f16); break;
        case BF_BF16_ROUND: o16[k] = round16(i32[k], f16); break;
        case BF_BF16_ROUND_F32: o32[k] = expand16(round16(i32[k], f16), f16); break;
        case BF_BF16_ADD: o16[k] = round16(expand16(o16[k], f16) + i32[k], f16); break;
        case BF_BF16_ADD16: o16[k] = round16(expand16(o16[k], f16) + expand16(i16[k], f16), f16); break;
        default: break;
        }
    }
}

// flag (1) = 1 if any of x (n, 16-bit) is NaN or Inf (exponent all ones), else left as it is
__global__ void half_scan_kernel(int *flag, const uint16_t *x, int f16, long n) {
    const unsigned e = f16 ? 0x7c00u : 0x7f80u;
    unsigned acc = 0;
    for (long k = blockIdx.x * (long)blockDim.x + threadIdx.x; k < n; k += (long)gridDim.x * blockDim.x)
        acc |= (x[k] & e) == e;
    if (__syncthreads_or(acc) && threadIdx.x == 0) *flag = 1;
}

// out (n) = in (n) converted as `how` says (core/backend.h bf_bf16_how, BF_HALF_F16_BIT for float16)
bf_status bf_cuda_bf16_convert(bf_backend *be, void *out, const void *in, bf_bf16_how how, long n) {
    BF_CUDA_ENTER(st, be);
    if (n <= 0) return BF_OK;
    const int f16 = (how & BF_HALF_F16_BIT) != 0, op = how & ~BF_HALF_F16_BIT;
    if (op == BF_BF16_SCAN) {
        half_scan_kernel<<<bf_cuda_grid(n, 256 * 8), 256, 0, st->stream>>>((int *)out, (const uint16_t *)in, f16, n);
        BF_CUDA_LAUNCHED(st, half_scan_kernel);
        return BF_OK;
    }
    half_convert_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(out, in, op, f16, n);
    BF_CUDA_LAUNCHED(st, half_convert_kernel);
    return BF_OK;
}
