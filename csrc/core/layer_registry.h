/* layer_registry.h - one table of layer vtables, indexed by kind: everything
 * the engine does per layer kind goes through it, so spec_py.c (the
 * configuration), model.c (shapes and parameters), program.c (the plan) and
 * run.c (the step) never switch on a kind. A kind lives in one file of
 * csrc/core/layers/ (a family may share one) that defines
 * `const bf_layer_ops bf_ops_<NAME>` (the table: layers/registry.c); see
 * CONTRIBUTING.md. This header names the engine's types by their tags only,
 * so model.c can include it without a cycle back to model.h; the engine
 * includes it and layer_kinds.h from here, and csrc/core/layers/ includes
 * the engine, never the reverse. */
#ifndef BF_LAYER_REGISTRY_H
#define BF_LAYER_REGISTRY_H

#include <stdint.h>

#include "layer_kinds.h"
#include "status.h"

struct bf_layer;
struct bf_model;
struct bf_run;
struct bf_backend;

/* static properties of a kind (bf_layer_ops.flags); a node's flags in one
 * run may differ (bf_layer_ops.node_flags) */
enum {
    BF_LF_MULTI_IN = 1 << 0,   /* takes several inputs (merge, attention, recurrent initial states) */
    BF_LF_VIEW = 1 << 1,       /* its output is its input buffer (no step of its own) */
    BF_LF_LINEAR_ACT = 1 << 2, /* a linear map then its activation (Dense, convolutions): the pre-activation
                                  is kept when the activation's backward reads its input, the output when it
                                  reads its output; backward reads the input */
    BF_LF_READS_IN = 1 << 3,   /* backward reads the inputs */
    BF_LF_READS_OUT = 1 << 4,  /* backward reads the output */
    BF_LF_FUSABLE = 1 << 5,    /* an output's sigmoid / softmax may be folded into its loss */
    BF_LF_BOUND = 1 << 6,      /* parameter gradients bounded from max|input| and max|output gradient| (run.c) */
    BF_LF_OUT_GIVEN = 1 << 7,  /* out_rank / out_shape are set by the caller before inference (Reshape) */
    BF_LF_SIDE_OUT = 1 << 8,   /* one more output of its input's node (a recurrent final state): that node's
                                  backward reads this gradient, and this node adds nothing to its input's */
    BF_LF_IDS = 1 << 9,        /* its input is ids into its first parameter's rows (a table of input_dim rows); a
                                  step reports the first bad one (bf_step_stats.layer[i].bad_id) and run.c raises
                                  a DataError for it */
    BF_LF_SCALAR = 1 << 10,    /* takes one number per sample (a per-sample shape (), rank 0): an elementwise
                                  kind, Embedding, Reshape; other kinds refuse such an input by name (model.c) */
    BF_LF_BATCH = 1 << 11,     /* its output mixes the samples of a batch (a sum over the batch, keras.ops.tensordot
                                  of two tensors): steps may not split a batch (micro-batches, data parallel) */
    BF_LF_NO_GRAD_IN = 1 << 12,/* its output does not depend on its inputs' values (a random draw that reads only
                                  the batch size), or only piecewise constantly (ARGSORT's positions): no gradient
                                  flows back to them */
    BF_LF_ROWS = 1 << 14,      /* its steps over rows [r0, r0+n) read and write only those rows of its inputs, output,
                                  their gradients and its kept pre-activation (through bf_step_in / _out / _tensor /
                                  _din / _pre_act and the dout argument; parameter gradients add up; its own planned
                                  buffers are workspaces): under mixed precision it runs in chunks of rows and its
                                  output may be stored in 16 bits (mixed.c) */
    BF_LF_WHOLE16 = 1 << 15,   /* its steps read its output and output gradient only through bf_step_out and the dout
                                  argument, on the whole micro-batch: under mixed precision its output may be stored
                                  in 16 bits (mixed.c; a float32 copy of it lives at its own steps only), as Keras
                                  stores a layer's compute dtype, and it may read 16-bit inputs whole */
    BF_LF_ANY_RANK = 1 << 13,  /* rank-generic: takes samples of up to BF_MAX_RANK axes; a kind without it takes
                                  at most BF_BASE_RANK, and model.c refuses more naming the layer and the kind */
};

/* a layer spec as a parse hook reads it: csrc/python/spec_py.c implements it over a spec dict (the core never
 * sees Python). Each getter stores the value of `key`, or dflt when the spec lacks it (or holds None); a value
 * out of [lo, hi] or of the wrong type fails (BF_ERR_ARG, the reader's message naming the layer `owner`, the
 * key and the value). The helpers a family calls: layers/layer.h (bf_spec_size, bf_spec_float, ...). */
typedef struct bf_spec {
    const void *src;   /* the reader's own: the spec dict */
    const char *owner; /* the layer's name */
    bf_status (*get_int)(const struct bf_spec *s, const char *key, int dflt, int lo, int hi, int *out);
    bf_status (*get_float)(const struct bf_spec *s, const char *key, float dflt, float *out);
    /* a tuple of exactly n ints in [lo, hi] into out (absent: out left as it is) */
    bf_status (*get_ints)(const struct bf_spec *s, const char *key, int n, int lo, int hi, int *out);
    /* *n = the number of entries of a sequence, -1 when absent */
    bf_status (*get_len)(const struct bf_spec *s, const char *key, int *n);
    bf_status (*get_seed)(const struct bf_spec *s, const char *key, uint64_t *out); /* 0 .. 2**64 - 1; absent: 0 */
} bf_spec;

typedef struct bf_layer_ops {
    const char *name; /* the kind's name (Python's LAYER_KINDS key) */
    unsigned flags;
    /* optional: the family's configuration (L->cfg, layer_config.h) from the spec, after the generic fields
     * (kind, name, act, inputs, ...); a bad value fails with BF_ERR_ARG naming the layer (NULL: no configuration) */
    bf_status (*parse)(struct bf_layer *L, const bf_spec *s);
    /* output shape (per sample) and parameters from the first input's shape;
     * on entry in_* is set and out_* is a copy of it (unless OUT_GIVEN) */
    bf_status (*infer)(struct bf_layer *L, int rank, const int *shape);
    /* optional, after infer: checks against all the node's inputs in the graph (may set the output shape) */
    bf_status (*check)(struct bf_model *m, int i);
    /* optional: *mask = the Embedding node whose mask node i's output carries; NULL drops masks (Keras) */
    bf_status (*mask)(const struct bf_model *m, int i, int *mask);
    /* optional: how many of node i's first inputs' masks it reads in its steps */
    int (*mask_reads)(const struct bf_layer *L);
    /* optional: 0 when the backend lacks an op the node needs */
    int (*supported)(const struct bf_backend *be, const struct bf_layer *L);
    /* optional: node i's flags in run r (view outside training, ...); NULL: `flags` */
    unsigned (*node_flags)(const struct bf_run *r, int i);
    /* optional: node i's planned buffers (workspaces, kept statistics): forward at
     * time t, backward at tb when bw (the node has a backward step) */
    bf_status (*plan)(struct bf_run *r, int i, int t, int tb, int bw);
    /* node i's forward over `rows` rows (NULL: a view) */
    bf_status (*forward)(struct bf_run *r, int i, int rows);
    /* its backward: din = its first input's gradient (NULL: not needed, or a view) */
    bf_status (*backward)(struct bf_run *r, int i, int rows, float *din, float *dout);
    /* optional, for a VIEW: which input the output is in run r (the others are not read); NULL: input 0 */
    int (*view_in)(const struct bf_run *r, int i);
    /* optional: after the model's weights are initialized, for a node that owns its weights
     * (LSTM unit_forget_bias sets the forget gate's bias to 1) */
    void (*post_init)(struct bf_model *m, int i);
} bf_layer_ops;

#define BF_KIND_OPS_(n) extern const bf_layer_ops bf_ops_##n;
BF_LAYER_KINDS(BF_KIND_OPS_)
#undef BF_KIND_OPS_

/* the vtable of kind k, NULL for no such kind */
const bf_layer_ops *bf_layer_ops_of(int k);
/* node i's flags in run r */
unsigned bf_layer_node_flags(const struct bf_run *r, int i);

/* each kind's name, indexed by kind; Python reads the numbers from this table
 * (_core.LAYER_KINDS), never its own copy */
extern const char *const bf_layer_kind_names[];
extern const int bf_layer_kind_count;

#endif
