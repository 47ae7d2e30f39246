/* cuda_loader.h - dlopen of the CUDA backend module (_cuda.so) on first use. */
#ifndef BF_CUDA_LOADER_H
#define BF_CUDA_LOADER_H

#include <stddef.h>

#include "backend.h"

bf_status bf_cuda_load_backend(int device, bf_backend **out);
bf_status bf_cuda_loaded_mem_info(bf_backend *be, size_t *free_bytes, size_t *total_bytes);

#endif
