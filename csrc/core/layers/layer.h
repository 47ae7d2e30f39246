/* layer.h - what a layer file (csrc/core/layers/<family>.c) uses: reading
 * its configuration from the spec, the model and run types, its node's
 * buffers in a step, parameters and gradients, planning (new buffers and
 * their uses), the activation dispatch and the shared geometry helpers. A
 * layer file includes this header only. */
#ifndef BF_LAYERS_LAYER_H
#define BF_LAYERS_LAYER_H

#include <limits.h>

#include "../bufs.h"
#include "../layer_registry.h"
#include "../masks.h"
#include "../step_bufs.h"

/* ---- configuration: the parse hook's reads of the spec (layer_registry.h), the value or dflt ---- */

/* a size >= 0 (0: not given) */
static inline bf_status bf_spec_size(const bf_spec *s, const char *key, int dflt, int *out) {
    return s->get_int(s, key, dflt, 0, INT_MAX, out);
}
/* a flag, 0 or 1 */
static inline bf_status bf_spec_flag(const bf_spec *s, const char *key, int dflt, int *out) {
    return s->get_int(s, key, dflt, 0, 1, out);
}
/* any int (the family's infer checks its range) */
static inline bf_status bf_spec_int(const bf_spec *s, const char *key, int dflt, int *out) {
    return s->get_int(s, key, dflt, INT_MIN, INT_MAX, out);
}
static inline bf_status bf_spec_float(const bf_spec *s, const char *key, float dflt, float *out) {
    return s->get_float(s, key, dflt, out);
}
/* exactly n ints in [lo, hi] (absent: out left as it is) */
static inline bf_status bf_spec_ints(const bf_spec *s, const char *key, int n, int lo, int hi, int *out) {
    return s->get_ints(s, key, n, lo, hi, out);
}

/* ---- shapes and parameters (model.c: bf_add_param, bf_shape_str) ---- */

/* Keras's output length of a window k, stride s ('same' or 'valid') */
/* a window's output length: 0 (refused by the caller) when a valid window is longer than its input (C's division
 * truncates: (1 - 2) / 2 + 1 would be 1) */
static inline int bf_out_len(int in, int k, int s, int same) {
    return same ? (in - 1) / s + 1 : in < k ? 0 : (in - k) / s + 1;
}
/* a mask hook: the output carries the first input's mask */
bf_status bf_mask_keep(const bf_model *m, int i, int *mask);

/* a window's geometry (conv.c): Conv2D and pooling; the input's (H, W) or,
 * for pooling with allow_1d, a (T, C) input as a 1 x T image; the window's
 * configuration from the spec (kh, kw, sh, sw, same) */
bf_status bf_parse_window(const bf_spec *s, bf_window_cfg *w);
bf_status bf_infer_window(bf_layer *L, const bf_window_cfg *w, int rank, const int *shape, int allow_1d);
/* the NHWC geometry of node L over window w (NULL: the whole input, a global pooling) for B samples */
void bf_layer_geom(const bf_layer *L, const bf_window_cfg *w, int B, bf_conv_geom *g);
/* the convolutions' parse hook: the window, filters (DepthwiseConv2D: depth_multiplier), use_bias, Conv1D's
 * dilation_rate (dil) and padding='causal' */
bf_status bf_parse_conv(bf_layer *L, const bf_spec *s);
/* the normalizations' parse hook (batchnorm.c): momentum, eps, center, scale */
bf_status bf_parse_norm(bf_layer *L, const bf_spec *s);
/* keras.ops math's parse hook (emath.c): the op (eop), UNARY's scalar (eparam) */
bf_status bf_parse_emath(bf_layer *L, const bf_spec *s);
/* Conv1D: its geometry; Conv2DTranspose: the Conv2D it is the adjoint of (backend.h) */
void bf_layer_conv1d_geom(const bf_layer *L, int B, bf_conv1d_geom *g);
void bf_layer_convt_geom(const bf_layer *L, int B, bf_conv_geom *g);
/* what the convolutions of conv.c and conv3d.c share: a workspace of w bytes (none when 0) planned forward at t or
 * backward at tb; the activation after the linear map (in place) and its backward into dout; a transposed
 * convolution's output length along an axis (Keras, output_padding=None) */
bf_status bf_conv_plan_ws(bf_run *r, int i, size_t w, int back, int t, int tb);
bf_status bf_conv_act_after(bf_run *r, int i, int rows, float *z);
bf_status bf_conv_act_back(bf_run *r, int i, int rows, float *dout);
long long bf_convt_len(int in, int k, int s, int same);
/* the poolings' parse hook (pool.c): the window, keepdims, data_format (chan_first) */
bf_status bf_parse_pool(bf_layer *L, const bf_spec *s);

/* random image layers (preprocess.c): node i's augmentation geometry for `rows` rows (the current draw) */
void bf_run_augment_geom(const bf_run *r, int i, int rows, bf_augment *a);

/* node L's input of rows samples as (outer, n, inner) around per-sample axis `axis` (layers/scan.c): SCAN,
 * ARGSORT; k, prod and descending left 0 */
void bf_axis_geom_of(const bf_layer *L, int axis, int rows, bf_axis_geom *g);

/* the size of a node's input's last axis, 1 for one number per sample (rank 0): the C of an (N, C) view */
static inline int bf_last_dim(const bf_layer *L) { return L->in_rank > 0 ? L->in_shape[L->in_rank - 1] : 1; }

/* ---- planning: bf_run_newbuf, bf_run_use (bufs.h); masks (masks.h) ---- */

/* ---- a step: its buffers, parameters and gradients (step_bufs.h) ---- */

/* out (rows, size) = one (size) in every row: a constant or a weight per sample (layers/common.c) */
bf_status bf_run_rows_of(bf_run *r, float *out, const float *one, int rows, long size);

/* out = act(z) (N,C) with the node's parameters; dz = act'(z or out) * dout (layers/activation.c) */
bf_status bf_run_act_forward(bf_run *r, const bf_layer *L, float *out, const float *z, bf_act act, long N, int C);
bf_status bf_run_act_backward(bf_run *r, const bf_layer *L, float *dz, const float *dout, const float *z,
                              const float *out, bf_act act, long N, int C);

#endif
