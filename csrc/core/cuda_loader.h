/* cuda_loader.h - dlopen of the CUDA backend module (_cuda.so) on first use. */
#ifndef BF_CUDA_LOADER_H
#define BF_CUDA_LOADER_H

#include <stddef.h>

#include "backend.h"

bf_status bf_cuda_load_backend(int device, bf_backend **out);
/* Human-readable CUDA report (driver, runtime, cuDNN, GPUs); never fails. */
void bf_backend_cuda_report(char *buf, size_t n);
/* Directory holding _cuda.so; set once from Python at import. */
void bf_backend_set_module_dir(const char *dir);
/* Libraries dlopen'ed (RTLD_GLOBAL, in order) before _cuda.so: the CUDA runtime,
 * cuBLAS and cuDNN of NVIDIA's PyPI wheels, ':'-separated; set once at import. */
void bf_backend_set_cuda_preload(const char *paths);
bf_status bf_cuda_loaded_mem_info(bf_backend *be, size_t *free_bytes, size_t *total_bytes);

#endif
