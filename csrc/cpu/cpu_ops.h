/* cpu_ops.h - CPU implementations of the dense-network ops of backend.h.
 * Same names and argument order as the vtable, with the bf_cpu_ prefix. */
#ifndef BF_CPU_OPS_H
#define BF_CPU_OPS_H

#include "backend.h"

bf_status bf_cpu_dense_forward(bf_backend *be, float *out, const float *inp, const float *w,
                               const float *b, int B, int IN, int OUT);
bf_status bf_cpu_dense_backward(bf_backend *be, float *dinp, float *dw, float *db,
                                const float *dout, const float *inp, const float *w, int B,
                                int IN, int OUT);
bf_status bf_cpu_act_forward(bf_backend *be, float *out, const float *inp, bf_act act, long N,
                             int C);
bf_status bf_cpu_act_backward(bf_backend *be, float *dinp, const float *dout, const float *out,
                              bf_act act, long N, int C);
bf_status bf_cpu_loss_forward_backward(bf_backend *be, float *loss_out, float *dpred, int *bad_label,
                                       const float *pred, const float *target, const float *sw,
                                       const bf_loss_spec *loss, int fused, int B, int C, float scale);
bf_status bf_cpu_metric_update(bf_backend *be, double *acc, const float *pred, const float *target,
                               const float *sw, const bf_metric_spec *m, bf_act act, int B, int C, int T);
/* metric_update's pieces: rows [lo, hi) added into acc; the rows of a block
 * for B rows (at most BF_METRIC_BLOCKS blocks); metrics of at most
 * BF_METRIC_SMALL values are summed per block */
#define BF_METRIC_BLOCKS 64
#define BF_METRIC_SMALL 4
bf_status bf_cpu_metric_rows(double *acc, const float *pred, const float *target, const float *sw,
                             const bf_metric_spec *m, bf_act act, int lo, int hi, int C, int T);
int bf_metric_block_rows(int B);
bf_status bf_par_metric_update(bf_backend *be, double *acc, const float *pred, const float *target,
                               const float *sw, const bf_metric_spec *m, bf_act act, int B, int C, int T);
bf_status bf_cpu_sum(bf_backend *be, double *sum_out, const float *x, long n);
bf_status bf_cpu_nonfinite(bf_backend *be, int *bad, const float *x, long n);
bf_status bf_cpu_maxabs(bf_backend *be, float *out, const float *x, long n);
bf_status bf_cpu_regularize(bf_backend *be, double *penalty, float *g, const float *w, long n, float l1, float l2);
bf_status bf_cpu_constrain(bf_backend *be, float *w, long A, long R, long B, const bf_constraint *c);
bf_status bf_cpu_sumsq(bf_backend *be, double *out, const float *x, long n);
bf_status bf_cpu_grad_clip(bf_backend *be, float *g, const double *sumsq, long n, bf_clip_mode mode, float c);
bf_status bf_cpu_opt_update(bf_backend *be, float *w, float *s0, float *s1, float *s2, const float *g, long n,
                            const bf_update_args *a);

bf_status bf_cpu_ewise(bf_backend *be, float *out, const float *a, const float *b, const float *c, bf_ewise_op op,
                       float alpha, long n);
bf_status bf_cpu_copy2d(bf_backend *be, float *out, long ld_out, const float *inp, long ld_in, long rows,
                        long cols);

/* act_more.c, strided.c, rescale.c, augment.c */
bf_status bf_cpu_actx_forward(bf_backend *be, float *out, const float *inp, bf_act act, const bf_act_param *p, long n);
bf_status bf_cpu_actx_backward(bf_backend *be, float *dinp, const float *dout, const float *inp, const float *out,
                               bf_act act, const bf_act_param *p, long n);
bf_status bf_strided_check(const bf_strided *s);
bf_status bf_cpu_strided_copy(bf_backend *be, float *out, const float *inp, const bf_strided *s);
bf_status bf_cpu_rescale_forward(bf_backend *be, float *out, const float *inp, const float *mean, const float *var,
                                 float scale, float offset, float eps, long N, int C);
bf_status bf_cpu_rescale_backward(bf_backend *be, float *dinp, const float *dout, const float *var, float scale,
                                  float eps, long N, int C);
bf_status bf_cpu_augment_forward(bf_backend *be, float *out, const float *inp, const bf_augment *a);
bf_status bf_cpu_augment_backward(bf_backend *be, float *dinp, const float *dout, const bf_augment *a);

/* par_ops.c: the same ops split over the engine's pool (par.h), same bits on
 * any number of threads; the CPU backend's vtable entries */
bf_status bf_par_act_forward(bf_backend *be, float *out, const float *inp, bf_act act, long N, int C);
bf_status bf_par_act_backward(bf_backend *be, float *dinp, const float *dout, const float *out, bf_act act, long N,
                              int C);
bf_status bf_par_actx_forward(bf_backend *be, float *out, const float *inp, bf_act act, const bf_act_param *p,
                              long n);
bf_status bf_par_actx_backward(bf_backend *be, float *dinp, const float *dout, const float *inp, const float *out,
                               bf_act act, const bf_act_param *p, long n);
bf_status bf_par_ewise(bf_backend *be, float *out, const float *a, const float *b, const float *c, bf_ewise_op op,
                       float alpha, long n);
bf_status bf_par_opt_update(bf_backend *be, float *w, float *s0, float *s1, float *s2, const float *g, long n,
                            const bf_update_args *a);
bf_status bf_par_layernorm_forward(bf_backend *be, float *out, float *mean, float *invstd, const float *inp,
                                   const float *gamma, const float *beta, long N, int C, float eps);
bf_status bf_par_layernorm_backward(bf_backend *be, float *dinp, float *dgamma, float *dbeta, const float *dout,
                                    const float *inp, const float *mean, const float *invstd, const float *gamma,
                                    long N, int C);
bf_status bf_par_act_backward_bias(bf_backend *be, float *dinp, const float *dout, const float *out, bf_act act,
                                   long N, int C, float *db);
bf_status bf_par_loss_forward_backward(bf_backend *be, float *loss_out, float *dpred, int *bad_label,
                                       const float *pred, const float *target, const float *sw,
                                       const bf_loss_spec *loss, int fused, int B, int C, float scale);
bf_status bf_par_dense_backward(bf_backend *be, float *dinp, float *dw, float *db, const float *dout,
                                const float *inp, const float *w, int B, int IN, int OUT);
bf_status bf_par_maxabs(bf_backend *be, float *out, const float *x, long n);

/* DepthwiseConv2D (depthwise.c) */
bf_status bf_cpu_depthwise_forward(bf_backend *be, float *out, const float *inp, const float *w, const float *b,
                                   const bf_conv_geom *g);
bf_status bf_cpu_depthwise_backward(bf_backend *be, float *dinp, float *dw, float *db, const float *dout,
                                    const float *inp, const float *w, const bf_conv_geom *g);

/* The CPU backend (always present). */
bf_backend *bf_cpu_backend(void);
/* "emu": the CPU's ops behind a device's interface (own memory, copies both
 * ways, uploads, a run workspace), so the core's device path runs in tests on
 * machines without a GPU. Its memory is host memory; mem_info reports
 * BF_EMU_TOTAL_BYTES total, less what its reservations hold. */
#define BF_EMU_TOTAL_BYTES ((size_t)4 << 30)
bf_backend *bf_emu_backend(void);
/* calls so far to the ops that make the host wait for a GPU (reads to the
 * host, sync, batch_wait): how often a step stalls the device's queue */
long bf_emu_waits(void);
void bf_emu_mem_info(size_t *free_bytes, size_t *total_bytes);

#endif
