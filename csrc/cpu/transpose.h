/* transpose.h - a float matrix transposed into a scratch buffer, for the
 * GEMMs that run faster on a transposed operand (attention.c, rnn.c). */
#ifndef BF_TRANSPOSE_H
#define BF_TRANSPOSE_H

#include <stddef.h>
#ifdef __SSE__
#include <xmmintrin.h>
#endif

// bt (K,N) = b^T for b (N,K) with row stride ldb; in 4 x 4 blocks (SSE)
static inline void bf_transpose(float *restrict bt, const float *restrict b, int N, int K, int ldb) {
    int n = 0;
#ifdef __SSE__
    for (; n + 4 <= N; n += 4) {
        const float *r = b + (size_t)n * ldb;
        int k = 0;
        for (; k + 4 <= K; k += 4) {
            __m128 r0 = _mm_loadu_ps(r + k), r1 = _mm_loadu_ps(r + ldb + k);
            __m128 r2 = _mm_loadu_ps(r + 2 * (size_t)ldb + k), r3 = _mm_loadu_ps(r + 3 * (size_t)ldb + k);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            float *o = bt + (size_t)k * N + n;
            _mm_storeu_ps(o, r0);
            _mm_storeu_ps(o + N, r1);
            _mm_storeu_ps(o + 2 * (size_t)N, r2);
            _mm_storeu_ps(o + 3 * (size_t)N, r3);
        }
        for (; k < K; k++)
            for (int m = n; m < n + 4; m++) bt[(size_t)k * N + m] = b[(size_t)m * ldb + k];
    }
#endif
    for (; n < N; n++)
        for (int k = 0; k < K; k++) bt[(size_t)k * N + n] = b[(size_t)n * ldb + k];
}

#endif
