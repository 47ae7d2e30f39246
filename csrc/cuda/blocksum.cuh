/* blocksum.cuh - one block's double sum added into a device double: each
 * thread's partial in shared memory, a tree over the block's 256 threads
 * (launches of 256), thread 0's atomicAdd. Shared by the sums of squares
 * (optimizers.cu, optimizers_more.cu) and the regularization penalty. */
#ifndef BF_BLOCKSUM_CUH
#define BF_BLOCKSUM_CUH

// out (1) += the sum of s over the block's threads
__device__ __forceinline__ void bf_block_sum_add(double *out, double s) {
    __shared__ double part[256];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if ((int)threadIdx.x < o) part[threadIdx.x] += part[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, part[0]);
}

#endif
