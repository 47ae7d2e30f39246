/* cuda_ops.h - the CUDA backend's ops: bf_cuda_<op> for every op of
 * core/backend_ops.h the CUDA backend implements (generated from that list,
 * so same names and argument order as the vtable), and the module's internal
 * helpers. Conventions of backend.h: outputs first, row-major NHWC, Keras
 * weight layouts; backward ADDS into parameter gradients and OVERWRITES dinp
 * (which may be NULL). Every op queues work on the device's stream and
 * returns without waiting, except those that hand a value to the host
 * (to_host, sync, batch_wait, and an SCCE loss given no bad_label flag),
 * which wait. Reductions write into device memory. Sums (sum, column sums,
 * batchnorm) and the loss need the run workspace bound (workspace.cu). */
#ifndef BF_CUDA_OPS_H
#define BF_CUDA_OPS_H

#include "cuda_check.h"

#define BF_OP(ret, op, params, on) BF_ON_CUDA_##on(ret bf_cuda_##op params;)
#include "backend_ops.h"
#undef BF_OP

/* ---- probe (check.cu) ---- */
/* compiled architectures as the build passed them (BF_CUDA_ARCHS) */
const char *bf_cuda_archs(void);
/* 1 if the compiled archs run on compute capability major.minor; else 0 and why */
int bf_cuda_arch_ok(int major, int minor, char *why, size_t n);
/* NVIDIA's driver compatibility: a CUDA X.y runtime runs on a driver of CUDA
 * X.0 or newer (minor-version compatibility, PTX JIT aside). 0: the driver's
 * major is older, refused; 1: driver >= runtime; 2: an older minor, allowed */
int bf_cuda_driver_compat(int drv, int rt);
/* loaded cuDNN as "9.19.0", and the major of a cudnnGetVersion() value */
void bf_cuda_cudnn_version_str(size_t v, char *buf, size_t n);
int bf_cuda_cudnn_major(size_t v);
/* path of the shared library that defines `sym` ("" if unknown) */
const char *bf_cuda_lib_path(const void *sym);

/* ---- workspace.cu: the run workspace (reduction scratch, flags, cuBLAS) ---- */
size_t bf_cuda_run_workspace_bytes(bf_backend *be);
bf_status bf_cuda_bind_workspace(bf_backend *be, void *ws, size_t bytes);
/* BF_ERR_INTERNAL unless a run workspace is bound (op names the caller) */
bf_status bf_cuda_need_scratch(bf_cuda_state *st, const char *op);

/* ---- memory (device_arena.cu, backend.cu) ---- */
bf_status bf_cuda_reserve(bf_backend *be, void **out, size_t bytes);
void bf_cuda_release(bf_backend *be, void *p);
bf_status bf_cuda_to_device(bf_backend *be, void *dst, const void *src, size_t bytes);
bf_status bf_cuda_to_host(bf_backend *be, void *dst, const void *src, size_t bytes);
bf_status bf_cuda_fill_zero(bf_backend *be, void *dst, size_t bytes);
bf_status bf_cuda_sync(bf_backend *be);
void bf_cuda_host_pin(bf_backend *be, void *p, size_t bytes);
void bf_cuda_host_unpin(bf_backend *be, void *p);
bf_status bf_cuda_upload(bf_backend *be, int k, void *dst, const void *src, size_t bytes);
bf_status bf_cuda_batch_consumed(bf_backend *be, int k);
bf_status bf_cuda_batch_wait(bf_backend *be, int k);

/* ---- pieces the ops share ---- */
/* the GEMMs (gemm.cu): column-major C = alpha op(A) op(B) + beta C (strided batches), in the compute type the core
 * asks for (bf_backend.half / tf32), float32 storage and accumulation */
cublasComputeType_t bf_cuda_compute_type(const bf_cuda_state *st);
bf_status bf_cuda_gemm(bf_cuda_state *st, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                       float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
bf_status bf_cuda_gemm_batched(bf_cuda_state *st, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                               float alpha, const float *A, int lda, long long sA, const float *B, int ldb,
                               long long sB, float beta, float *C, int ldc, long long sC, int batch);
/* opt_update of Adamax, Adadelta, Ftrl, Lion and Lamb's two passes (optimizers_more.cu) */
bf_status bf_cuda_opt_update_more(bf_cuda_state *st, float *w, float *s0, float *s1, const float *g, long n,
                                  const bf_update_args *a);
/* out (N,C) += b (C) broadcast over rows (dense.cu) */
bf_status bf_cuda_bias_add(bf_cuda_state *st, float *out, const float *b, long N, int C);
/* db (C) += sum over the N rows of x (N,C): deterministic column reductions (colsum.cu) */
bf_status bf_cuda_colsum_add(bf_cuda_state *st, float *db, const float *x, long N, int C);
/* Keras geometry check shared by Conv2D and pooling (conv.cu; core/conv_check.h) */
bf_status bf_cuda_check_geom(const bf_conv_geom *g, const char *op, int pooling);
/* destroy the cached descriptors of a device (close; conv.cu) */
void bf_cuda_conv_forget(bf_cuda_state *st);

#endif
