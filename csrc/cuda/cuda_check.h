/* cuda_check.h - error handling of the CUDA backend (cuda_errors.cu). Every
 * CUDA, cuBLAS and cuDNN call is checked; a failure becomes BF_ERR_DEVICE with
 * the file:line, the call and the library's error string, recorded through
 * the core's error buffer (status_shim.c). The CUDA error state is cleared
 * after a failure; a sticky error (illegal address, launch failure, ...)
 * cannot be cleared, so it poisons the backend: every later op fails fast
 * with "device context poisoned by earlier error: ...". Kernel launches are
 * checked with cudaGetLastError; their asynchronous errors surface at the
 * next op that waits (sum, to_host, sync, ...). */
#ifndef BF_CUDA_CHECK_H
#define BF_CUDA_CHECK_H

#include "cuda_state.h"

/* 1 for the errors that leave the CUDA context unusable */
int bf_cuda_is_sticky(cudaError_t e);
/* Start of every op: fails if the backend is poisoned, makes its device current. */
bf_status bf_cuda_enter(bf_cuda_state *st, const char *file, int line);
/* Record a failed call (what = its source text) and return BF_ERR_DEVICE. */
bf_status bf_cuda_fail_rt(bf_cuda_state *st, cudaError_t e, const char *what, const char *file,
                          int line);
bf_status bf_cuda_fail_blas(bf_cuda_state *st, cublasStatus_t e, const char *what,
                            const char *file, int line);
bf_status bf_cuda_fail_dnn(bf_cuda_state *st, cudnnStatus_t e, const char *what,
                           const char *file, int line);

#define BF_CUDA_ST(be) ((bf_cuda_state *)(be)->impl)

/* declares `st`, the state of backend `be`, and runs bf_cuda_enter */
#define BF_CUDA_ENTER(st, be)                                              \
    bf_cuda_state *st = BF_CUDA_ST(be);                                    \
    do {                                                                   \
        bf_status bf_enter_s_ = bf_cuda_enter(st, __FILE__, __LINE__);     \
        if (bf_enter_s_ != BF_OK) return bf_enter_s_;                      \
    } while (0)

#define BF_CUDA_CHECK(st, call)                                                      \
    do {                                                                             \
        cudaError_t bf_ce_ = (call);                                                 \
        if (bf_ce_ != cudaSuccess)                                                   \
            return bf_cuda_fail_rt((st), bf_ce_, #call, __FILE__, __LINE__);         \
    } while (0)

#define BF_CUBLAS_CHECK(st, call)                                                    \
    do {                                                                             \
        cublasStatus_t bf_be_ = (call);                                              \
        if (bf_be_ != CUBLAS_STATUS_SUCCESS)                                         \
            return bf_cuda_fail_blas((st), bf_be_, #call, __FILE__, __LINE__);       \
    } while (0)

#define BF_CUDNN_CHECK(st, call)                                                     \
    do {                                                                             \
        cudnnStatus_t bf_de_ = (call);                                               \
        if (bf_de_ != CUDNN_STATUS_SUCCESS)                                          \
            return bf_cuda_fail_dnn((st), bf_de_, #call, __FILE__, __LINE__);        \
    } while (0)

/* after kernel<<<...>>>: launch errors (bad configuration, sticky state) */
#define BF_CUDA_LAUNCHED(st, kernel)                                                 \
    do {                                                                             \
        cudaError_t bf_le_ = cudaGetLastError();                                     \
        if (bf_le_ != cudaSuccess)                                                   \
            return bf_cuda_fail_rt((st), bf_le_, "launch of " #kernel, __FILE__, __LINE__); \
    } while (0)

/* blocks for a grid-stride loop over n items, threads per block */
static inline unsigned bf_cuda_grid(long n, int threads) {
    long b = (n + threads - 1) / threads;
    if (b < 1) b = 1;
    if (b > 65535L * 16) b = 65535L * 16;
    return (unsigned)b;
}

#endif
