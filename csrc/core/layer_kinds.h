/* layer_kinds.h - the layer kinds, in the order of their numbers (Python reads the
 * numbers from bf_layer_kind_names, never its own copy). A new kind goes at
 * the end of the list; its vtable is bf_ops_<NAME> (layer_registry.h). */
#ifndef BF_LAYER_KINDS_H
#define BF_LAYER_KINDS_H

/* X(NAME): one per kind, NAME without the BF_L_ prefix */
#define BF_LAYER_KINDS(X)                                                                                          \
    X(DENSE) X(CONV2D) X(MAXPOOL) X(AVGPOOL) X(GAP) X(RESHAPE) X(DROPOUT) X(BATCHNORM) X(ACTIVATION)   /* Flatten: a RESHAPE */ \
    /* merge layers: several inputs of one shape (Concatenate: equal but on `axis`) */                             \
    X(ADD) X(SUBTRACT) X(MULTIPLY) X(AVERAGE) X(MAXIMUM) X(MINIMUM) X(CONCAT)                                      \
    /* layout: Permute, ZeroPadding2D, UpSampling2D (nearest) */                                                   \
    X(PERMUTE) X(ZEROPAD2D) X(UPSAMPLE2D)                                                                          \
    /* preprocessing: Normalization, the random image layers (one kind, bf_augment) */                            \
    X(NORMALIZATION) X(AUGMENT)                                                                                    \
    /* Conv1D, Conv2DTranspose, GlobalMaxPooling1D/2D (MaxPooling1D, AveragePooling1D and                         \
     * GlobalAveragePooling1D are MAXPOOL / AVGPOOL / GAP on a (T, C) input) */                                    \
    X(CONV1D) X(CONV2DT) X(GMP)                                                                                    \
    /* LayerNormalization over the last axis; MultiHeadAttention (query, value, key, optional mask) */            \
    X(LAYERNORM) X(MHA)                                                                                            \
    /* sequences: Embedding, recurrent layers, Bidirectional, and RNN_PART: one more output of a                  \
     * recurrent node (a final state, or a direction's half of Bidirectional(merge_mode=None)) */                 \
    X(EMBEDDING) X(SIMPLE_RNN) X(LSTM) X(GRU) X(BIDIR) X(RNN_PART)                                             \
    /* DepthwiseConv2D (depth_multiplier in `filters`); Slice (keras.ops slicing, x[:, a:b:s]); Const (a    \
     * per-sample constant a custom layer's call() reads, shape in target_shape) */                               \
    X(DEPTHWISE2D) X(SLICE) X(CONST)                                                                               \
    /* keras.ops math (layers/emath.c): UNARY (sqrt, log, max(x, c), ...: eop), BINARY (two tensors with        \
     * size-1 axes broadcast: eop); WEIGHT (a custom layer's trainable weight, shape in target_shape, the same  \
     * for every sample); BMM (a per-sample matrix product, layers.Dot / ops.matmul: layers/bmm.c) */          \
    X(UNARY) X(BINARY) X(WEIGHT) X(BMM)                                                                            \
    /* BATCH_REDUCE: a reduction over the batch and any axes of a sample, the same in every row (layers/reduce.c) */\
    X(BATCH_REDUCE)                                                                                            \
    /* SWITCH: a custom layer's training / inference traces (layers/switch.c); RANDOM: keras.random's draws     \
     * on a symbolic shape (layers/random.c) */                                                                   \
    X(SWITCH) X(RANDOM)                                                                                          \
    /* PReLU: max(x, 0) + alpha * min(x, 0), alpha per sample with shared_axes of size 1 (layers/prelu.c) */      \
    X(PRELU)                                                                                                       \
    /* the index primitives: GATHER (take, take_along_axis; backward a scatter-add: layers/gather.c), SCAN         \
     * (cumsum, cumprod: layers/scan.c), ARGSORT (argsort, the positions of sort and top_k: layers/argsort.c) */   \
    X(GATHER) X(SCAN) X(ARGSORT)                                                                          \
    /* REDUCE: keras.ops' reductions over any axes of a sample, keepdims (layers/reduce.c) */                      \
    X(REDUCE)                                                                                                      \
    /* the 3D convolutions and poolings over (D, H, W, C) samples: CONV3D, CONV3DT (Conv3DTranspose), MAXPOOL3D,    \
     * AVGPOOL3D (layers/conv3d.c, layers/pool3d.c) */                                                             \
    X(CONV3D) X(CONV3DT) X(MAXPOOL3D) X(AVGPOOL3D)                                                                   \
    /* SEQ_MASK: a sequence given a mask computed in the graph (mask=, Masking: layers/seq_mask.c) */             \
    X(SEQ_MASK)                                                                                                    \
    /* SPECNORM: SpectralNormalization's step after the wrapped layer's linear map (layers/specnorm.c) */            \
    X(SPECNORM)

#define BF_KIND_ENUM_(n) BF_L_##n,
typedef enum { BF_LAYER_KINDS(BF_KIND_ENUM_) BF_L_COUNT_ } bf_layer_kind;
#undef BF_KIND_ENUM_

#endif
