/* gather.c - gather along one axis and its adjoint, the scatter-add, on the
 * CPU (bf_gather_geom, backend.h): keras.ops take / take_along_axis, RepeatVector and the
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

/* the rows: an odometer over the axes before the last (the last axis is walked inside a row) */
static bf_gather_geom rows_of(const bf_gather_geom *g) {
    bf_gather_geom r = *g;
    r.nd = g->nd - 1;
    return r;
}

// out (n_0..n_{nd-1}) = x[sum i_k xs_k + j ax], j = idx[sum i_k is_k]; NaN where j is out of range. A row whose
// index is one (is along the last axis 0: repeat, tile, broadcast_to, upsampling) is one lookup and a copy
bf_status bf_cpu_gather_forward(bf_backend *be, float *out, const float *x, const float *idx,
                                const bf_gather_geom *g) {
    (void)be;
    long total = 0, k[BF_GATHER_MAXD] = {0}, xo = 0, io = 0, j;
    BF_TRY(check(g, &total));
    const bf_gather_geom rows = rows_of(g);
    const int L = g->nd - 1;
    const long n = g->n[L], xs = g->xs[L], is = g->is[L];
    for (long e = 0; n > 0 && e < total; e += n, step(&rows, k, &xo, &io)) {
        if (is == 0) {
            const int in = gather_at(idx[io], g->na, &j);
            for (long t = 0; t < n; t++) out[e + t] = in ? x[xo + j * g->ax + t * xs] : NAN;
        } else {
            for (long t = 0; t < n; t++)
                out[e + t] = gather_at(idx[io + t * is], g->na, &j) ? x[xo + t * xs + j * g->ax] : NAN;
        }
    }
    return BF_OK;
}

// dx (xn) = 0; dx[sum i_k xs_k + j ax] += dout (n_0..n_{nd-1}) in row-major order (a row of one index: one lookup)
bf_status bf_cpu_gather_backward(bf_backend *be, float *dx, const float *dout, const float *idx,
                                 const bf_gather_geom *g) {
    (void)be;
    long total = 0, k[BF_GATHER_MAXD] = {0}, xo = 0, io = 0, j;
    BF_TRY(check(g, &total));
    memset(dx, 0, sizeof(float) * (size_t)g->xn);
    const bf_gather_geom rows = rows_of(g);
    const int L = g->nd - 1;
    const long n = g->n[L], xs = g->xs[L], is = g->is[L];
    for (long e = 0; n > 0 && e < total; e += n, step(&rows, k, &xo, &io)) {
        if (is == 0) {
            if (gather_at(idx[io], g->na, &j))
                for (long t = 0; t < n; t++) dx[xo + j * g->ax + t * xs] += dout[e + t];
        } else {
            for (long t = 0; t < n; t++)
                if (gather_at(idx[io + t * is], g->na, &j)) dx[xo + t * xs + j * g->ax] += dout[e + t];
        }
    }
    return BF_OK;
}
