/* model.h - a model as the engine sees it: a DAG of layer nodes over tensor
 * ids (0 .. n_inputs-1 are the model's inputs, n_inputs + i is node i's
 * output; nodes come in topological order), parameter tensors in the model's
 * host arena, and the optimizer with its state in a second arena. A node may
 * use another node's parameters (a layer called twice: `share`); a frozen
 * node's parameters are not trainable (no gradient, no optimizer state).
 * Shapes here exclude the batch axis. Weights are initialized in C from a seed
 * (Keras initializers: glorot_uniform kernels, zero biases, BN ones/zeros). */
#ifndef BF_MODEL_H
#define BF_MODEL_H

#include <stdint.h>

#include "arena.h"
#include "backend.h"
#include "counter_hash.h"
#include "schedule.h"
#include "layer_config.h"
#include "layer_kinds.h"

/* layer calls (nodes) a model may have (boundfit._core.MAX_LAYERS): a stated bound, not a size: a model's
 * per-node, per-tensor and per-edge tables are sized by its own counts (bf_model_tables_reserve, tables.c) */
#define BF_MAX_LAYERS (1 << 16)
#define BF_MAX_PARAMS 8
#define BF_NAME_LEN 64
/* the most elements of one weight, and of all weights together: 4 PiB of floats, far beyond any
 * machine, so that byte counts of weights, gradients and optimizer slots never wrap a size_t */
#define BF_MAX_FLOATS_LOG2 50
#define BF_MAX_FLOATS (1L << BF_MAX_FLOATS_LOG2)
/* BF_MAX_RANK, the axes of a sample: sample_rank.h */
/* a model's inputs (boundfit._core.MAX_INPUTS; one per feature column of a tabular model) */
#define BF_MAX_INPUTS 256
/* a model's outputs (boundfit._core.MAX_OUTPUTS): each one's loss and label checks are planned in the step
 * statistics (step.h), whose bytes a run's plan counts */
#define BF_MAX_OUTPUTS 8
/* tensors into one node (boundfit._core.MAX_NODE_INPUTS: a Concatenate / Add of that many) */
#define BF_MAX_NODE_IN 256
/* input ids of all a model's nodes together (boundfit._core.MAX_NODE_INPUTS_TOTAL): held in one pool of the model's
 * tables, not inline in each bf_layer; a bound of 16 per node on average */
#define BF_MAX_EDGES (16 * BF_MAX_LAYERS)
#define BF_MAX_TENSORS (BF_MAX_LAYERS + BF_MAX_INPUTS)


/* the kinds (bf_layer_kind) and their names: layer_kinds.h, layer_registry.h */

/* Keras initializers. a/b per kind: CONSTANT value; RANDOM_UNIFORM minval,
 * maxval; RANDOM_NORMAL and TRUNCATED_NORMAL (cut at 2 stddev) mean, stddev;
 * VS_* (VarianceScaling) scale with mode fan_in/fan_out/fan_avg; ORTHOGONAL
 * gain. GLOROT_UNIFORM is the default kernel stream (kept bit for bit). */
typedef enum {
    BF_INIT_ZEROS = 0, BF_INIT_ONES, BF_INIT_GLOROT_UNIFORM, BF_INIT_CONSTANT, BF_INIT_RANDOM_UNIFORM,
    BF_INIT_RANDOM_NORMAL, BF_INIT_TRUNCATED_NORMAL, BF_INIT_VS_UNIFORM, BF_INIT_VS_NORMAL,
    BF_INIT_VS_TRUNCATED_NORMAL, BF_INIT_ORTHOGONAL, BF_INIT_LAST = BF_INIT_ORTHOGONAL
} bf_init;
typedef enum { BF_FAN_IN = 0, BF_FAN_OUT, BF_FAN_AVG } bf_fan_mode;

/* an initializer chosen by the user; set = 0 keeps the layer's default */
typedef struct {
    int set;
    bf_init kind;
    float a, b;
    bf_fan_mode mode;
} bf_init_spec;

typedef struct {
    char name[BF_NAME_LEN];
    int rank, shape[BF_MAX_RANK];
    long n;            /* elements */
    size_t offset;     /* float index into the model's parameter block */
    int trainable;     /* BN moving statistics are not */
    size_t grad_offset;/* float index into the gradient block (trainable only) */
    bf_init init;
    float fan_in, fan_out;
    float init_a, init_b;   /* bf_init parameters */
    bf_fan_mode init_mode;
    float l1, l2;           /* Keras regularizer (0, 0: none): penalty in the loss, its gradient added */
    bf_constraint con;      /* applied after each update */
    int matrix;             /* Muon: 1 when the variable takes the Newton-Schulz step (Keras's rank-2 variables
                             * not excluded by name: set by compile), 0 AdamW's */
} bf_param;

/* a node: what the engine reads of every kind (its kind, inputs, shapes, parameters and their options, the
 * activation, the runs it is part of) and, in cfg, its family's configuration, which only the family's file
 * (csrc/core/layers/) reads: layer_config.h */
/* bf_layer.half: the 16-bit type a layer under a mixed policy computes and stores in */
enum { BF_HALF_BF16 = 1, BF_HALF_F16 = 2 };

typedef struct bf_layer {
    bf_layer_kind kind;
    char name[BF_NAME_LEN];
    bf_act act;                                /* Dense, convolutions, Activation; recurrent: the cell's */
    bf_act_param actp;                         /* parameters of act (leaky_relu slope, elu alpha, relu options) */
    /* input tensor ids: in_ids[0 .. nin) lie in the pool of the model that holds the node (bf_model.in_pool; node j's
     * input j is edge bf_model_edge(m, i, j)), so a model object is not copied nor a node moved between models */
    int nin, *in_ids;
    int share;                                 /* node whose parameters this one uses; -1: its own */
    int frozen;                                /* trainable=False: parameters get no gradient */
    /* mask_off: the call ignores its input's mask (Keras 3 fills a call's mask only when it has one tensor
     * argument, so a recurrent call with initial states runs unmasked unless given mask=; a keras.ops.mean's
     * pooling averages every step) */
    int mask_off;
    int in_rank, in_shape[BF_MAX_RANK], out_rank, out_shape[BF_MAX_RANK]; /* in_*: of the first input */
    long in_size, out_size;                    /* elements per sample */
    int nparam;
    bf_param params[BF_MAX_PARAMS];
    /* user initializers by role: Dense/Conv2D kernel, bias; BatchNormalization
     * gamma, beta, moving_mean, moving_variance */
    bf_init_spec inits[BF_MAX_PARAMS];
    /* user regularizers (l1, l2) and constraints by the same roles */
    float reg[BF_MAX_PARAMS][2];
    bf_constraint cons[BF_MAX_PARAMS];
    /* modes: the runs a node is part of, bit 0 training runs, bit 1 evaluate / predict (0: all), for a custom
     * layer whose call() traced differently with training=True and False (python/boundfit/layers/node.py);
     * train_mode: 0 the run's mode, 1 always training, 2 always inference (a call given training=True / False) */
    int modes, train_mode;
    /* half: the layer's policy is mixed_bfloat16 (BF_HALF_BF16) or mixed_float16 (BF_HALF_F16), else 0
     * (python/boundfit/mixed_precision.py): it computes on its inputs rounded to that type and its output is
     * rounded to it (stored so where its kind allows: BF_LF_ROWS; core/mixed.c) */
    int half;
    bf_layer_cfg cfg;                          /* its family's configuration (layer_config.h) */
} bf_layer;

typedef enum {
    BF_OPT_NONE = 0, BF_OPT_SGD, BF_OPT_ADAM, BF_OPT_RMSPROP, BF_OPT_ADAMW, BF_OPT_ADAGRAD, BF_OPT_NADAM,
    BF_OPT_ADAMAX, BF_OPT_ADADELTA, BF_OPT_FTRL, BF_OPT_LION, BF_OPT_LAMB, BF_OPT_ADAFACTOR, BF_OPT_MUON
} bf_opt_kind;
#define BF_OPT_LAST BF_OPT_MUON

#define BF_MAX_METRICS 16
#define BF_MAX_OPT_SLOTS 6    /* Adam amsgrad or Adafactor, the accumulator, the moving average */
#define BF_MAX_MATRICES 4096  /* Muon's Newton-Schulz variables */

typedef struct {
    bf_opt_kind kind;
    float lr, beta1, beta2, eps, momentum, rho;
    int nesterov;
    int amsgrad;               /* Adam / AdamW: third slot v_hat */
    int centered;              /* RMSprop: slot of the average gradient */
    float weight_decay;        /* decoupled, Keras 3 base optimizer (0: none) */
    float initial_accumulator; /* Adagrad, Ftrl: initial value of the accumulator slot */
    bf_ftrl_args ftrl;         /* Ftrl: learning_rate_power, its regularization strengths, beta */
    bf_adafactor_args af;      /* Adafactor (core/opt_matrix.c) */
    bf_muon_args mu;           /* Muon (core/opt_matrix.c; its matrices: bf_param.matrix) */
    bf_clip_mode clip;         /* at most one of clipnorm / global_clipnorm / clipvalue */
    float clip_value;
    int nslots;        /* state tensors per parameter: SGD momentum 0-1, Adam 2-3, RMSprop 1-3, Adagrad 1, Nadam 2,
                        * Adamax 2, Adadelta 2, Ftrl 2, Lion 1, Lamb 2, Adafactor 3 (v; r and c at the variable's
                        * offset), Muon 2 (momentum; velocity of its AdamW variables); then, with
                        * gradient_accumulation_steps, the accumulated gradients; then, with use_ema, the moving
                        * average (always the last) */
    long acc_steps;    /* Keras's gradient_accumulation_steps (0: none): an update every acc_steps steps, on the
                        * mean of their gradients; acc_count steps are accumulated since the last update, so
                        * Keras's raw step counter (_iterations) is iterations * acc_steps + acc_count */
    long acc_count;
    float loss_scale_factor; /* Keras's loss_scale_factor (0: None): the losses' gradient times it, the gradients
                              * divided by it before the update */
    int use_ema;                  /* Keras's use_ema: the last slot is the weights' moving average */
    float ema_momentum;           /* in [0, 1] */
    long ema_overwrite_frequency; /* the weights take the average every this many updates (0: never) */
    long iterations;   /* completed updates (Keras optimizer.iterations) */
    bf_schedule sched; /* lr of each update: bf_optimizer_lr (constant lr when none) */
    float u_product;   /* Nadam: prod of u_1..u_k (Keras's _u_product), k = u_product_it */
    long u_product_it;
    /* LossScaleOptimizer (core/loss_scale.c): growth_steps > 0 turns dynamic loss scaling on */
    float loss_scale;   /* Keras's dynamic_scale: the losses' gradient is multiplied by it */
    long growth_steps;  /* Keras's dynamic_growth_steps */
    long scale_counter; /* Keras's step_counter: finite steps since the scale last changed */
} bf_optimizer;

/* what the losses' gradient is multiplied by: the dynamic loss scale, loss_scale_factor, or 1 */
static inline float bf_optimizer_grad_scale(const bf_optimizer *o) {
    return o->growth_steps ? o->loss_scale : o->loss_scale_factor > 0.0f ? o->loss_scale_factor : 1.0f;
}

/* Keras's raw step counter (_iterations): steps applied or accumulated */
static inline long bf_optimizer_raw_steps(const bf_optimizer *o) {
    return o->acc_steps ? o->iterations * o->acc_steps + o->acc_count : o->iterations;
}

/* the learning rate of the next update: the schedule at Keras's raw step counter (as Keras's
 * _get_current_learning_rate), or lr */
static inline float bf_optimizer_lr(const bf_optimizer *o) {
    return bf_schedule_rate(&o->sched, o->lr, bf_optimizer_raw_steps(o));
}

typedef bf_loss_spec bf_loss;

/* what one output is trained with */
typedef struct {
    bf_loss loss;
    float weight;      /* Keras loss_weights */
    long y_off, y_row; /* its targets' columns in the packed label row */
} bf_output;

typedef struct bf_model {
    int nlayers;
    bf_layer *layers;           /* nlayers of them, in the model's tables */
    int in_rank, in_shape[BF_MAX_RANK];   /* input 0 (Sequential) */
    long in_size;               /* input 0 */
    int n_inputs;               /* inputs are packed side by side in an x row */
    int in_ranks[BF_MAX_INPUTS], in_shapes[BF_MAX_INPUTS][BF_MAX_RANK];
    long in_sizes[BF_MAX_INPUTS], in_offs[BF_MAX_INPUTS], x_row;
    int n_outputs;              /* outputs are packed side by side in a prediction row */
    int out_t[BF_MAX_OUTPUTS];  /* tensor ids */
    long out_offs[BF_MAX_OUTPUTS], pred_row;
    bf_output outs[BF_MAX_OUTPUTS];
    long y_row;                 /* floats per packed label row (set by compile) */
    /* per tensor (n_inputs + nlayers of them): shape and consumers (filled by bf_model_infer) */
    int *t_rank, (*t_shape)[BF_MAX_RANK];
    long *t_size;
    int *t_uses;
    int *t_mask; /* Embedding(mask_zero) node whose (B,T) mask the tensor carries; -1: none */
    int n_edges, *in_pool; /* the nodes' input ids (bf_layer.in_ids), n_edges of them in use */
    /* the tables above: one host reservation sized by the model's counts (tables.c), room for cap_* of each */
    void *tables;
    int cap_layers, cap_tensors, cap_edges;
    int *work;                  /* scratch of 2 ints per tensor (inference's and borrowing's passes) */
    long n_params, n_trainable; /* floats */
    bf_arena weights;           /* host: all parameters, trainable then not */
    float *w;
    bf_optimizer opt;
    bf_loss loss;
    int nmetrics;
    bf_metric_spec metrics[BF_MAX_METRICS];
    int compiled;
    bf_arena opt_state;         /* host: nslots * n_trainable floats */
    float *slots;
    uint64_t seed;
} bf_model;

/* Validate layer configs, infer shapes, lay out parameters (no allocation). */
bf_status bf_model_infer(bf_model *m);
/* bf_model_infer's step for node i: its config checked, its output's shape and mask, its parameters (the
 * shapes of the tensors before it known); also Python's shape inference (csrc/python/infer_py.c) */
bf_status bf_model_infer_node(bf_model *m, int i);
/* bytes of the weight arena bf_model_alloc_weights reserves (after bf_model_infer) */
size_t bf_model_weight_bytes(const bf_model *m);
/* Reserve the weight arena and initialize from seed. budget: the host bytes it
 * may take (0: no limit); above it BF_ERR_BUDGET naming the largest weight,
 * before anything is mapped or touched. */
bf_status bf_model_alloc_weights(bf_model *m, size_t budget);
/* Take src's weights instead of reserving our own (a model's training graph, python/boundfit/models/model.py):
 * src_node[i] is the node of src whose parameters node i's are (-1: a node without its own). Every parameter of
 * src must be one of ours, of the same size and trainability, so that both lay them out alike (the gradient and
 * optimizer blocks follow); else BF_ERR_ARG and nothing changes. m->w then points into src's arena, which must
 * outlive m (the caller keeps src). */
bf_status bf_model_borrow_weights(bf_model *m, const bf_model *src, const int *src_node);
/* Set the optimizer/loss; drops any optimizer state (recreated zeroed by the
 * first training run, after its budget check). `outs` (n_outputs of them) gives
 * each output its loss and weight; NULL: `loss` for every output, weight 1. */
bf_status bf_model_compile(bf_model *m, const bf_optimizer *opt, const bf_loss *loss, const bf_output *outs);
/* Muon: the trainable tensors (by gradient offset, n of them) that take the Newton-Schulz step; each must be a
 * trainable rank-2 parameter, else BF_ERR_ARG and nothing changes */
bf_status bf_model_set_matrices(bf_model *m, const long *grad_offsets, int n);
/* the metrics computed by evaluate / fit (after compile; each checked against its output's size and loss targets) */
bf_status bf_model_set_metrics(bf_model *m, const bf_metric_spec *metrics, int n);
/* a metric's value from its accumulated statistics (Keras result()) */
double bf_metric_result(const bf_metric_spec *m, const double *acc);
size_t bf_model_opt_state_bytes(const bf_model *m);
bf_status bf_model_alloc_opt_state(bf_model *m);
/* use_ema's moving average (host state) and the trainable weights: BF_EMA_SWAP exchanges them, BF_EMA_TO_WEIGHTS
 * copies the average into the weights (Keras's finalize_variable_values), BF_EMA_FROM_WEIGHTS the other way
 * (SwapEMAWeights's _finalize_ema_values); BF_ERR_ARG without use_ema or before its first update */
typedef enum { BF_EMA_SWAP = 0, BF_EMA_TO_WEIGHTS, BF_EMA_FROM_WEIGHTS } bf_ema_op;
bf_status bf_model_ema(bf_model *m, bf_ema_op op);
void bf_model_free(bf_model *m);
/* reserve m's tables for nlayers nodes, n_tensors tensors and n_edges input ids (zeroed; the counts within
 * BF_MAX_LAYERS / BF_MAX_TENSORS / BF_MAX_EDGES, else BF_ERR_ARG naming the limit); bf_model_free releases them */
bf_status bf_model_tables_reserve(bf_model *m, int nlayers, int n_tensors, int n_edges);
/* bytes of those tables (what the reservation holds) */
size_t bf_model_tables_bytes(int nlayers, int n_tensors, int n_edges);
void bf_model_tables_free(bf_model *m);

/* a parameter of L by role (the index into inits / reg / cons: kernel or gamma
 * 0, bias or beta 1, moving_mean 2, moving_variance 3) */
void bf_add_param(bf_layer *L, int role, const char *name, int rank, const int *shape, int trainable, bf_init init,
                  float fan_in, float fan_out);
/* v as an output dimension of L (1..INT_MAX), else BF_ERR_ARG naming L: for dimensions a layer adds or multiplies */
bf_status bf_out_dim(const bf_layer *L, long long v, int *out);
/* "(a, b)" for messages */
void bf_shape_str(char *buf, size_t n, int rank, const int *shape);

/* positions per sample of output k: S > 1 only for a rank >= 2 output */
int bf_seq_out_positions(const bf_model *m, int k);

/* 1 when output k's activation (sigmoid+BCE, softmax+CCE/SCCE) may be folded
 * into its loss: its node has that activation and nothing else reads it */
int bf_model_loss_fused(const bf_model *m, int k);
/* the first node whose output mixes the samples of a batch (BF_LF_BATCH: it runs on whole batches only), -1 if none */
int bf_model_batch_node(const bf_model *m);
/* floats per sample of all outputs together (the packed prediction row) */
long bf_model_out_size(const bf_model *m);
/* node producing tensor t, or -1 for a model input */
static inline int bf_model_producer(const bf_model *m, int t) { return t < m->n_inputs ? -1 : t - m->n_inputs; }
/* the index in m->in_pool of node i's input j (0 <= j < nin): per-edge arrays of a run (bf_run.gtmp) use it */
static inline int bf_model_edge(const bf_model *m, int i, int j) { return (int)(m->layers[i].in_ids - m->in_pool) + j; }
/* the node whose parameters node i uses */
static inline int bf_model_owner(const bf_model *m, int i) { return m->layers[i].share >= 0 ? m->layers[i].share : i; }


#endif
