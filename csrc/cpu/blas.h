/* blas.h - the BLAS entry points boundfit uses, from OpenBLAS (scipy-openblas32
 * wheel, whose symbols carry the scipy_ prefix). Row-major GEMM only;
 * OpenBLAS runs on one thread, the engine's pool threads the GEMMs (gemm.c). */
#ifndef BF_BLAS_H
#define BF_BLAS_H

#include <cblas.h>

#ifndef BF_BLAS_PREFIX_NONE
#define bf_cblas_sgemm scipy_cblas_sgemm
#define bf_openblas_set_num_threads scipy_openblas_set_num_threads
#define bf_openblas_get_num_threads scipy_openblas_get_num_threads
#define bf_openblas_get_config scipy_openblas_get_config
#else
#define bf_cblas_sgemm cblas_sgemm
#define bf_openblas_set_num_threads openblas_set_num_threads
#define bf_openblas_get_num_threads openblas_get_num_threads
#define bf_openblas_get_config openblas_get_config
#endif

/* C (M,N) = alpha * op(A) @ op(B) + beta * C, row-major, on the calling thread */
static inline void bf_sgemm1(int transA, int transB, int M, int N, int K, float alpha,
                            const float *A, int lda, const float *B, int ldb, float beta,
                            float *C, int ldc) {
    bf_cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                   transB ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C,
                   ldc);
}

/* the same over the engine's pool (gemm.c): what every op calls */
void bf_sgemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
              int ldb, float beta, float *C, int ldc);
/* C (M,N) = A (M,K) @ B (K,N) + bias (N) in every row, over the pool */
void bf_sgemm_bias(int M, int N, int K, const float *A, const float *B, const float *bias, float *C);
/* The grains bf_sgemm cuts rows and columns at (0: never cut that side),
 * measured once on the loaded OpenBLAS (gemm.c) */
void bf_gemm_split_grains(int *rows, int *cols);

#endif
