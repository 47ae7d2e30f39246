/* report.cu - bf_cuda_report: the human-readable CUDA part of bf.diagnose().
 * One line per fact, its verdict first ("ok" / "PROBLEM"), the fix at the end
 * of a PROBLEM line: driver, runtime, cuDNN (compiled, loaded, from where, its
 * sub-libraries), cuBLAS, compiled architectures, then each GPU with name,
 * compute capability, total / free memory and whether boundfit can use it.
 * Works, and never throws, on a machine with no driver or no GPU. Free memory
 * needs a CUDA context on each GPU (created here if not there yet). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cuda_api.h"
#include "cuda_ops.h"

#define BF_EXPORT extern "C" __attribute__((visibility("default")))

typedef struct {
    char *buf;
    size_t n, off;
    int problems;
} report;

__attribute__((format(printf, 4, 5))) static void line(report *r, int ok, const char *key,
                                                       const char *fmt, ...) {
    char val[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(val, sizeof val, fmt, ap);
    va_end(ap);
    if (!ok) r->problems++;
    int k = snprintf(r->buf + r->off, r->off < r->n ? r->n - r->off : 0, "%-8s %-22s %s\n",
                     ok ? "ok" : "PROBLEM", key, val);
    if (k > 0) r->off += (size_t)k;
    if (r->off >= r->n && r->n) r->off = r->n; /* truncated: stop growing */
}

static void ver(int v, char *buf, size_t n) { snprintf(buf, n, "%d.%d", v / 1000, v % 1000 / 10); }

BF_EXPORT int bf_cuda_report(char *buf, size_t n) {
    report r = {buf, n, 0, 0};
    if (n) buf[0] = 0;
    int drv = 0, rt = 0, count = 0;
    char d[16], v[16], dv[32];
    cudaError_t e = cudaDriverGetVersion(&drv);
    if (e != cudaSuccess) drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaGetLastError();
    ver(drv, d, sizeof d);
    ver(rt, v, sizeof v);
    if (drv) line(&r, 1, "NVIDIA driver", "supports CUDA up to %s", d);
    else line(&r, 0, "NVIDIA driver", "none found (libcuda.so.1 not loadable): install the NVIDIA driver");
    const int compat = drv ? bf_cuda_driver_compat(drv, rt) : 1;
    if (compat == 1)
        line(&r, 1, "CUDA runtime", "%s (%s)", v, bf_cuda_lib_path((const void *)cudaRuntimeGetVersion));
    else if (compat == 2)
        line(&r, 1, "CUDA runtime", "%s (%s), on the driver's CUDA %s by minor-version compatibility", v,
             bf_cuda_lib_path((const void *)cudaRuntimeGetVersion), d);
    else
        line(&r, 0, "CUDA runtime", "%s needs a driver supporting CUDA %d.0 or newer (this one: %s): update the "
             "NVIDIA driver", v, rt / 1000, d);

    size_t dnn = cudnnGetVersion(), dnn_rt = cudnnGetCudartVersion();
    bf_cuda_cudnn_version_str(dnn, dv, sizeof dv);
    int dnn_ok = bf_cuda_cudnn_major(dnn) == CUDNN_MAJOR;
    line(&r, dnn_ok, "cuDNN", "compiled %d.%d.%d, loaded %s (%s)%s", CUDNN_MAJOR, CUDNN_MINOR,
         CUDNN_PATCHLEVEL, dv, bf_cuda_lib_path((const void *)cudnnGetVersion),
         dnn_ok ? "" : ": install the cuDNN of the compiled major version");
    int dnn_rt_ok = (int)(dnn_rt / 1000) == CUDART_VERSION / 1000;
    line(&r, dnn_rt_ok, "cuDNN built for CUDA", "%zu.%zu%s", dnn_rt / 1000, dnn_rt % 1000 / 10,
         dnn_rt_ok ? "" : ": install the cuDNN build for this CUDA major");
    cudnnStatus_t s1 = cudnnOpsVersionCheck(), s2 = cudnnCnnVersionCheck();
    if (s1 == CUDNN_STATUS_SUCCESS && s2 == CUDNN_STATUS_SUCCESS)
        line(&r, 1, "cuDNN sub-libraries", "ops and cnn load and match");
    else
        line(&r, 0, "cuDNN sub-libraries", "ops: %s, cnn: %s: reinstall cuDNN completely",
             cudnnGetErrorString(s1), cudnnGetErrorString(s2));
    int bmaj = 0, bmin = 0, bpat = 0;
    cublasStatus_t bs = cublasGetProperty(MAJOR_VERSION, &bmaj);
    if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasGetProperty(MINOR_VERSION, &bmin);
    if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasGetProperty(PATCH_LEVEL, &bpat);
    int blas_ok = bs == CUBLAS_STATUS_SUCCESS && bmaj == CUBLAS_VER_MAJOR;
    line(&r, blas_ok, "cuBLAS", "compiled %d.%d.%d, loaded %d.%d.%d (%s)%s", CUBLAS_VER_MAJOR,
         CUBLAS_VER_MINOR, CUBLAS_VER_PATCH, bmaj, bmin, bpat,
         bf_cuda_lib_path((const void *)cublasGetProperty),
         blas_ok ? "" : ": install the cuBLAS of the compiled major version");
    line(&r, 1, "compiled architectures", "%s", bf_cuda_archs());

    e = drv ? cudaGetDeviceCount(&count) : cudaSuccess;
    if (!drv) {
        line(&r, 0, "GPUs", "none usable without an NVIDIA driver");
    } else if (e != cudaSuccess || count == 0) {
        line(&r, 0, "GPUs", "none usable (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        cudaGetLastError();
        count = 0;
    }
    int prev = -1;
    if (count > 0 && cudaGetDevice(&prev) != cudaSuccess) prev = -1;
    for (int i = 0; i < count; i++) {
        char key[24], msg[768], mem[96];
        cudaDeviceProp p;
        snprintf(key, sizeof key, "cuda:%d", i);
        if ((e = cudaGetDeviceProperties(&p, i)) != cudaSuccess) {
            line(&r, 0, key, "cannot be queried: %s", cudaGetErrorString(e));
            cudaGetLastError();
            continue;
        }
        size_t fr = 0, tot = 0;
        if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&fr, &tot) == cudaSuccess)
            snprintf(mem, sizeof mem, "%.2f GiB total, %.2f GiB free", tot / 1073741824.0, fr / 1073741824.0);
        else
            snprintf(mem, sizeof mem, "%.2f GiB total, free unknown (%s)", p.totalGlobalMem / 1073741824.0,
                     cudaGetErrorString(cudaGetLastError()));
        int bad = bf_cuda_check(i, msg, sizeof msg);
        line(&r, !bad, key, "%s, compute capability %d.%d, %d SMs, %s%s%s", p.name, p.major, p.minor,
             p.multiProcessorCount, mem, bad ? ": " : "", bad ? msg : "");
    }
    if (prev >= 0) cudaSetDevice(prev);
    cudaGetLastError();
    return r.problems;
}
