/* cuda_ops.h - the CUDA implementations of the backend.h ops (bf_cuda_<op>,
 * same argument order as the vtable) and the module's internal helpers.
 * Conventions of backend.h: outputs first, row-major NHWC, Keras weight
 * layouts; backward ADDS into parameter gradients and OVERWRITES dinp (which
 * may be NULL). Every op queues work on the device's stream and returns
 * without waiting, except those that hand a value to the host (to_host,
 * sync, batch_wait, and an SCCE loss given no bad_label flag), which wait.
 * Reductions write
 * into device memory. Sums (sum, column sums, batchnorm) and the loss need
 * the run workspace bound (workspace.cu). */
#ifndef BF_CUDA_OPS_H
#define BF_CUDA_OPS_H

#include "cuda_check.h"

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

/* ---- dense.cu ---- */
bf_status bf_cuda_dense_forward(bf_backend *be, float *out, const float *inp, const float *w,
                                const float *b, int B, int IN, int OUT);
bf_status bf_cuda_dense_backward(bf_backend *be, float *dinp, float *dw, float *db,
                                 const float *dout, const float *inp, const float *w, int B,
                                 int IN, int OUT);
/* out (N,C) += b (C) broadcast over rows */
bf_status bf_cuda_bias_add(bf_cuda_state *st, float *out, const float *b, long N, int C);

/* ---- colsum.cu: deterministic column reductions of (N,C) matrices ---- */
/* db (C) += sum over the N rows of x (N,C) */
bf_status bf_cuda_colsum_add(bf_cuda_state *st, float *db, const float *x, long N, int C);

/* ---- activations.cu ---- */
bf_status bf_cuda_act_forward(bf_backend *be, float *out, const float *inp, bf_act act, long N,
                              int C);
bf_status bf_cuda_act_backward(bf_backend *be, float *dinp, const float *dout, const float *out,
                               bf_act act, long N, int C);

/* ---- loss.cu ---- */
bf_status bf_cuda_loss_forward_backward(bf_backend *be, float *loss_out, float *dpred, int *bad_label,
                                        const float *pred, const float *target, const float *sw,
                                        const bf_loss_spec *loss, int fused, int B, int C, float scale);

/* ---- metrics.cu ---- */
bf_status bf_cuda_metric_update(bf_backend *be, double *acc, const float *pred, const float *target,
                                const float *sw, const bf_metric_spec *m, bf_act act, int B, int C, int T);

/* ---- reduce.cu ---- */
bf_status bf_cuda_sum(bf_backend *be, double *sum_out, const float *x, long n);
bf_status bf_cuda_nonfinite(bf_backend *be, int *bad, const float *x, long n);
bf_status bf_cuda_maxabs(bf_backend *be, float *out, const float *x, long n);

/* ---- optimizers.cu ---- */
bf_status bf_cuda_regularize(bf_backend *be, double *penalty, float *g, const float *w, long n, float l1, float l2);
bf_status bf_cuda_constrain(bf_backend *be, float *w, long A, long R, long B, const bf_constraint *c);
bf_status bf_cuda_sumsq(bf_backend *be, double *out, const float *x, long n);
bf_status bf_cuda_grad_clip(bf_backend *be, float *g, const double *sumsq, long n, bf_clip_mode mode, float c);
bf_status bf_cuda_opt_update(bf_backend *be, float *w, float *s0, float *s1, float *s2, const float *g, long n,
                             const bf_update_args *a);

/* ---- conv.cu ---- */
/* Keras geometry check shared by Conv2D and pooling (same rules as the CPU) */
bf_status bf_cuda_check_geom(const bf_conv_geom *g, const char *op, int pooling);
size_t bf_cuda_conv2d_workspace_bytes(bf_backend *be, const bf_conv_geom *g, int backward);
bf_status bf_cuda_conv2d_forward(bf_backend *be, float *out, void *ws, const float *inp,
                                 const float *w, const float *b, const bf_conv_geom *g);
bf_status bf_cuda_conv2d_backward(bf_backend *be, float *dinp, float *dw, float *db, void *ws,
                                  const float *dout, const float *inp, const float *w,
                                  const bf_conv_geom *g);
/* destroy the cached descriptors of a device (close) */
void bf_cuda_conv_forget(bf_cuda_state *st);

/* ---- pool.cu ---- */
bf_status bf_cuda_maxpool_forward(bf_backend *be, float *out, const float *inp,
                                  const bf_conv_geom *g);
bf_status bf_cuda_maxpool_backward(bf_backend *be, float *dinp, const float *dout,
                                   const float *out, const float *inp, const bf_conv_geom *g);
bf_status bf_cuda_avgpool_forward(bf_backend *be, float *out, const float *inp,
                                  const bf_conv_geom *g);
bf_status bf_cuda_avgpool_backward(bf_backend *be, float *dinp, const float *dout,
                                   const bf_conv_geom *g);

/* ---- depthwise.cu: DepthwiseConv2D, g with K = C * M, w (KH,KW,C,M) ---- */
bf_status bf_cuda_depthwise_forward(bf_backend *be, float *out, const float *inp, const float *w,
                                    const float *b, const bf_conv_geom *g);
bf_status bf_cuda_depthwise_backward(bf_backend *be, float *dinp, float *dw, float *db, const float *dout,
                                     const float *inp, const float *w, const bf_conv_geom *g);

/* ---- batchnorm.cu ---- */
bf_status bf_cuda_batchnorm_forward(bf_backend *be, float *out, float *mean, float *invstd,
                                    float *moving_mean, float *moving_var, const float *inp,
                                    const float *gamma, const float *beta, long N, int C,
                                    float momentum, float eps, int training);
bf_status bf_cuda_batchnorm_backward(bf_backend *be, float *dinp, float *dgamma, float *dbeta,
                                     const float *dout, const float *inp, const float *mean,
                                     const float *invstd, const float *gamma, long N, int C);
bf_status bf_cuda_batchnorm_backward_frozen(bf_backend *be, float *dinp, const float *dout, const float *invstd,
                                            const float *gamma, long N, int C);

/* ---- dropout.cu ---- */
bf_status bf_cuda_dropout_forward(bf_backend *be, float *out, float *mask, const float *inp,
                                  long n, float rate, uint64_t seed);
bf_status bf_cuda_dropout_backward(bf_backend *be, float *dinp, const float *dout,
                                   const float *mask, long n, float rate);

/* ---- merge.cu ---- */
bf_status bf_cuda_ewise(bf_backend *be, float *out, const float *a, const float *b, const float *c, bf_ewise_op op,
                        float alpha, long n);
bf_status bf_cuda_copy2d(bf_backend *be, float *out, long ld_out, const float *inp, long ld_in, long rows,
                         long cols);

/* ---- act_more.cu, strided.cu, rescale.cu, augment.cu ---- */
bf_status bf_cuda_actx_forward(bf_backend *be, float *out, const float *inp, bf_act act, const bf_act_param *p,
                               long n);
bf_status bf_cuda_actx_backward(bf_backend *be, float *dinp, const float *dout, const float *inp, const float *out,
                                bf_act act, const bf_act_param *p, long n);
bf_status bf_cuda_strided_copy(bf_backend *be, float *out, const float *inp, const bf_strided *s);
/* nccl.cu: data parallel over NCCL (backend.h documents each) */
bf_status bf_cuda_nccl_unique_id(bf_backend *be, const char *lib, void *id);
bf_status bf_cuda_nccl_init(bf_backend *be, const char *lib, const void *id, int rank, int size);
bf_status bf_cuda_nccl_allreduce(bf_backend *be, float *buf, long n, long bucket);
bf_status bf_cuda_nccl_bcast(bf_backend *be, void *buf, size_t bytes, int root);
bf_status bf_cuda_nccl_poll(bf_backend *be, int *done);
void bf_cuda_nccl_abort(bf_backend *be);
bf_status bf_cuda_nccl_destroy(bf_backend *be);
bf_status bf_cuda_scale(bf_backend *be, float *x, long n, float s);
bf_status bf_cuda_rescale_forward(bf_backend *be, float *out, const float *inp, const float *mean, const float *var,
                                  float scale, float offset, float eps, long N, int C);
bf_status bf_cuda_rescale_backward(bf_backend *be, float *dinp, const float *dout, const float *var, float scale,
                                   float eps, long N, int C);
bf_status bf_cuda_augment_forward(bf_backend *be, float *out, const float *inp, const bf_augment *a);
bf_status bf_cuda_augment_backward(bf_backend *be, float *dinp, const float *dout, const bf_augment *a);

#endif
