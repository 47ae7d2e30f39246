/* cuda_errors.cu - CUDA / cuBLAS / cuDNN failures as bf_status (see
 * cuda_check.h): BF_ERR_DEVICE with file:line, the failing call and the
 * library's error string; the runtime's error state cleared; sticky errors
 * poison the backend so that later ops fail fast instead of computing on a
 * dead context. */
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"

int bf_cuda_is_sticky(cudaError_t e) {
    switch (e) {
    case cudaErrorECCUncorrectable:
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorContextIsDestroyed:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
        return 1;
    default:
        return 0;
    }
}

static const char *base_name(const char *file) {
    const char *s = strrchr(file, '/');
    return s ? s + 1 : file;
}

/* length of the callee name in a call's source text ("cudaMemcpyAsync(dst, ...)") */
static int callee_len(const char *what) { return (int)strcspn(what, "("); }

bf_status bf_cuda_enter(bf_cuda_state *st, const char *file, int line) {
    if (!st || !st->open)
        return bf_fail(BF_ERR_DEVICE, file, line, "the CUDA backend is not open (closed or never opened)");
    if (st->poisoned)
        return bf_fail(BF_ERR_DEVICE, file, line, "device context poisoned by earlier error: %s", st->poison);
    cudaError_t e = cudaSetDevice(st->device);
    if (e != cudaSuccess) return bf_cuda_fail_rt(st, e, "cudaSetDevice", file, line);
    return BF_OK;
}

/* Clear the runtime's error state. Returns the sticky error behind a failure:
 * e itself, or one the runtime still reports after a library call failed;
 * cudaSuccess if none. */
static cudaError_t settle(cudaError_t e) {
    cudaError_t last = cudaGetLastError();
    if (bf_cuda_is_sticky(e)) return e;
    return bf_cuda_is_sticky(last) ? last : cudaSuccess;
}

/* "<lib> error on cuda:N at file:line in <callee>: <err> (<name>)[; detail]";
 * a sticky error also poisons the backend with this message */
static bf_status record(bf_cuda_state *st, cudaError_t sticky, const char *lib, const char *what,
                        const char *file, int line, const char *err, const char *err_name,
                        const char *detail) {
    char msg[BF_MSG_LEN];
    int dev = st ? st->device : -1;
    int n = snprintf(msg, sizeof msg, "%s error on cuda:%d at %s:%d in %.*s: %s (%s)%s%s", lib,
                     dev, base_name(file), line, callee_len(what), what, err, err_name,
                     detail && *detail ? "; " : "", detail ? detail : "");
    if (sticky != cudaSuccess && n > 0 && (size_t)n < sizeof msg)
        snprintf(msg + n, sizeof msg - (size_t)n,
                 "; the CUDA context of cuda:%d is unusable after %s: restart the Python process "
                 "(or use device='cpu')", dev, cudaGetErrorName(sticky));
    if (sticky != cudaSuccess && st && !st->poisoned) {
        st->poisoned = 1;
        snprintf(st->poison, sizeof st->poison, "%s", msg);
    }
    return bf_fail(BF_ERR_DEVICE, file, line, "%s", msg);
}

bf_status bf_cuda_fail_rt(bf_cuda_state *st, cudaError_t e, const char *what, const char *file,
                          int line) {
    cudaError_t sticky = settle(e);
    return record(st, sticky, "CUDA", what, file, line, cudaGetErrorString(e), cudaGetErrorName(e),
                  NULL);
}

bf_status bf_cuda_fail_blas(bf_cuda_state *st, cublasStatus_t e, const char *what,
                            const char *file, int line) {
    cudaError_t sticky = settle(cudaSuccess);
    return record(st, sticky, "cuBLAS", what, file, line, cublasGetStatusString(e),
                  cublasGetStatusName(e),
                  e == CUBLAS_STATUS_ALLOC_FAILED ? "out of device memory inside cuBLAS" : NULL);
}

bf_status bf_cuda_fail_dnn(bf_cuda_state *st, cudnnStatus_t e, const char *what,
                           const char *file, int line) {
    cudaError_t sticky = settle(cudaSuccess);
    char detail[384];
    char code[32];
    detail[0] = 0;
    cudnnGetLastErrorString(detail, sizeof detail);
    snprintf(code, sizeof code, "cudnnStatus_t %d", (int)e);
    return record(st, sticky, "cuDNN", what, file, line, cudnnGetErrorString(e), code, detail);
}
