/* emap.cu - the elementwise primitives on CUDA with the CPU's formulas
 * (core/emap_math.h): unary_map / unary_grad grid-stride over n elements;
 * binary_map one thread per output element (its index split into the
 * broadcast axes); binary_grad one thread per element of the operand's
 * gradient, summing the axes it broadcasts along in the thread (no atomics:
 * the CPU's order, the same bits on the emulation). */
#include "cuda_ops.h" /* first: the core headers with C linkage */
#include "emap_math.h"

// out (n) = op(x (n))
__global__ void unary_map_kernel(float *out, const float *x, bf_map_op m, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        out[i] = bf_map_value(m.op, m.left, x[i], m.p, m.q, m.r);
}

// dx (n) = op'(x, y) * dout
__global__ void unary_grad_kernel(float *dx, const float *x, const float *y, const float *dout, bf_map_op m, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        dx[i] = dout[i] * bf_map_grad(m.op, m.left, x[i], y[i], m.p, m.q, m.r);
}

// out (g.n) = op(a, b) broadcast through g.s
__global__ void binary_map_kernel(float *out, const float *a, const float *b, int op, bf_bcast g, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        long rest = i, oa = 0, ob = 0;
        for (int d = g.nd - 1; d >= 0; d--) {
            const long k = rest % g.n[d];
            rest /= g.n[d];
            oa += k * g.s[0][d];
            ob += k * g.s[1][d];
        }
        out[i] = bf_binary_value(op, a[oa], b[ob]);
    }
}

// d (q.size) = the sum over operand j's broadcast axes of d op / d operand_j * dout
__global__ void binary_grad_kernel(float *d, int j, const float *a, const float *b, const float *y, const float *dout,
                                   int op, bf_grad_geom q) {
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < q.size; e += (long)gridDim.x * blockDim.x)
        d[e] = bf_binary_grad_elem(&q, e, op, j, a, b, y, dout);
}


bf_status bf_cuda_unary_map(bf_backend *be, float *out, const float *x, const bf_map_op *m, long n) {
    BF_CUDA_ENTER(st, be);
    if (n == 0) return BF_OK;
    unary_map_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(out, x, *m, n);
    BF_CUDA_LAUNCHED(st, unary_map_kernel);
    return BF_OK;
}

bf_status bf_cuda_unary_grad(bf_backend *be, float *dx, const float *x, const float *y, const float *dout,
                             const bf_map_op *m, long n) {
    BF_CUDA_ENTER(st, be);
    if (n == 0) return BF_OK;
    unary_grad_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(dx, x, y, dout, *m, n);
    BF_CUDA_LAUNCHED(st, unary_grad_kernel);
    return BF_OK;
}

bf_status bf_cuda_binary_map(bf_backend *be, float *out, const float *a, const float *b, int op, const bf_bcast *g) {
    BF_CUDA_ENTER(st, be);
    const long n = bf_bcast_size(g);
    if (n == 0) return BF_OK;
    binary_map_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(out, a, b, op, *g, n);
    BF_CUDA_LAUNCHED(st, binary_map_kernel);
    return BF_OK;
}

bf_status bf_cuda_binary_grad(bf_backend *be, float *d, int j, const float *a, const float *b, const float *y,
                              const float *dout, int op, const bf_bcast *g) {
    BF_CUDA_ENTER(st, be);
    const long n = bf_bcast_size(g);
    if (n == 0) return BF_OK;
    bf_grad_geom q;
    bf_grad_geometry(g, j, &q);
    binary_grad_kernel<<<bf_cuda_grid(q.size, 256), 256, 0, st->stream>>>(d, j, a, b, y, dout, op, q);
    BF_CUDA_LAUNCHED(st, binary_grad_kernel);
    return BF_OK;
}
