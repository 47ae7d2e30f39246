/* gemm.c - the engine's GEMM (bf_sgemm, blas.h): one-thread OpenBLAS calls
 * over the pool (par.h). A GEMM worth splitting is cut along its longer
 * output side, rows of C (M) or columns (N), into one part per thread, each
 * a multiple of that side's grain. OpenBLAS blocks the sum (K) the same way
 * whatever M and N are, but its kernels sum a tile in an order that depends
 * on where the tile falls: a cut is safe only on a multiple of the kernel's
 * unroll along that side (Skylake-X: 16 both ways; Haswell and Zen: 12 along
 * rows, and no grain along columns keeps every bit). The grains are not
 * assumed: split_grains() measures them once, on the loaded OpenBLAS, by
 * comparing split products with whole ones, and a side with no safe grain is
 * never cut. So every element of C gets the same bits as in one call, on
 * any number of threads. A bias (Dense's) is copied into each part's rows by
 * the thread that runs it. */
#include <pthread.h>
#include <string.h>

#include "blas.h"
#include "par.h"

#define SPLIT_MIN_MNK (1L << 20) /* below this (~40 us on one core) one call is faster */
/* OpenBLAS runs a call of M*N*K <= 100^3 with its small-matrix kernels and,
 * on Skylake-X, a plain row-major product (alpha 1, beta 0) below 28*512*512
 * with its direct kernel; both sum in another order than its blocked kernel.
 * A GEMM is split only where the whole and every part take the blocked one,
 * so a split never changes a bit (tests/test_blas_thread_modes.py). */
#define SMALL_MNK 1000000.0
#define DIRECT_MNK (28.0 * 512 * 512)

/* Candidate grains, smallest first (48 = lcm of the unrolls 12 and 16). The
 * check cuts a side of 4 grains + 8 (an uneven last part) at one, two and
 * three grains, the other side 256 and K 256, so every part is over
 * SMALL_MNK (the blocked kernel, as parts_of() requires). Its operands are
 * static storage (1 MiB), touched only by the check, which the BLAS probe
 * runs (blas_probe.c) so that a plan counts them. */
static const int GRAINS[] = {16, 48};
#define CHECK_SIDE (4 * 48 + 8)
#define CHECK_OTHER 256
#define CHECK_K 256
static float check_a[CHECK_OTHER * CHECK_K], check_b[CHECK_OTHER * CHECK_K]; /* CHECK_OTHER >= CHECK_SIDE */
static float check_whole[CHECK_SIDE * CHECK_OTHER], check_split[CHECK_SIDE * CHECK_OTHER];
static int grain_rows, grain_cols; /* 0: that side is never cut */
static pthread_once_t grains_once = PTHREAD_ONCE_INIT;

/* C (M,N) = op(A) @ op(B) as rows (or columns) [0, cut) and [cut, end): */
static void product_in_two(int by_rows, int ta, int tb, int M, int N, int K, int cut, float *C) {
    const int lda = ta ? M : K, ldb = tb ? K : N;
    memset(C, 0, sizeof(float) * (size_t)M * N);
    if (cut == 0) { /* beta 1 over zeros keeps OpenBLAS off its direct kernel */
        bf_sgemm1(ta, tb, M, N, K, 1.0f, check_a, lda, check_b, ldb, 1.0f, C, N);
    } else if (by_rows) {
        bf_sgemm1(ta, tb, cut, N, K, 1.0f, check_a, lda, check_b, ldb, 1.0f, C, N);
        bf_sgemm1(ta, tb, M - cut, N, K, 1.0f, ta ? check_a + cut : check_a + (size_t)cut * lda, lda, check_b, ldb,
                  1.0f, C + (size_t)cut * N, N);
    } else {
        bf_sgemm1(ta, tb, M, cut, K, 1.0f, check_a, lda, check_b, ldb, 1.0f, C, N);
        bf_sgemm1(ta, tb, M, N - cut, K, 1.0f, check_a, lda, tb ? check_b + (size_t)cut * ldb : check_b + cut, ldb,
                  1.0f, C + cut, N);
    }
}

/* 1 if cutting rows (or columns) at one, two or three grains gives the bits
 * of the whole product, for every transpose */
static int cuts_keep_bits(int by_rows, int grain) {
    const int side = 4 * grain + 8, M = by_rows ? side : CHECK_OTHER, N = by_rows ? CHECK_OTHER : side;
    for (int t = 0; t < 4; t++) {
        product_in_two(by_rows, t >> 1, t & 1, M, N, CHECK_K, 0, check_whole);
        for (int c = 1; c <= 3; c++) {
            product_in_two(by_rows, t >> 1, t & 1, M, N, CHECK_K, c * grain, check_split);
            if (memcmp(check_whole, check_split, sizeof(float) * (size_t)M * N) != 0) return 0;
        }
    }
    return 1;
}

static void measure_grains(void) {
    unsigned x = 12345u; /* operands: a fixed LCG's values in [-1, 1) */
    for (size_t i = 0; i < sizeof check_a / sizeof *check_a; i++) {
        x = x * 1664525u + 1013904223u;
        check_a[i] = (float)(x >> 8) / (float)(1u << 23) - 1.0f;
        x = x * 1664525u + 1013904223u;
        check_b[i] = (float)(x >> 8) / (float)(1u << 23) - 1.0f;
    }
    for (size_t g = 0; g < sizeof GRAINS / sizeof *GRAINS; g++) {
        if (!grain_rows && cuts_keep_bits(1, GRAINS[g])) grain_rows = GRAINS[g];
        if (!grain_cols && cuts_keep_bits(0, GRAINS[g])) grain_cols = GRAINS[g];
    }
}

void bf_gemm_split_grains(int *rows, int *cols) {
    (void)bf_par_slots(); /* the pool up first: OpenBLAS on one thread, as in a split */
    pthread_once(&grains_once, measure_grains);
    *rows = grain_rows;
    *cols = grain_cols;
}

/* C rows [r0, r1), columns [c0, c1) = bias[c0..c1) */
static void fill_bias(float *C, int ldc, const float *bias, long r0, long r1, long c0, long c1) {
    for (long i = r0; i < r1; i++) memcpy(C + (size_t)i * ldc + c0, bias + c0, sizeof(float) * (size_t)(c1 - c0));
}

typedef struct {
    int transA, transB, M, N, K, lda, ldb, ldc, by_rows;
    long parts, grain;
    float alpha, beta;
    const float *A, *B, *bias;
    float *C;
} gemm_job;

/* part t of `parts` of [0, n) in whole blocks of `grain`: [*lo, *hi) */
static void part_range(long n, long grain, long parts, long t, long *lo, long *hi) {
    const long blocks = (n + grain - 1) / grain;
    *lo = blocks * t / parts * grain;
    *hi = blocks * (t + 1) / parts * grain;
    if (*hi > n) *hi = n;
    if (*lo > n) *lo = n;
}

static long smallest_part(long n, long grain, long parts) {
    long m = n, lo, hi;
    for (long t = 0; t < parts; t++) {
        part_range(n, grain, parts, t, &lo, &hi);
        if (hi - lo < m) m = hi - lo;
    }
    return m;
}

static void gemm_part(void *ctx, long t, int slot) {
    (void)slot;
    const gemm_job *j = ctx;
    long lo, hi;
    part_range(j->by_rows ? j->M : j->N, j->grain, j->parts, t, &lo, &hi);
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

/* parts to split into on `threads` threads, and along which side (*by_rows)
 * in blocks of *grain: 1 unless the product is big enough, the side has a
 * safe grain, and the whole and all parts take OpenBLAS's blocked kernel */
static long parts_of(int transA, int transB, int M, int N, int K, float alpha, float beta, int threads,
                     int *by_rows, long *grain) {
    const double mnk = (double)M * N * K;
    if (threads < 2 || mnk < SPLIT_MIN_MNK) return 1;
    int gr, gc;
    bf_gemm_split_grains(&gr, &gc);
    *by_rows = M >= N ? gr > 0 : gc == 0;
    *grain = *by_rows ? gr : gc;
    const long side = *by_rows ? M : N;
    if (*grain == 0) return 1;
    long parts = (side + *grain - 1) / *grain;
    if (parts > threads) parts = threads;
    if (parts < 2) return 1;
    const double part = mnk / (double)side * (double)smallest_part(side, *grain, parts);
    const int direct = !transA && !transB && alpha == 1.0f && beta == 0.0f;
    return part <= SMALL_MNK || (direct && part < DIRECT_MNK) ? 1 : parts;
}

/* the GEMM, and with `bias` (N): C = op(A) @ op(B) + bias in each row (beta unused) */
static void gemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                 int ldb, float beta, float *C, int ldc, const float *bias) {
    if (bias) beta = 1.0f;
    int by_rows = 1;
    long grain = 0;
    const long parts =
        parts_of(transA, transB, M, N, K, alpha, beta, bf_par_in_task() ? 1 : bf_par_threads(), &by_rows, &grain);
    if (parts < 2) {
        if (bias) fill_bias(C, ldc, bias, 0, M, 0, N);
        bf_sgemm1(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    gemm_job j = {transA, transB, M, N, K, lda, ldb, ldc, by_rows, parts, grain, alpha, beta, A, B, bias, C};
    bf_par_for(parts, (int)parts, gemm_part, &j);
}

void bf_sgemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
              int ldb, float beta, float *C, int ldc) {
    gemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

void bf_sgemm_bias(int M, int N, int K, const float *A, const float *B, const float *bias, float *C) {
    gemm(0, 0, M, N, K, 1.0f, A, K, B, N, 1.0f, C, N, bias);
}
