/* merge.cu - graph ops on CUDA, as csrc/cpu/merge.c: elementwise merges
 * (Add, Subtract, Multiply, Average, Maximum, Minimum), their backward helpers
 * and gradient accumulation in one kernel, and the column-block copy behind
 * Concatenate and the split of packed multi-input batches / targets
 * (cudaMemcpy2DAsync, device to device). */
#include "cuda_ops.h"

// out (n) = op(a (n), b (n), c (n)); out may alias any input
__global__ void ewise_kernel(float *out, const float *a, const float *b, const float *c, int op, float alpha,
                             long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float v;
        switch (op) {
        case BF_EW_ADD: v = alpha * (a[i] + b[i]); break;
        case BF_EW_SUB: v = alpha * (a[i] - b[i]); break;
        case BF_EW_MUL: v = alpha * (a[i] * b[i]); break;
        case BF_EW_MAX: v = a[i] > b[i] || a[i] != a[i] ? a[i] : b[i]; break;
        case BF_EW_MIN: v = a[i] < b[i] || a[i] != a[i] ? a[i] : b[i]; break;
        case BF_EW_SCALE: v = alpha * a[i]; break;
        default: v = a[i] == b[i] ? c[i] : 0.0f; break; /* BF_EW_SELECT */
        }
        out[i] = v;
    }
}

bf_status bf_cuda_ewise(bf_backend *be, float *out, const float *a, const float *b, const float *c, bf_ewise_op op,
                        float alpha, long n) {
    BF_CUDA_ENTER(st, be);
    if (n < 0) return BF_FAIL(BF_ERR_SHAPE, "ewise: negative size %ld", n);
    if (n == 0) return BF_OK;
    if ((int)op < BF_EW_ADD || op > BF_EW_LAST) return BF_FAIL(BF_ERR_INTERNAL, "ewise: unknown op %d", (int)op);
    if (!out || !a || (bf_ewise_binary(op) && !b) || (op == BF_EW_SELECT && !c))
        return BF_FAIL(BF_ERR_ARG, "ewise: NULL tensor");
    ewise_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(out, a, b, c, (int)op, alpha, n);
    BF_CUDA_LAUNCHED(st, ewise_kernel);
    return BF_OK;
}

// out (rows, ld_out)[:, 0:cols] = inp (rows, ld_in)[:, 0:cols]
bf_status bf_cuda_copy2d(bf_backend *be, float *out, long ld_out, const float *inp, long ld_in, long rows,
                         long cols) {
    BF_CUDA_ENTER(st, be);
    if (cols > ld_out || cols > ld_in || rows < 0 || cols < 0)
        return BF_FAIL(BF_ERR_INTERNAL, "copy2d: %ld x %ld block of rows %ld / %ld", rows, cols, ld_out, ld_in);
    if (rows == 0 || cols == 0) return BF_OK;
    BF_CUDA_CHECK(st, cudaMemcpy2DAsync(out, (size_t)ld_out * sizeof(float), inp, (size_t)ld_in * sizeof(float),
                                        (size_t)cols * sizeof(float), (size_t)rows, cudaMemcpyDeviceToDevice,
                                        st->stream));
    return BF_OK;
}
