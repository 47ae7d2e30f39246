/* rnn_dropout.h - dropout inside a recurrent layer on the CPU (rnn_dropout.c):
 * the masks of bf_rnn_geom and their application to rows over the steps. */
#ifndef BF_RNN_DROPOUT_H
#define BF_RNN_DROPOUT_H

#include "backend.h"

/* m (nm,B,N) the masks of bf_rnn_geom; out (R,T,N) (+)= in (rows ldin apart) * m (R,N) over all T */
void bf_cpu_rnn_masks(float *m, int nm, int B, int N, float rate, uint64_t seed);
void bf_cpu_rnn_mask_rows(float *out, const float *in, long ldin, const float *m, int R, int T, int N, int add);

#endif
