/* gemm.c - the engine's GEMM (bf_sgemm, blas.h): one-thread OpenBLAS calls
 * over the pool (par.h). A GEMM worth splitting is cut along its longer
 * output side, rows of C (M) or columns (N), into one part per thread,
 * each a multiple of 16 rows or columns (the kernels' unroll). OpenBLAS
 * blocks the sum (K) the same way whatever M and N are, so every element of
 * C gets the same bits as in one call, on any number of threads. A bias
 * (Dense's) is copied into each part's rows by the thread that runs it. */
#include <string.h>

#include "blas.h"
#include "par.h"
#include <stdlib.h>

#define SPLIT_MIN_MNK (1L << 20) /* below this (~40 us on one core) one call is faster */
#define SPLIT_GRAIN 16
/* OpenBLAS runs a call of M*N*K <= 100^3 with its small-matrix kernels and,
 * on Skylake-X, a plain row-major product (alpha 1, beta 0) below 28*512*512
 * with its direct kernel; both sum in another order than its blocked kernel.
 * A GEMM is split only where the whole and every part take the blocked one,
 * so a split never changes a bit (tests/test_blas_thread_modes.py). */
#define SMALL_MNK 1000000.0
#define DIRECT_MNK (28.0 * 512 * 512)

/* C rows [r0, r1), columns [c0, c1) = bias[c0..c1) */
static void fill_bias(float *C, int ldc, const float *bias, long r0, long r1, long c0, long c1) {
    for (long i = r0; i < r1; i++) memcpy(C + (size_t)i * ldc + c0, bias + c0, sizeof(float) * (size_t)(c1 - c0));
}

typedef struct {
    int transA, transB, M, N, K, lda, ldb, ldc, by_rows;
    long parts;
    float alpha, beta;
    const float *A, *B, *bias;
    float *C;
} gemm_job;

/* part t of `parts` of [0, n) in whole blocks of SPLIT_GRAIN: [*lo, *hi) */
static void part_range(long n, long parts, long t, long *lo, long *hi) {
    const long blocks = (n + SPLIT_GRAIN - 1) / SPLIT_GRAIN;
    *lo = blocks * t / parts * SPLIT_GRAIN;
    *hi = blocks * (t + 1) / parts * SPLIT_GRAIN;
    if (*hi > n) *hi = n;
    if (*lo > n) *lo = n;
}

static long smallest_part(long n, long parts) {
    long m = n, lo, hi;
    for (long t = 0; t < parts; t++) {
        part_range(n, parts, t, &lo, &hi);
        if (hi - lo < m) m = hi - lo;
    }
    return m;
}

static void gemm_part(void *ctx, long t, int slot) {
    (void)slot;
    const gemm_job *j = ctx;
    long lo, hi;
    part_range(j->by_rows ? j->M : j->N, j->parts, t, &lo, &hi);
    if (hi <= lo) return;
    if (j->bias) fill_bias(j->C, j->ldc, j->bias, j->by_rows ? lo : 0, j->by_rows ? hi : j->M,
                           j->by_rows ? 0 : lo, j->by_rows ? j->N : hi);
    if (j->by_rows) { /* rows lo..hi of op(A) and C */
        const float *a = j->transA ? j->A + lo : j->A + (size_t)lo * j->lda;
        bf_sgemm1(j->transA, j->transB, (int)(hi - lo), j->N, j->K, j->alpha, a, j->lda, j->B, j->ldb, j->beta,
                  j->C + (size_t)lo * j->ldc, j->ldc);
    } else { /* columns lo..hi of op(B) and C */
        const float *b = j->transB ? j->B + (size_t)lo * j->ldb : j->B + lo;
        bf_sgemm1(j->transA, j->transB, j->M, (int)(hi - lo), j->K, j->alpha, j->A, j->lda, b, j->ldb, j->beta,
                  j->C + lo, j->ldc);
    }
}

/* parts to split into on `threads` threads: 1 unless the product is big
 * enough and the whole and all parts take OpenBLAS's blocked kernel */
static long parts_of(int transA, int transB, int M, int N, int K, float alpha, float beta, int threads) {
    const long side = M >= N ? M : N;
    long parts = (side + SPLIT_GRAIN - 1) / SPLIT_GRAIN;
    if (parts > threads) parts = threads;
    const double mnk = (double)M * N * K;
    if (parts < 2 || mnk < SPLIT_MIN_MNK) return 1;
    const double part = mnk / (double)side * (double)smallest_part(side, parts);
    const int direct = !transA && !transB && alpha == 1.0f && beta == 0.0f;
    return part <= SMALL_MNK || (direct && part < DIRECT_MNK) ? 1 : parts;
}

/* the GEMM, and with `bias` (N): C = op(A) @ op(B) + bias in each row (beta unused) */
static void gemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                 int ldb, float beta, float *C, int ldc, const float *bias) {
    if (bias) beta = 1.0f;
    const long parts = parts_of(transA, transB, M, N, K, alpha, beta, bf_par_in_task() ? 1 : bf_par_threads());
    if (parts < 2) {
        if (bias) fill_bias(C, ldc, bias, 0, M, 0, N);
        bf_sgemm1(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    gemm_job j = {transA, transB, M, N, K, lda, ldb, ldc, M >= N, parts, alpha, beta, A, B, bias, C};
    bf_par_for(parts, (int)parts, gemm_part, &j);
}

void bf_sgemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
              int ldb, float beta, float *C, int ldc) {
    gemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

void bf_sgemm_bias(int M, int N, int K, const float *A, const float *B, const float *bias, float *C) {
    gemm(0, 0, M, N, K, 1.0f, A, K, B, N, 1.0f, C, N, bias);
}
