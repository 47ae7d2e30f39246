/* cuda_abi.h - the contract between the core (_core, which never links CUDA)
 * and the lazily dlopen'ed CUDA module (_cuda.so). Plain C, no CUDA types.
 * Every entry point below is exported with C linkage; everything else in the
 * module is internal. Error messages of bf_status-returning functions go into
 * the core's thread-local error buffer through host->vfail (the module does
 * not link status.c). bf_cuda_check and bf_cuda_report write into the caller's
 * buffer instead, so they work before any device is opened and on machines
 * without a GPU or a driver. */
#ifndef BF_CUDA_ABI_H
#define BF_CUDA_ABI_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* the core's headers are C; give them C linkage in the module's C++ */
#ifdef __cplusplus
extern "C" {
#endif
#include "backend.h"
#ifdef __cplusplus
}
#endif

#define BF_CUDA_ABI 22 /* 4: the vtable grew DepthwiseConv2D ops; 5: bf_augment grew rotation, zoom, contrast;
                          6: the vtable grew the NCCL entries (nccl.cu), bf_metric_spec its value;
                          7: ewise grew the keras.ops math ops (BF_EW_DIV ..); 8: bf_metric_spec grew class_id, batch_mean;
                          9: bf_augment grew keras.random's draws (noise 3);
                          10: the vtable's ops in backend_ops.h's order, after the hand-written members;
                          11: bf_update_args grew Ftrl's arguments and Lamb's norms, the vtable lamb_sumsq;
                          12: the vtable grew the PReLU ops (prelu_forward / prelu_backward);
                          13: the index ops (gather, scan, argsort) and their geometries;
                          14: the vtable grew the reductions over axes (reduce_forward / reduce_backward);
                          15: the elementwise primitives (unary_map / unary_grad / binary_map / binary_grad);
                          16: bf_metric_spec grew col0 / ncols (the SUMS metric); 17: the vtable grew bf16_convert (CPU only);
                          18: bf16_convert on CUDA too (half.cu), bf_backend grew the compute dtype and TF32 switch.
                          19: the vtable grew the Conv3D ops (CPU only).
                          20: bf_update_kind grew EMA / EMA_OVERWRITE (use_ema).
                          21: the vtable grew the SpectralNormalization ops (CPU only).
                          22: bf_update_args grew Adafactor's and Muon's arguments, the vtable their updates (CPU only).
                          Any change to backend_ops.h or bf_backend bumps it. */

/* What the core lends the module: its error recorder (the thread-local
 * buffer lives in the core, so the module must not link status.c). */
typedef struct {
    bf_status (*vfail)(bf_status code, const char *file, int line, const char *fmt, va_list ap);
} bf_cuda_host;

#ifdef __cplusplus
extern "C" {
#endif
/* exported by _cuda.so */
int bf_cuda_abi_version(void); /* BF_CUDA_ABI of the build */
/* 0 when `device` is usable (driver present and new enough for the runtime,
 * the device exists, its compute capability is covered by the compiled
 * architectures, cuDNN / cuBLAS majors match); else 1 and a message in msg
 * saying what was found, what is required and how to fix it. */
int bf_cuda_check(int device, char *msg, size_t n);
/* Multi-line report (driver, runtime, cuDNN / cuBLAS compiled and loaded, each
 * GPU with name, compute capability, memory, a verdict per line). Never fails;
 * returns the number of PROBLEM lines. Queries free memory, which creates a
 * CUDA context on each GPU. */
int bf_cuda_report(char *buf, size_t n);
/* Open device `device`: re-runs bf_cuda_check, creates a stream, cuBLAS and
 * cuDNN handles, and returns the vtable (static storage; the same pointer for
 * a device already open). BF_ERR_DEVICE with the reason on failure. */
bf_status bf_cuda_open(const bf_cuda_host *host, int device, bf_backend **out);
/* Free / total device memory as cudaMemGetInfo reports it. */
bf_status bf_cuda_mem_info(bf_backend *be, size_t *free_bytes, size_t *total_bytes);
void bf_cuda_close(bf_backend *be);
#ifdef __cplusplus
}
#endif

#endif
