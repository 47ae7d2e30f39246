/* workspace.cu - the run workspace the core lends the CUDA backend (planned
 * in the run's arena, bound for the ops of each call; see backend.h):
 *   [scratch: BF_CUDA_SCRATCH_DOUBLES doubles][flags: BF_CUDA_FLAG_INTS ints][cuBLAS workspace]
 * The scratch holds the partial sums of reductions (sum, column sums,
 * batchnorm statistics); the flags serve an SCCE loss called without a
 * bad-label flag of its caller's; cuBLAS's GEMMs run in the last part
 * (cublasSetWorkspace), so no op allocates and the plan holds every byte.
 * Ops of a device run in stream order and never use it at the same time. */
#include "cuda_ops.h"

#define BF_WS_ALIGN 256
#define BF_SCRATCH_BYTES ((size_t)BF_CUDA_SCRATCH_DOUBLES * sizeof(double))
#define BF_FLAGS_BYTES ((size_t)BF_WS_ALIGN) /* BF_CUDA_FLAG_INTS ints, padded */

/* cuBLAS's workspace, set explicitly (cublasSetWorkspace) so the plan holds
 * it: 4 MiB on every architecture. cuBLAS recommends 32 MiB on Hopper (its
 * default pool there), 4 MiB before; a smaller workspace only narrows the
 * split-K choices of large GEMMs, while 32 MiB per run would be most of a
 * small device budget (an 8 MiB limit could never fit, whatever the micro
 * batch). The plan (run_workspace_bytes) and the binding use this one size. */
static size_t blas_ws_bytes(const bf_cuda_state *st) {
    (void)st;
    return (size_t)4 << 20;
}

size_t bf_cuda_run_workspace_bytes(bf_backend *be) {
    bf_cuda_state *st = BF_CUDA_ST(be);
    return BF_SCRATCH_BYTES + BF_FLAGS_BYTES + blas_ws_bytes(st);
}

bf_status bf_cuda_bind_workspace(bf_backend *be, void *ws, size_t bytes) {
    BF_CUDA_ENTER(st, be);
    if (!ws) {
        st->scratch = NULL;
        st->flags = NULL;
        /* back to the handle's own pool: cublasSetStream resets the workspace */
        BF_CUBLAS_CHECK(st, cublasSetStream(st->blas, st->stream));
        return BF_OK;
    }
    if (bytes < bf_cuda_run_workspace_bytes(be) || (uintptr_t)ws % BF_WS_ALIGN)
        return BF_FAIL(BF_ERR_INTERNAL, "%s: run workspace of %zu bytes at %p, needs %zu bytes aligned to %d",
                       st->name, bytes, ws, bf_cuda_run_workspace_bytes(be), BF_WS_ALIGN);
    char *p = (char *)ws;
    BF_CUBLAS_CHECK(st, cublasSetWorkspace(st->blas, p + BF_SCRATCH_BYTES + BF_FLAGS_BYTES, blas_ws_bytes(st)));
    st->scratch = (double *)p;
    st->flags = (int *)(p + BF_SCRATCH_BYTES);
    return BF_OK;
}

bf_status bf_cuda_need_scratch(bf_cuda_state *st, const char *op) {
    if (st->scratch && st->flags) return BF_OK;
    return BF_FAIL(BF_ERR_INTERNAL, "%s on %s: no run workspace bound (ops that reduce run inside a run)", op,
                   st->name);
}
