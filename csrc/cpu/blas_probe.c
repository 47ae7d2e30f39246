/* blas_probe.c - GEMMs over untouched memory, to bring OpenBLAS's runtime
 * up before a run is planned. OpenBLAS packs operands into a buffer per
 * calling thread that it touches lazily, GEMM by GEMM; a run that is the
 * first in the process would otherwise grow RSS beyond its plan. The engine
 * calls OpenBLAS from each of its pool's threads (gemm.c), so the probe runs
 * the GEMM on every thread at once (a buffer in use by one caller is not
 * handed to another). The operands A and B are fresh anonymous pages that
 * are only read (they map the shared zero page and add nothing to RSS);
 * only each thread's C (M,N) is written. Invariant: the probe holds nothing
 * afterwards (its arena is released). */
#include "blas_probe.h"

#include <stdatomic.h>
#include <time.h>

#include "arena.h"
#include "cpu_ops.h"
#include "blas.h"
#include "par.h"

typedef struct {
    int M, N, K;
    long parts;
    const float *A, *B;
    float *C;
    _Atomic long arrived;
} probe_job;

/* waits (at most ~50 ms) for every part to start, so the GEMMs overlap */
static void probe_part(void *ctx, long t, int slot) {
    (void)slot;
    probe_job *j = ctx;
    atomic_fetch_add(&j->arrived, 1);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &now);
    while (atomic_load(&j->arrived) < j->parts &&
           (now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) < 50000000L);
    bf_sgemm1(0, 0, j->M, j->N, j->K, 1.0f, j->A, j->K, j->B, j->N, 0.0f, j->C + (size_t)t * j->M * j->N, j->N);
}

/* C (M,N) = A (M,K) @ B (K,N) on each thread, A and B all zeros, never written */
bf_status bf_cpu_blas_probe(int M, int N, int K) {
    if (M <= 0 || N <= 0 || K <= 0)
        return BF_FAIL(BF_ERR_ARG, "blas probe sizes must be positive, got %d x %d x %d", M, N, K);
    const int threads = bf_par_threads(); /* starts the pool: OpenBLAS on one thread */
    int rows, cols; /* gemm.c's check of its split grains: its pages count with the probe's */
    bf_gemm_split_grains(&rows, &cols);
    const size_t a = bf_align_up((size_t)M * K * sizeof(float)), b = bf_align_up((size_t)K * N * sizeof(float));
    const size_t c = bf_align_up((size_t)M * N * sizeof(float) * (size_t)threads);
    bf_arena ar;
    bf_arena_init(&ar, bf_cpu_backend(), "host", 0);
    float *A = NULL, *B = NULL, *C = NULL;
    bf_status s = bf_arena_reserve(&ar, a + b + c);
    if (s == BF_OK) s = bf_arena_alloc(&ar, a, (void **)&A);
    if (s == BF_OK) s = bf_arena_alloc(&ar, b, (void **)&B);
    if (s == BF_OK) s = bf_arena_alloc(&ar, c, (void **)&C);
    probe_job j = {.M = M, .N = N, .K = K, .parts = threads, .A = A, .B = B, .C = C};
    if (s == BF_OK) bf_par_for(threads, threads, probe_part, &j);
    bf_arena_release(&ar);
    return s;
}
