/* sim_blas.cpp - the cuBLAS stand-in of the device emulation: SGEMMs (plain
 * and strided batched, column-major as cuBLAS) computed on the host by the CPU
 * backend's OpenBLAS (blas.h, one thread), and GemmEx / GemmStridedBatchedEx
 * on float32 matrices with the float32 compute types: _FAST_16BF / _FAST_16F /
 * _FAST_TF32 round A and B to bfloat16 / float16 / TF32 (sim_round.h) before
 * the float32 product, as the tensor cores take them; other data or compute
 * types are NOT_SUPPORTED. Checked as the real library checks:
 * a destroyed handle (NOT_INITIALIZED), bad sizes or leading dimensions
 * (INVALID_VALUE), a workspace not 256-byte aligned or outside device memory,
 * an unknown stream; a matrix outside device memory faults like a kernel
 * would (sticky cudaErrorIllegalAddress). Workspace, as documented for
 * cublasSetWorkspace: a handle without a user workspace takes its default
 * pool on its first GEMM, 32 MiB on compute capability 9.x, 4 MiB otherwise,
 * allocated from device memory; cublasSetStream drops the user workspace.
 * The workspace set is scribbled over (sim_scribble) before and after every
 * GEMM, as the real kernels may use it: a workspace on a live buffer gives
 * wrong numbers. A GEMM is checked at the call and computed as work on the
 * handle's stream (sim_submit: at once, or when the stream runs). BF_SIM_PLANNED_WORKSPACE=1 makes a GEMM without a workspace set a launch
 * failure: the check that every GEMM runs in the planned workspace;
 * BF_SIM_FAIL=cublas fails every GEMM (CUBLAS_STATUS_EXECUTION_FAILED). */
#include <cublas_v2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <set>

#include <vector>

#include "blas.h"
#include "sim_internal.h"
#include "sim_round.h"

struct cublasContext {
    cudaStream_t stream;
    void *ws;
    size_t ws_bytes;
    void *pool; /* the default workspace, taken on first use */
    cublasMath_t math;
};

static std::set<const void *> live;

size_t bf_sim_cublas_default_workspace(void) {
    return sim_cfg().cc_major >= 9 ? (size_t)32 << 20 : (size_t)4 << 20;
}

cublasStatus_t cublasCreate_v2(cublasHandle_t *h) {
    if (sim_sticky()) return CUBLAS_STATUS_NOT_INITIALIZED;
    cublasContext *c = new cublasContext{};
    c->math = CUBLAS_DEFAULT_MATH;
    live.insert(c);
    *h = c;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
    if (!live.erase(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (h->pool) cudaFree(h->pool);
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
    if (!live.count(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!sim_stream_ok(s)) return CUBLAS_STATUS_INVALID_VALUE;
    h->stream = s;
    h->ws = NULL; /* "resets the workspace to the default pool" */
    h->ws_bytes = 0;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void *ws, size_t bytes) {
    if (!live.count(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (bytes && (!ws || (uintptr_t)ws % 256 || !sim_device_range(ws, bytes))) return CUBLAS_STATUS_INVALID_VALUE;
    h->ws = ws;
    h->ws_bytes = bytes;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) {
    if (!live.count(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->math = m;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetProperty(libraryPropertyType t, int *v) {
    switch (t) {
    case MAJOR_VERSION: *v = CUBLAS_VER_MAJOR; break;
    case MINOR_VERSION: *v = CUBLAS_VER_MINOR; break;
    case PATCH_LEVEL: *v = CUBLAS_VER_PATCH; break;
    default: return CUBLAS_STATUS_INVALID_VALUE;
    }
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    default: return "CUBLAS_STATUS_UNKNOWN";
    }
}

const char *cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    default: return "unknown error";
    }
}

/* common checks of a GEMM; SUCCESS to run it */
static cublasStatus_t gemm_check(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                 int lda, int ldb, int ldc, long long batch) {
    if (!live.count(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (sim_sticky()) return CUBLAS_STATUS_EXECUTION_FAILED;
    if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m < 0 || n < 0 || k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
    const int ra = ta == CUBLAS_OP_N ? m : k, rb = tb == CUBLAS_OP_N ? k : n;
    if (lda < (ra > 1 ? ra : 1) || ldb < (rb > 1 ? rb : 1) || ldc < (m > 1 ? m : 1)) return CUBLAS_STATUS_INVALID_VALUE;
    const char *inject = getenv("BF_SIM_FAIL");
    if (inject && !strcmp(inject, "cublas")) return CUBLAS_STATUS_EXECUTION_FAILED; /* fault injection */
    if (!h->ws && getenv("BF_SIM_PLANNED_WORKSPACE") && *getenv("BF_SIM_PLANNED_WORKSPACE") == '1') {
        /* checking mode: every GEMM must run in the workspace the plan holds */
        bf_sim_fault(cudaErrorLaunchFailure, "cublasSgemm", "a GEMM without cublasSetWorkspace (the default pool "
                     "is device memory outside the plan; BF_SIM_PLANNED_WORKSPACE=1)");
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    if (!h->ws && !h->pool) { /* the default workspace, from device memory like the real pool */
        if (cudaMalloc(&h->pool, bf_sim_cublas_default_workspace()) != cudaSuccess) {
            cudaGetLastError();
            h->pool = NULL;
            return CUBLAS_STATUS_ALLOC_FAILED;
        }
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* a column-major (rows x cols, ld) matrix at p lies in device memory */
static int mat_ok(const float *p, int rows, int cols, int ld) {
    if (!rows || !cols) return 1;
    return sim_device_range(p, ((size_t)(cols - 1) * ld + rows) * sizeof(float));
}

static int host_scalar_ok(const float *a) { return a && !sim_is_device(a); }

/* C (m,n) = alpha op(A) op(B) + beta C, column-major: row-major C^T = op(B)^T op(A)^T */
static void gemm1(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, const float *A,
                  int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (!m || !n) return;
    bf_sgemm1(tb == CUBLAS_OP_T, ta == CUBLAS_OP_T, n, m, k, alpha, B, ldb, A, lda, beta, C, ldc);
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float *alpha, const float *A, int lda, const float *B, int ldb,
                              const float *beta, float *C, int ldc) {
    cublasStatus_t s = gemm_check(h, ta, tb, m, n, k, lda, ldb, ldc, 1);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    if (!host_scalar_ok(alpha) || !host_scalar_ok(beta)) return CUBLAS_STATUS_INVALID_VALUE;
    const int ra = ta == CUBLAS_OP_N ? m : k, ca = ta == CUBLAS_OP_N ? k : m;
    const int rb = tb == CUBLAS_OP_N ? k : n, cb = tb == CUBLAS_OP_N ? n : k;
    if (!mat_ok(A, ra, ca, lda) || !mat_ok(B, rb, cb, ldb) || !mat_ok(C, m, n, ldc)) {
        bf_sim_fault(cudaErrorIllegalAddress, "cublasSgemm", "a matrix outside every live device allocation");
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    void *ws = h->ws;
    const size_t wsb = h->ws_bytes;
    const float a = *alpha, b = *beta;
    sim_submit(h->stream, [=] {
        sim_scribble(ws, wsb);
        gemm1(ta, tb, m, n, k, a, A, lda, B, ldb, b, C, ldc);
        sim_scribble(ws, wsb);
    });
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long sA,
                                         const float *B, int ldb, long long sB, const float *beta, float *C, int ldc,
                                         long long sC, int batch) {
    cublasStatus_t s = gemm_check(h, ta, tb, m, n, k, lda, ldb, ldc, batch);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    if (!host_scalar_ok(alpha) || !host_scalar_ok(beta)) return CUBLAS_STATUS_INVALID_VALUE;
    const int ra = ta == CUBLAS_OP_N ? m : k, ca = ta == CUBLAS_OP_N ? k : m;
    const int rb = tb == CUBLAS_OP_N ? k : n, cb = tb == CUBLAS_OP_N ? n : k;
    for (int i = 0; i < batch; i++)
        if (!mat_ok(A + i * sA, ra, ca, lda) || !mat_ok(B + i * sB, rb, cb, ldb) || !mat_ok(C + i * sC, m, n, ldc)) {
            bf_sim_fault(cudaErrorIllegalAddress, "cublasSgemmStridedBatched",
                         "a matrix of the batch outside every live device allocation");
            return CUBLAS_STATUS_EXECUTION_FAILED;
        }
    void *ws = h->ws;
    const size_t wsb = h->ws_bytes;
    const float a = *alpha, b = *beta;
    sim_submit(h->stream, [=] {
        sim_scribble(ws, wsb);
        for (int i = 0; i < batch; i++)
            gemm1(ta, tb, m, n, k, a, A + i * sA, lda, B + i * sB, ldb, b, C + i * sC, ldc);
        sim_scribble(ws, wsb);
    });
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- GemmEx: float32 storage, the float32 compute types ---- */

static int ct_ok(cublasComputeType_t ct) {
    return ct == CUBLAS_COMPUTE_32F || ct == CUBLAS_COMPUTE_32F_PEDANTIC || ct == CUBLAS_COMPUTE_32F_FAST_16BF ||
           ct == CUBLAS_COMPUTE_32F_FAST_16F || ct == CUBLAS_COMPUTE_32F_FAST_TF32;
}

/* how compute type ct takes its operands */
static sim_tc tc_of(cublasComputeType_t ct) {
    return ct == CUBLAS_COMPUTE_32F_FAST_16BF ? SIM_TC_BF16 : ct == CUBLAS_COMPUTE_32F_FAST_16F ? SIM_TC_F16
         : ct == CUBLAS_COMPUTE_32F_FAST_TF32 ? SIM_TC_TF32 : SIM_TC_NONE;
}

/* the (rows x cols, ld) column-major matrix at p as compute type ct takes it */
static const float *tc_operand(std::vector<float> &buf, const float *p, int rows, int cols, int ld,
                               cublasComputeType_t ct) {
    return rows && cols ? sim_tc_operand(buf, p, (size_t)(cols - 1) * ld + rows, tc_of(ct)) : p;
}

static cublasStatus_t gemm_ex(const char *what, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const void *alpha, const void *A, cudaDataType at, int lda, long long sA,
                              const void *B, cudaDataType bt, int ldb, long long sB, const void *beta, void *C,
                              cudaDataType ctp, int ldc, long long sC, int batch, cublasComputeType_t ct) {
    cublasStatus_t s = gemm_check(h, ta, tb, m, n, k, lda, ldb, ldc, batch);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    if (at != CUDA_R_32F || bt != CUDA_R_32F || ctp != CUDA_R_32F || !ct_ok(ct)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!host_scalar_ok((const float *)alpha) || !host_scalar_ok((const float *)beta))
        return CUBLAS_STATUS_INVALID_VALUE;
    const int ra = ta == CUBLAS_OP_N ? m : k, ca = ta == CUBLAS_OP_N ? k : m;
    const int rb = tb == CUBLAS_OP_N ? k : n, cb = tb == CUBLAS_OP_N ? n : k;
    const float *a32 = (const float *)A, *b32 = (const float *)B;
    float *c32 = (float *)C;
    for (int i = 0; i < batch; i++)
        if (!mat_ok(a32 + i * sA, ra, ca, lda) || !mat_ok(b32 + i * sB, rb, cb, ldb) ||
            !mat_ok(c32 + i * sC, m, n, ldc)) {
            bf_sim_fault(cudaErrorIllegalAddress, what, "a matrix outside every live device allocation");
            return CUBLAS_STATUS_EXECUTION_FAILED;
        }
    void *ws = h->ws;
    const size_t wsb = h->ws_bytes;
    const float a = *(const float *)alpha, b = *(const float *)beta;
    sim_submit(h->stream, [=] {
        sim_scribble(ws, wsb);
        std::vector<float> abuf, bbuf;
        for (int i = 0; i < batch; i++) {
            const float *ai = tc_operand(abuf, a32 + i * sA, ra, ca, lda, ct);
            const float *bi = tc_operand(bbuf, b32 + i * sB, rb, cb, ldb, ct);
            gemm1(ta, tb, m, n, k, a, ai, lda, bi, ldb, b, c32 + i * sC, ldc);
        }
        sim_scribble(ws, wsb);
    });
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType at, int lda, const void *B, cudaDataType bt,
                            int ldb, const void *beta, void *C, cudaDataType ctp, int ldc, cublasComputeType_t ct,
                            cublasGemmAlgo_t) {
    return gemm_ex("cublasGemmEx", h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ctp, ldc, 0, 1,
                   ct);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void *alpha, const void *A, cudaDataType at, int lda,
                                          long long sA, const void *B, cudaDataType bt, int ldb, long long sB,
                                          const void *beta, void *C, cudaDataType ctp, int ldc, long long sC,
                                          int batch, cublasComputeType_t ct, cublasGemmAlgo_t) {
    return gemm_ex("cublasGemmStridedBatchedEx", h, ta, tb, m, n, k, alpha, A, at, lda, sA, B, bt, ldb, sB, beta, C,
                   ctp, ldc, sC, batch, ct);
}
