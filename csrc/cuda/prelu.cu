/* prelu.cu - PReLU on the GPU, as csrc/cpu/prelu.c: inp, out (P,Q,R,S), alpha
 * (Q,S) broadcast over P and R. Forward and the input gradient: one thread per
 * element (grid-stride), the gradient OVERWRITING dinp. alpha's gradient: a
 * column reduction (colreduce.cuh) of the (P*R, Q*S) view, row n = (p, r),
 * column c = (q, s): fixed row splits summed in double by fixed trees, then
 * the splits added in order and ADDED into dalpha; no atomics, so the same
 * bits run to run. More alpha elements than the scratch holds: one thread per
 * element over its rows in order. dinp and dalpha may each be NULL. */
#include "colreduce.cuh"

// the flat index of (p, q, r, s) for view row n = p*R + r and column c = q*S + s
__device__ __forceinline__ long prelu_at(long n, int c, int Q, int R, int S) {
    const long p = n / R, r = n % R;
    const int q = c / S, s = c % S;
    return ((p * Q + q) * R + r) * S + s;
}

// out (P,Q,R,S) = inp > 0 ? inp : alpha (Q,S) * inp
__global__ void prelu_forward_kernel(float *out, const float *inp, const float *alpha, long n, int Q, int R, int S) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float x = inp[i];
        const long q = (i / ((long)R * S)) % Q;
        out[i] = x > 0.0f ? x : __fmul_rn(alpha[q * S + i % S], x);
    }
}

// dinp (P,Q,R,S) = dout * (inp > 0 ? 1 : inp < 0 ? alpha : 0)
__global__ void prelu_backward_data_kernel(float *dinp, const float *dout, const float *inp, const float *alpha,
                                           long n, int Q, int R, int S) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float x = inp[i];
        const long q = (i / ((long)R * S)) % Q;
        dinp[i] = x > 0.0f ? dout[i] : x < 0.0f ? __fmul_rn(dout[i], alpha[q * S + i % S]) : 0.0f;
    }
}

struct bf_prelu_da_f {
    const float *dout, *inp;
    int Q, R, S;
    __device__ void operator()(long n, int c, double *acc) const {
        const long i = prelu_at(n, c, Q, R, S);
        const float x = inp[i];
        if (x < 0.0f) acc[0] += (double)dout[i] * (double)x;
    }
};

// part (splits, Q*S) = per-split sums over the rows (p, r) of dout * min(inp, 0)
__global__ void prelu_dalpha_partial_kernel(double *part, const float *dout, const float *inp, long N, int Q, int R,
                                            int S) {
    bf_colreduce<1>(part, N, Q * S, bf_prelu_da_f{dout, inp, Q, R, S});
}

// dalpha (C) += the splits of part (splits, C) in order
__global__ void prelu_dalpha_finish_kernel(float *dalpha, const double *part, int splits, int C) {
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < C; c += gridDim.x * blockDim.x)
        dalpha[c] += (float)bf_col_total(part, 0, splits, C, c);
}

// dalpha (Q*S) += sum over the N = P*R rows in order; one thread per alpha element (more than the scratch holds)
__global__ void prelu_dalpha_direct_kernel(float *dalpha, const float *dout, const float *inp, long N, int Q, int R,
                                           int S) {
    const bf_prelu_da_f f{dout, inp, Q, R, S};
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < Q * S; c += gridDim.x * blockDim.x) {
        double t = 0.0;
        for (long n = 0; n < N; n++) f(n, c, &t);
        dalpha[c] += (float)t;
    }
}

bf_status bf_cuda_prelu_forward(bf_backend *be, float *out, const float *inp, const float *alpha, long P, int Q,
                                int R, int S) {
    BF_CUDA_ENTER(st, be);
    const long n = P * Q * R * S;
    if (n <= 0) return BF_OK;
    prelu_forward_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(out, inp, alpha, n, Q, R, S);
    BF_CUDA_LAUNCHED(st, prelu_forward_kernel);
    return BF_OK;
}

bf_status bf_cuda_prelu_backward(bf_backend *be, float *dinp, float *dalpha, const float *dout, const float *inp,
                                 const float *alpha, long P, int Q, int R, int S) {
    BF_CUDA_ENTER(st, be);
    const long n = P * Q * R * S, N = P * R;
    const int C = Q * S;
    if (n <= 0) return BF_OK;
    if (dinp) {
        prelu_backward_data_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(dinp, dout, inp, alpha, n, Q, R,
                                                                                  S);
        BF_CUDA_LAUNCHED(st, prelu_backward_data_kernel);
    }
    if (!dalpha) return BF_OK;
    BF_TRY(bf_cuda_need_scratch(st, "prelu backward"));
    const int splits = bf_col_splits(N, C, 1, 0);
    if (splits == 0) {
        prelu_dalpha_direct_kernel<<<bf_cuda_grid(C, 256), 256, 0, st->stream>>>(dalpha, dout, inp, N, Q, R, S);
        BF_CUDA_LAUNCHED(st, prelu_dalpha_direct_kernel);
        return BF_OK;
    }
    dim3 grid((unsigned)((C + 31) / 32), (unsigned)splits), block(32, BF_COL_TY);
    prelu_dalpha_partial_kernel<<<grid, block, 0, st->stream>>>(st->scratch, dout, inp, N, Q, R, S);
    BF_CUDA_LAUNCHED(st, prelu_dalpha_partial_kernel);
    prelu_dalpha_finish_kernel<<<bf_cuda_grid(C, 256), 256, 0, st->stream>>>(dalpha, st->scratch, splits, C);
    BF_CUDA_LAUNCHED(st, prelu_dalpha_finish_kernel);
    return BF_OK;
}
