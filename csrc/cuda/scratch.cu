/* scratch.cu - the module's static device scratch: BF_CUDA_SCRATCH_DOUBLES
 * doubles (2 MiB) for the partial sums of reductions (sum, column sums,
 * batchnorm statistics) and BF_CUDA_FLAG_INTS ints for flags read back by the
 * host (non-finite scan, max |x|, SCCE label check). Static __device__ storage
 * exists once per device context (it is part of the module image, loaded with
 * the kernels), so no op allocates; ops of a device run in stream order and
 * never use the scratch at the same time. */
#include "cuda_ops.h"

__device__ double bf_scratch_doubles[BF_CUDA_SCRATCH_DOUBLES];
__device__ int bf_scratch_flags[BF_CUDA_FLAG_INTS];

/* device addresses of the scratch in st's context (the device is current) */
bf_status bf_cuda_scratch_init(bf_cuda_state *st) {
    void *p = NULL;
    BF_CUDA_CHECK(st, cudaGetSymbolAddress(&p, bf_scratch_doubles));
    st->scratch = (double *)p;
    BF_CUDA_CHECK(st, cudaGetSymbolAddress(&p, bf_scratch_flags));
    st->flags = (int *)p;
    return BF_OK;
}
