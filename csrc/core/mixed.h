/* mixed.h - mixed precision in a step (mixed_bfloat16 / mixed_float16, docs/mixed-precision.md):
 * which tensors are stored in 16 bits, and the steps of the nodes that read
 * or write them, run through float32 conversion buffers in chunks of rows. */
#ifndef BF_MIXED_H
#define BF_MIXED_H

#include "step.h"

/* bf_run.cv bits */
enum { BF_CV_ON = 1, BF_CV_READS_IN = 2, BF_CV_READS_OUT = 4 };

/* node i's output storage and conversion (t16, cv, cv_rows) and its forward conversion buffer, used at t;
 * after its output buffer is planned, before its own plan hook */
bf_status bf_mixed_plan_forward(bf_run *r, int i, int t);
/* node i's backward conversion buffer, used at tb (its input gradients' buffers planned) */
bf_status bf_mixed_plan_backward(bf_run *r, int i, int tb);
/* the rows per chunk of the conversion buffers and their sizes, once every buffer's uses are known (before the
 * offsets): the plan stays within the float32 plan's peak where chunks of rows allow */
bf_status bf_mixed_size(bf_run *r);
/* bytes per element of tensor t's values and gradient */
static inline size_t bf_mixed_elem(const bf_run *r, int t) { return r->t16[t] ? 2 : sizeof(float); }

/* node i's forward / backward over `rows` rows through the conversions (r->cv[i] set) */
bf_status bf_mixed_forward(bf_run *r, int i, int rows);
bf_status bf_mixed_backward(bf_run *r, int i, int rows);
/* the gradient tmp (bfloat16 when t16[u]) added into tensor u's gradient */
bf_status bf_mixed_accumulate(bf_run *r, int u, void *grad, const void *tmp, long n);

#endif
