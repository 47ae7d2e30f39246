/* gemm.cu - the CUDA backend's GEMMs, column-major as cuBLAS, float32
 * storage and float32 accumulation, with the compute type the core asks for
 * (bf_backend.half / tf32): a node under a mixed policy multiplies on the
 * tensor cores with its operands rounded to its 16-bit type
 * (CUBLAS_COMPUTE_32F_FAST_16BF / _FAST_16F: its activations and their
 * gradients hold that type's values already, so only the float32 kernel is
 * rounded, as Keras casts it to the compute dtype); float32 GEMMs use TF32
 * where the user allows it (CUBLAS_COMPUTE_32F_FAST_TF32, bf.config), else
 * exact float32 (CUBLAS_COMPUTE_32F). Every GEMM runs in the planned cuBLAS
 * workspace (workspace.cu). */
#include "cuda_ops.h"

cublasComputeType_t bf_cuda_compute_type(const bf_cuda_state *st) {
    if (st->be.half == 1) return CUBLAS_COMPUTE_32F_FAST_16BF;
    if (st->be.half == 2) return CUBLAS_COMPUTE_32F_FAST_16F;
    return st->be.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

// C (m,n) = alpha op(A) op(B) + beta C, column-major
bf_status bf_cuda_gemm(bf_cuda_state *st, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                       float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    BF_CUBLAS_CHECK(st, cublasGemmEx(st->blas, ta, tb, m, n, k, &alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, &beta,
                                     C, CUDA_R_32F, ldc, bf_cuda_compute_type(st), CUBLAS_GEMM_DEFAULT));
    return BF_OK;
}

// C_i (m,n) = alpha op(A_i) op(B_i) + beta C_i for i < batch, X_i = X + i * sX
bf_status bf_cuda_gemm_batched(bf_cuda_state *st, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                               float alpha, const float *A, int lda, long long sA, const float *B, int ldb,
                               long long sB, float beta, float *C, int ldc, long long sC, int batch) {
    BF_CUBLAS_CHECK(st, cublasGemmStridedBatchedEx(st->blas, ta, tb, m, n, k, &alpha, A, CUDA_R_32F, lda, sA, B,
                                                   CUDA_R_32F, ldb, sB, &beta, C, CUDA_R_32F, ldc, sC, batch,
                                                   bf_cuda_compute_type(st), CUBLAS_GEMM_DEFAULT));
    return BF_OK;
}
