/* step.h - the state of one run (bf_run): a model compiled for a fixed
 * number of rows per (micro-)batch and a mode (train / evaluate / predict).
 * Every buffer of the step is listed with its lifetime; the planner assigns
 * offsets, so the run's bytes are known before anything is allocated:
 *   run arena = gradients + prefetch batch slots + planned scratch
 *   (+ on a device: copies of the weights and optimizer state, and the
 *   backend's run workspace: reduction scratch, cuBLAS workspace). */
#ifndef BF_STEP_H
#define BF_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "gather.h"
#include "model.h"
#include "planner.h"
#include "status.h"

typedef enum { BF_MODE_TRAIN = 0, BF_MODE_EVAL, BF_MODE_PREDICT } bf_mode;

/* planned buffers of a run (its buffer table, bf_run.cap_buf): BF_PLAN_MAX, and BF_RUN_BUF_PER_NODE more per node
 * and one per input edge (a node makes its output, gradient, pre-activation, workspaces, conversion buffers; a
 * gradient scratch per input) */
#define BF_RUN_BUF_PER_NODE 8
static inline int bf_run_buf_cap(const bf_model *m) {
    return BF_PLAN_MAX + BF_RUN_BUF_PER_NODE * m->nlayers + m->n_edges;
}
#define BF_PREFETCH_DEPTH 2
#define BF_X_NONE (-1) /* buffer id of the input batch slot (not planned) */

typedef struct {
    char name[96];
    const char *category;
    size_t bytes;
    int on_device; /* 1: lives on the run's backend; 0: host */
} bf_plan_entry;

#define BF_PLAN_MAXENTRY 16

/* a node's part of the step statistics */
typedef struct {
    int bad_id;       /* Embedding: n - (lowest row whose id is not in [0, input_dim)); 0: none */
    float bad_id_val; /* Embedding: that id */
    float bound[2];   /* Dense / Conv2D: max|input|, max|output gradient| */
} bf_layer_stats;

/* What a micro-batch hands back to the host, in backend memory: the ops
 * write it without waiting and run.c reads it back in one copy, so a step
 * makes the host wait for the device once. Only the model's nodes' entries of
 * `layer` are planned and copied (bf_step_stats_bytes). */
typedef struct {
    double loss[BF_MAX_OUTPUTS];   /* per output: sum over the micro-batch's rows of weight * loss */
    double penalty;                /* the weights' regularization penalty (regularize.c) */
    int bad;                       /* a non-finite scan hit (gradients of layers without a bound) */
    int bad_label[BF_MAX_OUTPUTS]; /* SCCE: rows - (lowest row whose label is no class id); 0: none */
    bf_layer_stats layer[]; /* per node: entries 0 .. nlayers-1 (bf_step_stats_bytes) */
} bf_step_stats;
/* The metrics' statistics (doubles, bf_run.moff / nmv) follow the record in
 * the same planned buffer, so one copy reads both back. */

/* bytes of the record of a model of nl nodes (a multiple of 8: the metric statistics follow) */
static inline size_t bf_step_stats_bytes(int nl) {
    return (offsetof(bf_step_stats, layer) + sizeof(bf_layer_stats) * (size_t)nl + 7) & ~(size_t)7;
}

typedef struct bf_run {
    bf_model *m;
    bf_backend *be;
    bf_mode mode;
    int B;       /* rows per micro-batch the buffers are sized for */
    int fused;   /* some output's activation folded into its loss */
    int on_device;
    int tf32;    /* float32 GEMMs / convolutions may use TF32 (bf_backend.tf32; the setting when planned) */
    int whole16, whole16_used; /* BF_LF_WHOLE16 outputs may be stored in 16 bits; some is (mixed.c) */
    /* buffer ids: BF_X_NONE = the input slot, -2 = none */
    /* the per-tensor, per-node and per-edge tables below, and the buffer table: one host reservation sized by
     * the model's counts when planned (tables.c: bf_run_tables_reserve; released by bf_run_tables_free) */
    void *tables;
    int cap_buf;                 /* planned buffers the buffer table holds */
    size_t listed_bytes;         /* the listed buffers' bytes together (bufs.c) */
    int *t_buf;                  /* per tensor: its values */
    int *t_grad;                 /* per tensor: its gradient (accumulated over its consumers) */
    int *need_grad;
    int *node_fused;             /* node's activation left to the loss */
    int *node_view;              /* output is its input buffer */
    int *node_bw;                /* node has a backward step */
    /* node i's gradient for its input j, at edge bf_model_edge(m, i, j): -2 written straight into the input's
     * gradient, -3 not needed, else a scratch buffer then added into it */
    int *gtmp;
    int *fws_id, *bws_id, *aux_id;
    int loss_id[BF_MAX_OUTPUTS];
    int tgt_id[BF_MAX_OUTPUTS];  /* several outputs: each one's targets, split from the y slot */
    int out_fused[BF_MAX_OUTPUTS];
    int nbuf;
    bf_plan_buf *bufs;           /* cap_buf of each */
    char (*buf_names)[79];
    unsigned char *buf_kind;     /* bf_buf_kind (bufs.h) */
    void *plan_work;             /* bf_plan_offsets' work space for cap_buf buffers */
    size_t scratch_bytes, naive_scratch_bytes;
    long y_row;   /* floats per (packed) label row */
    /* persistent sizes (bytes, aligned) */
    size_t wire_bytes; /* data parallel with gradient_compression="bfloat16": the gradients' bfloat16 copy */
    size_t grad_bytes, xslot_bytes, yslot_bytes, w_bytes, slot_bytes, ws_bytes, stats_bytes;
    int weighted;          /* sample-weight batch slots (fit / evaluate with sample or class weights) */
    size_t wslot_bytes;    /* per slot: one weight per row */
    long nmv, moff[BF_MAX_METRICS]; /* metric statistics: doubles in all, offset of each */
    size_t norm_bytes;     /* sums of squares (backend memory): gradients for clipping, then Lamb's pairs; then the
                            * optimizer's scratch at its end (Muon's: bf_opt_matrix_ws, opt_matrix.c) */
    long lamb_norm_off;    /* doubles before Lamb's (sum w^2, sum update^2) per trainable tensor */
    size_t hmet_bytes;     /* host: copy of the step statistics and the epoch's metric sums */
    /* plan table */
    int nentry;
    bf_plan_entry entries[BF_PLAN_MAXENTRY];
    size_t host_bytes, device_bytes;  /* new bytes this run reserves */
    size_t model_bytes;               /* weights held by the model (already allocated) */
    size_t opt_new_bytes;             /* optimizer state this run creates on the host */

    /* ---- filled by bf_run_open ---- */
    bf_arena arena;        /* on be */
    bf_arena host_arena;   /* pinned host batch slots when be is a device */
    char *scratch;
    void *ws;              /* the backend's run workspace (devices) */
    bf_step_stats *stats;  /* in the arena (backend memory) */
    bf_step_stats *hstats; /* the host's copy of the last micro-batch's (in the tables) */
    int pinned;            /* host_arena page-locked by the backend */
    float *w, *grads, *slots;
    uint16_t *wire;        /* wire_bytes (dist_mpi.h bf_dist_sum_buckets), else NULL */
    float *xslot[BF_PREFETCH_DEPTH], *yslot[BF_PREFETCH_DEPTH], *wslot[BF_PREFETCH_DEPTH];
    float *hx[BF_PREFETCH_DEPTH], *hy[BF_PREFETCH_DEPTH], *hw[BF_PREFETCH_DEPTH];
    double *mstats;        /* backend: the metric statistics after the record */
    double *norms;         /* backend: norm_bytes */
    char *hmet;            /* host: read-back copy of record + metric statistics */
    double *macc;          /* host: metric statistics summed since the last reset (epoch) */
    /* sample weights of the current call (NULL: all 1) and class weights by class id */
    const bf_src *sw_src;
    const float *cw;
    long ncw;
    int cur;               /* batch slot the step is computing on */
    /* where the current micro-batch's rows come from, for DataErrors: row i is
     * sample sample_order[sample_at + i] (or sample_at + i) of the caller's
     * data when samples_known (arrays; a generator's batch is its own) */
    const int64_t *sample_order;
    long sample_at;
    int samples_known;
    /* per layer: a bound on |parameter gradient| this step, from max|input| and
     * max|output gradient| (Dense, Conv2D); below FLT_MAX/4 the gradients are
     * provably finite and need no scan */
    double *gbound;
    double *bcount;          /* products per gradient element this micro-batch; 0: no bound taken */
    unsigned char *bounded;  /* Dense / Conv2D proven finite by a bound, not scanned (run.c) */
    int other_bad;         /* a scan of the unbounded gradients hit, this step */
    int unguarded;         /* benchmarks only: skip the non-finite scan of gradients */
    int overlapped;        /* this step's all-reduce ran during backward (dist_overlap.c) */
    long job_seq;          /* micro-batches loaded so far: slot = job_seq % depth */
    uint64_t dropout_seed;
    /* where a non-finite value was first seen (set with BF_ERR_NONFINITE) */
    long bad_step;
    int bad_layer;
    const char *bad_what;
    /* random image layers (layers/preprocess.c): each node's stream, and the draw of the current micro-batch */
    uint64_t *aug_base, *aug_seed;
    long aug_it, aug_micro;  /* optimizer iteration + 1 last seen; training forwards within it */
    uint64_t *attn_seed; /* MultiHeadAttention: its dropout seed this step (layers/attention.c) */
    uint64_t *rnn_seed;  /* recurrent dropout: the node's seed this step (layers/recurrent.c) */
    int posw_id[BF_MAX_OUTPUTS]; /* per-position loss / metric weights of a sequence output (seq_loss.c) */
    int *node_off;               /* not part of this run (bf_layer.modes): no buffers, no steps */
    long micro_row;              /* training: rows of the step before the current micro-batch (layers/random.c) */
    /* mixed precision (mixed.c, docs/mixed-precision.md) */
    unsigned char *t16;                /* the tensor's values and gradient are stored in 16 bits (bf_layer.half's) */
    unsigned char *cv;                 /* the node's steps run through mixed.c's conversions */
    int *cv_rows;                      /* rows per chunk of its forward there (backward: mixed.c rows_bw) */
    int *cv_fw, *cv_bw;                /* its float32 conversion buffers, forward and backward */
    int cv_on;                         /* while mixed.c runs node i: i + 1, and its steps see these pointers */
    long cv_row0;                      /* the chunk's first row */
    float **cv_t;                      /* a tensor's float32 rows of the chunk (NULL: its own buffer) */
    int *work;                         /* planning scratch: one int per tensor, per node (work_n), byte per buffer */
    int *work_n;
    unsigned char *work_b;
    float *cv_din[BF_MAX_NODE_IN];     /* where the node writes input j's gradient for the chunk */
} bf_run;

/* reserve r's tables for its model r->m (zeroed; ids not yet set; tables.c), and release them */
bf_status bf_run_tables_reserve(bf_run *r);
void bf_run_tables_free(bf_run *r);
/* bytes of the tables of a run of model m (what bf_run_tables_reserve reserves) */
size_t bf_run_tables_bytes(const bf_model *m);

/* node i is part of run r (bf_layer.modes) */
static inline int bf_node_on(const bf_run *r, int i) {
    const int k = r->m->layers[i].modes;
    return !k || (k & (r->mode == BF_MODE_TRAIN ? 1 : 2)) != 0;
}

/* node i computes in training mode in run r: the run's mode unless the call fixed it (bf_layer.train_mode) */
static inline int bf_node_training(const bf_run *r, int i) {
    const int f = r->m->layers[i].train_mode;
    return f == 1 ? 1 : f == 2 ? 0 : r->mode == BF_MODE_TRAIN;
}

#endif
