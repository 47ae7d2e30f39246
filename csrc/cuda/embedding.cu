/* embedding.cu - Embedding on the GPU: a gather of table rows by id, and for
 * backward a scatter-add (atomicAdd) into the table's gradient. Bad ids (not
 * an integer in [0, V)) give zero rows; the lowest bad row is kept in *bad as
 * n - row (atomicMax) and its id copied to *bad_val by a one-thread kernel,
 * read with the step's statistics (no wait here). */
#include "cuda_ops.h"

__device__ __forceinline__ int valid_id(float v, int V, int *k) {
    if (!(v >= 0.0f && v < (float)V)) return 0;
    *k = (int)v;
    return (float)*k == v;
}

// out (n,D) = table (V,D)[ids (n)]; mask (n) = ids != 0
__global__ void embedding_forward_kernel(float *out, float *mask, int *bad, const float *ids, const float *table,
                                         long n, int D, int V) {
    const long total = n * (long)D;
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < total; e += (long)gridDim.x * blockDim.x) {
        const long r = e / D;
        const int j = (int)(e % D);
        int k;
        const float v = ids[r];
        if (valid_id(v, V, &k)) {
            out[e] = table[(long)k * D + j];
        } else {
            out[e] = 0.0f;
            if (j == 0 && bad) atomicMax(bad, (int)(n - r));
        }
        if (j == 0 && mask) mask[r] = v != 0.0f ? 1.0f : 0.0f;
    }
}

// *bad_val = ids[n - *bad] when a bad id was seen
__global__ void embedding_bad_value_kernel(float *bad_val, const int *bad, const float *ids, long n) {
    if (*bad > 0 && *bad <= n) *bad_val = ids[n - *bad];
}

// dtable (V,D) += dout (n,D) at rows ids (n)
__global__ void embedding_backward_kernel(float *dtable, const float *dout, const float *ids, long n, int D, int V) {
    const long total = n * (long)D;
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < total; e += (long)gridDim.x * blockDim.x) {
        int k;
        if (valid_id(ids[e / D], V, &k)) atomicAdd(&dtable[(long)k * D + e % D], dout[e]);
    }
}

bf_status bf_cuda_embedding_forward(bf_backend *be, float *out, float *mask, int *bad, float *bad_val,
                                    const float *ids, const float *table, long n, int D, int V) {
    BF_CUDA_ENTER(st, be);
    if (n < 0 || D <= 0 || V <= 0) return BF_FAIL(BF_ERR_SHAPE, "embedding: bad sizes n=%ld D=%d V=%d", n, D, V);
    if (n == 0) return BF_OK;
    embedding_forward_kernel<<<bf_cuda_grid(n * (long)D, 256), 256, 0, st->stream>>>(out, mask, bad, ids, table, n,
                                                                                     D, V);
    BF_CUDA_LAUNCHED(st, embedding_forward_kernel);
    if (bad && bad_val) {
        embedding_bad_value_kernel<<<1, 1, 0, st->stream>>>(bad_val, bad, ids, n);
        BF_CUDA_LAUNCHED(st, embedding_bad_value_kernel);
    }
    return BF_OK;
}

bf_status bf_cuda_embedding_backward(bf_backend *be, float *dtable, const float *dout, const float *ids, long n,
                                     int D, int V) {
    BF_CUDA_ENTER(st, be);
    if (n < 0 || D <= 0 || V <= 0) return BF_FAIL(BF_ERR_SHAPE, "embedding: bad sizes n=%ld D=%d V=%d", n, D, V);
    if (n == 0 || !dtable) return BF_OK;
    embedding_backward_kernel<<<bf_cuda_grid(n * (long)D, 256), 256, 0, st->stream>>>(dtable, dout, ids, n, D, V);
    BF_CUDA_LAUNCHED(st, embedding_backward_kernel);
    return BF_OK;
}
