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

typedef enum {
    BF_ACT_LINEAR = 0, BF_ACT_RELU, BF_ACT_SIGMOID, BF_ACT_TANH, BF_ACT_SOFTMAX,
    /* Keras 3's other activations (act_more.c; bf_act_param gives their parameters) */
    BF_ACT_GELU, BF_ACT_GELU_TANH, BF_ACT_SILU, BF_ACT_ELU, BF_ACT_SELU, BF_ACT_LEAKY_RELU, BF_ACT_SOFTPLUS,
    BF_ACT_SOFTSIGN, BF_ACT_HARD_SIGMOID, BF_ACT_EXPONENTIAL, BF_ACT_RELU6, BF_ACT_RELU_X
} bf_act;
#define BF_ACT_LAST BF_ACT_RELU_X
/* the activations from BF_ACT_GELU on run through actx_forward / actx_backward */
static inline int bf_act_is_x(bf_act a) { return a >= BF_ACT_GELU; }
/* 1 when backward needs the activation's input (x) rather than its output */
static inline int bf_act_needs_x(bf_act a) {
    return a == BF_ACT_GELU || a == BF_ACT_GELU_TANH || a == BF_ACT_SILU || a == BF_ACT_SOFTSIGN || a == BF_ACT_RELU_X;
}
/* parameters: alpha = leaky_relu / relu negative_slope, elu alpha; relu
 * (BF_ACT_RELU_X, Keras activations.relu) max_value (+Inf: none) and threshold */
typedef struct {
    float alpha, max_value, threshold;
} bf_act_param;
typedef enum {
    BF_LOSS_MSE = 0, BF_LOSS_BCE, BF_LOSS_CCE, BF_LOSS_SCCE, BF_LOSS_MAE, BF_LOSS_HUBER, BF_LOSS_LOGCOSH
} bf_loss_kind;
#define BF_LOSS_LAST BF_LOSS_LOGCOSH

/* a loss as Keras 3 defines it (keras.losses.*) */
typedef struct {
    bf_loss_kind kind;
    int from_logits;       /* BCE, CCE, SCCE: predictions are logits */
    float label_smoothing; /* BCE: t(1-s) + s/2; CCE: t(1-s) + s/C */
    float delta;           /* Huber */
} bf_loss_spec;

/* Metrics computed in the engine. Each accumulates doubles into the step
 * statistics (bf_metric_nvalues of them); the host adds a step's into the
 * epoch's and turns those into the value as Keras's result() does. */
typedef enum {
    BF_MET_BINARY_ACC = 0, BF_MET_CAT_ACC, BF_MET_SPARSE_CAT_ACC, BF_MET_TOPK, BF_MET_SPARSE_TOPK,
    BF_MET_MAE, BF_MET_MSE, BF_MET_RMSE, BF_MET_AUC, BF_MET_PRECISION, BF_MET_RECALL,
    BF_MET_TP, BF_MET_FP, BF_MET_TN, BF_MET_FN, /* weighted counts over the epoch */
    /* one statistic's best value where another is >= value, over AUC's buckets */
    BF_MET_PREC_AT_REC, BF_MET_REC_AT_PREC, BF_MET_SENS_AT_SPEC, BF_MET_SPEC_AT_SENS
} bf_metric_kind;
#define BF_MET_LAST BF_MET_SPEC_AT_SENS
/* the metrics that accumulate AUC's per-bucket positives and negatives */
static inline int bf_metric_bucketed(bf_metric_kind k) { return k == BF_MET_AUC || k >= BF_MET_PREC_AT_REC; }
#define BF_AUC_MAX_THRESHOLDS 10000

typedef struct {
    bf_metric_kind kind;
    int weighted;       /* from weighted_metrics: sample weights apply */
    int k;              /* top-k */
    int num_thresholds; /* AUC and the *At* metrics (Keras default 200) */
    float value;        /* the *At* metrics: the constraint (recall for PrecisionAtRecall, ...) */
    float threshold;    /* binary accuracy, precision, recall */
    int from_logits;    /* AUC: sigmoid applied to predictions first */
    int output;         /* the model output it measures (0 for a single-output model) */
    int has_class_id;   /* precision, recall, the *At* metrics: only column class_id of the output (Keras class_id) */
    int class_id;
    /* a mean metric of an output of one number per sample (Keras (B,)): Keras reduces it over the batch axis
     * first, so its result is the mean of each batch's mean: every row weighs row_w = 1 / its step's rows
     * (set by the core for each micro-batch) */
    int batch_mean;
    float row_w;
} bf_metric_spec;

/* the columns [*j0, *j1) of an output of C a metric reads: class_id's alone, or all */
static inline void bf_metric_cols(const bf_metric_spec *m, int C, int *j0, int *j1) {
    *j0 = m->has_class_id ? m->class_id : 0;
    *j1 = m->has_class_id ? m->class_id + 1 : C;
}

/* doubles a metric accumulates: means (sum w*v, sum w); precision / recall
 * (tp, fp, fn); the counts (tp, fp, fn, tn); AUC (per bucket: positives,
 * negatives) */
static inline long bf_metric_nvalues(const bf_metric_spec *m) {
    if (bf_metric_bucketed(m->kind)) return 2L * m->num_thresholds;
    switch (m->kind) {
    case BF_MET_PRECISION: case BF_MET_RECALL: return 3;
    case BF_MET_TP: case BF_MET_FP: case BF_MET_TN: case BF_MET_FN: return 4;
    default: return 2;
    }
}

/* One optimizer update as Keras 3's base optimizer applies it: decoupled
 * weight decay first (w -= w * weight_decay * lr), then the rule of `kind`.
 * Host-side scalars (t, Nadam's u products) are filled by the core. */
typedef enum { BF_UPD_SGD = 0, BF_UPD_ADAM, BF_UPD_RMSPROP, BF_UPD_ADAGRAD, BF_UPD_NADAM } bf_update_kind;
typedef struct {
    bf_update_kind kind;
    float lr, beta1, beta2, eps, momentum, rho, weight_decay;
    int nesterov, amsgrad, centered;
    long t;                          /* 1-based iteration of this update */
    float u_t, u_t1, u_prod, u_prod1; /* Nadam: u_t, u_{t+1}, prod u_1..u_t, prod u_1..u_{t+1} */
} bf_update_args;

/* gradient clipping modes (Keras: clipnorm per tensor, global_clipnorm, clipvalue) */
typedef enum { BF_CLIP_NONE = 0, BF_CLIP_NORM, BF_CLIP_GLOBAL_NORM, BF_CLIP_VALUE } bf_clip_mode;
/* elementwise ops of merge layers and gradient accumulation (see ewise) */
typedef enum {
    BF_EW_ADD = 0, /* out = alpha * (a + b) */
    BF_EW_SUB,     /* out = alpha * (a - b) */
    BF_EW_MUL,     /* out = alpha * (a * b) */
    BF_EW_MAX,     /* out = max(a, b) */
    BF_EW_MIN,     /* out = min(a, b) */
    BF_EW_SCALE,   /* out = alpha * a */
    BF_EW_SELECT,  /* out = a == b ? c : 0 (Maximum / Minimum backward: a input, b output, c its gradient) */
    /* keras.ops math (layers/emath.c); b NULL where not used */
    BF_EW_DIV,     /* out = alpha * a / b */
    BF_EW_RDIV,    /* out = alpha / a */
    BF_EW_SQRT,    /* out = sqrt(a) */
    BF_EW_ABS,     /* out = |a| */
    BF_EW_EXP,     /* out = exp(a) */
    BF_EW_LOG,     /* out = log(a) */
    BF_EW_MAXC,    /* out = max(a, alpha) */
    BF_EW_MINC,    /* out = min(a, alpha) */
    BF_EW_MULSIGN, /* out = a * sign(b) (sign(0) = 0) */
    BF_EW_GT,      /* out = a > (b ? b : alpha) ? 1 : 0; likewise GE, LT, LE */
    BF_EW_GE,
    BF_EW_LT,
    BF_EW_LE
} bf_ewise_op;
#define BF_EW_LAST BF_EW_LE
/* 1 when the op reads b (the comparisons: b or alpha) */
static inline int bf_ewise_binary(bf_ewise_op op) {
    return op <= BF_EW_MIN || op == BF_EW_SELECT || op == BF_EW_DIV || op == BF_EW_MULSIGN;
}

/* Convolution / pooling geometry, NHWC. Output size follows Keras:
 * valid: OH = (H - KH) / SH + 1; same: OH = ceil(H / SH), pad_top = total/2. */
typedef struct {
    int B, H, W, C;    /* input (B,H,W,C) */
    int OH, OW, K;     /* output (B,OH,OW,K); K = filters (pooling: K == C) */
    int KH, KW;        /* window */
    int SH, SW;        /* strides */
    int PT, PL;        /* padding top / left (bottom / right implied) */
} bf_conv_geom;

/* Keras weight constraints (keras.constraints), applied after each update.
 * Norms are taken over the axes axis_lo..axis_hi of the parameter's shape. */
typedef enum {
    BF_CON_NONE = 0, BF_CON_MAX_NORM, BF_CON_NON_NEG, BF_CON_UNIT_NORM, BF_CON_MIN_MAX_NORM,
    BF_CON_LAST = BF_CON_MIN_MAX_NORM
} bf_constraint_kind;

/* Conv1D geometry, NWC (a (T, C) sample): output OT = (T + PL + PR - (KW-1)*D - 1) / S + 1
 * for any left padding PL (Keras 'causal': PL = (KW-1)*D; 'same': half the total,
 * the odd one on the right); the right padding is implied. */
typedef struct {
    int B, T, C;   /* input (B,T,C) */
    int OT, K;     /* output (B,OT,K) */
    int KW, S, D;  /* kernel width, stride, dilation */
    int PL;        /* left padding */
} bf_conv1d_geom;

typedef struct {
    bf_constraint_kind kind;
    float min_value, max_value, rate;
    int axis_lo, axis_hi;
} bf_constraint;

/* A strided gather over up to 6 axes, summing over up to 2 more:
 * for every index (i_0..i_{nd-1}) < n:
 *   out[sum i_k*os_k] = sum over (r_0..r_{nr-1}) < rn of inp[sum i_k*is_k + sum r_j*rs_j]
 * Permute (permuted input strides), RepeatVector (a 0 stride; backward sums),
 * ZeroPadding2D (an output offset; backward crops), UpSampling2D (0 strides;
 * backward sums the blocks). Every output element is written once. */
#define BF_STRIDED_MAXD 6
typedef struct {
    int nd, nr;
    long n[BF_STRIDED_MAXD], os[BF_STRIDED_MAXD], is[BF_STRIDED_MAXD];
    long rn[2], rs[2];
} bf_strided;

/* Random image augmentation (RandomFlip, RandomCrop, RandomTranslation,
 * RandomRotation, RandomZoom, RandomContrast), NHWC.
 * Per sample b the source of output pixel (y, x) is (see augment_geom.h):
 * crop: (y + h0, x + w0), one window per batch, random in training (Keras:
 * when H > OH and W > OW) and centred otherwise; flip: mirrored when the
 * sample's draw u <= 0.5 (both axes at once for mode 3, as Keras);
 * translate: (y - dy_b, x - dx_b) with dy_b = uniform(h_lo, h_hi) * H and
 * dx_b likewise, sampled as jax.scipy.ndimage.map_coordinates does (nearest:
 * round half away from zero; bilinear; fill modes reflect / constant /
 * nearest / wrap on each tap). Draws come from splitmix64(seed, b). */
typedef enum { BF_FILL_REFLECT = 0, BF_FILL_CONSTANT, BF_FILL_NEAREST, BF_FILL_WRAP } bf_fill_mode;
typedef struct {
    int B, H, W, C, OH, OW;
    int flip;                      /* 0 none, 1 horizontal, 2 vertical, 3 both */
    int crop;                      /* RandomCrop to OH x OW */
    int translate;                 /* RandomTranslation */
    float h_lo, h_hi, w_lo, w_hi;  /* translation factors (fractions of H, W) */
    int fill, bilinear;            /* bf_fill_mode; 1 bilinear, 0 nearest */
    float fill_value;
    int training;                  /* crop: random window (1) or centred (0) */
    uint64_t seed;
    /* RandomRotation: angle_b = uniform(rot_lo, rot_hi) degrees about the
     * centre ((W-1)/2, (H-1)/2); RandomZoom: zoom_b = uniform(zh_lo, zh_hi)
     * on y and uniform(zw_lo, zw_hi) on x (zoom_same: x takes y's);
     * both as Keras's affine_transform matrices (augment_geom.h), sampled as
     * translate is. */
    int rotate, zoom, zoom_same;
    float rot_lo, rot_hi, zh_lo, zh_hi, zw_lo, zw_hi;
    /* RandomContrast (no geometry, OH = H, OW = W): per sample and channel,
     * out = clip((x - m) * f_b + m, v_lo, v_hi), m the mean over (H, W),
     * f_b = uniform(c_lo, c_hi); backward reads the forward's output `out`
     * (its clipped pixels pass no gradient) */
    int contrast;
    float c_lo, c_hi, v_lo, v_hi;
    const float *out;
    /* GaussianNoise (noise 1: out = x + stddev z) and GaussianDropout (noise
     * 2: out = x (1 + stddev z)), z ~ N(0, 1) per element (Box-Muller of two
     * counter draws), any shape as (B, 1, W = elements, 1); backward draws z
     * again. noise 3: keras.random's draw (layers/random.c), out = a draw of
     * rdist (0 normal(ra, rb), 1 uniform[ra, rb), 2 truncated normal(ra, rb) cut
     * at 2 stddev, 3 dropout's keep mask: u >= ra ? rb : 0) per element, the
     * input unread; rshared: one draw for every sample (element e % W); e0:
     * the index of element 0 in the stream (a micro-batch after the step's first
     * rows draws what the whole batch would there) */
    int noise;
    float stddev;
    int rdist, rshared;
    float ra, rb;
    long e0;
} bf_augment;
/* Multi-head attention geometry. Q (B,TQ,H,DK), K (B,TK,H,DK), V (B,TK,H,DV)
 * and O (B,TQ,H,DV) as the projections lay them out (row-major, heads side by
 * side); the weights P (B,H,TQ,TK), or one (TQ,TK) tile reused for every
 * (b, h) when p_tile (no backward needs them). */
typedef struct {
    int B, H, TQ, TK, DK, DV;
    float scale;       /* 1/sqrt(key_dim), on the scores */
    int causal;        /* key j attends query i only when j <= i */
    float rate;        /* dropout on the weights (training) */
    uint64_t seed;     /* its keep mask: a hash of (seed, index), recomputed by backward */
    int p_tile;
    /* the inputs' step masks (Embedding mask_zero), > 0.5 kept, NULL: none:
     * qmask (B,TQ) of the query, vmask / kmask (B,TK) of the value / key;
     * key j attends query i only where all three allow it (Keras's
     * _compute_attention_mask) */
    const float *qmask, *vmask, *kmask;
    /* a query with no key left: zero weights when set (Keras's Softmax path,
     * which a layer with dropout > 0 takes, in training and inference alike),
     * else uniform (its dot_product_attention on JAX) */
    int zero_empty;
} bf_attn_geom;
/* One direction of a recurrent layer (SimpleRNN / LSTM / GRU, Keras 3
 * layouts and gate orders: LSTM i,f,c,o; GRU z,r,h with reset_after). Step s
 * reads input position q(s) = go_backwards ? T-1-s : s. Outputs: with
 * return_sequences step s is written at position reverse_out ? T-1-s : s
 * (Keras's order; Bidirectional's backward layer flips it), else the
 * last step's at (B,ldo). zero_masked: masked steps output 0 (Keras
 * zero_output_for_mask), states are carried over them either way. */
typedef enum { BF_CELL_SIMPLE = 0, BF_CELL_LSTM, BF_CELL_GRU } bf_cell_kind;
typedef struct {
    bf_cell_kind cell;
    bf_act act;          /* the cell's activation: tanh (default), relu, sigmoid, linear, hard_sigmoid */
    int B, T, D, U;
    int go_backwards, return_sequences, reverse_out, zero_masked;
    int ldh, ldo;        /* floats between consecutive rows of hs, out */
    /* states in and out (Keras initial_state / return_state), (B,U) each, NULL:
     * none. h0, c0: the state before step 0 (else zeros); backward: dh_last,
     * dc_last the gradients of the final states (added to those from out),
     * dh0, dc0 written with the gradients of h0, c0 */
    const float *h0, *c0, *dh_last, *dc_last;
    float *dh0, *dc0;
    bf_act ract;         /* LSTM / GRU: the gates' (recurrent) activation, sigmoid by default */
    /* dropout (training; Keras 3 DropoutRNNCell): the inputs x * mx before
     * the kernel, the previous state h * mh before the recurrent kernel. nmx,
     * nmh masks: 0 none, 1 shared by the gates, G one per gate (Keras's
     * implementation 1, which recurrent_dropout > 0 selects), each (B,D) /
     * (B,U), the same at every step. Mask k, row b, column j is 1/(1-rate)
     * when bf_dropout_bits(seed, (k*B + b)*N + j) >= ceil(rate * 2^24), else
     * 0 (N = D or U): drawn into the workspace by forward and again by
     * backward, never kept between them. */
    float rate_x, rate_h;
    int nmx, nmh;
    uint64_t seed_x, seed_h;
} bf_rnn_geom;
static inline int bf_rnn_gates(bf_cell_kind c) { return c == BF_CELL_LSTM ? 4 : c == BF_CELL_GRU ? 3 : 1; }
/* scratch floats of one direction (the same on every backend): forward the GRU's
 * recurrent part (B,G*U); backward four (B,U) state gradients and that part again */
static inline size_t bf_rnn_base_floats(const bf_rnn_geom *g, int backward) {
    size_t GU = (size_t)bf_rnn_gates(g->cell) * g->U, B = (size_t)g->B, U = (size_t)g->U;
    if (!backward) return g->cell == BF_CELL_GRU ? B * GU : 0;
    return B * 4 * U + (g->cell == BF_CELL_GRU ? B * GU : 0);
}
/* then, with dropout: the masks mx (nmx,B,D), mh (nmh,B,U); a masked copy
 * of x, xm (B,T,D) (one gate's at a time); of h_prev, hm (B,U); backward
 * also dt (B,U), a gradient through the recurrent kernel before its mask,
 * and for LSTM / SimpleRNN dut (U,G*U), one row's du before its mask (the
 * CPU sums du per row over all steps, as without dropout) */
static inline size_t bf_rnn_workspace_floats(const bf_rnn_geom *g, int backward) {
    size_t B = (size_t)g->B, U = (size_t)g->U, D = (size_t)g->D, T = (size_t)g->T;
    return bf_rnn_base_floats(g, backward) + (g->nmx ? g->nmx * B * D + B * T * D : 0) +
           (g->nmh ? g->nmh * B * U + (backward ? 2 : 1) * B * U : 0) +
           (g->nmh && backward && g->cell != BF_CELL_GRU ? U * bf_rnn_gates(g->cell) * U : 0);
}
/* the dropout part of a direction's workspace (NULL where not used) */
typedef struct { float *mx, *mh, *xm, *hm, *dt, *dut; } bf_rnn_drop_ws;
static inline void bf_rnn_drop_carve(const bf_rnn_geom *g, float *ws, int backward, bf_rnn_drop_ws *d) {
    size_t B = (size_t)g->B, U = (size_t)g->U, D = (size_t)g->D, T = (size_t)g->T;
    float *p = ws + bf_rnn_base_floats(g, backward);
    d->mx = g->nmx ? p : NULL;
    p += g->nmx * B * D;
    d->mh = g->nmh ? p : NULL;
    p += g->nmh * B * U;
    d->xm = g->nmx ? p : NULL;
    p += g->nmx ? B * T * D : 0;
    d->hm = g->nmh ? p : NULL;
    d->dt = g->nmh && backward ? p + B * U : NULL;
    d->dut = g->nmh && backward && g->cell != BF_CELL_GRU ? p + 2 * B * U : NULL;
}
static inline bf_status bf_rnn_check(const bf_rnn_geom *g) {
    if (g->B <= 0 || g->T <= 0 || g->D <= 0 || g->U <= 0 || g->ldh < g->U || g->ldo < g->U)
        return BF_FAIL(BF_ERR_SHAPE, "rnn: bad sizes B=%d T=%d D=%d U=%d", g->B, g->T, g->D, g->U);
    return BF_OK;
}

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
    /* optional (NULL: act_backward, then the bias sum in dense_backward): for
     * an elementwise act (not softmax), act_backward and db (C) += the sum
     * over rows of dinp, in one pass */
    bf_status (*act_backward_bias)(struct bf_backend *be, float *dinp, const float *dout,
                                   const float *out, bf_act act, long N, int C, float *db);
    /* Loss and its gradient in one pass. pred (B,C) is the last layer's output
     * after activation `last_act`; `logits` (B,C) is its pre-activation input
     * (same buffer as pred when last_act is linear). When fused (sigmoid+BCE,
     * softmax+CCE/SCCE) pred holds logits and the gradient is written w.r.t.
     * them (the caller skips the activation backward); otherwise w.r.t. pred.
     * target: (B,C) floats, or (B) class ids as floats for SCCE.
     * sw (B): sample weights, or NULL (all 1).
     * loss_out (B): per-sample loss times its weight.
     * dpred (B,C) = d(sum of weighted losses)/d pred * scale.
     * loss->from_logits: pred holds logits (no activation) and the loss applies it.
     * bad_label (1, backend memory; SCCE): raised to B - i for every row i
     * whose label is not a class id (so the lowest such row is B - *bad_label),
     * left as it is when all are valid; such rows get loss 0 and gradient 0.
     * The check does not wait: the caller reads the flag with the step's
     * statistics. bad_label NULL: a bad label fails the call (BF_ERR_DATA). */
    bf_status (*loss_forward_backward)(struct bf_backend *be, float *loss_out, float *dpred,
                                       int *bad_label, const float *pred, const float *target,
                                       const float *sw, const bf_loss_spec *loss, int fused, int B,
                                       int C, float scale);
    /* acc (bf_metric_nvalues(m), backend memory) += metric m's statistics of
     * the micro-batch. pred (B,C): the model's output, or its logits when
     * `act` is sigmoid / softmax (a fused activation, applied here first).
     * target (B,T): T == C, or T == 1 class ids for the sparse kinds.
     * sw (B) or NULL; used only when m->weighted. Does not wait. */
    bf_status (*metric_update)(struct bf_backend *be, double *acc, const float *pred,
                               const float *target, const float *sw, const bf_metric_spec *m,
                               bf_act act, int B, int C, int T);
    /* Reductions write into backend memory and do not wait: the core reads a
     * micro-batch's results back in one copy (bf_step_stats, program.h). */
    /* sum_out (1) = sum(x[0..n)); loss / metric totals */
    bf_status (*sum)(struct bf_backend *be, double *sum_out, const float *x, long n);
    /* bad (1) = 1 if any of x[0..n) is NaN or Inf, else left as it is (scans OR together) */
    bf_status (*nonfinite)(struct bf_backend *be, int *bad, const float *x, long n);
    /* out (1) = max(out, max |x[0..n)|), or +Inf / a NaN when any of x is NaN
     * or Inf (the caller zeroes out first) */
    bf_status (*maxabs)(struct bf_backend *be, float *out, const float *x, long n);

    /* out (1) += sum(x[0..n)^2) in double (gradient norms for clipping); does not wait */
    bf_status (*sumsq)(struct bf_backend *be, double *out, const float *x, long n);
    /* g (n) clipped in place as Keras: BF_CLIP_NORM g*c/max(sqrt(*sumsq), c);
     * BF_CLIP_GLOBAL_NORM g*(c*min(1/sqrt(*sumsq), 1/c)); BF_CLIP_VALUE
     * clip(g, -c, c) (sumsq unused). sumsq is backend memory: no wait. */
    bf_status (*grad_clip)(struct bf_backend *be, float *g, const double *sumsq, long n,
                           bf_clip_mode mode, float c);
    /* optimizer update of w (n) from g (n), Keras 3 rules (see bf_update_args).
     * State tensors (n each, NULL when unused): SGD s0 momentum; Adam s0 m,
     * s1 v, s2 v_hat (amsgrad); RMSprop s0 velocity, s1 momentum, s2 average
     * gradient (centered); Adagrad s0 accumulator; Nadam s0 m, s1 v. */
    bf_status (*opt_update)(struct bf_backend *be, float *w, float *s0, float *s1, float *s2,
                            const float *g, long n, const bf_update_args *a);

    /* Keras weight regularizers (csrc/cpu/regularize.c): penalty (1, may be
     * NULL) += l1*sum|w| + l2*sum w^2 in double; g (n, may be NULL) +=
     * l1*sign(w) + 2*l2*w. Backend memory, no wait. */
    bf_status (*regularize)(struct bf_backend *be, double *penalty, float *g, const float *w, long n, float l1,
                            float l2);
    /* w (A, R, B) constrained in place as Keras after an update: norms over R
     * for each (a, b) (MaxNorm, UnitNorm, MinMaxNorm), or w*(w >= 0) (NonNeg) */
    bf_status (*constrain)(struct bf_backend *be, float *w, long A, long R, long B, const bf_constraint *c);

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

    /* ---- Keras 3's other activations, layout and preprocessing layers ---- */
    /* out (n) = act(inp) for bf_act_is_x(act); in place allowed */
    bf_status (*actx_forward)(struct bf_backend *be, float *out, const float *inp, bf_act act, const bf_act_param *p,
                              long n);
    /* dinp (n) = act'(inp) * dout; reads inp (x) when bf_act_needs_x(act), else out
     * (the other may be NULL); in place on dout allowed */
    bf_status (*actx_backward)(struct bf_backend *be, float *dinp, const float *dout, const float *inp,
                               const float *out, bf_act act, const bf_act_param *p, long n);
    /* strided gather (Permute, RepeatVector, ZeroPadding2D, UpSampling2D and their backward) */
    bf_status (*strided_copy)(struct bf_backend *be, float *out, const float *inp, const bf_strided *s);
    /* out (N,C) = (inp - mean[c]) / max(sqrt(var[c]), eps) * scale + offset; mean, var NULL: 0, 1 */
    bf_status (*rescale_forward)(struct bf_backend *be, float *out, const float *inp, const float *mean,
                                 const float *var, float scale, float offset, float eps, long N, int C);
    /* dinp (N,C) = dout / max(sqrt(var[c]), eps) * scale; var NULL: 1 */
    bf_status (*rescale_backward)(struct bf_backend *be, float *dinp, const float *dout, const float *var,
                                  float scale, float eps, long N, int C);
    /* random image augmentation (bf_augment): out (B,OH,OW,C) from inp (B,H,W,C) */
    bf_status (*augment_forward)(struct bf_backend *be, float *out, const float *inp, const bf_augment *a);
    /* dinp (B,H,W,C) = the transpose of the forward map applied to dout (B,OH,OW,C) */
    bf_status (*augment_backward)(struct bf_backend *be, float *dinp, const float *dout, const bf_augment *a);
    /* ---- Conv1D and Conv2DTranspose ---- */
    size_t (*conv1d_workspace_bytes)(struct bf_backend *be, const bf_conv1d_geom *g, int backward);
    /* out (B,OT,K) = conv(inp (B,T,C), w (KW,C,K)) dilated by D + b (K); b may be NULL */
    bf_status (*conv1d_forward)(struct bf_backend *be, float *out, void *ws, const float *inp,
                                const float *w, const float *b, const bf_conv1d_geom *g);
    bf_status (*conv1d_backward)(struct bf_backend *be, float *dinp, float *dw, float *db,
                                 void *ws, const float *dout, const float *inp, const float *w,
                                 const bf_conv1d_geom *g);
    /* Conv2DTranspose as the adjoint of a Conv2D: g is the Conv2D geometry
     * whose input is the transposed conv's output out (B,H,W,C = filters) and
     * whose output is its input inp (B,OH,OW,K); w (KH,KW,C,K) is Keras's
     * Conv2DTranspose kernel (kh, kw, filters, in_channels); b (C).
     * out = conv2d^T(inp) + b; backward: dinp = conv2d(dout), dw += ..., db += sum dout */
    size_t (*conv2d_transpose_workspace_bytes)(struct bf_backend *be, const bf_conv_geom *g, int backward);
    bf_status (*conv2d_transpose_forward)(struct bf_backend *be, float *out, void *ws, const float *inp,
                                          const float *w, const float *b, const bf_conv_geom *g);
    bf_status (*conv2d_transpose_backward)(struct bf_backend *be, float *dinp, float *dw, float *db,
                                           void *ws, const float *dout, const float *inp, const float *w,
                                           const bf_conv_geom *g);
    /* ---- LayerNormalization, MultiHeadAttention (csrc/cpu/layernorm.c, attention.c) ---- */
    /* over the last axis C of inp (N,C): out = (x - mean) * invstd * gamma + beta;
     * mean, invstd (N) kept for backward; gamma / beta may be NULL */
    bf_status (*layernorm_forward)(struct bf_backend *be, float *out, float *mean, float *invstd, const float *inp,
                                   const float *gamma, const float *beta, long N, int C, float eps);
    bf_status (*layernorm_backward)(struct bf_backend *be, float *dinp, float *dgamma, float *dbeta,
                                    const float *dout, const float *inp, const float *mean, const float *invstd,
                                    const float *gamma, long N, int C);
    size_t (*attention_workspace_bytes)(struct bf_backend *be, const bf_attn_geom *g, int backward);
    /* for each (b, h): P = softmax(scale * Q K^T) over keys, masked (mask (B,TQ,TK)
     * > 0.5, g's step masks and the causal rule; a row with no key left:
     * uniform, as Keras on JAX, or zero, see zero_empty), O = dropout(P) V.
     * mask may be NULL. */
    bf_status (*attention_forward)(struct bf_backend *be, float *O, float *P, void *ws, const float *Q,
                                   const float *K, const float *V, const float *mask, const bf_attn_geom *g);
    /* dQ, dK, dV (overwritten) from dO (B,TQ,H,DV) and the kept P */
    bf_status (*attention_backward)(struct bf_backend *be, float *dQ, float *dK, float *dV, void *ws,
                                    const float *dO, const float *Q, const float *K, const float *V,
                                    const float *P, const float *mask, const bf_attn_geom *g);

    void *impl; /* backend-private state (cuBLAS / cuDNN handles, streams) */

    /* dinp (N,C) = dout (N,C) * gamma * invstd (C; gamma NULL: 1): backward of
     * a frozen BatchNormalization, which runs in inference mode (Keras);
     * dinp may alias dout */
    bf_status (*batchnorm_backward_frozen)(struct bf_backend *be, float *dinp, const float *dout,
                                           const float *invstd, const float *gamma, long N, int C);
    /* ---- sequences: Embedding and recurrent layers (NULL where missing) ---- */
    /* out (n,D) = table (V,D) rows at ids (n); mask (n, may be NULL) = ids != 0.
     * An id that is not an integer in [0,V) gives a zero row and raises *bad
     * (backend memory) to n - r for its row r, so the lowest bad row is
     * n - *bad; *bad_val is then that row's id. Does not wait. */
    bf_status (*embedding_forward)(struct bf_backend *be, float *out, float *mask, int *bad, float *bad_val,
                                   const float *ids, const float *table, long n, int D, int V);
    /* dtable (V,D) += dout (n,D) scattered to rows ids (n) (bad ids skipped) */
    bf_status (*embedding_backward)(struct bf_backend *be, float *dtable, const float *dout, const float *ids,
                                    long n, int D, int V);
    /* scratch floats one recurrent direction needs per call (see bf_rnn_geom) */
    size_t (*rnn_workspace_bytes)(struct bf_backend *be, const bf_rnn_geom *g, int backward);
    /* One recurrent layer direction over T steps (csrc/cpu/rnn.c documents the
     * layouts). x (B,T,D); w (D,G*U); u (U,G*U); b (G*U) or GRU (2,G*U) or
     * NULL; mask (B,T) or NULL. Saves for backward: hs (B,T,ldh) states at
     * input positions, gates (B,T,G*U) activated gates, cs (B,T,U) LSTM cells
     * / GRU recurrent candidate part. out: (B,T,ldo) or (B,ldo), may be hs. */
    bf_status (*rnn_forward)(struct bf_backend *be, const bf_rnn_geom *g, float *out, float *hs, float *gates,
                             float *cs, void *ws, const float *x, const float *w, const float *u, const float *b,
                             const float *mask);
    /* from dout (as out): dx (B,T,D) = (dx_add ? dx : 0) + d x (may be NULL);
     * dw, du, db added into. gates is overwritten with their gradients. */
    bf_status (*rnn_backward)(struct bf_backend *be, const bf_rnn_geom *g, float *dx, float *dw, float *du,
                              float *db, float *gates, void *ws, const float *dout, const float *hs, const float *cs,
                              const float *x, const float *w, const float *u, const float *mask, int dx_add);
    /* GlobalAveragePooling1D with a step mask (csrc/cpu/masked_mean.c):
     * out (B,C) = sum_t [mask > 0.5] inp (B,T,C) / sum_t [mask > 0.5], mask
     * (B,T); a row with no step left is 0/0 = NaN, as Keras. Backward: dinp
     * (B,T,C) = dout / count at kept steps, 0 elsewhere (overwritten). */
    bf_status (*masked_mean_forward)(struct bf_backend *be, float *out, const float *inp, const float *mask, int B,
                                     int T, int C);
    bf_status (*masked_mean_backward)(struct bf_backend *be, float *dinp, const float *dout, const float *mask, int B,
                                      int T, int C);
    /* Per-position weights of a loss / metric on a sequence output, as Keras
     * 3's apply_mask (csrc/cpu/pos_weights.c): w (B,S) = sw[b] * [mask > 0.5]
     * * f, f = divide_no_nan(B*S, count of mask > 0.5) when normalize, else 1;
     * sw (B) and mask (B,S) may be NULL. */
    bf_status (*pos_weights)(struct bf_backend *be, float *w, const float *sw, const float *mask, int B, int S,
                             int normalize);
    /* DepthwiseConv2D (csrc/cpu/depthwise.c): g as a Conv2D's with K = C * M
     * output channels; out channel c*M + m reads input channel c through
     * w (KH,KW,C,M) [.., c, m] (Keras's depthwise_kernel), plus b (K) or
     * NULL. Backward overwrites dinp and adds into dw, db (each may be NULL). */
    bf_status (*depthwise_forward)(struct bf_backend *be, float *out, const float *inp, const float *w,
                                   const float *b, const bf_conv_geom *g);
    bf_status (*depthwise_backward)(struct bf_backend *be, float *dinp, float *dw, float *db, const float *dout,
                                    const float *inp, const float *w, const bf_conv_geom *g);

    /* ---- data parallel on a device: NCCL (csrc/cuda/nccl.cu; NULL on the CPU) ---- */
    /* lib: path of libnccl.so.2, dlopen'ed on first use; id: 128 bytes (ncclUniqueId) */
    bf_status (*nccl_unique_id)(struct bf_backend *be, const char *lib, void *id);
    /* ncclCommInitRankConfig, non-blocking: nccl_poll says when the ranks are connected */
    bf_status (*nccl_init)(struct bf_backend *be, const char *lib, const void *id, int rank, int size);
    /* buf (n, device) summed over the ranks in place, queued on the compute
     * stream in buckets of at most `bucket` floats (one NCCL group); returns at once */
    bf_status (*nccl_allreduce)(struct bf_backend *be, float *buf, long n, long bucket);
    /* buf (bytes, device) = rank root's, queued (ncclBroadcast); returns at once */
    bf_status (*nccl_bcast)(struct bf_backend *be, void *buf, size_t bytes, int root);
    /* *done = 1 once the communicator is ready and the queued work finished;
     * an asynchronous NCCL error fails (BF_ERR_DIST) */
    bf_status (*nccl_poll)(struct bf_backend *be, int *done);
    void (*nccl_abort)(struct bf_backend *be);          /* ncclCommAbort: no waiting for peers */
    bf_status (*nccl_destroy)(struct bf_backend *be);   /* ncclCommDestroy */
    /* x (n) *= s, queued (the all-reduce's 1 / size) */
    bf_status (*scale)(struct bf_backend *be, float *x, long n, float s);
} bf_backend;

#endif
