/* gather.c - gather along one axis and its adjoint, the scatter-add, on the
 * CPU (bf_gather_geom, backend.h): keras.ops take / take_along_axis and the
 * values of sort / top_k. Walks the output index like an odometer; backward
 * adds in the output's row-major order, the order csrc/cuda/gather.cu keeps
 * per element of dx, so both give the same bits. */
#include <math.h>
#include <string.h>

#include "cpu_ops.h"

/* the position an index value names along an axis of na: truncated, a negative one counted from the end;
 * 0 when it names none (NaN, out of range) */
static int gather_at(float v, int na, long *j) {
    if (!(v > -(float)na - 1.0f && v < (float)na)) return 0;
    long k = (long)v;
    if (k < 0) k += na;
    *j = k;
    return k >= 0 && k < na;
}

static bf_status check(const bf_gather_geom *g, long *total) {
    if (!g || g->nd < 1 || g->nd > BF_GATHER_MAXD || g->na < 1)
        return BF_FAIL(BF_ERR_INTERNAL, "gather: bad geometry");
    *total = 1;
    for (int k = 0; k < g->nd; k++) {
        if (g->n[k] < 0) return BF_FAIL(BF_ERR_INTERNAL, "gather: negative size");
        *total *= g->n[k];
    }
    return BF_OK;
}

/* the next output index: x and idx offsets follow the odometer k */
static void step(const bf_gather_geom *g, long *k, long *xo, long *io) {
    for (int d = g->nd - 1; d >= 0; d--) {
        *xo += g->xs[d];
        *io += g->is[d];
        if (++k[d] < g->n[d]) return;
        *xo -= g->xs[d] * g->n[d];
        *io -= g->is[d] * g->n[d];
        k[d] = 0;
    }
}

// out (n_0..n_{nd-1}) = x[sum i_k xs_k + j ax], j = idx[sum i_k is_k]; NaN where j is out of range
bf_status bf_cpu_gather_forward(bf_backend *be, float *out, const float *x, const float *idx,
                                const bf_gather_geom *g) {
    (void)be;
    long total, k[BF_GATHER_MAXD] = {0}, xo = 0, io = 0;
    BF_TRY(check(g, &total));
    for (long e = 0; e < total; e++, step(g, k, &xo, &io)) {
        long j;
        out[e] = gather_at(idx[io], g->na, &j) ? x[xo + j * g->ax] : NAN;
    }
    return BF_OK;
}

// dx (xn) = 0; dx[sum i_k xs_k + j ax] += dout (n_0..n_{nd-1}) in row-major order
bf_status bf_cpu_gather_backward(bf_backend *be, float *dx, const float *dout, const float *idx,
                                 const bf_gather_geom *g) {
    (void)be;
    long total, k[BF_GATHER_MAXD] = {0}, xo = 0, io = 0;
    BF_TRY(check(g, &total));
    memset(dx, 0, sizeof(float) * (size_t)g->xn);
    for (long e = 0; e < total; e++, step(g, k, &xo, &io)) {
        long j;
        if (gather_at(idx[io], g->na, &j)) dx[xo + j * g->ax] += dout[e];
    }
    return BF_OK;
}
