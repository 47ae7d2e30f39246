/* rnn_dropout.cu - dropout inside a recurrent layer on the GPU, the masks of
 * csrc/cpu/rnn_dropout.c bit for bit (bf_rnn_geom in backend.h): mask k, row
 * b, column j = 1/(1-rate) when the 24-bit counter hash of (seed, (k*B+b)*N+j)
 * (dropout.cu's, the Dropout layer's) is >= ceil(rate * 2^24), else 0; and
 * the masked copies rnn.cu feeds its GEMMs (a thread per element). */
#include <math.h>

#include "counter_hash.h"
#include "cuda_rnn_dropout.h"


// m (n) = bits(seed, i) >= thr ? scale : 0
__global__ void rnn_masks_kernel(float *m, long n, unsigned thr, float scale, unsigned long long seed) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        m[i] = bf_counter_bits(seed, (unsigned long long)i) >= thr ? scale : 0.0f;
}

// out (R,T,N) = (add ? out : 0) + in (R*T rows, ldin apart) * m (R,N); thread per element
__global__ void rnn_mask_rows_kernel(float *out, const float *in, long ldin, const float *m, int R, int T, int N,
                                     int add) {
    const long n = (long)R * T * N;
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < n; e += (long)gridDim.x * blockDim.x) {
        const long row = e / N;
        const int j = (int)(e % N);
        const float v = __fmul_rn(in[row * ldin + j], m[(row / T) * N + j]);
        out[e] = add ? __fadd_rn(out[e], v) : v;
    }
}

bf_status bf_cuda_rnn_masks(bf_cuda_state *st, float *m, int nm, int B, int N, float rate, uint64_t seed) {
    const long n = (long)nm * B * N;
    const unsigned thr = (unsigned)ceil((double)rate * 16777216.0);
    rnn_masks_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(m, n, thr, 1.0f / (1.0f - rate),
                                                                    (unsigned long long)seed);
    BF_CUDA_LAUNCHED(st, rnn_masks_kernel);
    return BF_OK;
}

bf_status bf_cuda_rnn_mask_rows(bf_cuda_state *st, float *out, const float *in, long ldin, const float *m, int R,
                                int T, int N, int add) {
    const long n = (long)R * T * N;
    rnn_mask_rows_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(out, in, ldin, m, R, T, N, add);
    BF_CUDA_LAUNCHED(st, rnn_mask_rows_kernel);
    return BF_OK;
}
