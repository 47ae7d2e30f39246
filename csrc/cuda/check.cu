/* check.cu - may this device be used? bf_cuda_check runs, in order: an NVIDIA
 * driver present, the driver compatible with the CUDA runtime (NVIDIA's
 * rules: bf_cuda_driver_compat), the device
 * index valid, its compute capability covered by the compiled architectures
 * (BF_CUDA_ARCHS from CMake, e.g. "80-real,90-real,90-virtual"), the loaded
 * cuDNN and cuBLAS of the majors compiled against (cuDNN's sub-libraries
 * loadable). A failure names what was found, what is required and the fix.
 * No CUDA context is created here; nothing throws or aborts. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"
#include "cuda_ops.h"

#ifndef BF_CUDA_ARCHS
#define BF_CUDA_ARCHS "unknown"
#endif

#define BF_EXPORT extern "C" __attribute__((visibility("default")))

const char *bf_cuda_archs(void) { return BF_CUDA_ARCHS; }

/* One entry of the architecture list: "80-real", "90-virtual", "86" (both),
 * "90a-real" (arch-specific: that exact GPU only), "100f" (family),
 * "sm_80" / "compute_90" (nvcc spelling), "native" / "all" / "all-major". */
typedef struct {
    int cc;      /* 80 = 8.0, 100 = 10.0 */
    char suffix; /* 0, 'a' or 'f' */
    int real, virt;
    int any;     /* native / all: coverage decided by the build, assume yes */
} arch_entry;

static const char *parse_arch(const char *s, arch_entry *e) {
    memset(e, 0, sizeof *e);
    while (*s == ' ' || *s == ',' || *s == ';') s++;
    const char *end = s + strcspn(s, " ,;");
    if (!strncmp(s, "native", 6) || !strncmp(s, "all", 3)) {
        e->any = 1;
        return end;
    }
    int want_real = 1, want_virt = 1;
    if (!strncmp(s, "sm_", 3)) { s += 3; want_virt = 0; }
    else if (!strncmp(s, "compute_", 8)) { s += 8; want_real = 0; }
    while (s < end && *s >= '0' && *s <= '9') e->cc = e->cc * 10 + (*s++ - '0');
    if (s < end && (*s == 'a' || *s == 'f')) e->suffix = *s++;
    if (!strncmp(s, "-real", 5) && s + 5 == end) want_virt = 0;
    else if (!strncmp(s, "-virtual", 8) && s + 8 == end) want_real = 0;
    e->real = want_real;
    e->virt = want_virt;
    return end;
}

/* does the arch run on a GPU of compute capability cc (major*10+minor)? With
 * sass_only, without JIT-compiling PTX */
static int arch_runs(const arch_entry *e, int cc, int sass_only) {
    if (e->any) return 1;
    if (e->cc <= 0) return 0;
    if (e->suffix == 'a') return cc == e->cc;
    if (e->real && cc / 10 == e->cc / 10 && cc >= e->cc) return 1; /* SASS: same major, minor >= */
    if (e->virt && !sass_only) return e->suffix == 'f' ? cc / 10 == e->cc / 10 && cc >= e->cc : cc >= e->cc;
    return 0;
}

static int arch_has_sass(int cc) {
    arch_entry e;
    for (const char *s = BF_CUDA_ARCHS; *s;) {
        s = parse_arch(s, &e);
        if (arch_runs(&e, cc, 1)) return 1;
    }
    return 0;
}

int bf_cuda_driver_compat(int drv, int rt) {
    if (drv / 1000 < rt / 1000) return 0;
    return drv >= rt ? 1 : 2;
}

int bf_cuda_arch_ok(int major, int minor, char *why, size_t n) {
    const int cc = major * 10 + minor;
    const char *s = BF_CUDA_ARCHS;
    char sass[128] = "", ptx[128] = "";
    size_t ls = 0, lp = 0;
    arch_entry e;
    while (*s) {
        s = parse_arch(s, &e);
        if (arch_runs(&e, cc, 0)) return 1;
        if (e.cc > 0 && e.real && ls < sizeof sass)
            ls += (size_t)snprintf(sass + ls, sizeof sass - ls, "%s%d.%d%s", ls ? ", " : "",
                                   e.cc / 10, e.cc % 10, e.suffix == 'a' ? " only" : "");
        if (e.cc > 0 && e.virt && lp < sizeof ptx)
            lp += (size_t)snprintf(ptx + lp, sizeof ptx - lp, "%s%d.%d%s", lp ? ", " : "",
                                   e.cc / 10, e.cc % 10, e.suffix == 'a' ? " only" : " and newer");
    }
    if (why)
        snprintf(why, n,
                 "compute capability %d.%d is not covered by the compiled architectures %s "
                 "(GPU code for %s; PTX for %s); rebuild boundfit with "
                 "CMAKE_CUDA_ARCHITECTURES=\"%d-real\" added (e.g. pip install . "
                 "-Ccmake.define.CMAKE_CUDA_ARCHITECTURES=\"%d-real\"), or use device='cpu'",
                 major, minor, BF_CUDA_ARCHS, ls ? sass : "none", lp ? ptx : "none", cc, cc);
    return 0;
}

int bf_cuda_cudnn_major(size_t v) { return (int)(v >= 90000 ? v / 10000 : v / 1000); }

void bf_cuda_cudnn_version_str(size_t v, char *buf, size_t n) {
    if (v >= 90000) snprintf(buf, n, "%zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
    else snprintf(buf, n, "%zu.%zu.%zu", v / 1000, v / 100 % 10, v % 100);
}

const char *bf_cuda_lib_path(const void *sym) {
    Dl_info info;
    if (dladdr(sym, &info) && info.dli_fname) return info.dli_fname;
    return "";
}

static void ver(int v, char *buf, size_t n) { snprintf(buf, n, "%d.%d", v / 1000, v % 1000 / 10); }

BF_EXPORT int bf_cuda_check(int device, char *msg, size_t n) {
    int drv = 0, rt = 0, count = 0;
    char d[16], r[16];
    cudaError_t e = cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    ver(drv, d, sizeof d);
    ver(rt, r, sizeof r);
    if (e != cudaSuccess || drv == 0) {
        cudaGetLastError();
        snprintf(msg, n,
                 "no NVIDIA driver found (libcuda.so.1 could not be loaded); boundfit's CUDA "
                 "backend uses the CUDA %s runtime and needs an NVIDIA driver supporting CUDA %s "
                 "or newer: install the NVIDIA driver (check with nvidia-smi), or use device='cpu'",
                 r, r);
        return 1;
    }
    const int compat = bf_cuda_driver_compat(drv, rt);
    if (!compat) {
        snprintf(msg, n,
                 "the NVIDIA driver supports CUDA up to %s, but boundfit's CUDA runtime is %s: a CUDA %d.x "
                 "runtime needs a driver supporting CUDA %d.0 or newer; update the NVIDIA driver, install "
                 "a boundfit built for CUDA %d, or use device='cpu'", d, r, rt / 1000, rt / 1000, drv / 1000);
        return 1;
    }
    e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        const char *vis = getenv("CUDA_VISIBLE_DEVICES");
        snprintf(msg, n,
                 "no usable GPU: the NVIDIA driver (CUDA %s) is installed but reports %s%s%s%s; "
                 "check nvidia-smi%s, or use device='cpu'",
                 d, e != cudaSuccess ? cudaGetErrorString(e) : "0 devices",
                 vis ? " with CUDA_VISIBLE_DEVICES='" : "", vis ? vis : "", vis ? "'" : "",
                 vis ? " and CUDA_VISIBLE_DEVICES" : "");
        cudaGetLastError();
        return 1;
    }
    if (device < 0 || device >= count) {
        snprintf(msg, n, "device cuda:%d does not exist: this machine has %d GPU(s), cuda:0 .. cuda:%d; "
                 "pick one of those", device, count, count - 1);
        return 1;
    }
    if (device >= BF_CUDA_MAX_DEVICES) {
        snprintf(msg, n, "device cuda:%d is beyond the %d devices this build supports; make it visible "
                 "under a lower index with CUDA_VISIBLE_DEVICES", device, BF_CUDA_MAX_DEVICES);
        return 1;
    }
    cudaDeviceProp p;
    if ((e = cudaGetDeviceProperties(&p, device)) != cudaSuccess) {
        snprintf(msg, n, "cannot query cuda:%d: %s (%s); check nvidia-smi, or use device='cpu'", device,
                 cudaGetErrorString(e), cudaGetErrorName(e));
        cudaGetLastError();
        return 1;
    }
    char why[640];
    if (!bf_cuda_arch_ok(p.major, p.minor, why, sizeof why)) {
        snprintf(msg, n, "%s (cuda:%d): %s", p.name, device, why);
        return 1;
    }
    if (drv < CUDART_VERSION && !arch_has_sass(p.major * 10 + p.minor)) {
        char t[16];
        ver(CUDART_VERSION, t, sizeof t);
        snprintf(msg, n, "%s (cuda:%d): compute capability %d.%d runs only this build's PTX (compiled "
                 "architectures %s), which the driver must JIT-compile, and PTX made by the CUDA %s toolkit "
                 "needs a driver supporting CUDA %s or newer (this one: CUDA %s; minor-version "
                 "compatibility does not cover PTX): update the NVIDIA driver, or use device='cpu'",
                 p.name, device, p.major, p.minor, BF_CUDA_ARCHS, t, t, d);
        return 1;
    }
    size_t dnn = cudnnGetVersion();
    char dv[32];
    bf_cuda_cudnn_version_str(dnn, dv, sizeof dv);
    if (bf_cuda_cudnn_major(dnn) != CUDNN_MAJOR) {
        snprintf(msg, n, "cuDNN %s is loaded (%s) but boundfit was compiled against cuDNN %d.%d: "
                 "install cuDNN %d (e.g. pip install nvidia-cudnn-cu%d) and put it first on "
                 "LD_LIBRARY_PATH, or use device='cpu'", dv, bf_cuda_lib_path((const void *)cudnnGetVersion),
                 CUDNN_MAJOR, CUDNN_MINOR, CUDNN_MAJOR, CUDART_VERSION / 1000);
        return 1;
    }
    size_t dnn_rt = cudnnGetCudartVersion();
    if ((int)(dnn_rt / 1000) != CUDART_VERSION / 1000) {
        snprintf(msg, n, "the loaded cuDNN %s was built for CUDA %zu, but boundfit uses CUDA %d: "
                 "install the cuDNN %d build for CUDA %d (nvidia-cudnn-cu%d), or use device='cpu'",
                 dv, dnn_rt / 1000, CUDART_VERSION / 1000, CUDNN_MAJOR, CUDART_VERSION / 1000,
                 CUDART_VERSION / 1000);
        return 1;
    }
    cudnnStatus_t ds = cudnnOpsVersionCheck();
    if (ds == CUDNN_STATUS_SUCCESS) ds = cudnnCnnVersionCheck();
    if (ds != CUDNN_STATUS_SUCCESS) {
        char detail[256];
        detail[0] = 0;
        cudnnGetLastErrorString(detail, sizeof detail);
        snprintf(msg, n, "cuDNN %s (%s) is incomplete: its ops / cnn sub-libraries do not load or do "
                 "not match (%s%s%s); reinstall cuDNN %d completely, or use device='cpu'", dv,
                 bf_cuda_lib_path((const void *)cudnnGetVersion), cudnnGetErrorString(ds),
                 *detail ? ": " : "", detail, CUDNN_MAJOR);
        return 1;
    }
    int blas_major = 0;
    if (cublasGetProperty(MAJOR_VERSION, &blas_major) != CUBLAS_STATUS_SUCCESS || blas_major != CUBLAS_VER_MAJOR) {
        snprintf(msg, n, "cuBLAS %d is loaded (%s) but boundfit was compiled against cuBLAS %d: "
                 "install the cuBLAS of CUDA %d, or use device='cpu'", blas_major,
                 bf_cuda_lib_path((const void *)cublasGetProperty), CUBLAS_VER_MAJOR, CUDART_VERSION / 1000);
        return 1;
    }
    snprintf(msg, n, "ok");
    return 0;
}
