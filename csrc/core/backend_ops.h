/* backend_ops.h - THE list of backend ops: each op once, with its shape
 * comment. From it come the bf_backend members (backend.h), the CPU and
 * CUDA prototypes (csrc/cpu/cpu_ops.h, csrc/cuda/cuda_ops.h) and the CPU
 * and CUDA tables (csrc/cpu/cpu_backend.c, csrc/cuda/backend.cu; the emu
 * backend copies the CPU's). An X-macro file: no include guard; define
 *   BF_OP(ret, op, params, on)
 * then include it. Backend B implements op `op` as bf_<B>_<op> (bf_cpu_op,
 * bf_cuda_op) where `on` says so: ALL (both), CPU or CUDA (that one only;
 * the other's table leaves it NULL and a layer's `supported` hook refuses
 * the node there). Adding an op is one entry here and its kernels; the
 * vtable's layout changes, so bump BF_CUDA_ABI (core/cuda_abi.h).
 * Conventions (backend.h): outputs first, then inputs, then sizes; shapes
 * in comments; backward ADDS into parameter gradients and OVERWRITES dinp
 * (dinp may be NULL: the first layer). Argument checks (sizes, ranges,
 * NULLs, geometry) are the caller's, once, in the layer's infer / plan. */
#ifndef BF_OP
#error "define BF_OP(ret, op, params, on) before including backend_ops.h"
#endif

/* ---- dense layers, activations, loss, metrics ---- */
/* out (B,OUT) = act(inp (B,IN) @ w (IN,OUT) + b (OUT)); b may be NULL */
BF_OP(bf_status, dense_forward,
      (bf_backend *be, float *out, const float *inp, const float *w, const float *b, int B, int IN, int OUT), ALL)
/* dinp (B,IN) = dout @ w^T; dw (IN,OUT) += inp^T @ dout; db (OUT) += sum_B dout */
BF_OP(bf_status, dense_backward,
      (bf_backend *be, float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w, int B,
       int IN, int OUT), ALL)
/* out (N,C) = act(inp); in place allowed. softmax is over the last axis C */
BF_OP(bf_status, act_forward, (bf_backend *be, float *out, const float *inp, bf_act act, long N, int C), ALL)
/* dinp (N,C) = act'(out) * dout, using the forward output; in place on dout allowed */
BF_OP(bf_status, act_backward,
      (bf_backend *be, float *dinp, const float *dout, const float *out, bf_act act, long N, int C), ALL)
/* optional (NULL: act_backward, then the bias sum in dense_backward): for
 * an elementwise act (not softmax), act_backward and db (C) += the sum
 * over rows of dinp, in one pass */
BF_OP(bf_status, act_backward_bias,
      (bf_backend *be, float *dinp, const float *dout, const float *out, bf_act act, long N, int C, float *db), CPU)
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
BF_OP(bf_status, loss_forward_backward,
      (bf_backend *be, float *loss_out, float *dpred, int *bad_label, const float *pred, const float *target,
       const float *sw, const bf_loss_spec *loss, int fused, int B, int C, float scale), ALL)
/* acc (bf_metric_nvalues(m), backend memory) += metric m's statistics of
 * the micro-batch. pred (B,C): the model's output, or its logits when
 * `act` is sigmoid / softmax (a fused activation, applied here first).
 * target (B,T): T == C, or T == 1 class ids for the sparse kinds.
 * sw (B) or NULL; used only when m->weighted. Does not wait. m is valid
 * (bf_model_set_metrics checks it), C, T >= 1. */
BF_OP(bf_status, metric_update,
      (bf_backend *be, double *acc, const float *pred, const float *target, const float *sw, const bf_metric_spec *m,
       bf_act act, int B, int C, int T), ALL)

/* ---- reductions, regularizers, clipping, the optimizer update ---- */
/* Reductions write into backend memory and do not wait: the core reads a
 * micro-batch's results back in one copy (bf_step_stats, program.h). */
/* sum_out (1) = sum(x[0..n)); loss / metric totals */
BF_OP(bf_status, sum, (bf_backend *be, double *sum_out, const float *x, long n), ALL)
/* bad (1) = 1 if any of x[0..n) is NaN or Inf, else left as it is (scans OR together) */
BF_OP(bf_status, nonfinite, (bf_backend *be, int *bad, const float *x, long n), ALL)
/* out (1) = max(out, max |x[0..n)|), or +Inf / a NaN when any of x is NaN
 * or Inf (the caller zeroes out first) */
BF_OP(bf_status, maxabs, (bf_backend *be, float *out, const float *x, long n), ALL)
/* out (1) += sum(x[0..n)^2) in double (gradient norms for clipping); does not wait */
BF_OP(bf_status, sumsq, (bf_backend *be, double *out, const float *x, long n), ALL)
/* g (n) clipped in place as Keras: BF_CLIP_NORM g*c/max(sqrt(*sumsq), c);
 * BF_CLIP_GLOBAL_NORM g*(c*min(1/sqrt(*sumsq), 1/c)); BF_CLIP_VALUE
 * clip(g, -c, c) (sumsq unused). sumsq is backend memory: no wait. */
BF_OP(bf_status, grad_clip,
      (bf_backend *be, float *g, const double *sumsq, long n, bf_clip_mode mode, float c), ALL)
/* optimizer update of w (n) from g (n), Keras 3 rules (see bf_update_args).
 * State tensors (n each, NULL when unused): SGD s0 momentum; Adam s0 m,
 * s1 v, s2 v_hat (amsgrad); RMSprop s0 velocity, s1 momentum, s2 average
 * gradient (centered); Adagrad s0 accumulator; Nadam s0 m, s1 v; Adamax s0 m,
 * s1 u (infinity norm); Adadelta s0 accumulated gradient, s1 accumulated
 * delta; Ftrl s0 accumulator, s1 linear; Lion s0 momentum; Lamb s0 m, s1 v
 * (LAMB_APPLY reads g not at all). */
BF_OP(bf_status, opt_update,
      (bf_backend *be, float *w, float *s0, float *s1, float *s2, const float *g, long n, const bf_update_args *a),
      ALL)
/* out (1) += sum of the squares of Lamb's update m_hat / (sqrt(v_hat) + eps)
 * over m, v (n) at iteration a->t, in double (the trust ratio's norm); does not wait */
BF_OP(bf_status, lamb_sumsq, (bf_backend *be, double *out, const float *m, const float *v, long n, const bf_update_args *a),
      ALL)
/* Adafactor's update of one variable w (A,R,C) from g (A,R,C), Keras 3's rule after the decoupled weight decay
 * (cpu/optimizers_matrix.c): factored 1 (a variable of rank >= 2: R, C its last two axes): the row and column
 * second moments r (A,R) and c (A,C) and v (A,R,C) = r / mean(r) * c; factored 0 (rank < 2: A = R = 1): v (C)
 * their moving average. The per-variable root mean squares in double; a->t, a->lr, a->af. CPU only. */
BF_OP(bf_status, adafactor_update,
      (bf_backend *be, float *w, float *v, float *r, float *c, const float *g, long A, long R, long C, int factored,
       const bf_update_args *a), CPU)
/* Muon's update of one variable w (R,C) (n = R*C) from g: matrix 1, the momentum m (R,C) and the Newton-Schulz
 * orthogonalization of its (Nesterov) step, ws (2*R*C + 2*min(R,C)^2 floats) its scratch; matrix 0, AdamW's
 * step with m and v (n) at lr * adam_lr_ratio (Keras 3's Muon: cpu/optimizers_matrix.c). CPU only. */
BF_OP(bf_status, muon_update,
      (bf_backend *be, float *w, float *m, float *v, float *ws, const float *g, long R, long C, int matrix,
       const bf_update_args *a), CPU)
/* Keras weight regularizers (csrc/cpu/regularize.c): penalty (1, may be
 * NULL) += l1*sum|w| + l2*sum w^2 in double; g (n, may be NULL) +=
 * l1*sign(w) + 2*l2*w. Backend memory, no wait. */
BF_OP(bf_status, regularize, (bf_backend *be, double *penalty, float *g, const float *w, long n, float l1, float l2),
      ALL)
/* w (A, R, B) constrained in place as Keras after an update: norms over R
 * for each (a, b) (MaxNorm, UnitNorm, MinMaxNorm), or w*(w >= 0) (NonNeg) */
BF_OP(bf_status, constrain, (bf_backend *be, float *w, long A, long R, long B, const bf_constraint *c), ALL)

/* ---- convolutional layers (NHWC), pooling, batch normalization, dropout ---- */
/* bytes of scratch (ws) for conv2d_forward (backward 0) or conv2d_backward (1) */
BF_OP(size_t, conv2d_workspace_bytes, (bf_backend *be, const bf_conv_geom *g, int backward), ALL)
/* out (B,OH,OW,K) = conv(inp (B,H,W,C), w (KH,KW,C,K)) + b (K); b may be NULL */
BF_OP(bf_status, conv2d_forward,
      (bf_backend *be, float *out, void *ws, const float *inp, const float *w, const float *b, const bf_conv_geom *g),
      ALL)
/* dinp (B,H,W,C) = conv^T(dout); dw (KH,KW,C,K) += ...; db (K) += sum dout; dinp / db may be NULL */
BF_OP(bf_status, conv2d_backward,
      (bf_backend *be, float *dinp, float *dw, float *db, void *ws, const float *dout, const float *inp,
       const float *w, const bf_conv_geom *g), ALL)
/* max / average pooling, out (B,OH,OW,C); Keras: average over valid cells only;
 * max backward routes dout to the first maximum of each window */
BF_OP(bf_status, maxpool_forward, (bf_backend *be, float *out, const float *inp, const bf_conv_geom *g), ALL)
BF_OP(bf_status, maxpool_backward,
      (bf_backend *be, float *dinp, const float *dout, const float *out, const float *inp, const bf_conv_geom *g), ALL)
BF_OP(bf_status, avgpool_forward, (bf_backend *be, float *out, const float *inp, const bf_conv_geom *g), ALL)
BF_OP(bf_status, avgpool_backward, (bf_backend *be, float *dinp, const float *dout, const bf_conv_geom *g), ALL)
/* batch normalization over all axes but the last (C) of inp (N,C).
 * Training: uses batch statistics, writes mean / invstd (C) for backward
 * and updates moving stats with Keras's momentum; inference: uses moving
 * stats. N, C >= 1, eps >= 0 finite, momentum in [0, 1] in training, out,
 * inp, moving_* and (training) mean / invstd given: layers/batchnorm.c
 * checks them; gamma / beta may be NULL (1, 0) */
BF_OP(bf_status, batchnorm_forward,
      (bf_backend *be, float *out, float *mean, float *invstd, float *moving_mean, float *moving_var,
       const float *inp, const float *gamma, const float *beta, long N, int C, float momentum, float eps,
       int training), ALL)
/* dinp (N,C) through the batch statistics; dgamma, dbeta (C) += (each may be NULL) */
BF_OP(bf_status, batchnorm_backward,
      (bf_backend *be, float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp,
       const float *mean, const float *invstd, const float *gamma, long N, int C), ALL)
/* dinp (N,C) = dout (N,C) * gamma * invstd (C; gamma NULL: 1): backward of
 * a frozen BatchNormalization, which runs in inference mode (Keras);
 * dinp may alias dout */
BF_OP(bf_status, batchnorm_backward_frozen,
      (bf_backend *be, float *dinp, const float *dout, const float *invstd, const float *gamma, long N, int C), ALL)
/* inverted dropout: out = inp * mask / (1-rate); mask (n) of 0/1 from (seed, step) */
BF_OP(bf_status, dropout_forward,
      (bf_backend *be, float *out, float *mask, const float *inp, long n, float rate, uint64_t seed), ALL)
/* dinp (n) = dout * mask / (1-rate) */
BF_OP(bf_status, dropout_backward,
      (bf_backend *be, float *dinp, const float *dout, const float *mask, long n, float rate), ALL)
/* DepthwiseConv2D (csrc/cpu/depthwise.c): g as a Conv2D's with K = C * M
 * output channels; out channel c*M + m reads input channel c through
 * w (KH,KW,C,M) [.., c, m] (Keras's depthwise_kernel), plus b (K) or
 * NULL. Backward overwrites dinp and adds into dw, db (each may be NULL). */
BF_OP(bf_status, depthwise_forward,
      (bf_backend *be, float *out, const float *inp, const float *w, const float *b, const bf_conv_geom *g), ALL)
BF_OP(bf_status, depthwise_backward,
      (bf_backend *be, float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w,
       const bf_conv_geom *g), ALL)

/* ---- Conv1D and Conv2DTranspose ---- */
BF_OP(size_t, conv1d_workspace_bytes, (bf_backend *be, const bf_conv1d_geom *g, int backward), ALL)
/* out (B,OT,K) = conv(inp (B,T,C), w (KW,C,K)) dilated by D + b (K); b may be NULL */
BF_OP(bf_status, conv1d_forward,
      (bf_backend *be, float *out, void *ws, const float *inp, const float *w, const float *b,
       const bf_conv1d_geom *g), ALL)
/* dinp (B,T,C) = conv^T(dout); dw (KW,C,K) += col^T @ dout; db (K) += sum dout */
BF_OP(bf_status, conv1d_backward,
      (bf_backend *be, float *dinp, float *dw, float *db, void *ws, const float *dout, const float *inp,
       const float *w, const bf_conv1d_geom *g), ALL)
/* Conv2DTranspose as the adjoint of a Conv2D: g is the Conv2D geometry
 * whose input is the transposed conv's output out (B,H,W,C = filters) and
 * whose output is its input inp (B,OH,OW,K); w (KH,KW,C,K) is Keras's
 * Conv2DTranspose kernel (kh, kw, filters, in_channels); b (C).
 * out = conv2d^T(inp) + b; backward: dinp = conv2d(dout), dw += ..., db += sum dout */
BF_OP(size_t, conv2d_transpose_workspace_bytes, (bf_backend *be, const bf_conv_geom *g, int backward), ALL)
BF_OP(bf_status, conv2d_transpose_forward,
      (bf_backend *be, float *out, void *ws, const float *inp, const float *w, const float *b, const bf_conv_geom *g),
      ALL)
BF_OP(bf_status, conv2d_transpose_backward,
      (bf_backend *be, float *dinp, float *dw, float *db, void *ws, const float *dout, const float *inp,
       const float *w, const bf_conv_geom *g), ALL)

/* ---- Conv3D and Conv3DTranspose (CPU; cpu/conv3d.c: the Conv2D im2col walk, one depth plane at a time) ---- */
/* bytes of scratch (ws) for the conv3d ops (transpose 1: the conv3d_transpose ops), forward or backward */
BF_OP(size_t, conv3d_workspace_bytes, (bf_backend *be, const bf_conv3d_geom *g, int transpose, int backward), CPU)
/* out (B,OD,OH,OW,K) = conv(inp (B,D,H,W,C), w (KD,KH,KW,C,K)) + b (K); b may be NULL */
BF_OP(bf_status, conv3d_forward,
      (bf_backend *be, float *out, void *ws, const float *inp, const float *w, const float *b,
       const bf_conv3d_geom *g), CPU)
/* dinp (B,D,H,W,C) = conv^T(dout); dw (KD,KH,KW,C,K) += col^T @ dout; db (K) += sum dout; each may be NULL */
BF_OP(bf_status, conv3d_backward,
      (bf_backend *be, float *dinp, float *dw, float *db, void *ws, const float *dout, const float *inp,
       const float *w, const bf_conv3d_geom *g), CPU)
/* Conv3DTranspose as the adjoint of the Conv3D g (out (B,D,H,W,C = filters), inp (B,OD,OH,OW,K)), w
 * (KD,KH,KW,C,K) Keras's kernel (kd, kh, kw, filters, in_channels), b (C); out = conv3d^T(inp) + b */
BF_OP(bf_status, conv3d_transpose_forward,
      (bf_backend *be, float *out, void *ws, const float *inp, const float *w, const float *b,
       const bf_conv3d_geom *g), CPU)
BF_OP(bf_status, conv3d_transpose_backward,
      (bf_backend *be, float *dinp, float *dw, float *db, void *ws, const float *dout, const float *inp,
       const float *w, const bf_conv3d_geom *g), CPU)

/* ---- graphs: merge layers, split / packed inputs and targets ---- */
/* out (n) = op(a (n), b (n), c (n)); any of them may alias out; b, c unused: NULL */
/* mixed precision: out (n) = in (n) converted as `how` says (bf_bf16_how: bfloat16 <-> float32, rounding,
 * accumulating into a bfloat16 gradient, a scan for NaN / Inf) */
BF_OP(bf_status, bf16_convert, (bf_backend *be, void *out, const void *in, bf_bf16_how how, long n), ALL)
BF_OP(bf_status, ewise,
      (bf_backend *be, float *out, const float *a, const float *b, const float *c, bf_ewise_op op, float alpha,
       long n), ALL)
/* out (rows, ld_out) columns [0, cols) = inp (rows, ld_in) columns [0, cols):
 * a block of columns copied between row-major matrices (Concatenate and its
 * backward, inputs / targets split out of a packed batch) */
BF_OP(bf_status, copy2d,
      (bf_backend *be, float *out, long ld_out, const float *inp, long ld_in, long rows, long cols), ALL)

/* ---- Keras 3's other activations, layout and preprocessing layers ---- */
/* out (n) = act(inp) for bf_act_is_x(act); in place allowed */
BF_OP(bf_status, actx_forward,
      (bf_backend *be, float *out, const float *inp, bf_act act, const bf_act_param *p, long n), ALL)
/* dinp (n) = act'(inp) * dout; reads inp (x) when bf_act_needs_x(act), else out
 * (the other may be NULL); in place on dout allowed */
BF_OP(bf_status, actx_backward,
      (bf_backend *be, float *dinp, const float *dout, const float *inp, const float *out, bf_act act,
       const bf_act_param *p, long n), ALL)
/* PReLU (csrc/cpu/prelu.c, csrc/cuda/prelu.cu): inp, out (P,Q,R,S), alpha (Q,S) broadcast over P and R (the
 * layer folds the batch and the per-sample axes into P, Q, R, S: alpha's shared axes are P and R);
 * out = inp > 0 ? inp : alpha[q,s] * inp */
BF_OP(bf_status, prelu_forward,
      (bf_backend *be, float *out, const float *inp, const float *alpha, long P, int Q, int R, int S), ALL)
/* dinp (P,Q,R,S) = dout * (inp > 0 ? 1 : inp < 0 ? alpha[q,s] : 0) (Keras: relu's gradient at 0 is 0),
 * OVERWRITTEN; dalpha (Q,S) += the sum over P and R of dout * min(inp, 0), ADDED, each element in one fixed
 * order (the same bits on any thread count); either may be NULL (a first layer, a frozen one) */
BF_OP(bf_status, prelu_backward,
      (bf_backend *be, float *dinp, float *dalpha, const float *dout, const float *inp, const float *alpha, long P,
       int Q, int R, int S), ALL)
/* the elementwise primitives (layers/emath.c; ops: emap_ops.h, formulas: emap_math.h, shared by the backends):
 * out (n) = op(x (n)), a unary op or a binary one with the number m->p as an operand */
BF_OP(bf_status, unary_map, (bf_backend *be, float *out, const float *x, const bf_map_op *m, long n), ALL)
/* dx (n) = op'(x, y) * dout, y = op(x); OVERWRITTEN; in place on dout allowed */
BF_OP(bf_status, unary_grad,
      (bf_backend *be, float *dx, const float *x, const float *y, const float *dout, const bf_map_op *m, long n), ALL)
/* out (g->n) = op(a, b), each read through its broadcast strides g->s[0], g->s[1] (a BF_BIN_* code) */
BF_OP(bf_status, binary_map, (bf_backend *be, float *out, const float *a, const float *b, int op, const bf_bcast *g),
      ALL)
/* d (operand j's shape) = the sum over the axes operand j broadcasts along of d op / d operand_j * dout
 * (g->n), y = op(a, b); OVERWRITTEN, each element summed in one fixed order */
BF_OP(bf_status, binary_grad,
      (bf_backend *be, float *d, int j, const float *a, const float *b, const float *y, const float *dout, int op,
       const bf_bcast *g), ALL)
/* strided gather (Permute, ZeroPadding2D, UpSampling2D and their backward; WEIGHT's and CONST's rows) */
BF_OP(bf_status, strided_copy, (bf_backend *be, float *out, const float *inp, const bf_strided *s), ALL)
/* reductions over any axes (csrc/cpu/reduce_axes.c, csrc/cuda/reduce_axes.cu; bf_reduce_geom in backend.h):
 * out (the kept axes of g->n) = g->op over the axes of g->mask of inp (g->n) */
BF_OP(bf_status, reduce_forward, (bf_backend *be, float *out, const float *inp, const bf_reduce_geom *g), ALL)
/* dinp (g->n) = d out / d inp * dout (dout, out: the kept axes), OVERWRITTEN; reads inp for MAX, MIN, PROD,
 * LOGSUMEXP and out for MAX, MIN, LOGSUMEXP (else they may be NULL); not for ARGMAX, ARGMIN, ANY, ALL */
BF_OP(bf_status, reduce_backward,
      (bf_backend *be, float *dinp, const float *dout, const float *inp, const float *out, const bf_reduce_geom *g),
      ALL)
/* out (N,C) = (inp - mean[c]) / max(sqrt(var[c]), eps) * scale + offset; mean, var NULL: 0, 1 */
BF_OP(bf_status, rescale_forward,
      (bf_backend *be, float *out, const float *inp, const float *mean, const float *var, float scale, float offset,
       float eps, long N, int C), ALL)
/* dinp (N,C) = dout / max(sqrt(var[c]), eps) * scale; var NULL: 1 */
BF_OP(bf_status, rescale_backward,
      (bf_backend *be, float *dinp, const float *dout, const float *var, float scale, float eps, long N, int C), ALL)
/* random image augmentation (bf_augment): out (B,OH,OW,C) from inp (B,H,W,C) */
BF_OP(bf_status, augment_forward, (bf_backend *be, float *out, const float *inp, const bf_augment *a), ALL)
/* dinp (B,H,W,C) = the transpose of the forward map applied to dout (B,OH,OW,C) */
BF_OP(bf_status, augment_backward, (bf_backend *be, float *dinp, const float *dout, const bf_augment *a), ALL)

/* ---- LayerNormalization, MultiHeadAttention (csrc/cpu/layernorm.c, attention.c) ---- */
/* over the last axis C of inp (N,C): out = (x - mean) * invstd * gamma + beta;
 * mean, invstd (N) kept for backward; gamma / beta may be NULL */
BF_OP(bf_status, layernorm_forward,
      (bf_backend *be, float *out, float *mean, float *invstd, const float *inp, const float *gamma,
       const float *beta, long N, int C, float eps), ALL)
BF_OP(bf_status, layernorm_backward,
      (bf_backend *be, float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp,
       const float *mean, const float *invstd, const float *gamma, long N, int C), ALL)
BF_OP(size_t, attention_workspace_bytes, (bf_backend *be, const bf_attn_geom *g, int backward), ALL)
/* for each (b, h): P = softmax(scale * Q K^T) over keys, masked (mask (B,TQ,TK)
 * > 0.5, g's step masks and the causal rule; a row with no key left:
 * uniform, as Keras on JAX, or zero, see zero_empty), O = dropout(P) V.
 * mask may be NULL. */
BF_OP(bf_status, attention_forward,
      (bf_backend *be, float *O, float *P, void *ws, const float *Q, const float *K, const float *V,
       const float *mask, const bf_attn_geom *g), ALL)
/* dQ, dK, dV (overwritten) from dO (B,TQ,H,DV) and the kept P */
BF_OP(bf_status, attention_backward,
      (bf_backend *be, float *dQ, float *dK, float *dV, void *ws, const float *dO, const float *Q, const float *K,
       const float *V, const float *P, const float *mask, const bf_attn_geom *g), ALL)

/* ---- the index primitives: gather / scatter-add, cumulative sum / product, argsort (bf_gather_geom and
 * bf_axis_geom in backend.h) ---- */
/* out (n_0..n_{nd-1}) = x at the positions idx gives along g's axis; NaN for an index out of range */
BF_OP(bf_status, gather_forward, (bf_backend *be, float *out, const float *x, const float *idx,
      const bf_gather_geom *g), ALL)
/* dx (xn) = 0, then dout (n_0..n_{nd-1}) added at the gathered positions in row-major order (OVERWRITTEN) */
BF_OP(bf_status, gather_backward, (bf_backend *be, float *dx, const float *dout, const float *idx,
      const bf_gather_geom *g), ALL)
/* out (outer, n, inner) = the cumulative sum (g->prod: product) of inp along n */
BF_OP(bf_status, scan_forward, (bf_backend *be, float *out, const float *inp, const bf_axis_geom *g), ALL)
/* dinp (outer, n, inner) from dout: the reversed cumulative sum of dout; for a product dinp_j = out_{j-1} *
 * S_j, S_j = dout_j + inp_{j+1} * S_{j+1} (no division: exact where an element is 0, as JAX's gradient);
 * OVERWRITTEN */
BF_OP(bf_status, scan_backward, (bf_backend *be, float *dinp, const float *dout, const float *inp,
      const float *out, const bf_axis_geom *g), ALL)
/* bytes of scratch argsort needs for g */
BF_OP(size_t, argsort_workspace_bytes, (bf_backend *be, const bf_axis_geom *g), ALL)
/* out (outer, k, inner) = the positions along n (as floats) of the k smallest elements of inp (outer, n,
 * inner) in ascending order (g->descending: the k largest, descending); ties by position (a stable sort),
 * NaN above every number (jnp.argsort, lax.top_k) */
BF_OP(bf_status, argsort, (bf_backend *be, float *out, void *ws, const float *inp, const bf_axis_geom *g), ALL)

/* ---- sequences: Embedding and recurrent layers ---- */
/* out (n,D) = table (V,D) rows at ids (n); mask (n, may be NULL) = ids != 0.
 * An id that is not an integer in [0,V) gives a zero row and raises *bad
 * (backend memory) to n - r for its row r, so the lowest bad row is
 * n - *bad; *bad_val is then that row's id. Does not wait. */
BF_OP(bf_status, embedding_forward,
      (bf_backend *be, float *out, float *mask, int *bad, float *bad_val, const float *ids, const float *table,
       long n, int D, int V), ALL)
/* dtable (V,D) += dout (n,D) scattered to rows ids (n) (bad ids skipped) */
BF_OP(bf_status, embedding_backward,
      (bf_backend *be, float *dtable, const float *dout, const float *ids, long n, int D, int V), ALL)
/* scratch bytes one recurrent direction needs per call (see bf_rnn_geom) */
BF_OP(size_t, rnn_workspace_bytes, (bf_backend *be, const bf_rnn_geom *g, int backward), ALL)
/* One recurrent layer direction over T steps (csrc/cpu/rnn.c documents the
 * layouts). x (B,T,D); w (D,G*U); u (U,G*U); b (G*U) or GRU (2,G*U) or
 * NULL; mask (B,T) or NULL. Saves for backward: hs (B,T,ldh) states at
 * input positions, gates (B,T,G*U) activated gates, cs (B,T,U) LSTM cells
 * / GRU recurrent candidate part. out: (B,T,ldo) or (B,ldo), may be hs. */
BF_OP(bf_status, rnn_forward,
      (bf_backend *be, const bf_rnn_geom *g, float *out, float *hs, float *gates, float *cs, void *ws,
       const float *x, const float *w, const float *u, const float *b, const float *mask), ALL)
/* from dout (as out): dx (B,T,D) = (dx_add ? dx : 0) + d x (may be NULL);
 * dw, du, db added into. gates is overwritten with their gradients. */
BF_OP(bf_status, rnn_backward,
      (bf_backend *be, const bf_rnn_geom *g, float *dx, float *dw, float *du, float *db, float *gates, void *ws,
       const float *dout, const float *hs, const float *cs, const float *x, const float *w, const float *u,
       const float *mask, int dx_add), ALL)
/* GlobalAveragePooling1D with a step mask (csrc/cpu/masked_mean.c):
 * out (B,C) = sum_t [mask > 0.5] inp (B,T,C) / sum_t [mask > 0.5], mask
 * (B,T); a row with no step left is 0/0 = NaN, as Keras. Backward: dinp
 * (B,T,C) = dout / count at kept steps, 0 elsewhere (overwritten). */
BF_OP(bf_status, masked_mean_forward,
      (bf_backend *be, float *out, const float *inp, const float *mask, int B, int T, int C), ALL)
BF_OP(bf_status, masked_mean_backward,
      (bf_backend *be, float *dinp, const float *dout, const float *mask, int B, int T, int C), ALL)
/* Per-position weights of a loss / metric on a sequence output, as Keras
 * 3's apply_mask (csrc/cpu/pos_weights.c): w (B,S) = sw[b] * [mask > 0.5]
 * * f, f = divide_no_nan(B*S, count of mask > 0.5) when normalize, else 1;
 * sw (B) and mask (B,S) may be NULL. */
BF_OP(bf_status, pos_weights,
      (bf_backend *be, float *w, const float *sw, const float *mask, int B, int S, int normalize), ALL)

/* ---- data parallel on a device: NCCL (csrc/cuda/nccl.cu) ---- */
/* lib: path of libnccl.so.2, dlopen'ed on first use; id: 128 bytes (ncclUniqueId) */
BF_OP(bf_status, nccl_unique_id, (bf_backend *be, const char *lib, void *id), CUDA)
/* ncclCommInitRankConfig, non-blocking: nccl_poll says when the ranks are connected */
BF_OP(bf_status, nccl_init, (bf_backend *be, const char *lib, const void *id, int rank, int size), CUDA)
/* buf (n, device) summed over the ranks in place, queued on the compute
 * stream in buckets of at most `bucket` floats (one NCCL group); returns at once */
BF_OP(bf_status, nccl_allreduce, (bf_backend *be, float *buf, long n, long bucket), CUDA)
/* buf (bytes, device) = rank root's, queued (ncclBroadcast); returns at once */
BF_OP(bf_status, nccl_bcast, (bf_backend *be, void *buf, size_t bytes, int root), CUDA)
/* *done = 1 once the communicator is ready and the queued work finished;
 * an asynchronous NCCL error fails (BF_ERR_DIST) */
BF_OP(bf_status, nccl_poll, (bf_backend *be, int *done), CUDA)
/* ncclCommAbort: no waiting for peers */
BF_OP(void, nccl_abort, (bf_backend *be), CUDA)
/* ncclCommDestroy */
BF_OP(bf_status, nccl_destroy, (bf_backend *be), CUDA)
/* x (n) *= s, queued (the all-reduce's 1 / size) */
BF_OP(bf_status, scale, (bf_backend *be, float *x, long n, float s), CUDA)
/* SpectralNormalization (csrc/cpu/specnorm.c; layers/specnorm.c): W (K,C) the wrapped layer's kernel as rows of
 * its last axis, u (C) its vector_u, s (K+1) the step's state: v (K) then sigma. training: u and v by `iters`
 * rounds of v = normalize(u W^T), u = normalize(v W) (Keras: x * min(rsqrt(sum x^2), 1e7)), u UPDATED in place,
 * sigma = (v W) . u (1 and v = 0 for an all-zero W, Keras's cond); out (M,N) = inp / sigma + b. Not training:
 * out = inp + b (JAX's Keras reads the raw kernel). b (N) may be NULL */
BF_OP(bf_status, specnorm_forward,
      (bf_backend *be, float *out, float *u, float *s, const float *inp, const float *W, const float *b, long M,
       int N, int K, int C, int iters, int training), CPU)
/* the adjoint of the forward: dinp (M,N) = dout / sigma (training; dout else), OVERWRITTEN; db (N) += sum dout;
 * dW (K,C) += -(sum dout * inp) / sigma^2 * v^T u (training; u, v stopped, as Keras). dinp, dW, db may be NULL */
BF_OP(bf_status, specnorm_backward,
      (bf_backend *be, float *dinp, float *dW, float *db, const float *dout, const float *inp, const float *u,
       const float *s, long M, int N, int K, int C, int training), CPU)
