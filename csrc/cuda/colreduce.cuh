/* colreduce.cuh - deterministic column reductions of a row-major (N,C) matrix
 * (bias gradients, batchnorm statistics), shared by colsum.cu and
 * batchnorm.cu. Blocks of 32 columns x BF_COL_TY rows; grid (ceil(C/32), S):
 * split s covers a fixed range of rows, each thread accumulates its rows in
 * double, the block adds its BF_COL_TY partials in a fixed order and writes
 * part[(k*S + s)*C + c] for statistic k. A finishing kernel adds the S splits
 * in order. S depends only on (N, C), so the result is the same run to run. */
#ifndef BF_COLREDUCE_CUH
#define BF_COLREDUCE_CUH

#include "cuda_ops.h"

#define BF_COL_TY 8
#define BF_COL_TARGET_BLOCKS 512 /* enough blocks to fill a large GPU */
#define BF_COL_MIN_ROWS 256      /* rows per split at least */

/* number of row splits for an (N,C) reduction of nstat statistics whose
 * partials, plus `extra` doubles, must fit the scratch; 0 if even one split
 * does not fit */
static inline int bf_col_splits(long N, int C, int nstat, long extra) {
    long cb = (C + 31) / 32;
    long S = (BF_COL_TARGET_BLOCKS + cb - 1) / cb;
    long by_rows = (N + BF_COL_MIN_ROWS - 1) / BF_COL_MIN_ROWS;
    if (S > by_rows) S = by_rows;
    long room = ((long)BF_CUDA_SCRATCH_DOUBLES - extra) / ((long)nstat * C);
    if (S > room) S = room;
    if (S < 1) S = room >= 1 ? 1 : 0;
    return (int)S;
}

/* the block's partials (NSTAT <= 2): at file scope, not a static of the
 * template below, which g++ would place outside the device emulation's shared
 * memory (it drops the section attribute of a template's statics) */
__shared__ double bf_col_sh[2][BF_COL_TY][33];

/* Body of a column-reduce kernel: F(r, c, acc) adds row r, column c into
 * acc[0..NSTAT). Launch with blockDim (32, BF_COL_TY), grid (ceil(C/32), S). */
template <int NSTAT, class F>
__device__ __forceinline__ void bf_colreduce(double *part, long N, int C, F f) {
    static_assert(NSTAT >= 1 && NSTAT <= 2, "bf_col_sh holds two statistics");
    double(*sh)[BF_COL_TY][33] = bf_col_sh;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int c = blockIdx.x * 32 + tx;
    const int S = gridDim.y, s = blockIdx.y;
    const long chunk = (N + S - 1) / S;
    const long r0 = (long)s * chunk;
    const long r1 = r0 + chunk < N ? r0 + chunk : N;
    double acc[NSTAT];
#pragma unroll
    for (int k = 0; k < NSTAT; k++) acc[k] = 0.0;
    if (c < C)
        for (long r = r0 + ty; r < r1; r += BF_COL_TY) f(r, c, acc);
#pragma unroll
    for (int k = 0; k < NSTAT; k++) sh[k][ty][tx] = acc[k];
    __syncthreads();
    if (ty == 0 && c < C) {
#pragma unroll
        for (int k = 0; k < NSTAT; k++) {
            double t = 0.0;
            for (int j = 0; j < BF_COL_TY; j++) t += sh[k][j][tx];
            part[((long)k * S + s) * C + c] = t;
        }
    }
}

/* total of statistic k of column c over the S splits, in split order */
__device__ __forceinline__ double bf_col_total(const double *part, int k, int S, int C, int c) {
    double t = 0.0;
    for (int s = 0; s < S; s++) t += part[((long)k * S + s) * C + c];
    return t;
}

#endif
