/* pos_weights.cu - per-position weights of a sequence loss / metric, as
 * csrc/cpu/pos_weights.c (Keras 3's apply_mask): one block counts the kept
 * positions (integers, so the count is exact) and writes w (B,S). */
#include "cuda_ops.h"

#define PW_THREADS 256

// w (B,S) <- sw (B), mask (B,S)
__global__ void pos_weights_kernel(float *w, const float *sw, const float *mask, int B, int S, int normalize) {
    __shared__ long part[PW_THREADS];
    const long n = (long)B * S;
    float f = 1.0f;
    if (mask && normalize) {
        long c = 0;
        for (long e = threadIdx.x; e < n; e += blockDim.x) c += mask[e] > 0.5f;
        part[threadIdx.x] = c;
        __syncthreads();
        for (int h = blockDim.x / 2; h > 0; h /= 2) {
            if ((int)threadIdx.x < h) part[threadIdx.x] += part[threadIdx.x + h];
            __syncthreads();
        }
        f = part[0] > 0 ? (float)n / (float)part[0] : 0.0f;
    }
    for (long e = threadIdx.x; e < n; e += blockDim.x) {
        float m = mask ? (mask[e] > 0.5f ? f : 0.0f) : 1.0f;
        w[e] = (sw ? sw[e / S] : 1.0f) * m;
    }
}

bf_status bf_cuda_pos_weights(bf_backend *be, float *w, const float *sw, const float *mask, int B, int S,
                              int normalize) {
    BF_CUDA_ENTER(st, be);
    if (B < 0 || S <= 0) return BF_FAIL(BF_ERR_SHAPE, "position weights: bad sizes B=%d S=%d", B, S);
    if (B == 0) return BF_OK;
    pos_weights_kernel<<<1, PW_THREADS, 0, st->stream>>>(w, sw, mask, B, S, normalize);
    BF_CUDA_LAUNCHED(st, pos_weights_kernel);
    return BF_OK;
}
