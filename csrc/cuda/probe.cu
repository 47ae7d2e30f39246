/* probe.cu - the CUDA module's entry points for the core: a version / GPU
 * report and the checks that must pass before a device is used (driver
 * present and new enough for the runtime, a GPU, compute capability covered
 * by the compiled architectures). Exported with C linkage; loaded by
 * csrc/core/cuda_loader.c with dlopen so the core never links libcudart. */
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdio.h>
#include <string.h>

#ifndef BF_CUDA_ARCHS
#define BF_CUDA_ARCHS "unknown"
#endif

#define BF_EXPORT extern "C" __attribute__((visibility("default")))

/* highest SASS major.minor compiled, and the PTX arch (0 if none), from "80-real,90-real,90-virtual" */
static void compiled_archs(int *sass_max, int *ptx) {
    const char *s = BF_CUDA_ARCHS;
    *sass_max = 0;
    *ptx = 0;
    while (*s) {
        int a = 0;
        while (*s >= '0' && *s <= '9') a = a * 10 + (*s++ - '0');
        int virt = strncmp(s, "-virtual", 8) == 0;
        if (virt) *ptx = a > *ptx ? a : *ptx;
        else if (a > *sass_max) *sass_max = a;
        while (*s && *s != ',') s++;
        if (*s == ',') s++;
    }
}

BF_EXPORT int bf_cuda_abi_version(void) { return 1; }

/* 0 when `device` can run boundfit's kernels; else a message in msg */
BF_EXPORT int bf_cuda_check(int device, char *msg, size_t n) {
    int drv = 0, rt = 0, count = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    if (drv == 0) {
        snprintf(msg, n, "no NVIDIA driver found (CUDA runtime %d.%d needs one); install the NVIDIA driver, "
                 "or use device='cpu'", rt / 1000, rt % 1000 / 10);
        return 1;
    }
    if (drv < rt) {
        snprintf(msg, n, "the NVIDIA driver supports CUDA %d.%d but boundfit's runtime is CUDA %d.%d; "
                 "update the driver, or use device='cpu'", drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
        return 1;
    }
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        snprintf(msg, n, "no usable GPU: %s; use device='cpu'", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        cudaGetLastError();
        return 1;
    }
    if (device < 0 || device >= count) {
        snprintf(msg, n, "device cuda:%d does not exist; this machine has %d GPU(s) (cuda:0 .. cuda:%d)", device, count,
                 count - 1);
        return 1;
    }
    cudaDeviceProp p;
    if ((e = cudaGetDeviceProperties(&p, device)) != cudaSuccess) {
        snprintf(msg, n, "cannot query cuda:%d: %s", device, cudaGetErrorString(e));
        cudaGetLastError();
        return 1;
    }
    int sass, ptx, cc = p.major * 10 + p.minor;
    compiled_archs(&sass, &ptx);
    if (!(ptx && cc >= ptx) && !(sass && sass / 10 == p.major && cc >= sass)) {
        snprintf(msg, n, "%s has compute capability %d.%d, but boundfit was compiled for %s; rebuild with "
                 "CMAKE_CUDA_ARCHITECTURES=%d", p.name, p.major, p.minor, BF_CUDA_ARCHS, cc);
        return 1;
    }
    size_t loaded = cudnnGetVersion();
    if (loaded / 10000 != CUDNN_MAJOR && loaded / 1000 != CUDNN_MAJOR) {
        snprintf(msg, n, "cuDNN %zu is loaded but boundfit was compiled against cuDNN %d.%d; install cuDNN %d",
                 loaded, CUDNN_MAJOR, CUDNN_MINOR, CUDNN_MAJOR);
        return 1;
    }
    snprintf(msg, n, "ok");
    return 0;
}

BF_EXPORT int bf_cuda_report(char *buf, size_t n) {
    int drv = 0, rt = 0, count = 0, sass, ptx;
    size_t off = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    compiled_archs(&sass, &ptx);
#define ADD(...) off += (size_t)snprintf(buf + off, off < n ? n - off : 0, __VA_ARGS__)
    ADD("%s  driver                 %s\n", drv ? "ok     " : "PROBLEM", drv ? "" : "no NVIDIA driver found");
    if (drv) ADD("ok       driver CUDA version     %d.%d\n", drv / 1000, drv % 1000 / 10);
    ADD("%s  CUDA runtime           %d.%d%s\n", !drv || drv >= rt ? "ok     " : "PROBLEM", rt / 1000, rt % 1000 / 10,
        drv && drv < rt ? " (newer than the driver supports: update the driver)" : "");
    size_t loaded = cudnnGetVersion();
    ADD("ok       cuDNN                  compiled %d.%d.%d, loaded %zu\n", CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL,
        loaded);
    ADD("ok       compiled architectures %s\n", BF_CUDA_ARCHS);
    cudaError_t e = drv ? cudaGetDeviceCount(&count) : cudaErrorNoDevice;
    if (e != cudaSuccess || count == 0) {
        ADD("PROBLEM  GPUs                   none usable (%s)\n", cudaGetErrorString(e));
        cudaGetLastError();
    }
    for (int d = 0; d < count; d++) {
        cudaDeviceProp p;
        char msg[512];
        if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
        int bad = bf_cuda_check(d, msg, sizeof msg);
        ADD("%s  cuda:%d                 %s, compute capability %d.%d, %.1f GiB%s%s\n", bad ? "PROBLEM" : "ok     ", d,
            p.name, p.major, p.minor, p.totalGlobalMem / 1073741824.0, bad ? ": " : "", bad ? msg : "");
    }
#undef ADD
    return 0;
}
