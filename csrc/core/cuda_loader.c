/* cuda_loader.c - lazy loading of the CUDA backend (see cuda_loader.h). */
#include "cuda_loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "backend_registry.h"

static char module_dir[4096];
static void *cuda_lib;
static int (*cuda_check)(int, char *, size_t);
static int (*cuda_report)(char *, size_t);

/* dlopen _cuda.so from the package directory; its dependencies (libcudart,
 * cuBLAS, cuDNN) must resolve or this fails with the loader's message */
static bf_status load(void) {
    if (cuda_lib) return BF_OK;
    char path[4200];
    snprintf(path, sizeof path, "%s/_cuda.so", module_dir);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return BF_FAIL(BF_ERR_DEVICE, "the CUDA backend could not be loaded: %s; install the CUDA runtime, cuBLAS "
                       "and cuDNN libraries it needs, or use device='cpu'", why ? why : "unknown error");
    }
    cuda_check = (int (*)(int, char *, size_t))dlsym(h, "bf_cuda_check");
    cuda_report = (int (*)(char *, size_t))dlsym(h, "bf_cuda_report");
    if (!cuda_check || !cuda_report) {
        dlclose(h);
        return BF_FAIL(BF_ERR_DEVICE, "the CUDA backend at %s lacks its entry points (a stale build?)", path);
    }
    cuda_lib = h;
    return BF_OK;
}

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
    bf_status s = load();
    if (s != BF_OK) return s;
    char msg[768];
    if (cuda_check(device, msg, sizeof msg) != 0)
        return BF_FAIL(BF_ERR_DEVICE, "cuda:%d cannot be used: %s", device, msg);
    return BF_FAIL(BF_ERR_DEVICE,
                   "cuda:%d passed the driver, runtime, cuDNN and architecture checks, but this build's CUDA "
                   "backend has no training ops yet; use device='cpu'", device);
#endif
}

bf_status bf_cuda_mem_info(bf_backend *be, size_t *free_bytes, size_t *total_bytes) {
    (void)be;
    *free_bytes = *total_bytes = 0;
    return BF_FAIL(BF_ERR_DEVICE, "no CUDA backend loaded");
}

void bf_backend_cuda_report(char *buf, size_t n) {
#if !BF_BUILT_WITH_CUDA
    snprintf(buf, n, "PROBLEM  CUDA backend           not built (no CUDA toolkit with cuBLAS and cuDNN at build time)\n");
#else
    if (load() != BF_OK) {
        snprintf(buf, n, "PROBLEM  CUDA backend           %s\n", bf_last_error()->msg);
        return;
    }
    cuda_report(buf, n);
#endif
}
