/* colsum.cu - bias gradients: db (C) += column sums of dout (N,C), for Dense
 * (N = B) and Conv2D (N = B*OH*OW). Two deterministic passes through the
 * scratch (colreduce.cuh); a column count too large for the scratch falls back
 * to one thread per column. */
#include "colreduce.cuh"

struct bf_colsum_f {
    const float *x;
    int C;
    __device__ void operator()(long r, int c, double *acc) const { acc[0] += x[r * C + c]; }
};

// part (S,C) = per-split column sums of x (N,C)
__global__ void colsum_partial_kernel(double *part, const float *x, long N, int C) {
    bf_colreduce<1>(part, N, C, bf_colsum_f{x, C});
}

// db (C) += sum over the S splits of part (S,C)
__global__ void colsum_finish_kernel(float *db, const double *part, int S, int C) {
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < C; c += gridDim.x * blockDim.x)
        db[c] += (float)bf_col_total(part, 0, S, C, c);
}

// db (C) += sum over rows of x (N,C); one thread per column (huge C only)
__global__ void colsum_direct_kernel(float *db, const float *x, long N, int C) {
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < C; c += gridDim.x * blockDim.x) {
        double t = 0.0;
        for (long r = 0; r < N; r++) t += x[r * C + c];
        db[c] += (float)t;
    }
}

bf_status bf_cuda_colsum_add(bf_cuda_state *st, float *db, const float *x, long N, int C) {
    if (N <= 0 || C <= 0) return BF_OK;
    BF_TRY(bf_cuda_need_scratch(st, "column sum"));
    const int S = bf_col_splits(N, C, 1, 0);
    if (S == 0) {
        colsum_direct_kernel<<<bf_cuda_grid(C, 256), 256, 0, st->stream>>>(db, x, N, C);
        BF_CUDA_LAUNCHED(st, colsum_direct_kernel);
        return BF_OK;
    }
    dim3 grid((unsigned)((C + 31) / 32), (unsigned)S), block(32, BF_COL_TY);
    colsum_partial_kernel<<<grid, block, 0, st->stream>>>(st->scratch, x, N, C);
    BF_CUDA_LAUNCHED(st, colsum_partial_kernel);
    colsum_finish_kernel<<<bf_cuda_grid(C, 256), 256, 0, st->stream>>>(db, st->scratch, S, C);
    BF_CUDA_LAUNCHED(st, colsum_finish_kernel);
    return BF_OK;
}
