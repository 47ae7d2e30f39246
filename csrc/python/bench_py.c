/* bench_py.c - micro-benchmarks used by benchmarks/: the BLAS sgemm rate and
 * the Adam update rate, measured on the engine's own kernels. Buffers come
 * from an arena like every other engine allocation. */
#include <time.h>

#include "glue.h"

#include "arena.h"
#include "blas.h"
#include "cpu_ops.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* bench_sgemm(M, N, K, iters) -> seconds per call of C (M,N) = A (M,K) @ B (K,N) */
PyObject *bf_py_bench_sgemm(PyObject *self, PyObject *args) {
    int M, N, K, iters;
    if (!PyArg_ParseTuple(args, "iiii", &M, &N, &K, &iters)) return NULL;
    if (M <= 0 || N <= 0 || K <= 0 || iters <= 0) return PyErr_Format(PyExc_ValueError, "sizes must be positive");
    bf_arena a;
    bf_arena_init(&a, bf_cpu_backend(), "host", 0);
    size_t n = (size_t)M * K + (size_t)K * N + (size_t)M * N;
    bf_status s = bf_arena_reserve(&a, n * sizeof(float));
    float *p = NULL;
    if (s == BF_OK) s = bf_arena_alloc(&a, n * sizeof(float), (void **)&p);
    if (s != BF_OK) { bf_arena_release(&a); return bf_raise(bf_state_of_module(self), s); }
    for (size_t i = 0; i < n; i++) p[i] = (float)(i % 7) * 0.1f;
    double t0 = 0, t1 = 0;
    Py_BEGIN_ALLOW_THREADS
    bf_sgemm(0, 0, M, N, K, 1.0f, p, K, p + (size_t)M * K, N, 0.0f, p + (size_t)M * K + (size_t)K * N, N);
    t0 = now();
    for (int i = 0; i < iters; i++)
        bf_sgemm(0, 0, M, N, K, 1.0f, p, K, p + (size_t)M * K, N, 0.0f, p + (size_t)M * K + (size_t)K * N, N);
    t1 = now();
    Py_END_ALLOW_THREADS
    bf_arena_release(&a);
    return PyFloat_FromDouble((t1 - t0) / iters);
}

/* bench_adam(n, iters) -> seconds per Adam update of n parameters */
PyObject *bf_py_bench_adam(PyObject *self, PyObject *args) {
    long n;
    int iters;
    PyObject *n_obj;
    if (!PyArg_ParseTuple(args, "Oi", &n_obj, &iters)) return NULL;
    if (bf_py_long(n_obj, "bench_adam", "n", 1, 1L << 40, &n) < 0) return NULL; /* 4 n floats: no size_t wrap */
    if (iters <= 0) return PyErr_Format(PyExc_ValueError, "iters must be positive, got %d", iters);
    bf_arena a;
    bf_arena_init(&a, bf_cpu_backend(), "host", 0);
    bf_status s = bf_arena_reserve(&a, 4 * (size_t)n * sizeof(float));
    float *p = NULL;
    if (s == BF_OK) s = bf_arena_alloc(&a, 4 * (size_t)n * sizeof(float), (void **)&p);
    if (s != BF_OK) { bf_arena_release(&a); return bf_raise(bf_state_of_module(self), s); }
    for (long i = 0; i < 4 * n; i++) p[i] = 0.01f;
    double t0 = 0, t1 = 0;
    Py_BEGIN_ALLOW_THREADS
    t0 = now();
    for (int i = 0; i < iters; i++) { bf_update_args ua = {.kind = BF_UPD_ADAM, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-7f, .t = i + 1}; bf_cpu_opt_update_serial(NULL, p, p + n, p + 2 * n, NULL, p + 3 * n, n, &ua); }
    t1 = now();
    Py_END_ALLOW_THREADS
    bf_arena_release(&a);
    return PyFloat_FromDouble((t1 - t0) / iters);
}
