/* reduce_axes.cu - the reduction over any axes (bf_reduce_geom, backend.h) on
 * the GPU, as csrc/cpu/reduce_axes.c: one thread per output element walks its
 * elements in row-major order of the reduced axes (sums and products in
 * double), so the result does not depend on the launch and equals the CPU's
 * order; backward likewise writes the elements of its output element,
 * OVERWRITING dinp. No atomics, no scratch. (A block per output element with
 * a fixed tree would be faster for reductions of many elements per output.) */
#include "cuda_ops.h"
#include "reduce_walk.h"

/* f(i, pos) for every element of output o's set, in order (i: input offset, pos: position in the set) */
template <class F> __device__ void red_each(const bf_reduce_walk &j, long o, F f) {
    const long base = bf_reduce_base(&j, o), in = j.rn[j.nr - 1], is = j.rs[j.nr - 1];
    for (long k = 0; k < j.outer; k++) {
        const long at = base + bf_reduce_run(&j, k);
        for (long m = 0; m < in; m++) f(at + m * is, k * in + m);
    }
}

__device__ float red_max(const bf_reduce_walk &j, const float *inp, long o, bool want_max, long *where) {
    float m = NAN;
    long w = -1;
    red_each(j, o, [&](long i, long pos) {
        const float v = inp[i];
        if (w < 0 || (isnan(v) && !isnan(m)) || (!isnan(m) && (want_max ? v > m : v < m))) m = v, w = pos;
    });
    if (where) *where = w;
    return m;
}

// out (O) = op over each output element's R elements of inp
__global__ void reduce_forward_kernel(float *out, const float *inp, bf_reduce_walk j) {
    for (long o = blockIdx.x * (long)blockDim.x + threadIdx.x; o < j.O; o += (long)gridDim.x * blockDim.x) {
        double s = 0.0, p = 1.0;
        long w = 0;
        int flag;
        float r = NAN;
        switch (j.op) {
        case BF_RED_SUM:
        case BF_RED_MEAN:
            red_each(j, o, [&](long i, long) { s += inp[i]; });
            r = (float)(j.op == BF_RED_MEAN ? s / (double)j.R : s);
            break;
        case BF_RED_MAX:
        case BF_RED_MIN:
            r = red_max(j, inp, o, j.op == BF_RED_MAX, nullptr);
            break;
        case BF_RED_ARGMAX:
        case BF_RED_ARGMIN:
            red_max(j, inp, o, j.op == BF_RED_ARGMAX, &w);
            r = (float)w;
            break;
        case BF_RED_PROD:
            red_each(j, o, [&](long i, long) { p *= inp[i]; });
            r = (float)p;
            break;
        case BF_RED_ANY:
            flag = 0;
            red_each(j, o, [&](long i, long) { flag |= inp[i] != 0.0f; });
            r = (float)flag;
            break;
        case BF_RED_ALL:
            flag = 1;
            red_each(j, o, [&](long i, long) { flag &= inp[i] != 0.0f; });
            r = (float)flag;
            break;
        case BF_RED_LOGSUMEXP: {
            float m = red_max(j, inp, o, true, nullptr);
            if (!isfinite(m)) m = 0.0f;
            red_each(j, o, [&](long i, long) { s += exp((double)inp[i] - m); });
            r = (float)(m + log(s));
            break;
        }
        }
        out[o] = r;
    }
}

// dinp (the input) = the gradient of each output element times dout (O), overwritten
__global__ void reduce_backward_kernel(float *d, const float *dout, const float *inp, const float *fout,
                                       bf_reduce_walk j) {
    for (long o = blockIdx.x * (long)blockDim.x + threadIdx.x; o < j.O; o += (long)gridDim.x * blockDim.x) {
        const float g = dout[o];
        switch (j.op) {
        case BF_RED_SUM:
        case BF_RED_MEAN: {
            const float v = j.op == BF_RED_MEAN ? g / (float)j.R : g;
            red_each(j, o, [&](long i, long) { d[i] = v; });
            break;
        }
        case BF_RED_MAX:
        case BF_RED_MIN: {
            const float m = fout[o];
            long c = 0;
            red_each(j, o, [&](long i, long) { c += inp[i] == m; });
            const float share = c ? g / (float)c : 0.0f;
            red_each(j, o, [&](long i, long) { d[i] = inp[i] == m ? share : 0.0f; });
            break;
        }
        case BF_RED_PROD: {
            double p = 1.0;
            long zeros = 0;
            red_each(j, o, [&](long i, long) {
                const float v = inp[i];
                if (v == 0.0f) zeros++;
                else p *= v;
            });
            red_each(j, o, [&](long i, long) {
                const float v = inp[i];
                d[i] = zeros == 0 ? (float)(g * (p / v)) : zeros == 1 && v == 0.0f ? (float)(g * p) : 0.0f;
            });
            break;
        }
        case BF_RED_LOGSUMEXP: {
            const double m = fout[o];
            red_each(j, o, [&](long i, long) { d[i] = (float)(g * exp((double)inp[i] - m)); });
            break;
        }
        default:
            red_each(j, o, [&](long i, long) { d[i] = 0.0f; });
            break;
        }
    }
}

static bf_status red_check(const bf_reduce_geom *g) {
    if (!g || g->nd < 1 || g->nd > BF_REDUCE_MAXD || g->op < 0 || g->op > BF_RED_LAST)
        return BF_FAIL(BF_ERR_INTERNAL, "reduce: bad geometry");
    return BF_OK;
}

bf_status bf_cuda_reduce_forward(bf_backend *be, float *out, const float *inp, const bf_reduce_geom *g) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(red_check(g));
    bf_reduce_walk j;
    bf_reduce_walk_of(&j, g);
    if (j.O == 0 || j.R == 0) return BF_OK;
    reduce_forward_kernel<<<bf_cuda_grid(j.O, 128), 128, 0, st->stream>>>(out, inp, j);
    BF_CUDA_LAUNCHED(st, reduce_forward_kernel);
    return BF_OK;
}

bf_status bf_cuda_reduce_backward(bf_backend *be, float *dinp, const float *dout, const float *inp, const float *out,
                                  const bf_reduce_geom *g) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(red_check(g));
    bf_reduce_walk j;
    bf_reduce_walk_of(&j, g);
    if (j.O == 0 || j.R == 0) return BF_OK;
    reduce_backward_kernel<<<bf_cuda_grid(j.O, 128), 128, 0, st->stream>>>(dinp, dout, inp, out, j);
    BF_CUDA_LAUNCHED(st, reduce_backward_kernel);
    return BF_OK;
}
