/* backend.h - the backend vtable: every op the step program runs, once per
 * device; the ops themselves are listed once, in backend_ops.h, and the
 * types they take are defined here. Conventions (as in llm.c): outputs first, then inputs, then sizes; shapes in
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
    BF_LOSS_MSE = 0, BF_LOSS_BCE, BF_LOSS_CCE, BF_LOSS_SCCE, BF_LOSS_MAE, BF_LOSS_HUBER, BF_LOSS_LOGCOSH,
    /* the mean of the prediction itself (target unused): a custom loss
     * function's per-sample values, traced into the graph (losses.py) */
    BF_LOSS_MEAN,
    /* an added loss (add_loss, activity_regularizer): per sample the sum of
     * pred, averaged over the batch, sample weights not applied (Keras adds a
     * layer's losses to the batch loss unweighted) */
    BF_LOSS_ADDED
} bf_loss_kind;
#define BF_LOSS_LAST BF_LOSS_ADDED

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
    BF_MET_PREC_AT_REC, BF_MET_REC_AT_PREC, BF_MET_SENS_AT_SPEC, BF_MET_SPEC_AT_SENS,
    /* the weighted sum of each column of the output (a metric's traced per-sample statistics), the weights'
     * sum and the rows: Keras's Mean / MeanMetricWrapper (the result: column 0's weighted mean), and the
     * statistics F-scores, R2Score and the IoU family sum over an epoch (python/boundfit/metrics) */
    BF_MET_SUMS
} bf_metric_kind;
#define BF_MET_LAST BF_MET_SUMS
/* the metrics that accumulate AUC's per-bucket positives and negatives */
static inline int bf_metric_bucketed(bf_metric_kind k) {
    return k == BF_MET_AUC || (k >= BF_MET_PREC_AT_REC && k <= BF_MET_SPEC_AT_SENS);
}
#define BF_AUC_MAX_THRESHOLDS 10000
#define BF_MAX_SUM_COLS (1 << 20) /* SUMS: columns (values per sample) at most */

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
    int col0, ncols;    /* SUMS: the columns [col0, col0 + ncols) of the output it sums (ncols 0: to the end) */
} bf_metric_spec;

/* the columns [*j0, *j1) of an output of C a metric reads: class_id's alone, or all */
static inline void bf_metric_cols(const bf_metric_spec *m, int C, int *j0, int *j1) {
    *j0 = m->has_class_id ? m->class_id : 0;
    *j1 = m->has_class_id ? m->class_id + 1 : C;
}

/* doubles a metric accumulates: means (sum w*v, sum w); precision / recall
 * (tp, fp, fn); the counts (tp, fp, fn, tn); AUC (per bucket: positives,
 * negatives); sums (per column sum w*v, then sum w, rows) */
static inline long bf_metric_nvalues(const bf_metric_spec *m) {
    if (bf_metric_bucketed(m->kind)) return 2L * m->num_thresholds;
    switch (m->kind) {
    case BF_MET_PRECISION: case BF_MET_RECALL: return 3;
    case BF_MET_TP: case BF_MET_FP: case BF_MET_TN: case BF_MET_FN: return 4;
    case BF_MET_SUMS: return (long)m->ncols + 2;
    default: return 2;
    }
}

/* One optimizer update as Keras 3's base optimizer applies it: decoupled
 * weight decay first (w -= w * weight_decay * lr), then the rule of `kind`.
 * Host-side scalars (t, Nadam's u products) are filled by the core. Lamb is
 * two calls per variable: LAMB_MOMENTS (weight decay, m and v), then, with
 * the sums of squares of the variable and of its update in norms (backend
 * memory, lamb_sumsq), LAMB_APPLY (w -= trust ratio * lr * update).
 * use_ema (Keras's base optimizer, after the rule): EMA (s0 = momentum * s0
 * + (1 - momentum) * w, no weight decay, g unused) and EMA_OVERWRITE (w = s0). */
typedef enum {
    BF_UPD_SGD = 0, BF_UPD_ADAM, BF_UPD_RMSPROP, BF_UPD_ADAGRAD, BF_UPD_NADAM, BF_UPD_ADAMAX, BF_UPD_ADADELTA,
    BF_UPD_FTRL, BF_UPD_LION, BF_UPD_LAMB_MOMENTS, BF_UPD_LAMB_APPLY, BF_UPD_EMA, BF_UPD_EMA_OVERWRITE
} bf_update_kind;
#define BF_UPD_LAST BF_UPD_EMA_OVERWRITE
/* Adafactor's arguments (Keras 3 names; core/opt_matrix.c) */
typedef struct {
    float beta_2_decay, epsilon_1, epsilon_2, clip_threshold;
} bf_adafactor_args;
/* Muon's arguments (Keras 3 names; core/opt_matrix.c); beta1, beta2, eps of bf_update_args are adam_beta_1 /
 * adam_beta_2 / epsilon, momentum and nesterov its own, weight_decay the matrices' */
typedef struct {
    float a, b, c;            /* muon_a, muon_b, muon_c: the Newton-Schulz polynomial */
    float adam_lr_ratio, adam_weight_decay;
    float rms_rate;           /* < 0: None (no Moonlight scaling) */
    int ns_steps;
} bf_muon_args;
/* Ftrl's arguments (Keras 3 names) */
typedef struct {
    float lr_power;       /* learning_rate_power (<= 0) */
    float l1, l2, l2_shrinkage; /* l1_ / l2_ / l2_shrinkage_regularization_strength (>= 0) */
    float beta;
} bf_ftrl_args;
typedef struct {
    bf_update_kind kind;
    float lr, beta1, beta2, eps, momentum, rho, weight_decay;
    int nesterov, amsgrad, centered;
    long t;                          /* 1-based iteration of this update */
    float u_t, u_t1, u_prod, u_prod1; /* Nadam: u_t, u_{t+1}, prod u_1..u_t, prod u_1..u_{t+1} */
    bf_ftrl_args ftrl;
    const double *norms;             /* LAMB_APPLY: (2) sum w^2, sum update^2 of this variable (backend memory) */
    bf_adafactor_args af;            /* adafactor_update */
    bf_muon_args mu;                 /* muon_update */
} bf_update_args;

/* gradient clipping modes (Keras: clipnorm per tensor, global_clipnorm, clipvalue) */
typedef enum { BF_CLIP_NONE = 0, BF_CLIP_NORM, BF_CLIP_GLOBAL_NORM, BF_CLIP_VALUE } bf_clip_mode;
/* elementwise ops of merge layers and gradient accumulation (see ewise) */
typedef enum {
    BF_EW_ADD = 0, /* out = alpha * (a + b) */
    BF_EW_SUB,     /* out = alpha * (a - b) */
    BF_EW_MUL,     /* out = alpha * (a * b) */
    BF_EW_MAX,     /* out = max(a, b), NaN if a or b is (jnp.maximum) */
    BF_EW_MIN,     /* out = min(a, b), likewise */
    BF_EW_SCALE,   /* out = alpha * a */
    BF_EW_SELECT   /* out = a == b ? c : 0 (Maximum / Minimum backward: a input, b output, c its gradient) */
} bf_ewise_op;

/* bf16_convert's conversions (mixed precision: core/mixed.c); bfloat16 is the high half of a float32, rounded to
 * nearest even (a NaN stays a NaN) */
typedef enum {
    BF_BF16_EXPAND = 0, /* out (float32) = in (bfloat16), exactly */
    BF_BF16_ROUND,      /* out (bfloat16) = in (float32) rounded */
    BF_BF16_ROUND_F32,  /* out (float32) = in (float32) rounded to bfloat16's values (in place allowed) */
    BF_BF16_ADD,        /* out (bfloat16) = round(out + in (float32)) */
    BF_BF16_ADD16,      /* out (bfloat16) = round(out + in (bfloat16)) */
    BF_BF16_SCAN,       /* *(int *)out = 1 when some of in (bfloat16) is NaN or Inf (else left as it is) */
    BF_HALF_F16_BIT = 8 /* or'ed in: the 16-bit operands are IEEE float16 (mixed_float16), rounded to nearest even,
                         * overflowing to Inf */
} bf_bf16_how;
#define BF_EW_LAST BF_EW_SELECT
/* 1 when the op reads b */
static inline int bf_ewise_binary(bf_ewise_op op) { return op <= BF_EW_MIN || op == BF_EW_SELECT; }

/* Convolution / pooling geometry, NHWC. Output size follows Keras:
 * valid: OH = (H - KH) / SH + 1; same: OH = ceil(H / SH), pad_top = total/2. */
typedef struct {
    int B, H, W, C;    /* input (B,H,W,C) */
    int OH, OW, K;     /* output (B,OH,OW,K); K = filters (pooling: K == C) */
    int KH, KW;        /* window */
    int SH, SW;        /* strides */
    int PT, PL;        /* padding top / left (bottom / right implied) */
} bf_conv_geom;

/* Conv3D geometry, NDHWC: p is one depth plane's Conv2D geometry (its B the batch), and the depth axis:
 * input D, output OD, window KD, stride SD, front padding PF ('valid' or 'same' as the other axes). */
typedef struct {
    bf_conv_geom p;
    int D, OD, KD, SD, PF;
} bf_conv3d_geom;

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
 * Permute (permuted input strides), a WEIGHT's gradient (backward sums rows),
 * ZeroPadding2D (an output offset; backward crops), UpSampling2D (0 strides;
 * backward sums the blocks). Every output element is written once. */
#define BF_STRIDED_MAXD 6
typedef struct {
    int nd, nr;
    long n[BF_STRIDED_MAXD], os[BF_STRIDED_MAXD], is[BF_STRIDED_MAXD];
    long rn[2], rs[2];
} bf_strided;

/* The index primitives (layers/gather.c, scan.c, argsort.c; their kernels: csrc/cpu/ and csrc/cuda/, same names).
 * Gather along one axis (keras.ops take, take_along_axis, sort / top_k values): over the output index
 * (i_0..i_{nd-1}) < n, row-major, the batch axis first,
 *   out[flat i] = x[sum i_k*xs_k + j*ax],  j = idx[sum i_k*is_k] truncated to an integer,
 * a negative j counted from the end (j + na), and NaN where j is outside [0, na) after that (jnp.take's
 * default mode "fill"). Its adjoint (backward) overwrites dx (xn floats): zero, then for every output element
 * in row-major order dx[sum i_k*xs_k + j*ax] += dout[flat i] (an index outside adds nothing); the elements
 * that meet in one dx element are added in that order on every backend (the same bits, no atomics).
 * nd <= BF_GATHER_MAXD (at least BF_MAX_RANK + 1: layers/gather.c checks). */
#define BF_GATHER_MAXD 8
typedef struct {
    int nd, na;
    long n[BF_GATHER_MAXD], xs[BF_GATHER_MAXD], is[BF_GATHER_MAXD];
    long ax, xn;
} bf_gather_geom;

/* One axis of a row-major array seen as (outer, n, inner): a cumulative sum or product along it (SCAN: prod),
 * the first k positions of a stable sort along it (ARGSORT: k, descending) */
typedef struct {
    long outer, inner;
    int n, k, prod, descending;
} bf_axis_geom;

/* A reduction over some axes of a row-major tensor (reduce_forward / reduce_backward): dims n[0..nd), the axes
 * whose bit is set in `mask` (bit d: axis d) reduced, the others kept. The output holds the kept axes in order
 * (row-major; the reduced axes are gone or of size 1, the same layout); each output element reduces its
 * elements in one fixed order, row-major over the reduced axes (ARGMAX / ARGMIN's index is that position).
 * The caller merges neighbouring axes of one kind and drops size-1 axes (layers/reduce.c). */
typedef enum {
    BF_RED_SUM = 0,  /* sum, in double */
    BF_RED_MEAN,     /* sum / count */
    BF_RED_MAX,      /* NaN if any is NaN; gradient split equally among the maximal elements (JAX's rule) */
    BF_RED_MIN,
    BF_RED_PROD,     /* product, in double; gradient the product of the others (exact where x = 0) */
    BF_RED_ARGMAX,   /* the first maximal position (a NaN counts as maximal, as jnp.argmax); no gradient */
    BF_RED_ARGMIN,
    BF_RED_ANY,      /* 1 if any is nonzero (NaN counts), else 0; no gradient */
    BF_RED_ALL,      /* 1 if all are nonzero, else 0; no gradient */
    BF_RED_LOGSUMEXP /* m + log(sum exp(x - m)), m the max (0 where not finite, as jax.scipy); gradient softmax */
} bf_reduce_op;
#define BF_RED_LAST BF_RED_LOGSUMEXP
#define BF_REDUCE_MAXD 8 /* axes at most (the batch and a sample's: layers/reduce.c checks BF_MAX_RANK + 1 fits) */
typedef struct {
    int nd;
    long n[BF_REDUCE_MAXD];
    unsigned mask;
    bf_reduce_op op;
} bf_reduce_geom;

/* The elementwise primitives (ops and parameters: emap_ops.h; formulas: emap_math.h). bf_map_op: a unary
 * op, or a binary one with the number p as one operand (op = BF_UN_COUNT + its BF_BIN_* code). */
typedef struct {
    int op;        /* a BF_UN_* code, or BF_UN_COUNT + a BF_BIN_* code */
    int left;      /* a binary op: 1 when p is its left operand (2 - x), 0 its right (x - 2) */
    float p, q, r; /* the op's parameters */
} bf_map_op;

/* NumPy broadcasting of two operands a, b to an output of nd axes (the batch axis first; nd <=
 * BF_BCAST_MAXD): out (n_0, ..., n_{nd-1}) contiguous; operand k's element at index (i_0, ...) is at
 * sum_d i_d * s[k][d], with s[k][d] = 0 along an axis it broadcasts (its size 1, n_d > 1) and its own
 * contiguous strides on the others. */
#define BF_BCAST_MAXD 8
typedef struct {
    int nd;
    long n[BF_BCAST_MAXD], s[2][BF_BCAST_MAXD];
} bf_bcast;

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

/* which backends implement an op (backend_ops.h's `on`): BF_ON_<B>_<on>(...) is its arguments or nothing */
#define BF_ON_CPU_ALL(...) __VA_ARGS__
#define BF_ON_CPU_CPU(...) __VA_ARGS__
#define BF_ON_CPU_CUDA(...)
#define BF_ON_CUDA_ALL(...) __VA_ARGS__
#define BF_ON_CUDA_CPU(...)
#define BF_ON_CUDA_CUDA(...) __VA_ARGS__

typedef struct bf_backend bf_backend;
struct bf_backend {
    const char *name; /* "cpu" or "cuda:N" */
    void *impl;       /* backend-private state (cuBLAS / cuDNN handles, streams) */

    /* memory: one reservation per arena; the arena code is the only caller */
    bf_status (*reserve)(bf_backend *be, void **out, size_t bytes);
    void (*release)(bf_backend *be, void *p);
    bf_status (*to_device)(bf_backend *be, void *dst, const void *src, size_t bytes);
    bf_status (*to_host)(bf_backend *be, void *dst, const void *src, size_t bytes);
    bf_status (*fill_zero)(bf_backend *be, void *dst, size_t bytes);
    bf_status (*sync)(bf_backend *be); /* surfaces asynchronous errors */
    /* the math of the ops that follow, set by the core (a device backend reads them, the CPU's ignore them):
     * half, the compute dtype of the node being planned or run (0 float32; 1 bfloat16, 2 float16: bf_layer.half):
     * its GEMMs and convolutions may round their operands to it and accumulate in float32 (tensor cores);
     * tf32, float32 GEMMs and convolutions may round their operands to TF32 (bf.config.enable_tf32) */
    int half, tf32;

    /* ---- device runs only (NULL on the CPU) ---- */
    /* bytes of scratch a run lends the backend (reduction partials, flags,
     * library workspaces); planned in the run's arena like any buffer */
    size_t (*run_workspace_bytes)(bf_backend *be);
    /* lend ws (run_workspace_bytes bytes) to the ops that follow; NULL takes it back */
    bf_status (*bind_workspace)(bf_backend *be, void *ws, size_t bytes);
    /* page-lock host memory that batches are uploaded from; best effort (a
     * refusal leaves it pageable, which is slower but correct) */
    void (*host_pin)(bf_backend *be, void *p, size_t bytes);
    void (*host_unpin)(bf_backend *be, void *p);
    /* Double-buffered batch uploads. upload queues dst (device) = src (host)
     * for batch slot k (0 or 1) on a copy stream and returns at once; the ops
     * queued after it see the data. It first waits for the ops queued before
     * the last batch_consumed(k), so a slot is not overwritten while read.
     * batch_wait(k) returns once upload k has read its host source. */
    bf_status (*upload)(bf_backend *be, int k, void *dst, const void *src, size_t bytes);
    bf_status (*batch_consumed)(bf_backend *be, int k);
    bf_status (*batch_wait)(bf_backend *be, int k);

    /* ---- the ops, one member each (backend_ops.h; NULL where a backend lacks one) ---- */
#define BF_OP(ret, op, params, on) ret(*op) params;
#include "backend_ops.h"
#undef BF_OP
};

#endif
