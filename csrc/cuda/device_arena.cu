/* device_arena.cu - the one place the CUDA backend allocates device memory:
 * reserve is one cudaMalloc per arena (core/arena.c is the only caller; the
 * arena carves the block by the plan's offsets), release its cudaFree.
 * Out of device memory is BF_ERR_BUDGET naming the device ("cuda:N"), the
 * bytes needed and free, so it becomes a MemoryBudgetError with .where set. */
#include <stdio.h>

#include "cuda_ops.h"

bf_status bf_cuda_reserve(bf_backend *be, void **out, size_t bytes) {
    *out = NULL;
    BF_CUDA_ENTER(st, be);
    if (!bytes) return BF_OK;
    cudaError_t e = cudaMalloc(out, bytes);
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        *out = NULL;
        size_t fr = 0, tot = 0;
        if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) cudaGetLastError();
        return BF_FAIL(BF_ERR_BUDGET,
                       "needs %zu bytes (%.2f GiB) of device memory on %s, but cudaMalloc failed: "
                       "%zu bytes (%.2f GiB) free of %zu (another process or an earlier run may "
                       "hold the rest); lower batch_size, use micro_batch='auto', or free device "
                       "memory", bytes, bytes / 1073741824.0, st->name, fr, fr / 1073741824.0, tot);
    }
    if (e != cudaSuccess) {
        *out = NULL;
        return bf_cuda_fail_rt(st, e, "cudaMalloc", __FILE__, __LINE__);
    }
    return BF_OK;
}

/* p from reserve; cudaFree waits for the work that may still use it. A
 * failure is not recorded (release runs on error paths, whose message must
 * survive) but a sticky one still poisons the backend. */
void bf_cuda_release(bf_backend *be, void *p) {
    bf_cuda_state *st = BF_CUDA_ST(be);
    if (!p || !st || !st->open) return;
    cudaError_t e = cudaSetDevice(st->device);
    if (e == cudaSuccess) e = cudaFree(p);
    if (e == cudaSuccess) return;
    cudaGetLastError();
    if (bf_cuda_is_sticky(e) && !st->poisoned) {
        st->poisoned = 1;
        snprintf(st->poison, sizeof st->poison, "cudaFree on %s failed: %s (%s)", st->name,
                 cudaGetErrorString(e), cudaGetErrorName(e));
    }
}
