/* masks.h - the step masks of sequences (Embedding mask_zero): node k's
 * mask is its aux buffer (B,T) of 0/1, and tensor t carries node
 * m->t_mask[t]'s (propagated by each kind's mask hook, layer_registry.h).
 * Planning keeps a mask alive for every node that reads it. */
#ifndef BF_MASKS_H
#define BF_MASKS_H

#include "step.h"

/* a masked output of rank >= 2 has its loss masked per position (seq_loss.c); one of rank 1 is refused */
bf_status bf_seq_check_outputs(const bf_model *m);
/* the (B,T) mask tensor tensor_id carries, NULL when none (for layers that use masks) */
const float *bf_seq_mask(bf_run *r, int tensor_id);
/* keep tensor_id's mask alive at time t (planning a layer that reads it) */
void bf_seq_use_mask(bf_run *r, int tensor_id, int t);
/* keep the masks node i reads (its kind's mask_reads: GlobalAveragePooling1D,
 * MultiHeadAttention's query, value and key) alive at its forward t and, when
 * bw, backward tb */
void bf_seq_plan_mask_readers(bf_run *r, int i, int t, int tb, int bw);

#endif
