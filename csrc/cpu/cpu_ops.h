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
                                       const float *pred, const float *target, bf_loss_kind kind,
                                       int fused, int from_logits, int B, int C, float scale);
bf_status bf_cpu_accuracy(bf_backend *be, float *correct_out, const float *pred,
                          const float *target, bf_loss_kind kind, int from_logits, int B, int C);
bf_status bf_cpu_sum(bf_backend *be, double *sum_out, const float *x, long n);
bf_status bf_cpu_nonfinite(bf_backend *be, int *bad, const float *x, long n);
bf_status bf_cpu_maxabs(bf_backend *be, float *out, const float *x, long n);
bf_status bf_cpu_sgd_update(bf_backend *be, float *w, float *vel, const float *g, long n,
                            float lr, float momentum, int nesterov);
bf_status bf_cpu_adam_update(bf_backend *be, float *w, float *m, float *v, const float *g,
                             long n, float lr, float beta1, float beta2, float eps, long t);
bf_status bf_cpu_rmsprop_update(bf_backend *be, float *w, float *ms, float *mom, const float *g,
                                long n, float lr, float rho, float momentum, float eps);

bf_status bf_cpu_ewise(bf_backend *be, float *out, const float *a, const float *b, const float *c, bf_ewise_op op,
                       float alpha, long n);
bf_status bf_cpu_copy2d(bf_backend *be, float *out, long ld_out, const float *inp, long ld_in, long rows,
                        long cols);

#endif
