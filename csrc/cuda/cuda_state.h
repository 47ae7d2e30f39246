/* cuda_state.h - per-device state of the CUDA backend: the vtable, the stream
 * every op is queued on, the cuBLAS / cuDNN handles bound to it, the poison
 * flag of a context hit by a sticky error, the run workspace bound for the
 * current call (workspace.cu), the copy stream and events of batch uploads and
 * the cache of Conv2D descriptors and algorithms. One slot per device in
 * static storage (backend.cu); nothing here comes from the heap. Ops of one
 * device run in stream order, so the workspace is never used by two ops at
 * once; a backend is used by one host thread at a time. */
#ifndef BF_CUDA_STATE_H
#define BF_CUDA_STATE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

/* the core's headers are C: give their functions (bf_fail) C linkage here,
 * the first place every .cu file includes them */
#ifdef __cplusplus
extern "C" {
#endif
#include "backend.h"
#include "status.h"
#ifdef __cplusplus
}
#endif

#define BF_CUDA_MAX_DEVICES 16
#define BF_CUDA_CONV_CACHE 64          /* Conv2D geometries remembered per device */
#define BF_CUDA_SCRATCH_DOUBLES (1 << 18) /* 2 MiB of reduction scratch (workspace.cu) */
#define BF_CUDA_FLAG_INTS 16           /* flags read back by the host (workspace.cu) */

/* Descriptors and algorithms of one Conv2D geometry (conv.cu). */
typedef struct {
    int used;
    unsigned long stamp; /* last use, for eviction */
    bf_conv_geom g;      /* the key, with math */
    cudnnMathType_t math; /* exact FP32, TF32 or float16 tensor cores (conv.cu conv_math) */
    int padded;          /* 1: Keras 'same' padding cuDNN cannot express; the input is
                            zero-padded into the workspace to HP x WP first */
    int HP, WP;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    size_t fwd_ws, bwd_data_ws, bwd_filter_ws; /* cuDNN workspace bytes of each */
} bf_cuda_conv_plan;

typedef struct bf_cuda_state {
    bf_backend be; /* be.impl points back here */
    int device;
    int open;
    int poisoned;
    char name[16]; /* "cuda:N" */
    char poison[BF_MSG_LEN];
    cudaStream_t stream;
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    int sms;         /* multiprocessors, for grid sizes */
    int cc_major;    /* compute capability major (cuBLAS workspace size) */
    double *scratch; /* the bound run workspace's scratch doubles (NULL: none bound) */
    int *flags;      /* ... and its flag ints */
    cudaStream_t copy;            /* batch uploads (host slot -> device slot) */
    cudaEvent_t loaded[2];        /* upload k done: compute waits on it */
    cudaEvent_t consumed[2];      /* ops reading device slot k queued before it */
    bf_cuda_conv_plan conv[BF_CUDA_CONV_CACHE];
    unsigned long conv_clock;
} bf_cuda_state;

#endif
