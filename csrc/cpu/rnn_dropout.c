/* rnn_dropout.c - dropout inside a recurrent layer on the CPU (Keras 3
 * DropoutRNNCell; bf_rnn_geom rate_x / rate_h in backend.h): the masks, one
 * (B,N) per gate or shared, drawn from (seed, index) with the counter hash of
 * the Dropout layer (bf_dropout_bits), so forward and backward, the emu and
 * the CUDA backend draw the same bits; and the masked copies rnn.c feeds its
 * GEMMs. Masking a copy of x (B,T,D) keeps the input projection one GEMM
 * over all steps (per gate with per-gate masks); the copy is workspace,
 * recomputed in backward, so nothing is kept between forward and backward. */
#include <math.h>

#include "cpu_conv.h"
#include "rnn_dropout.h"

// m (nm,B,N) = 1/(1-rate) where bits(seed, i) >= ceil(rate * 2^24), else 0
void bf_cpu_rnn_masks(float *m, int nm, int B, int N, float rate, uint64_t seed) {
    const uint32_t thr = (uint32_t)ceil((double)rate * 16777216.0);
    const float scale = 1.0f / (1.0f - rate);
    const size_t n = (size_t)nm * B * N;
    for (size_t i = 0; i < n; i++) m[i] = bf_dropout_bits(seed, (uint64_t)i) >= thr ? scale : 0.0f;
}

// out (R,T,N) = (add ? out : 0) + in (R*T rows, ldin apart) * m (R,N), the same m row for every t
void bf_cpu_rnn_mask_rows(float *out, const float *in, long ldin, const float *m, int R, int T, int N, int add) {
    for (int r = 0; r < R; r++) {
        const float *mr = m + (size_t)r * N;
        for (int t = 0; t < T; t++) {
            const size_t row = (size_t)r * T + t;
            const float *a = in + row * ldin;
            float *o = out + row * N;
            if (add)
                for (int j = 0; j < N; j++) o[j] += a[j] * mr[j];
            else
                for (int j = 0; j < N; j++) o[j] = a[j] * mr[j];
        }
    }
}
