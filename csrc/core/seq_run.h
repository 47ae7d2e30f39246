/* seq_run.h - the sequence layers in a run: their planned buffers
 * (program.c calls bf_seq_plan for each such node) and their forward and
 * backward (run.c). The mask of an Embedding(mask_zero=True) is its aux
 * buffer (B,T) of 0/1, kept alive for every node that reads it. */
#ifndef BF_SEQ_RUN_H
#define BF_SEQ_RUN_H

#include "program.h"

/* program.c: a new planned buffer, and a use of one at time t */
bf_status bf_run_newbuf(bf_run *r, int *id, size_t bytes, const char *name, const char *what);
void bf_run_use(bf_run *r, int id, int t);

/* node i's buffers: forward at time t, backward (bw: it has one) at time tb */
bf_status bf_seq_plan(bf_run *r, int i, int t, int tb, int bw);
/* the (B,T) mask tensor tensor_id carries, NULL when none (for layers that use masks) */
const float *bf_seq_mask(bf_run *r, int tensor_id);
/* keep tensor_id's mask alive at time t (planning a layer that reads it) */
void bf_seq_use_mask(bf_run *r, int tensor_id, int t);
/* keep the masks node i reads (GlobalAveragePooling1D, MultiHeadAttention's
 * query, value and key) alive at its forward t and, when bw, backward tb */
void bf_seq_plan_mask_readers(bf_run *r, int i, int t, int tb, int bw);
bf_status bf_seq_forward(bf_run *r, int i, int rows);
/* din: node i's input gradient (NULL: not needed) */
bf_status bf_seq_backward(bf_run *r, int i, int rows, const float *dout, float *din);

#endif
