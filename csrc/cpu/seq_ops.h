/* seq_ops.h - CPU sequence ops of backend.h: Embedding (embedding.c) and one
 * direction of a recurrent layer (rnn.c). */
#ifndef BF_SEQ_OPS_H
#define BF_SEQ_OPS_H

#include "backend.h"

bf_status bf_cpu_embedding_forward(bf_backend *be, float *out, float *mask, int *bad, float *bad_val,
                                   const float *ids, const float *table, long n, int D, int V);
bf_status bf_cpu_embedding_backward(bf_backend *be, float *dtable, const float *dout, const float *ids, long n,
                                    int D, int V);
size_t bf_cpu_rnn_workspace_bytes(bf_backend *be, const bf_rnn_geom *g, int backward);
bf_status bf_cpu_rnn_forward(bf_backend *be, const bf_rnn_geom *g, float *out, float *hs, float *gates, float *cs,
                             void *ws, const float *x, const float *w, const float *u, const float *b,
                             const float *mask);
bf_status bf_cpu_rnn_backward(bf_backend *be, const bf_rnn_geom *g, float *dx, float *dw, float *du, float *db,
                              float *gates, void *ws, const float *dout, const float *hs, const float *cs,
                              const float *x, const float *w, const float *u, const float *mask, int dx_add);
/* dropout inside a recurrent layer (rnn_dropout.c): m (nm,B,N) the masks of
 * bf_rnn_geom; out (R,T,N) (+)= in (rows ldin apart) * m (R,N) over all T */
void bf_cpu_rnn_masks(float *m, int nm, int B, int N, float rate, uint64_t seed);
void bf_cpu_rnn_mask_rows(float *out, const float *in, long ldin, const float *m, int R, int T, int N, int add);
/* GlobalAveragePooling1D over the steps a mask keeps (masked_mean.c) */
bf_status bf_cpu_masked_mean_forward(bf_backend *be, float *out, const float *inp, const float *mask, int B, int T,
                                     int C);
bf_status bf_cpu_masked_mean_backward(bf_backend *be, float *dinp, const float *dout, const float *mask, int B, int T,
                                      int C);
/* per-position weights of a sequence loss / metric (pos_weights.c) */
bf_status bf_cpu_pos_weights(bf_backend *be, float *w, const float *sw, const float *mask, int B, int S,
                             int normalize);

#endif
