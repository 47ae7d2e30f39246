/* backend.h - the backend vtable: every op the step program runs, once per device.
 * Conventions (as in llm.c): outputs first, then inputs, then sizes; shapes in
 * comments; row-major, channels-last (NHWC); Keras weight layouts:
 * Dense kernel (IN,OUT), Conv2D kernel (KH,KW,C,K).
 * Backward functions ADD into parameter gradients (dw, db, dgamma, dbeta) so
 * micro-batches accumulate; they OVERWRITE dinp. dinp may be NULL (first layer).
 * All pointers are device pointers of the backend (host pointers for the CPU).
 * Kernels never allocate: any scratch comes in `ws`, sized by *_workspace_bytes. */
#ifndef BF_BACKEND_H
#define BF_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

typedef enum { BF_ACT_LINEAR = 0, BF_ACT_RELU, BF_ACT_SIGMOID, BF_ACT_TANH, BF_ACT_SOFTMAX } bf_act;
typedef enum { BF_LOSS_MSE = 0, BF_LOSS_BCE, BF_LOSS_CCE, BF_LOSS_SCCE } bf_loss_kind;
/* elementwise ops of merge layers and gradient accumulation (see ewise) */
typedef enum {
    BF_EW_ADD = 0, /* out = alpha * (a + b) */
    BF_EW_SUB,     /* out = alpha * (a - b) */
    BF_EW_MUL,     /* out = alpha * (a * b) */
    BF_EW_MAX,     /* out = max(a, b) */
    BF_EW_MIN,     /* out = min(a, b) */
    BF_EW_SCALE,   /* out = alpha * a */
    BF_EW_SELECT   /* out = a == b ? c : 0 (Maximum / Minimum backward: a input, b output, c its gradient) */
} bf_ewise_op;

/* Convolution / pooling geometry, NHWC. Output size follows Keras:
 * valid: OH = (H - KH) / SH + 1; same: OH = ceil(H / SH), pad_top = total/2. */
typedef struct {
    int B, H, W, C;    /* input (B,H,W,C) */
    int OH, OW, K;     /* output (B,OH,OW,K); K = filters (pooling: K == C) */
    int KH, KW;        /* window */
    int SH, SW;        /* strides */
    int PT, PL;        /* padding top / left (bottom / right implied) */
} bf_conv_geom;

typedef struct bf_backend {
    const char *name; /* "cpu" or "cuda:N" */

    /* memory: one reservation per arena; the arena code is the only caller */
    bf_status (*reserve)(struct bf_backend *be, void **out, size_t bytes);
    void (*release)(struct bf_backend *be, void *p);
    bf_status (*to_device)(struct bf_backend *be, void *dst, const void *src, size_t bytes);
    bf_status (*to_host)(struct bf_backend *be, void *dst, const void *src, size_t bytes);
    bf_status (*fill_zero)(struct bf_backend *be, void *dst, size_t bytes);
    bf_status (*sync)(struct bf_backend *be); /* surfaces asynchronous errors */

    /* ---- device runs only (NULL on the CPU) ---- */
    /* bytes of scratch a run lends the backend (reduction partials, flags,
     * library workspaces); planned in the run's arena like any buffer */
    size_t (*run_workspace_bytes)(struct bf_backend *be);
    /* lend ws (run_workspace_bytes bytes) to the ops that follow; NULL takes it back */
    bf_status (*bind_workspace)(struct bf_backend *be, void *ws, size_t bytes);
    /* page-lock host memory that batches are uploaded from; best effort (a
     * refusal leaves it pageable, which is slower but correct) */
    void (*host_pin)(struct bf_backend *be, void *p, size_t bytes);
    void (*host_unpin)(struct bf_backend *be, void *p);
    /* Double-buffered batch uploads. upload queues dst (device) = src (host)
     * for batch slot k (0 or 1) on a copy stream and returns at once; the ops
     * queued after it see the data. It first waits for the ops queued before
     * the last batch_consumed(k), so a slot is not overwritten while read.
     * batch_wait(k) returns once upload k has read its host source. */
    bf_status (*upload)(struct bf_backend *be, int k, void *dst, const void *src, size_t bytes);
    bf_status (*batch_consumed)(struct bf_backend *be, int k);
    bf_status (*batch_wait)(struct bf_backend *be, int k);

    /* out (B,OUT) = act(inp (B,IN) @ w (IN,OUT) + b (OUT)); b may be NULL */
    bf_status (*dense_forward)(struct bf_backend *be, float *out, const float *inp, const float *w,
                               const float *b, int B, int IN, int OUT);
    /* dinp (B,IN) = dout @ w^T; dw (IN,OUT) += inp^T @ dout; db (OUT) += sum_B dout */
    bf_status (*dense_backward)(struct bf_backend *be, float *dinp, float *dw, float *db,
                                const float *dout, const float *inp, const float *w, int B, int IN,
                                int OUT);
    /* out (N,C) = act(inp); in place allowed. softmax is over the last axis C */
    bf_status (*act_forward)(struct bf_backend *be, float *out, const float *inp, bf_act act,
                             long N, int C);
    /* dinp (N,C) = act'(out) * dout, using the forward output; in place on dout allowed */
    bf_status (*act_backward)(struct bf_backend *be, float *dinp, const float *dout,
                              const float *out, bf_act act, long N, int C);
    /* Loss and its gradient in one pass. pred (B,C) is the last layer's output
     * after activation `last_act`; `logits` (B,C) is its pre-activation input
     * (same buffer as pred when last_act is linear). When fused (sigmoid+BCE,
     * softmax+CCE/SCCE) the gradient is written w.r.t. the logits (the caller
     * skips the activation backward); otherwise w.r.t. pred.
     * target: (B,C) floats, or (B) class ids as floats for SCCE.
     * loss_out (B): per-sample loss. dpred (B,C) = d(sum loss)/d pred * scale.
     * from_logits: pred holds logits (no activation) and the loss applies it.
     * bad_label (1, backend memory; SCCE): raised to B - i for every row i
     * whose label is not a class id (so the lowest such row is B - *bad_label),
     * left as it is when all are valid; such rows get loss 0 and gradient 0.
     * The check does not wait: the caller reads the flag with the step's
     * statistics. bad_label NULL: a bad label fails the call (BF_ERR_DATA). */
    bf_status (*loss_forward_backward)(struct bf_backend *be, float *loss_out, float *dpred,
                                       int *bad_label, const float *pred, const float *target,
                                       bf_loss_kind kind, int fused, int from_logits, int B,
                                       int C, float scale);
    /* correct_out (B): 1.0f where the prediction is right (Keras "accuracy" for the loss) */
    bf_status (*accuracy)(struct bf_backend *be, float *correct_out, const float *pred,
                          const float *target, bf_loss_kind kind, int from_logits, int B, int C);
    /* Reductions write into backend memory and do not wait: the core reads a
     * micro-batch's results back in one copy (bf_step_stats, program.h). */
    /* sum_out (1) = sum(x[0..n)); loss / metric totals */
    bf_status (*sum)(struct bf_backend *be, double *sum_out, const float *x, long n);
    /* bad (1) = 1 if any of x[0..n) is NaN or Inf, else left as it is (scans OR together) */
    bf_status (*nonfinite)(struct bf_backend *be, int *bad, const float *x, long n);
    /* out (1) = max(out, max |x[0..n)|), or +Inf / a NaN when any of x is NaN
     * or Inf (the caller zeroes out first) */
    bf_status (*maxabs)(struct bf_backend *be, float *out, const float *x, long n);

    /* optimizers, Keras update rules; t = 1-based iteration */
    bf_status (*sgd_update)(struct bf_backend *be, float *w, float *vel, const float *g, long n,
                            float lr, float momentum, int nesterov);
    bf_status (*adam_update)(struct bf_backend *be, float *w, float *m, float *v, const float *g,
                             long n, float lr, float beta1, float beta2, float eps, long t);
    bf_status (*rmsprop_update)(struct bf_backend *be, float *w, float *ms, float *mom,
                                const float *g, long n, float lr, float rho, float momentum,
                                float eps);

    /* ---- convolutional layers (NHWC) ---- */
    size_t (*conv2d_workspace_bytes)(struct bf_backend *be, const bf_conv_geom *g, int backward);
    /* out (B,OH,OW,K) = conv(inp (B,H,W,C), w (KH,KW,C,K)) + b (K); b may be NULL */
    bf_status (*conv2d_forward)(struct bf_backend *be, float *out, void *ws, const float *inp,
                                const float *w, const float *b, const bf_conv_geom *g);
    bf_status (*conv2d_backward)(struct bf_backend *be, float *dinp, float *dw, float *db,
                                 void *ws, const float *dout, const float *inp, const float *w,
                                 const bf_conv_geom *g);
    /* max / average pooling, out (B,OH,OW,C); Keras: average over valid cells only */
    bf_status (*maxpool_forward)(struct bf_backend *be, float *out, const float *inp,
                                 const bf_conv_geom *g);
    bf_status (*maxpool_backward)(struct bf_backend *be, float *dinp, const float *dout,
                                  const float *out, const float *inp, const bf_conv_geom *g);
    bf_status (*avgpool_forward)(struct bf_backend *be, float *out, const float *inp,
                                 const bf_conv_geom *g);
    bf_status (*avgpool_backward)(struct bf_backend *be, float *dinp, const float *dout,
                                  const bf_conv_geom *g);
    /* batch normalization over all axes but the last (C). Training: uses batch
     * statistics, writes mean/invstd (C) for backward and updates moving stats
     * with Keras's momentum; inference: uses moving stats. */
    bf_status (*batchnorm_forward)(struct bf_backend *be, float *out, float *mean, float *invstd,
                                   float *moving_mean, float *moving_var, const float *inp,
                                   const float *gamma, const float *beta, long N, int C,
                                   float momentum, float eps, int training);
    bf_status (*batchnorm_backward)(struct bf_backend *be, float *dinp, float *dgamma,
                                    float *dbeta, const float *dout, const float *inp,
                                    const float *mean, const float *invstd, const float *gamma,
                                    long N, int C);
    /* inverted dropout: out = inp * mask / (1-rate); mask (n) of 0/1 from (seed, step) */
    bf_status (*dropout_forward)(struct bf_backend *be, float *out, float *mask, const float *inp,
                                 long n, float rate, uint64_t seed);
    bf_status (*dropout_backward)(struct bf_backend *be, float *dinp, const float *dout,
                                  const float *mask, long n, float rate);

    /* ---- graphs: merge layers, split / packed inputs and targets ---- */
    /* out (n) = op(a (n), b (n), c (n)); any of them may alias out; b, c unused: NULL */
    bf_status (*ewise)(struct bf_backend *be, float *out, const float *a, const float *b, const float *c,
                       bf_ewise_op op, float alpha, long n);
    /* out (rows, ld_out) columns [0, cols) = inp (rows, ld_in) columns [0, cols):
     * a block of columns copied between row-major matrices (Concatenate and its
     * backward, inputs / targets split out of a packed batch) */
    bf_status (*copy2d)(struct bf_backend *be, float *out, long ld_out, const float *inp, long ld_in, long rows,
                        long cols);

    void *impl; /* backend-private state (cuBLAS / cuDNN handles, streams) */
} bf_backend;

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
