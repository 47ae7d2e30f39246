/* scan.cu - cumulative sum / product along one axis on CUDA (bf_axis_geom,
 * backend.h), as csrc/cpu/scan.c: one thread per (outer, inner) line, along n
 * in order with explicitly rounded operations (no fused multiply-add), so the
 * bits are the CPU's. A product's gradient uses no division. */
#include "cuda_ops.h"

// out (outer, n, inner) = cumsum / cumprod of inp along n
__global__ void scan_forward_kernel(float *out, const float *inp, bf_axis_geom g) {
    const long lines = g.outer * g.inner, N = g.n, I = g.inner;
    for (long t = blockIdx.x * (long)blockDim.x + threadIdx.x; t < lines; t += (long)gridDim.x * blockDim.x) {
        const long base = (t / I) * N * I + t % I;
        float y = inp[base];
        out[base] = y;
        for (long j = 1; j < N; j++) {
            const float x = inp[base + j * I];
            y = g.prod ? __fmul_rn(y, x) : __fadd_rn(y, x);
            out[base + j * I] = y;
        }
    }
}

// dinp (outer, n, inner): S_j = dout_j + S_{j+1} (sum) or dout_j + inp_{j+1} S_{j+1}, dinp_j = out_{j-1} S_j (product)
__global__ void scan_backward_kernel(float *dinp, const float *dout, const float *inp, const float *out,
                                     bf_axis_geom g) {
    const long lines = g.outer * g.inner, N = g.n, I = g.inner;
    for (long t = blockIdx.x * (long)blockDim.x + threadIdx.x; t < lines; t += (long)gridDim.x * blockDim.x) {
        const long base = (t / I) * N * I + t % I;
        float s = 0.0f;
        for (long j = N - 1; j >= 0; j--) {
            const long at = base + j * I;
            if (!g.prod) {
                s = __fadd_rn(dout[at], s);
                dinp[at] = s;
                continue;
            }
            const float u = j + 1 < N ? __fmul_rn(inp[at + I], s) : 0.0f;
            s = __fadd_rn(dout[at], u);
            dinp[at] = j > 0 ? __fmul_rn(out[at - I], s) : s;
        }
    }
}

static bf_status check(const bf_axis_geom *g) {
    if (!g || g->outer < 0 || g->inner < 0 || g->n < 1) return BF_FAIL(BF_ERR_INTERNAL, "scan: bad geometry");
    return BF_OK;
}

bf_status bf_cuda_scan_forward(bf_backend *be, float *out, const float *inp, const bf_axis_geom *g) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check(g));
    const long lines = g->outer * g->inner;
    if (lines == 0) return BF_OK;
    scan_forward_kernel<<<bf_cuda_grid(lines, 256), 256, 0, st->stream>>>(out, inp, *g);
    BF_CUDA_LAUNCHED(st, scan_forward_kernel);
    return BF_OK;
}

bf_status bf_cuda_scan_backward(bf_backend *be, float *dinp, const float *dout, const float *inp, const float *out,
                                const bf_axis_geom *g) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check(g));
    const long lines = g->outer * g->inner;
    if (lines == 0) return BF_OK;
    scan_backward_kernel<<<bf_cuda_grid(lines, 256), 256, 0, st->stream>>>(dinp, dout, inp, out, *g);
    BF_CUDA_LAUNCHED(st, scan_backward_kernel);
    return BF_OK;
}
