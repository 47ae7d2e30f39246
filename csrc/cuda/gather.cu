/* gather.cu - gather along one axis and its adjoint, the scatter-add, on CUDA
 * (bf_gather_geom, backend.h), as csrc/cpu/gather.c. Forward: one thread per
 * output element. Backward without atomics: dx is zeroed, then one thread per
 * coordinate of the output axes that address x (xs != 0: the axes other than
 * the gathered one, whose elements no other thread touches) adds the outputs
 * of the remaining axes (xs == 0: the index axes, broadcast axes) in their
 * row-major order, the CPU's order: the same bits, run to run. */
#include <math.h>

#include "cuda_ops.h"

__device__ __forceinline__ int gather_at(float v, int na, long *j) {
    if (!(v > -(float)na - 1.0f && v < (float)na)) return 0;
    long k = (long)v;
    if (k < 0) k += na;
    *j = k;
    return k >= 0 && k < na;
}

// out (n_0..n_{nd-1}) = x[sum i_k xs_k + j ax], j = idx[sum i_k is_k]; NaN where j is out of range
__global__ void gather_forward_kernel(float *out, const float *x, const float *idx, bf_gather_geom g, long total) {
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < total; e += (long)gridDim.x * blockDim.x) {
        long rest = e, xo = 0, io = 0, j;
        for (int k = g.nd - 1; k >= 0; k--) {
            const long ik = rest % g.n[k];
            rest /= g.n[k];
            xo += ik * g.xs[k];
            io += ik * g.is[k];
        }
        out[e] = gather_at(idx[io], g.na, &j) ? x[xo + j * g.ax] : NAN;
    }
}

__global__ void gather_zero_kernel(float *dx, long n) {
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < n; e += (long)gridDim.x * blockDim.x) dx[e] = 0.0f;
}

// dx[sum i_k xs_k + j ax] += dout (n_0..n_{nd-1}): thread t = the owned axes' coordinate, the free ones in order
__global__ void gather_backward_kernel(float *dx, const float *dout, const float *idx, bf_gather_geom g, long owned,
                                       long freen) {
    long os[BF_GATHER_MAXD]; /* the output's row-major strides */
    os[g.nd - 1] = 1;
    for (int k = g.nd - 2; k >= 0; k--) os[k] = os[k + 1] * g.n[k + 1];
    for (long t = blockIdx.x * (long)blockDim.x + threadIdx.x; t < owned; t += (long)gridDim.x * blockDim.x) {
        long rest = t, xo = 0, io0 = 0, oo0 = 0;
        for (int k = g.nd - 1; k >= 0; k--) {
            if (g.xs[k] == 0) continue;
            const long ik = rest % g.n[k];
            rest /= g.n[k];
            xo += ik * g.xs[k];
            io0 += ik * g.is[k];
            oo0 += ik * os[k];
        }
        for (long f = 0; f < freen; f++) {
            long r = f, io = io0, oo = oo0, j;
            for (int k = g.nd - 1; k >= 0; k--) {
                if (g.xs[k] != 0) continue;
                const long ik = r % g.n[k];
                r /= g.n[k];
                io += ik * g.is[k];
                oo += ik * os[k];
            }
            if (gather_at(idx[io], g.na, &j)) dx[xo + j * g.ax] += dout[oo];
        }
    }
}

static bf_status check(const bf_gather_geom *g, long *owned, long *freen) {
    if (!g || g->nd < 1 || g->nd > BF_GATHER_MAXD || g->na < 1)
        return BF_FAIL(BF_ERR_INTERNAL, "gather: bad geometry");
    *owned = *freen = 1;
    for (int k = 0; k < g->nd; k++) {
        if (g->n[k] < 0) return BF_FAIL(BF_ERR_INTERNAL, "gather: negative size");
        *(g->xs[k] ? owned : freen) *= g->n[k];
    }
    return BF_OK;
}

bf_status bf_cuda_gather_forward(bf_backend *be, float *out, const float *x, const float *idx,
                                 const bf_gather_geom *g) {
    BF_CUDA_ENTER(st, be);
    long owned, freen;
    BF_TRY(check(g, &owned, &freen));
    const long total = owned * freen;
    if (total == 0) return BF_OK;
    gather_forward_kernel<<<bf_cuda_grid(total, 256), 256, 0, st->stream>>>(out, x, idx, *g, total);
    BF_CUDA_LAUNCHED(st, gather_forward_kernel);
    return BF_OK;
}

bf_status bf_cuda_gather_backward(bf_backend *be, float *dx, const float *dout, const float *idx,
                                  const bf_gather_geom *g) {
    BF_CUDA_ENTER(st, be);
    long owned, freen;
    BF_TRY(check(g, &owned, &freen));
    if (g->xn > 0) {
        gather_zero_kernel<<<bf_cuda_grid(g->xn, 256), 256, 0, st->stream>>>(dx, g->xn);
        BF_CUDA_LAUNCHED(st, gather_zero_kernel);
    }
    if (owned * freen == 0) return BF_OK;
    gather_backward_kernel<<<bf_cuda_grid(owned, 256), 256, 0, st->stream>>>(dx, dout, idx, *g, owned, freen);
    BF_CUDA_LAUNCHED(st, gather_backward_kernel);
    return BF_OK;
}
