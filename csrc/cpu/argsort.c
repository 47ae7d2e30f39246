/* argsort.c - the first k positions of a stable sort along one axis on the
 * CPU (bf_axis_geom, backend.h): keras.ops argsort / sort / top_k. Each
 * (outer, inner) line is merge-sorted (stable, so ties keep their order) in
 * the planned scratch of 2 n ints; NaN sorts above every number. The order is
 * total, so csrc/cuda/argsort.cu's ranks give the same positions. */
#include "cpu_ops.h"

/* a before b in ascending order: NaN above everything */
static int lt(float a, float b) { return a < b || (b != b && a == a); }

size_t bf_cpu_argsort_workspace_bytes(bf_backend *be, const bf_axis_geom *g) {
    (void)be;
    return 2 * sizeof(int) * (size_t)g->n;
}

/* one line x (n, stride s) sorted: its positions in order, in a (n) or b (n), whichever the last pass wrote */
static const int *sort_line(int *a, int *b, const float *x, long s, int n, int desc) {
    for (int j = 0; j < n; j++) a[j] = j;
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            const int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int p = lo, q = mid, o = lo;
            while (p < mid && q < hi) {
                const float u = x[(long)a[q] * s], v = x[(long)a[p] * s];
                b[o++] = (desc ? lt(v, u) : lt(u, v)) ? a[q++] : a[p++]; /* the right one only when strictly first */
            }
            while (p < mid) b[o++] = a[p++];
            while (q < hi) b[o++] = a[q++];
        }
        int *t = a;
        a = b;
        b = t;
    }
    return a;
}

// out (outer, k, inner) = the positions along n of the k first elements of inp (outer, n, inner) in order
bf_status bf_cpu_argsort(bf_backend *be, float *out, void *ws, const float *inp, const bf_axis_geom *g) {
    (void)be;
    if (!g || g->outer < 0 || g->inner < 0 || g->n < 1 || g->k < 1 || g->k > g->n || !ws)
        return BF_FAIL(BF_ERR_INTERNAL, "argsort: bad geometry");
    const long N = g->n, I = g->inner;
    int *a = (int *)ws, *b = a + N;
    for (long o = 0; o < g->outer; o++)
        for (long i = 0; i < I; i++) {
            const int *p = sort_line(a, b, inp + o * N * I + i, I, g->n, g->descending);
            for (int j = 0; j < g->k; j++) out[(o * g->k + j) * I + i] = (float)p[j];
        }
    return BF_OK;
}
