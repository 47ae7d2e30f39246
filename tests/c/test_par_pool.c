/* test_par_pool.c - the engine's fork-join pool (csrc/cpu/par.c): every task
 * runs exactly once, slots stay in range, nested calls and calls from two
 * threads at once complete, a forked child (no workers) still runs its jobs,
 * and the workers do take tasks; and its GEMM (csrc/cpu/gemm.c): split over
 * the pool or not, every transpose, with and without a bias, the product has
 * the same bits as one OpenBLAS call on one thread, and as the naive sums to
 * float rounding. Prints "N FAIL" at the end. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blas.h"
#include "par.h"

static int fails;
#define CHECK(c, ...) do { if (!(c)) { fails++; printf("FAIL: " __VA_ARGS__); printf("\n"); } } while (0)

#define NT 1000
static _Atomic int hits[NT];
static _Atomic int slot_bad, worker_tasks;

static void spin_us(int us) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static void count(void *ctx, long t, int slot) {
    (void)ctx;
    atomic_fetch_add(&hits[t], 1);
    if (slot < 0 || slot >= bf_par_slots()) atomic_fetch_add(&slot_bad, 1);
    if (slot > 0) atomic_fetch_add(&worker_tasks, 1);
}

static _Atomic int max_slot;
static void note_slot(void *ctx, long t, int slot) {
    spin_us(20);
    int m = atomic_load(&max_slot);
    while (slot > m && !atomic_compare_exchange_weak(&max_slot, &m, slot)) {}
    count(ctx, t, slot);
}

static void slow(void *ctx, long t, int slot) {
    spin_us(100);
    count(ctx, t, slot);
}

static void nested(void *ctx, long t, int slot) {
    (void)slot;
    bf_par_for(10, 8, count, ctx); /* runs on this thread */
    atomic_fetch_add(&hits[t], 1);
}

static void reset(void) {
    for (int i = 0; i < NT; i++) atomic_store(&hits[i], 0);
}

static int all_equal(int n, int v) {
    for (int i = 0; i < n; i++)
        if (atomic_load(&hits[i]) != v) return 0;
    return 1;
}

static void *caller(void *arg) {
    (void)arg;
    for (int r = 0; r < 200; r++) bf_par_for(NT, 8, count, NULL);
    return NULL;
}

/* C (M,N) = op(A) @ op(B) (+ bias) by bf_sgemm on the pool against one
 * bf_sgemm1 call (bitwise) and naive double sums (to 1e-4) */
static void check_gemm(int ta, int tb, int M, int N, int K, int bias) {
    const int lda = ta ? M : K, ldb = tb ? K : N;
    float *A = malloc(sizeof(float) * (size_t)M * K), *B = malloc(sizeof(float) * (size_t)K * N);
    float *C1 = malloc(sizeof(float) * (size_t)M * N), *C2 = malloc(sizeof(float) * (size_t)M * N);
    float *b = malloc(sizeof(float) * (size_t)N);
    for (long i = 0; i < (long)M * K; i++) A[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
    for (long i = 0; i < (long)K * N; i++) B[i] = (float)((i * 104729) % 1000) / 500.0f - 1.0f;
    for (int j = 0; j < N; j++) b[j] = 0.01f * (float)j;
    for (long i = 0; i < (long)M * N; i++) C1[i] = C2[i] = NAN;
    if (bias) {
        for (int i = 0; i < M; i++) memcpy(C1 + (size_t)i * N, b, sizeof(float) * N);
        bf_sgemm1(0, 0, M, N, K, 1.0f, A, K, B, N, 1.0f, C1, N);
        bf_sgemm_bias(M, N, K, A, B, b, C2);
    } else {
        bf_sgemm1(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C1, N);
        bf_sgemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C2, N);
    }
    CHECK(memcmp(C1, C2, sizeof(float) * (size_t)M * N) == 0, "gemm %d%d %dx%dx%d bias %d: bits differ", ta, tb, M,
          N, K, bias);
    double worst = 0.0;
    for (int i = 0; i < M; i += 7)
        for (int j = 0; j < N; j += 5) {
            double s = bias ? b[j] : 0.0;
            for (int k = 0; k < K; k++) {
                const double a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                s += a * (tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
            }
            const double e = fabs(C2[(size_t)i * N + j] - s) / (1.0 + fabs(s));
            worst = e > worst ? e : worst;
        }
    CHECK(worst < 1e-4, "gemm %d%d %dx%dx%d: off the naive sums by %g", ta, tb, M, N, K, worst);
    free(A), free(B), free(C1), free(C2), free(b);
}

int main(void) {
    bf_openblas_set_num_threads(4); /* slots: 4 even on a one-core machine */
    const int slots = bf_par_slots();
    printf("slots %d\n", slots);
    CHECK(slots == 4, "slots %d, expected 4", slots);

    reset();
    bf_par_for(NT, 8, count, NULL);
    CHECK(all_equal(NT, 1), "a task did not run exactly once");
    CHECK(atomic_load(&slot_bad) == 0, "slot out of range");

    reset();
    bf_par_for(NT, 1, count, NULL); /* threads 1: all on the caller */
    CHECK(all_equal(NT, 1), "serial: a task did not run exactly once");

    reset();
    bf_par_for(20, 8, nested, NULL);
    CHECK(all_equal(10, 21) && all_equal(20, 21) == 0, "nested calls: counts wrong");

    reset();
    pthread_t a, b;
    pthread_create(&a, NULL, caller, NULL);
    pthread_create(&b, NULL, caller, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    CHECK(all_equal(NT, 400), "two callers: a task did not run exactly once per call");

    reset(); /* a job on 2 threads of 4: slots 0 and 1 only */
    for (int r = 0; r < 20; r++) bf_par_for(64, 2, note_slot, NULL);
    CHECK(all_equal(64, 20) && atomic_load(&max_slot) <= 1, "2 threads: slot %d ran a task", atomic_load(&max_slot));

    atomic_store(&worker_tasks, 0);
    for (int r = 0; r < 50; r++) bf_par_for(32, 8, slow, NULL);
    printf("tasks run by workers: %d of 1600\n", atomic_load(&worker_tasks));
    CHECK(atomic_load(&worker_tasks) > 0, "the workers never took a task");

    pid_t pid = fork();
    if (pid == 0) {
        reset();
        for (int r = 0; r < 20; r++) bf_par_for(NT, 8, count, NULL);
        _exit(all_equal(NT, 20) ? 0 : 3);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "forked child: status %d", st);

    long covered = 0, prev = 0;
    const long parts = bf_par_parts(1001, 100, 7);
    CHECK(parts == 7, "parts %ld", parts);
    for (long t = 0; t < parts; t++) {
        long lo, hi;
        bf_par_range(1001, parts, t, &lo, &hi);
        CHECK(lo == prev && hi >= lo, "range %ld: [%ld, %ld)", t, lo, hi);
        covered += hi - lo;
        prev = hi;
    }
    CHECK(covered == 1001 && bf_par_parts(50, 100, 7) == 1, "ranges do not cover [0, 1001)");

    /* the grains measured on this OpenBLAS: at least one side can be cut */
    int grain_rows, grain_cols;
    bf_gemm_split_grains(&grain_rows, &grain_cols);
    printf("split grains: rows %d, columns %d\n", grain_rows, grain_cols);
    CHECK(grain_rows > 0 || grain_cols > 0, "no side of a GEMM can be cut: every GEMM runs on one thread");
    /* shapes split by rows and by columns, uneven parts, small ones not split */
    const int shapes[][3] = {{4096, 256, 256}, {300, 1000, 64}, {1000, 37, 512}, {17, 4096, 300}, {33, 33, 33},
                             {2048, 512, 1024}, {64, 512, 128}};
    for (int s = 0; s < 7; s++)
        for (int t = 0; t < 4; t++) check_gemm(t >> 1, t & 1, shapes[s][0], shapes[s][1], shapes[s][2], 0);
    for (int s = 0; s < 7; s++) check_gemm(0, 0, shapes[s][0], shapes[s][1], shapes[s][2], 1);
    bf_par_set_threads(1); /* one thread: the same bits again */
    check_gemm(0, 0, 4096, 256, 256, 1);
    check_gemm(1, 0, 256, 1024, 4096, 0);

    printf("%d FAIL\n", fails);
    return fails != 0;
}
