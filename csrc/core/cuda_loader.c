/* cuda_loader.c - lazy loading of the CUDA backend (see cuda_loader.h). */
#include "cuda_loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_abi.h"

static char module_dir[4096];
static char preload[16384];
static bf_status (*cuda_mem_info)(bf_backend *, size_t *, size_t *);

/* BF_CUDA_LIB=/path/to/_cuda.so loads that CUDA module instead of the
 * package's (the device-emulation build of csrc/cuda_sim, or a build under
 * test), also into a CPU-only build */
static const char *override_lib(void) {
    const char *p = getenv("BF_CUDA_LIB");
    return p && *p ? p : NULL;
}

static void *cuda_lib;
static int (*cuda_check)(int, char *, size_t);
static int (*cuda_report)(char *, size_t);
static int (*cuda_abi)(void);
static bf_status (*cuda_open)(const bf_cuda_host *, int, bf_backend **);
static bf_backend *opened[64];
static const bf_cuda_host host = {bf_vfail};

/* The wheels' libraries first, each by its full path and global: _cuda.so's
 * needed sonames (and cuDNN's own dlopen of its parts) then resolve to these
 * copies instead of a system toolkit's. One that fails to load (cuDNN's
 * runtime-compiled engines need the driver) is skipped: _cuda.so's own dlopen
 * names what is really missing. */
static void preload_wheel_libraries(void) {
    char path[4096];
    for (const char *p = preload; *p;) {
        size_t n = strcspn(p, ":");
        if (n > 0 && n < sizeof path) {
            memcpy(path, p, n);
            path[n] = 0;
            (void)dlopen(path, RTLD_NOW | RTLD_GLOBAL); /* kept for the process's life */
        }
        p += n + (p[n] == ':');
    }
}

/* dlopen _cuda.so from the package directory; its dependencies (libcudart,
 * cuBLAS, cuDNN) must resolve or this fails with the loader's message */
static bf_status load(void) {
    if (cuda_lib) return BF_OK;
    preload_wheel_libraries();
    char path[4200];
    if (override_lib()) snprintf(path, sizeof path, "%s", override_lib());
    else snprintf(path, sizeof path, "%s/_cuda.so", module_dir);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return BF_FAIL(BF_ERR_DEVICE, "the CUDA backend could not be loaded: %s; install the CUDA runtime, cuBLAS "
                       "and cuDNN libraries it needs, or use device='cpu'", why ? why : "unknown error");
    }
    cuda_check = (int (*)(int, char *, size_t))dlsym(h, "bf_cuda_check");
    cuda_report = (int (*)(char *, size_t))dlsym(h, "bf_cuda_report");
    cuda_abi = (int (*)(void))dlsym(h, "bf_cuda_abi_version");
    /* the ops may be absent from a build that has only the probe */
    cuda_open = (bf_status(*)(const bf_cuda_host *, int, bf_backend **))dlsym(h, "bf_cuda_open");
    cuda_mem_info = (bf_status(*)(bf_backend *, size_t *, size_t *))dlsym(h, "bf_cuda_mem_info");
    if (!cuda_check || !cuda_report) {
        dlclose(h);
        return BF_FAIL(BF_ERR_DEVICE, "the CUDA backend at %s lacks its entry points (a stale build?)", path);
    }
    cuda_lib = h;
    return BF_OK;
}

void bf_backend_set_module_dir(const char *dir) { snprintf(module_dir, sizeof module_dir, "%s", dir); }

void bf_backend_set_cuda_preload(const char *paths) { snprintf(preload, sizeof preload, "%s", paths); }

bf_status bf_cuda_load_backend(int device, bf_backend **out) {
    *out = NULL;
    (void)device;
    if (!BF_BUILT_WITH_CUDA && !override_lib())
        return BF_FAIL(BF_ERR_DEVICE,
                       "device 'cuda' requested, but this boundfit was built without the CUDA backend "
                       "(no CUDA toolkit with cuBLAS and cuDNN was found at build time); "
                       "reinstall with nvcc on PATH, or use device='cpu'");
    if (device < 0 || device >= 64) return BF_FAIL(BF_ERR_ARG, "device index %d out of range", device);
    if (opened[device]) {
        *out = opened[device];
        return BF_OK;
    }
    BF_TRY(load());
    char msg[768];
    if (cuda_check(device, msg, sizeof msg) != 0)
        return BF_FAIL(BF_ERR_DEVICE, "cuda:%d cannot be used: %s", device, msg);
    if (!cuda_open || !cuda_mem_info || !cuda_abi || cuda_abi() != BF_CUDA_ABI)
        return BF_FAIL(BF_ERR_DEVICE,
                       "cuda:%d passed the driver, runtime, cuDNN and architecture checks, but this build's CUDA "
                       "module has no training ops (ABI %d, core expects %d); rebuild boundfit, or use device='cpu'",
                       device, cuda_abi ? cuda_abi() : 0, BF_CUDA_ABI);
    BF_TRY(cuda_open(&host, device, &opened[device]));
    *out = opened[device];
    return BF_OK;
}

bf_status bf_cuda_loaded_mem_info(bf_backend *be, size_t *free_bytes, size_t *total_bytes) {
    *free_bytes = *total_bytes = 0;
    if (!cuda_mem_info) return BF_FAIL(BF_ERR_DEVICE, "no CUDA backend loaded");
    return cuda_mem_info(be, free_bytes, total_bytes);
}

void bf_backend_cuda_report(char *buf, size_t n) {
    if (!BF_BUILT_WITH_CUDA && !override_lib()) {
        snprintf(buf, n, "PROBLEM  CUDA backend           not built (no CUDA toolkit with cuBLAS and cuDNN at build time)\n");
        return;
    }
    if (load() != BF_OK) {
        snprintf(buf, n, "PROBLEM  CUDA backend           %s\n", bf_last_error()->msg);
        return;
    }
    cuda_report(buf, n);
}
