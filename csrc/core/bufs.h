/* bufs.h - listing the planned buffers of a step (program.c, the layer
 * files, the sequence losses): a new buffer of some bytes, a kind and a name,
 * and its uses at step times, from which the planner takes its lifetime. */
#ifndef BF_BUFS_H
#define BF_BUFS_H

#include "step.h"

/* the most bytes of one planned buffer or batch slot (4 PiB, beyond any machine): a larger one is a
 * BF_ERR_BUDGET naming it; all of a step's buffers together at most BF_MAX_STEP_BYTES (2 EiB), so that their
 * sums (doubled, aligned: mixed.c, the planner) never wrap a size_t */
#define BF_MAX_BUF_BYTES ((size_t)1 << 52)
#define BF_MAX_STEP_BYTES ((size_t)1 << 61)

/* what a planned buffer holds: the categories a MemoryPlan splits the planned region into
 * (python/boundfit/engine/memory.py, by bf_buf_kind_names); bf_run.buf_kind */
typedef enum {
    BF_BUF_SAVED = 0,  /* saved activations: outputs, inputs split from the batch, states kept for backward */
    BF_BUF_GRAD,       /* activation gradients */
    BF_BUF_WORKSPACE,  /* workspaces (im2col and the like) */
    BF_BUF_LOSS,       /* per-sample losses and targets */
    BF_BUF_STATE,      /* layer state: dropout masks, batch statistics, everything else a node keeps */
    BF_BUF_KINDS
} bf_buf_kind;
extern const char *const bf_buf_kind_names[BF_BUF_KINDS];

/* a new buffer named by fmt with a and b (two %s) */
bf_status bf_run_newbuf_fmt(bf_run *r, int *id, size_t bytes, bf_buf_kind kind, const char *fmt, const char *a,
                             const char *b);
/* a new buffer named name + what */
bf_status bf_run_newbuf(bf_run *r, int *id, size_t bytes, bf_buf_kind kind, const char *name, const char *what);
/* buffer id (none when < 0) is used at time t */
void bf_run_use(bf_run *r, int id, int t);

#endif
