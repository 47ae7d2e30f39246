/* cuda_rnn_dropout.h - dropout inside a recurrent layer on the GPU
 * (rnn_dropout.cu), as the CPU's (csrc/cpu/rnn_dropout.c). */
#ifndef BF_CUDA_RNN_DROPOUT_H
#define BF_CUDA_RNN_DROPOUT_H

#include "cuda_ops.h"

/* m (nm,B,N) the masks of bf_rnn_geom; out (R,T,N) (+)= in (rows ldin apart) * m (R,N) over all T */
bf_status bf_cuda_rnn_masks(bf_cuda_state *st, float *m, int nm, int B, int N, float rate, uint64_t seed);
bf_status bf_cuda_rnn_mask_rows(bf_cuda_state *st, float *out, const float *in, long ldin, const float *m, int R,
                                int T, int N, int add);

#endif
