/* cuda_loader.c - lazy loading of the CUDA backend (see cuda_loader.h). */
#include "cuda_loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "backend_registry.h"

static char module_dir[4096];

void bf_backend_set_module_dir(const char *dir) { snprintf(module_dir, sizeof module_dir, "%s", dir); }

bf_status bf_cuda_backend(int device, bf_backend **out) {
    *out = NULL;
    (void)device;
#if !BF_BUILT_WITH_CUDA
    return BF_FAIL(BF_ERR_DEVICE,
                   "device 'cuda' requested, but this boundfit was built without the CUDA backend "
                   "(no CUDA toolkit with cuBLAS and cuDNN was found at build time); "
                   "reinstall with nvcc on PATH, or use device='cpu'");
#else
    return BF_FAIL(BF_ERR_DEVICE, "CUDA backend loader not wired yet");
#endif
}

bf_status bf_cuda_mem_info(bf_backend *be, size_t *free_bytes, size_t *total_bytes) {
    (void)be;
    *free_bytes = *total_bytes = 0;
    return BF_FAIL(BF_ERR_DEVICE, "no CUDA backend loaded");
}

void bf_backend_cuda_report(char *buf, size_t n) { snprintf(buf, n, "CUDA backend: not loaded\n"); }
