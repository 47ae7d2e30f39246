/* reduce.cu - reductions into device memory, read back by the core with the
 * rest of a micro-batch's statistics: sum (loss and metric totals, in double),
 * nonfinite (ORs 1 into a flag on any NaN / Inf), maxabs (max |x| as float
 * bits: +Inf or a NaN when a value is not finite). The sum is deterministic:
 * a grid whose size depends only on n writes per-block partials to the
 * scratch, one block adds them in a fixed order. The flag reductions use
 * integer tests on the float bits (NaN and Inf are exactly the
 * exponent-all-ones floats; |x| as bits orders like the values). No call
 * waits. */
#include "cuda_ops.h"

#define BF_SUM_THREADS 256
#define BF_SUM_MAX_BLOCKS 1024 /* partials at scratch[0..1024) */

// block total of v (blockDim.x == BF_SUM_THREADS) into every thread's return; fixed order
__device__ double block_sum(double v) {
    __shared__ double sh[BF_SUM_THREADS];
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = BF_SUM_THREADS / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    return sh[0];
}

// part (gridDim.x) = per-block sums of x (n)
__global__ void sum_partial_kernel(double *part, const float *x, long n) {
    double acc = 0.0;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        acc += x[i];
    const double t = block_sum(acc);
    if (threadIdx.x == 0) part[blockIdx.x] = t;
}

// total (1) = sum of part (G); one block
__global__ void sum_finish_kernel(double *total, const double *part, int G) {
    double acc = 0.0;
    for (int i = threadIdx.x; i < G; i += blockDim.x) acc += part[i];
    const double t = block_sum(acc);
    if (threadIdx.x == 0) *total = t;
}

// flag (1) = 1 if any of x (n) is NaN or Inf, else left as it is
__global__ void nonfinite_kernel(int *flag, const float *x, long n) {
    const unsigned *u = (const unsigned *)x;
    unsigned acc = 0;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        acc |= (u[i] & 0x7f800000u) == 0x7f800000u;
    if (__syncthreads_or(acc) && threadIdx.x == 0) *flag = 1;
}

// m (1) = max(m, max over x (n) of the bits of |x|); m holds a float >= +0.0f
__global__ void maxabs_kernel(unsigned *m, const float *x, long n) {
    const unsigned *u = (const unsigned *)x;
    unsigned acc = 0;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const unsigned a = u[i] & 0x7fffffffu;
        acc = a > acc ? a : acc;
    }
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned b = __shfl_xor_sync(0xffffffffu, acc, o);
        acc = b > acc ? b : acc;
    }
    if ((threadIdx.x & 31) == 0 && acc) atomicMax(m, acc);
}

// sum_out (1, device) = sum of x (n)
bf_status bf_cuda_sum(bf_backend *be, double *sum_out, const float *x, long n) {
    BF_CUDA_ENTER(st, be);
    if (!sum_out) return BF_FAIL(BF_ERR_ARG, "sum: NULL output");
    if (n <= 0) {
        BF_CUDA_CHECK(st, cudaMemsetAsync(sum_out, 0, sizeof(double), st->stream));
        return BF_OK;
    }
    BF_TRY(bf_cuda_need_scratch(st, "sum"));
    long g = (n + BF_SUM_THREADS * 8L - 1) / (BF_SUM_THREADS * 8L);
    const int G = (int)(g < BF_SUM_MAX_BLOCKS ? g : BF_SUM_MAX_BLOCKS);
    if (G == 1) { /* one block: its partial is the total (same order of additions) */
        sum_partial_kernel<<<1, BF_SUM_THREADS, 0, st->stream>>>(sum_out, x, n);
        BF_CUDA_LAUNCHED(st, sum_partial_kernel);
        return BF_OK;
    }
    sum_partial_kernel<<<G, BF_SUM_THREADS, 0, st->stream>>>(st->scratch, x, n);
    BF_CUDA_LAUNCHED(st, sum_partial_kernel);
    sum_finish_kernel<<<1, BF_SUM_THREADS, 0, st->stream>>>(sum_out, st->scratch, G);
    BF_CUDA_LAUNCHED(st, sum_finish_kernel);
    return BF_OK;
}

// bad (1, device) = 1 if any of x (n) is NaN or Inf, else left as it is
bf_status bf_cuda_nonfinite(bf_backend *be, int *bad, const float *x, long n) {
    BF_CUDA_ENTER(st, be);
    if (!bad) return BF_FAIL(BF_ERR_ARG, "nonfinite: NULL flag");
    if (n <= 0) return BF_OK;
    nonfinite_kernel<<<bf_cuda_grid(n, 256 * 8), 256, 0, st->stream>>>(bad, x, n);
    BF_CUDA_LAUNCHED(st, nonfinite_kernel);
    return BF_OK;
}

// out (1, device) = max(out, max |x (n)|) (as bits: +Inf or a NaN when any of x is not finite);
// the caller zeroes out first
bf_status bf_cuda_maxabs(bf_backend *be, float *out, const float *x, long n) {
    BF_CUDA_ENTER(st, be);
    if (!out) return BF_FAIL(BF_ERR_ARG, "maxabs: NULL output");
    if (n <= 0) return BF_OK;
    maxabs_kernel<<<bf_cuda_grid(n, 256 * 8), 256, 0, st->stream>>>((unsigned *)out, x, n);
    BF_CUDA_LAUNCHED(st, maxabs_kernel);
    return BF_OK;
}
