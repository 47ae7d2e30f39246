/* argsort.cu - the first k positions of a stable sort along one axis on CUDA
 * (bf_axis_geom, backend.h), as csrc/cpu/argsort.c: one thread per element
 * counts the elements of its line that come before it (smaller, or equal at an
 * earlier position; NaN above every number) and, when that rank is below k,
 * writes its position there. The order is total, so the positions are the
 * CPU's merge sort's. O(n) per element, no scratch, no atomics. */
#include "cuda_ops.h"

__device__ __forceinline__ int argsort_lt(float a, float b) { return a < b || (b != b && a == a); }

// out (outer, k, inner) = the positions along n of the k first elements of inp (outer, n, inner) in order
__global__ void argsort_kernel(float *out, const float *inp, bf_axis_geom g) {
    const long N = g.n, I = g.inner, total = g.outer * N * I;
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < total; e += (long)gridDim.x * blockDim.x) {
        const long o = e / (N * I), j = (e / I) % N, i = e % I, base = o * N * I + i;
        const float v = inp[e];
        long rank = 0;
        for (long m = 0; m < N; m++) {
            const float u = inp[base + m * I];
            const int before = g.descending ? argsort_lt(v, u) : argsort_lt(u, v);
            const int after = g.descending ? argsort_lt(u, v) : argsort_lt(v, u);
            rank += before || (!after && m < j);
        }
        if (rank < g.k) out[(o * g.k + rank) * I + i] = (float)j;
    }
}

size_t bf_cuda_argsort_workspace_bytes(bf_backend *be, const bf_axis_geom *g) {
    (void)be;
    (void)g;
    return 0;
}

bf_status bf_cuda_argsort(bf_backend *be, float *out, void *ws, const float *inp, const bf_axis_geom *g) {
    BF_CUDA_ENTER(st, be);
    (void)ws;
    if (!g || g->outer < 0 || g->inner < 0 || g->n < 1 || g->k < 1 || g->k > g->n)
        return BF_FAIL(BF_ERR_INTERNAL, "argsort: bad geometry");
    const long total = g->outer * (long)g->n * g->inner;
    if (total == 0) return BF_OK;
    argsort_kernel<<<bf_cuda_grid(total, 256), 256, 0, st->stream>>>(out, inp, *g);
    BF_CUDA_LAUNCHED(st, argsort_kernel);
    return BF_OK;
}
