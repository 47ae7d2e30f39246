/* scan.c - cumulative sum / product along one axis on the CPU (bf_axis_geom,
 * backend.h): keras.ops cumsum / cumprod. Each (outer, inner) line runs along
 * n in order, one operation per element as csrc/cuda/scan.cu does (the same
 * bits). A product's gradient uses no division: exact where an element is 0. */
#include "cpu_ops.h"

static bf_status check(const bf_axis_geom *g) {
    if (!g || g->outer < 0 || g->inner < 0 || g->n < 1) return BF_FAIL(BF_ERR_INTERNAL, "scan: bad geometry");
    return BF_OK;
}

// out (outer, n, inner) = cumsum / cumprod of inp along n
bf_status bf_cpu_scan_forward(bf_backend *be, float *out, const float *inp, const bf_axis_geom *g) {
    (void)be;
    BF_TRY(check(g));
    const long N = g->n, I = g->inner;
    for (long o = 0; o < g->outer; o++) {
        const float *x = inp + o * N * I;
        float *y = out + o * N * I;
        for (long i = 0; i < I; i++) y[i] = x[i];
        for (long j = 1; j < N; j++)
            for (long i = 0; i < I; i++)
                y[j * I + i] = g->prod ? y[(j - 1) * I + i] * x[j * I + i] : y[(j - 1) * I + i] + x[j * I + i];
    }
    return BF_OK;
}

// dinp (outer, n, inner): sum: S_j = dout_j + S_{j+1}; product: S_j = dout_j + inp_{j+1} S_{j+1}, dinp_j = out_{j-1} S_j
bf_status bf_cpu_scan_backward(bf_backend *be, float *dinp, const float *dout, const float *inp, const float *out,
                               const bf_axis_geom *g) {
    (void)be;
    BF_TRY(check(g));
    const long N = g->n, I = g->inner;
    for (long o = 0; o < g->outer; o++)
        for (long i = 0; i < I; i++) {
            const long base = o * N * I + i;
            float s = 0.0f;
            for (long j = N - 1; j >= 0; j--) {
                const long at = base + j * I;
                if (!g->prod) {
                    s = dout[at] + s;
                    dinp[at] = s;
                    continue;
                }
                const float t = j + 1 < N ? inp[at + I] * s : 0.0f;
                s = dout[at] + t;
                dinp[at] = j > 0 ? out[at - I] * s : s;
            }
        }
    return BF_OK;
}
