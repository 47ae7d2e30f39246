/* dense.cu - fully connected layer with cuBLAS. Row-major tensors are read by
 * column-major cuBLAS as their transposes, so out = inp @ w (row-major) is
 * out^T = w^T @ inp^T (column-major): sgemm(N, N, OUT, B, IN, w, inp, out).
 * Kernel layout (IN,OUT) as Keras. The GEMMs' compute type (float32, TF32,
 * a mixed policy's 16-bit operands) is gemm.cu's. The bias is added by
 * a kernel after the GEMM. Backward ADDS into dw / db, OVERWRITES dinp. */
#include "cuda_ops.h"

// out (N,C) += b (C), broadcast over the N rows
__global__ void bias_add_kernel(float *out, const float *b, long n, int C) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        out[i] += b[i % C];
}

bf_status bf_cuda_bias_add(bf_cuda_state *st, float *out, const float *b, long N, int C) {
    const long n = N * (long)C;
    if (n <= 0) return BF_OK;
    bias_add_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(out, b, n, C);
    BF_CUDA_LAUNCHED(st, bias_add_kernel);
    return BF_OK;
}

// out (B,OUT) = inp (B,IN) @ w (IN,OUT) + b (OUT); b may be NULL
bf_status bf_cuda_dense_forward(bf_backend *be, float *out, const float *inp, const float *w,
                                const float *b, int B, int IN, int OUT) {
    BF_CUDA_ENTER(st, be);
    if (B <= 0 || IN <= 0 || OUT <= 0)
        return BF_FAIL(BF_ERR_SHAPE, "dense: bad sizes B=%d IN=%d OUT=%d", B, IN, OUT);
    /* column-major: out^T (OUT,B) = w^T (OUT,IN) @ inp^T (IN,B) */
    BF_TRY(bf_cuda_gemm(st, CUBLAS_OP_N, CUBLAS_OP_N, OUT, B, IN, 1.0f, w, OUT,
                                    inp, IN, 0.0f, out, OUT));
    if (b) BF_TRY(bf_cuda_bias_add(st, out, b, B, OUT));
    return BF_OK;
}

// dinp (B,IN) = dout (B,OUT) @ w^T; dw (IN,OUT) += inp^T @ dout; db (OUT) += sum_B dout
bf_status bf_cuda_dense_backward(bf_backend *be, float *dinp, float *dw, float *db,
                                 const float *dout, const float *inp, const float *w, int B,
                                 int IN, int OUT) {
    BF_CUDA_ENTER(st, be);
    if (B <= 0 || IN <= 0 || OUT <= 0)
        return BF_FAIL(BF_ERR_SHAPE, "dense: bad sizes B=%d IN=%d OUT=%d", B, IN, OUT);
    /* column-major: dw^T (OUT,IN) += dout^T (OUT,B) @ inp (B,IN) */
    if (dw)
        BF_TRY(bf_cuda_gemm(st, CUBLAS_OP_N, CUBLAS_OP_T, OUT, IN, B, 1.0f, dout,
                                        OUT, inp, IN, 1.0f, dw, OUT));
    if (db) BF_TRY(bf_cuda_colsum_add(st, db, dout, B, OUT));
    /* column-major: dinp^T (IN,B) = w (IN,OUT) @ dout^T (OUT,B) */
    if (dinp)
        BF_TRY(bf_cuda_gemm(st, CUBLAS_OP_T, CUBLAS_OP_N, IN, B, OUT, 1.0f, w,
                                        OUT, dout, OUT, 0.0f, dinp, IN));
    return BF_OK;
}
