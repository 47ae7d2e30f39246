/* cpu_ops.h - the CPU backend's ops: bf_cpu_<op> for every op of
 * core/backend_ops.h that the CPU implements (generated from that list, so
 * same names and argument order as the vtable), the serial kernels that
 * par_ops.c splits over the engine's pool (bf_cpu_<op>_serial: the entry
 * points bf_cpu_<op> are par_ops.c's), and the CPU / emu backends. */
#ifndef BF_CPU_OPS_H
#define BF_CPU_OPS_H

#include "backend.h"

#define BF_OP(ret, op, params, on) BF_ON_CPU_##on(ret bf_cpu_##op params;)
#include "backend_ops.h"
#undef BF_OP

/* float16 conversions with F16C (f16_f16c.c): out[lo, hi) from in[lo, hi), `how` a bf_bf16_how without its
 * BF_HALF_F16_BIT and not SCAN; only where the CPU has AVX2 and F16C (bf16.c checks) */
void bf_cpu_f16c_convert(void *out, const void *in, int how, long lo, long hi);

/* the serial kernels behind par_ops.c's entry points (same arguments) */
bf_status bf_cpu_dense_backward_serial(bf_backend *be, float *dinp, float *dw, float *db, const float *dout,
                                       const float *inp, const float *w, int B, int IN, int OUT);
bf_status bf_cpu_act_forward_serial(bf_backend *be, float *out, const float *inp, bf_act act, long N, int C);
bf_status bf_cpu_act_backward_serial(bf_backend *be, float *dinp, const float *dout, const float *out, bf_act act,
                                     long N, int C);
bf_status bf_cpu_loss_forward_backward_serial(bf_backend *be, float *loss_out, float *dpred, int *bad_label,
                                              const float *pred, const float *target, const float *sw,
                                              const bf_loss_spec *loss, int fused, int B, int C, float scale);
bf_status bf_cpu_metric_update_serial(bf_backend *be, double *acc, const float *pred, const float *target,
                                      const float *sw, const bf_metric_spec *m, bf_act act, int B, int C, int T);
bf_status bf_cpu_maxabs_serial(bf_backend *be, float *out, const float *x, long n);
bf_status bf_cpu_opt_update_serial(bf_backend *be, float *w, float *s0, float *s1, float *s2, const float *g, long n,
                                   const bf_update_args *a);
/* Adamax, Adadelta, Ftrl, Lion, Lamb (optimizers_more.c), after the weight decay */
bf_status bf_cpu_opt_update_more(float *w, float *s0, float *s1, const float *g, long n, const bf_update_args *a);
bf_status bf_cpu_ewise_serial(bf_backend *be, float *out, const float *a, const float *b, const float *c,
                              bf_ewise_op op, float alpha, long n);
bf_status bf_cpu_actx_forward_serial(bf_backend *be, float *out, const float *inp, bf_act act, const bf_act_param *p,
                                     long n);
bf_status bf_cpu_actx_backward_serial(bf_backend *be, float *dinp, const float *dout, const float *inp,
                                      const float *out, bf_act act, const bf_act_param *p, long n);
bf_status bf_cpu_layernorm_forward_serial(bf_backend *be, float *out, float *mean, float *invstd, const float *inp,
                                          const float *gamma, const float *beta, long N, int C, float eps);
bf_status bf_cpu_layernorm_backward_serial(bf_backend *be, float *dinp, float *dgamma, float *dbeta,
                                           const float *dout, const float *inp, const float *mean,
                                           const float *invstd, const float *gamma, long N, int C);

/* metric_update's pieces: rows [lo, hi) added into acc; the rows of a block
 * for B rows (at most BF_METRIC_BLOCKS blocks); metrics of at most
 * BF_METRIC_SMALL values are summed per block */
#define BF_METRIC_BLOCKS 64
#define BF_METRIC_SMALL 4
void bf_cpu_metric_rows(double *acc, const float *pred, const float *target, const float *sw, const bf_metric_spec *m,
                        bf_act act, int lo, int hi, int C, int T);
int bf_metric_block_rows(int B);

/* a strided gather's sizes and strides (strided.c) */
bf_status bf_strided_check(const bf_strided *s);

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
