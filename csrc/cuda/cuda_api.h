/* cuda_api.h - the contract between the core (_core, which never links CUDA)
 * and the lazily dlopen'ed CUDA module (_cuda.so). Plain C, no CUDA types. */
#ifndef BF_CUDA_API_H
#define BF_CUDA_API_H

#include <stdarg.h>
#include <stddef.h>

#include "backend.h"

#define BF_CUDA_ABI 2

/* What the core lends the module: its error recorder (the thread-local
 * buffer lives in the core, so the module must not link status.c). */
typedef struct {
    bf_status (*vfail)(bf_status code, const char *file, int line, const char *fmt, va_list ap);
} bf_cuda_host;

#ifdef __cplusplus
extern "C" {
#endif
/* exported by _cuda.so */
int bf_cuda_abi_version(void);
int bf_cuda_check(int device, char *msg, size_t n);   /* 0 = usable */
int bf_cuda_report(char *buf, size_t n);
/* Open device `device`: stream, cuBLAS and cuDNN handles, the vtable. */
bf_status bf_cuda_open(const bf_cuda_host *host, int device, bf_backend **out);
/* Free / total device memory as cudaMemGetInfo reports it. */
bf_status bf_cuda_mem_info(bf_backend *be, size_t *free_bytes, size_t *total_bytes);
void bf_cuda_close(bf_backend *be);
#ifdef __cplusplus
}
#endif

#endif
