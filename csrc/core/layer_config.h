/* layer_config.h - each layer family's configuration, one struct per family,
 * held in bf_layer.cfg (a union: a node has one kind). The family's parse
 * hook fills its struct from the layer spec (layer_registry.h) and only its
 * own file reads it: the engine reads the generic fields of bf_layer, never
 * these. One header for all of them because bf_layer holds the union by value
 * (a model's nodes live inline, no allocation), so model.h needs every
 * complete type; a family adds a field here and in its file, nowhere else. */
#ifndef BF_LAYER_CONFIG_H
#define BF_LAYER_CONFIG_H

#include <stdint.h>

#include "backend.h"
#include "sample_rank.h"

/* a window and its strides over (H, W), padding 'same' (1) or 'valid' (0): Conv2D, pooling (a (T, C)
 * input is a 1 x T image: kh = sh = 1); kd, sd: the depth axis of the 3D kinds (Conv3D, pooling 3D) */
typedef struct {
    int kh, kw, sh, sw, same, kd, sd;
} bf_window_cfg;

/* Dense */
typedef struct {
    int units, use_bias;
} bf_dense_cfg;

/* Conv2D, Conv1D (kw, sw, dil, causal: padding='causal'), Conv2DTranspose, DepthwiseConv2D (filters:
 * depth_multiplier; groups > 0: a Conv2D(groups=C) on C channels, the same map with Conv2D's kernel layout) */
typedef struct {
    bf_window_cfg win;
    int filters, use_bias, dil, causal, groups;
} bf_conv_cfg;

/* MaxPooling, AveragePooling (win), the global poolings (keepdims); chan_first: data_format='channels_first',
 * (C, H, W) / (C, T) */
typedef struct {
    bf_window_cfg win;
    int keepdims, chan_first;
} bf_pool_cfg;

/* BatchNormalization (momentum, eps, center, scale), LayerNormalization (eps, center, scale) */
typedef struct {
    float momentum, eps;
    int center, scale;
} bf_norm_cfg;

/* Dropout */
typedef struct {
    float rate;
} bf_dropout_cfg;

/* MultiHeadAttention: heads, key_dim, value_dim, output width (0: the query's), use_causal_mask, dropout */
typedef struct {
    int heads, key_dim, value_dim, out_dim, causal, use_bias;
    float rate;
} bf_attn_cfg;

/* Embedding: a table of input_dim rows of output_dim; mask_zero: id 0 masks its step; reverse: the node maps
 * vectors (..., output_dim) to logits (..., input_dim) through the table's transpose (ReversibleEmbedding) */
typedef struct {
    int input_dim, output_dim, mask_zero, reverse;
} bf_embed_cfg;

/* SpectralNormalization (layers/specnorm.c): power_iterations; use_bias: the wrapped layer's bias added here;
 * cols: the wrapped kernel's last axis (vector_u's length) */
typedef struct {
    int power_iterations, use_bias, cols;
} bf_specnorm_cfg;

/* SimpleRNN, LSTM, GRU, Bidirectional: act (bf_layer) is the cell's activation, ract the gates'
 * (recurrent_activation); cell: the kind SIMPLE_RNN / LSTM / GRU (Bidirectional's inner layer; the others
 * their own kind); parameters forward then backward; merge_mode 0 concat 1 sum 2 mul 3 ave; dropout on the
 * inputs `rate`, on the state rec_rate (recurrent_dropout). Inputs 1.. are initial states (Keras order).
 * zero_output: masked steps output zeros (Keras's zero_output_for_mask; Bidirectional's always); in_order: a
 * go_backwards sequence is written in input order (a stacked RNN's inner cells, Bidirectional's backward half). */
typedef struct {
    int units, use_bias, cell, return_sequences, go_backwards, unit_forget_bias, merge_mode, ract, zero_output,
        in_order;
    float rate, rec_rate;
} bf_rnn_cfg;

/* RNN_PART: which output of its recurrent node (layers/recurrent.c) */
typedef struct {
    int part;
} bf_rnn_part_cfg;

/* Concatenate: the per-sample axis */
typedef struct {
    int axis;
} bf_concat_cfg;

/* Permute (perm: output axis d is input axis perm[d], 0-based, nperm of them), ZeroPadding2D (pad: top, bottom, left,
 * right), UpSampling2D (size: rows, columns) */
typedef struct {
    int perm[BF_MAX_RANK], nperm, pad[4], size[2];
} bf_layout_cfg;

/* Slice: per sample axis, the elements begin + k*step, k < len */
typedef struct {
    int begin[BF_MAX_RANK], step[BF_MAX_RANK], len[BF_MAX_RANK];
} bf_slice_cfg;

/* UNARY / BINARY (layers/emath.c): the op; UNARY's parameters (round's decimals, nan_to_num's nan / posinf /
 * neginf ...) or the number of a binary op, left: that number is its left operand (2 - x) */
typedef struct {
    int op, left;
    float param, param2, param3;
} bf_emath_cfg;

/* BMM: the first / second operand transposed per sample */
typedef struct {
    int ta, tb;
} bf_bmm_cfg;

/* the random image layers (one kind, bf_augment): aug holds the draws' configuration (aug.seed: the layer's
 * seed, 0 when none: the run's stream); RandomCrop's size crop_h x crop_w */
typedef struct {
    bf_augment aug;
    int crop_h, crop_w;
} bf_augment_cfg;

/* RANDOM (layers/random.c): a keras.random draw of distribution dist (bf_augment.rdist) with parameters a, b;
 * shared: one draw for the batch; seed (0: the run's stream); fixed: an int seed, the same draw every step */
typedef struct {
    int dist, shared, fixed;
    float a, b;
    uint64_t seed;
} bf_random_cfg;

/* PReLU: shared[d] = 1 when per-sample axis d (Keras's shared_axes, 1-based: axis d + 1) shares one alpha */
typedef struct {
    int shared[3];
} bf_prelu_cfg;

/* GATHER (layers/gather.c): its first input at the positions its second holds along per-sample axis `axis`;
 * along: take_along_axis (the positions have the first input's rank), else take (their axes replace `axis`) */
typedef struct {
    int axis, along;
} bf_gather_cfg;

/* SCAN (layers/scan.c): the cumulative sum (prod 0) or product along per-sample axis `axis` */
typedef struct {
    int axis, prod;
} bf_scan_cfg;

/* ARGSORT (layers/argsort.c): the positions of the first k of a stable sort along per-sample axis `axis`,
 * ascending or descending */
typedef struct {
    int axis, k, descending;
} bf_sort_cfg;
/* REDUCE / BATCH_REDUCE (layers/reduce.c): op (bf_reduce_op), axes (bit d: per-sample axis d reduced; all: every
 * one), keepdims */
typedef struct {
    int op, keepdims, all;
    unsigned axes;
} bf_reduce_cfg;

/* a node's configuration: the member of its family (none for kinds without one) */
typedef union {
    bf_dense_cfg dense;
    bf_conv_cfg conv;
    bf_pool_cfg pool;
    bf_norm_cfg norm;
    bf_dropout_cfg dropout;
    bf_attn_cfg attn;
    bf_embed_cfg embed;
    bf_rnn_cfg rnn;
    bf_rnn_part_cfg rnn_part;
    bf_concat_cfg concat;
    bf_layout_cfg layout;
    bf_slice_cfg slice;
    bf_emath_cfg emath;
    bf_bmm_cfg bmm;
    bf_augment_cfg augment;
    bf_random_cfg random;
    bf_prelu_cfg prelu;
    bf_gather_cfg gather;
    bf_scan_cfg scan;
    bf_sort_cfg sort;
    bf_reduce_cfg reduce;
    bf_specnorm_cfg specnorm;
} bf_layer_cfg;

#endif
