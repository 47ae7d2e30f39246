/* backend_registry.h - device names ("cpu", "cuda", "cuda:N") to backends.
 * The CUDA backend is a separate shared object loaded on first use, so the
 * module imports on machines without a driver or CUDA libraries. */
#ifndef BF_BACKEND_REGISTRY_H
#define BF_BACKEND_REGISTRY_H

#include "backend.h"

bf_status bf_backend_get(const char *device, bf_backend **out);
/* Free / total bytes of a device backend (cpu: 0, 0). */
bf_status bf_backend_mem_info(bf_backend *be, size_t *free_bytes, size_t *total_bytes);
/* Human-readable CUDA report (driver, runtime, cuDNN, GPUs); never fails. */
void bf_backend_cuda_report(char *buf, size_t n);
/* Directory holding _cuda.so; set once from Python at import. */
void bf_backend_set_module_dir(const char *dir);
/* Libraries dlopen'ed (RTLD_GLOBAL, in order) before _cuda.so: the CUDA runtime,
 * cuBLAS and cuDNN of NVIDIA's PyPI wheels, ':'-separated; set once at import. */
void bf_backend_set_cuda_preload(const char *paths);

#endif
