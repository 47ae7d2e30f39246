/* run_attn.h - the steps of LayerNormalization and MultiHeadAttention nodes
 * in a run (run_attn.c) and the sizes of their planned buffers (program.c). */
#ifndef BF_RUN_ATTN_H
#define BF_RUN_ATTN_H

#include "program.h"

/* node L's attention for `rows` rows; train: dropout active; keep: backward
 * runs, so the weights P of every (b, h) are kept (else one tile) */
void bf_mha_geom(const bf_model *m, const bf_layer *L, int rows, int train, int keep, bf_attn_geom *g);
/* bytes of its block kept from forward to backward (Qp, Kp, Vp, O, P) and of
 * its backward block (dO, dQp, dKp, dVp, then the attention's workspace) */
size_t bf_mha_keep_bytes(const bf_attn_geom *g);
size_t bf_mha_backward_bytes(bf_backend *be, const bf_attn_geom *g);

bf_status bf_run_attn_forward(bf_run *r, int i, int rows);
bf_status bf_run_attn_backward(bf_run *r, int i, int rows);

#endif
