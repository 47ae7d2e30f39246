/* blas_probe.c - one GEMM over untouched memory, to bring OpenBLAS's runtime
 * up before a run is planned. OpenBLAS packs operands into a buffer per
 * thread that it touches lazily, GEMM by GEMM; a run that is the first in
 * the process would otherwise grow RSS beyond its plan. The operands A and B
 * are fresh anonymous pages that are only read (they map the shared zero page
 * and add nothing to RSS); only C (M,N) is written. Invariant: the probe
 * holds nothing afterwards (its arena is released). */
#include "blas_probe.h"

#include "arena.h"
#include "blas.h"

/* C (M,N) = A (M,K) @ B (K,N), A and B all zeros, never written */
bf_status bf_cpu_blas_probe(int M, int N, int K) {
    if (M <= 0 || N <= 0 || K <= 0)
        return BF_FAIL(BF_ERR_ARG, "blas probe sizes must be positive, got %d x %d x %d", M, N, K);
    const size_t a = bf_align_up((size_t)M * K * sizeof(float)), b = bf_align_up((size_t)K * N * sizeof(float));
    const size_t c = bf_align_up((size_t)M * N * sizeof(float));
    bf_arena ar;
    bf_arena_init(&ar, bf_cpu_backend(), "host", 0);
    float *A = NULL, *B = NULL, *C = NULL;
    bf_status s = bf_arena_reserve(&ar, a + b + c);
    if (s == BF_OK) s = bf_arena_alloc(&ar, a, (void **)&A);
    if (s == BF_OK) s = bf_arena_alloc(&ar, b, (void **)&B);
    if (s == BF_OK) s = bf_arena_alloc(&ar, c, (void **)&C);
    if (s == BF_OK) bf_sgemm(0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    bf_arena_release(&ar);
    return s;
}
