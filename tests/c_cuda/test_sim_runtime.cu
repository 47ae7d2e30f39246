/* test_sim_runtime.cu - checks of the device emulation itself (csrc/cuda_sim),
 * built by tests/test_cuda_sim.py as the emulation builds csrc/cuda: block
 * reductions through __syncthreads, __syncthreads_or, warp shuffles, atomics
 * and per-block __shared__ give the right answers in the thread and block
 * order of the environment; launch limits, copies in the wrong direction, bad
 * leading dimensions, a cuDNN workspace too small and use after destroy are
 * errors; an access past an allocation and a foreign pointer are CUDA's
 * sticky illegal address; streams queue their work as BF_SIM_STREAMS says
 * and events order them. Prints "ok ..." / "FAIL ..." lines and
 * "N of M checks failed"; exits 1 on any failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

static int checks, fails;

static void check(int ok, const char *what) {
    checks++;
    if (!ok) fails++;
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
}

// out (gridDim.x) = per-block sums of x (n): tree reduction in shared memory
__global__ void block_sum_kernel(float *out, const float *x, int n) {
    __shared__ float sh[256];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    sh[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = sh[0];
}

// out (gridDim.x) = per-block sums through warp shuffles then shared memory
__global__ void warp_sum_kernel(float *out, const float *x, int n) {
    __shared__ float part[32];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.0f;
        for (int w = 0; w < (int)(blockDim.x + 31) / 32; w++) s += part[w];
        out[blockIdx.x] = s;
    }
}

// flags (gridDim.x) = any x of the block negative (__syncthreads_or)
__global__ void any_negative_kernel(int *flags, const float *x) {
    const int any = __syncthreads_or(x[blockIdx.x * blockDim.x + threadIdx.x] < 0.0f);
    if (threadIdx.x == 0) flags[blockIdx.x] = any;
}

// total (1) += x (n), max (1) = max bits of x, with atomics
__global__ void atomics_kernel(float *total, int *maxi, const float *x, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        atomicAdd(total, x[i]);
        atomicMax(maxi, (int)x[i]);
    }
}

// x (n) = 1 at i + off: writes past the end when off > 0
__global__ void write_kernel(float *x, int n, int off) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i + off] = 1.0f;
}

// half the warp in a shuffle, the other half at __syncthreads: divergence
__global__ void divergent_kernel(float *x) {
    if (threadIdx.x < 16) x[threadIdx.x] = __shfl_xor_sync(0xffffffffu, x[threadIdx.x], 1);
    else __syncthreads();
}

__global__ void noop_kernel(float *x) { (void)x; }

// y (n) = x (n) + 1
__global__ void plus_one_kernel(float *y, const float *x, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
}

/* BF_SIM_STREAMS: queued work runs when the host waits; a stream that does
 * not wait for another's event reads before it wrote (lazy: the stream the
 * host waits for runs last); one that waits reads after, in every mode */
static void stream_checks(void) {
    const char *m = getenv("BF_SIM_STREAMS");
    const int lazy = m && !strcmp(m, "lazy"), queued = lazy || (m && !strcmp(m, "shuffled"));
    static float pinned[64];
    float *dx = NULL, *dy = NULL, got[64];
    cudaMalloc((void **)&dx, sizeof pinned);
    cudaMalloc((void **)&dy, sizeof pinned);
    cudaHostRegister(pinned, sizeof pinned, cudaHostRegisterPortable);
    cudaStream_t a, b;
    cudaEvent_t e;
    cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    for (int wait = 0; wait < 2; wait++) {
        cudaMemsetAsync(dx, 0, sizeof pinned, 0);
        cudaMemsetAsync(dy, 0, sizeof pinned, 0);
        for (int i = 0; i < 64; i++) pinned[i] = 5.0f;
        cudaMemcpyAsync(dx, pinned, sizeof pinned, cudaMemcpyHostToDevice, a);
        cudaEventRecord(e, a);
        if (wait) cudaStreamWaitEvent(b, e, 0);
        plus_one_kernel<<<1, 64, 0, b>>>(dy, dx, 64);
        if (queued) check(dy[0] == 0.0f, "a kernel queued on a stream has not run before the host waits");
        cudaEventSynchronize(e); /* the host waits for the copy, as batch_wait does */
        cudaStreamSynchronize(b);
        cudaMemcpyAsync(got, dy, sizeof got, cudaMemcpyDeviceToHost, 0);
        if (wait) check(got[0] == 6.0f && got[63] == 6.0f, "a stream waiting for the copy's event reads the copy");
        else if (lazy) check(got[0] == 1.0f, "a stream not waiting for the copy's event reads before the copy (lazy)");
        else if (!queued) check(got[0] == 6.0f, "streams at the call: every copy done before the next call");
    }
    float staged[64];
    for (int i = 0; i < 64; i++) staged[i] = 3.0f;
    cudaMemcpyAsync(dx, staged, sizeof staged, cudaMemcpyHostToDevice, a);
    staged[0] = -1.0f; /* pageable: staged at the call */
    cudaStreamSynchronize(a);
    cudaMemcpyAsync(got, dx, sizeof got, cudaMemcpyDeviceToHost, 0);
    check(got[0] == 3.0f, "a pageable host-to-device copy reads its source at the call");
    cudaHostUnregister(pinned);
    cudaEventDestroy(e);
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
    cudaFree(dx);
    cudaFree(dy);
}

/* argv[1] == "divergent": only the barrier-divergence check (its failure is sticky) */
static int divergent_only(void) {
    float *x = NULL;
    cudaMalloc((void **)&x, 32 * sizeof(float));
    divergent_kernel<<<1, 32>>>(x);
    check(cudaStreamSynchronize(0) == cudaErrorLaunchFailure,
          "half a warp in a shuffle, half at __syncthreads: launch failure");
    printf("%d of %d checks failed\n", fails, checks);
    return fails ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "divergent")) return divergent_only();
    const int n = 1000, threads = 256, blocks = (n + threads - 1) / threads;
    float hx[1000], want[4] = {0, 0, 0, 0};
    for (int i = 0; i < n; i++) {
        hx[i] = (float)((i * 37) % 11) - 3.0f;
        want[i / threads] += hx[i];
    }
    float *x = NULL, *out = NULL;
    int *flags = NULL;
    check(cudaMalloc((void **)&x, n * sizeof(float)) == cudaSuccess, "cudaMalloc");
    cudaMalloc((void **)&out, 64 * sizeof(float));
    cudaMalloc((void **)&flags, 64 * sizeof(int));
    check(cudaMemcpyAsync(x, hx, sizeof hx, cudaMemcpyHostToDevice, 0) == cudaSuccess, "copy to the device");

    float got[4];
    block_sum_kernel<<<blocks, threads>>>(out, x, n);
    check(cudaGetLastError() == cudaSuccess, "block_sum launch");
    cudaMemcpyAsync(got, out, sizeof got, cudaMemcpyDeviceToHost, 0);
    int same = 1;
    for (int b = 0; b < blocks; b++) same &= fabsf(got[b] - want[b]) < 1e-3f;
    check(same, "__syncthreads tree reduction: per-block sums");

    memset(got, 0, sizeof got);
    warp_sum_kernel<<<blocks, threads>>>(out, x, n);
    cudaMemcpyAsync(got, out, sizeof got, cudaMemcpyDeviceToHost, 0);
    same = 1;
    for (int b = 0; b < blocks; b++) same &= fabsf(got[b] - want[b]) < 1e-3f;
    check(same, "__shfl_xor_sync warp reduction: per-block sums");

    int hf[4] = {7, 7, 7, 7};
    float pos[1024];
    for (int i = 0; i < 1024; i++) pos[i] = (i == 700) ? -1.0f : 1.0f;
    float *p = NULL;
    cudaMalloc((void **)&p, sizeof pos);
    cudaMemcpyAsync(p, pos, sizeof pos, cudaMemcpyHostToDevice, 0);
    any_negative_kernel<<<4, 256>>>(flags, p);
    cudaMemcpyAsync(hf, flags, sizeof hf, cudaMemcpyDeviceToHost, 0);
    check(hf[0] == 0 && hf[1] == 0 && hf[2] == 1 && hf[3] == 0, "__syncthreads_or: only block 2 has a negative");

    float zero = 0.0f, total = 0.0f;
    int mz = -100, mx = 0;
    cudaMemcpyAsync(out, &zero, sizeof zero, cudaMemcpyHostToDevice, 0);
    cudaMemcpyAsync(flags, &mz, sizeof mz, cudaMemcpyHostToDevice, 0);
    atomics_kernel<<<3, 128>>>(out, flags, x, n);
    cudaMemcpyAsync(&total, out, sizeof total, cudaMemcpyDeviceToHost, 0);
    cudaMemcpyAsync(&mx, flags, sizeof mx, cudaMemcpyDeviceToHost, 0);
    check(fabsf(total - (want[0] + want[1] + want[2] + want[3])) < 1e-2f && mx == 7, "atomicAdd / atomicMax");

    /* launch configuration errors: not sticky */
    noop_kernel<<<1, 1025>>>(x);
    check(cudaGetLastError() == cudaErrorInvalidConfiguration, "1025 threads per block: invalid configuration");
    noop_kernel<<<dim3(1, 70000), 32>>>(x);
    check(cudaGetLastError() == cudaErrorInvalidConfiguration, "grid.y 70000: invalid configuration");
    noop_kernel<<<1, 32, 64 << 10>>>(x);
    check(cudaGetLastError() != cudaSuccess, "64 KiB of dynamic shared memory: an error");
    check(cudaGetLastError() == cudaSuccess, "configuration errors are cleared by cudaGetLastError");

    /* copies */
    check(cudaMemcpyAsync(x, hx, sizeof hx, cudaMemcpyDeviceToHost, 0) == cudaErrorInvalidValue,
          "a host-to-device copy declared device-to-host: invalid value");
    cudaGetLastError();
    check(cudaMemcpyAsync(x, hx, sizeof hx + 4, cudaMemcpyHostToDevice, 0) == cudaErrorInvalidValue,
          "a copy past the allocation's end: invalid value");
    cudaGetLastError();
    check(cudaMemsetAsync(hx, 0, 4, 0) == cudaErrorInvalidValue, "cudaMemset of host memory: invalid value");
    cudaGetLastError();

    /* handles */
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    check(cudaStreamDestroy(s) == cudaSuccess, "stream destroy");
    check(cudaStreamSynchronize(s) == cudaErrorInvalidResourceHandle, "a destroyed stream: invalid handle");
    cudaGetLastError();

    /* cuBLAS */
    cublasHandle_t h;
    check(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
    const float one = 1.0f, zf = 0.0f;
    check(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, x, 3, x + 16, 4, &zf, out, 4) ==
              CUBLAS_STATUS_INVALID_VALUE, "cublasSgemm with lda < m: invalid value");
    check(cublasSetWorkspace(h, x + 1, 256) == CUBLAS_STATUS_INVALID_VALUE, "a workspace not 256-byte aligned");
    size_t fr0 = 0, fr1 = 0, tot = 0;
    cudaMemGetInfo(&fr0, &tot);
    check(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, x, 4, x + 16, 4, &zf, out, 4) ==
              CUBLAS_STATUS_SUCCESS, "cublasSgemm");
    cudaMemGetInfo(&fr1, &tot);
    int cc = 0;
    cudaDeviceGetAttribute(&cc, cudaDevAttrComputeCapabilityMajor, 0);
    check(fr0 - fr1 == (cc >= 9 ? (size_t)32 << 20 : (size_t)4 << 20),
          "without a workspace set, cuBLAS takes its default (32 MiB on CC 9, else 4 MiB) from device memory");
    check(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS, "cublasDestroy");
    check(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, x, 4, x + 16, 4, &zf, out, 4) ==
              CUBLAS_STATUS_NOT_INITIALIZED, "cublasSgemm after destroy: not initialized");

    /* cuDNN: a workspace smaller than the query said */
    cudnnHandle_t d;
    cudnnCreate(&d);
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnCreateTensorDescriptor(&xd);
    cudnnCreateTensorDescriptor(&yd);
    cudnnCreateFilterDescriptor(&wd);
    cudnnCreateConvolutionDescriptor(&cd);
    cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, 2, 8, 8);
    cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, 3, 8, 8);
    cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, 3, 2, 3, 3);
    cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    size_t need = 0;
    check(cudnnGetConvolutionForwardWorkspaceSize(d, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, &need) ==
              CUDNN_STATUS_SUCCESS && need > 0, "cuDNN workspace query");
    float *cx, *cy, *cw, *ws;
    cudaMalloc((void **)&cx, 128 * 4);
    cudaMalloc((void **)&cy, 192 * 4);
    cudaMalloc((void **)&cw, 54 * 4);
    cudaMalloc((void **)&ws, need);
    check(cudnnConvolutionForward(d, &one, xd, cx, wd, cw, cd, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, ws, need - 4, &zf,
                                  yd, cy) == CUDNN_STATUS_BAD_PARAM, "cuDNN given less workspace: bad param");
    check(cudnnConvolutionForward(d, &one, xd, cx, wd, cw, cd, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, ws, need, &zf, yd,
                                  cy) == CUDNN_STATUS_SUCCESS, "cuDNN forward with its workspace");
    cudnnDestroyTensorDescriptor(xd);
    check(cudnnConvolutionForward(d, &one, xd, cx, wd, cw, cd, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, ws, need, &zf, yd,
                                  cy) == CUDNN_STATUS_BAD_PARAM, "a destroyed descriptor: bad param");

    stream_checks();

    /* out of bounds: sticky, so last */
    write_kernel<<<1, 32>>>(x, 8, 0);
    check(cudaStreamSynchronize(0) == cudaSuccess, "an in-bounds kernel");
    write_kernel<<<4, 256>>>(x, n, 1200);
    check(cudaStreamSynchronize(0) == cudaErrorIllegalAddress, "a write past the allocation: illegal address");
    float *q = NULL;
    check(cudaMalloc((void **)&q, 16) == cudaErrorIllegalAddress && cudaGetLastError() == cudaErrorIllegalAddress,
          "the illegal address is sticky");
    printf("%d of %d checks failed\n", fails, checks);
    return fails ? 1 : 0;
}
