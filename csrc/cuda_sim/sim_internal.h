/* sim_internal.h - what the device emulation's runtime (sim_runtime.cpp)
 * shares with its cuBLAS / cuDNN stand-ins (sim_blas.cpp, sim_dnn.cpp). */
#ifndef BF_SIM_INTERNAL_H
#define BF_SIM_INTERNAL_H

#include <stddef.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <functional>
#include <mutex>

typedef struct {
    int block_order;    /* 0 forward, 1 reverse, 2 shuffled */
    int thread_order;   /* 0 forward, 1 reverse, 2 shuffled (each block its own permutation) */
    unsigned long seed;
    int cc_major, cc_minor;
    int driver, runtime, devices;
    size_t mem;
    int nan_fill;
    int interleave;     /* 1: a thread yields at every atomic and every instrumented store */
    int wave;           /* blocks run at a time (their threads in turns): BF_SIM_WAVE under interleave, else 1 */
    int streams;        /* 0 work runs at the call, 1 lazy, 2 shuffled (sim_streams.cpp) */
    size_t cudnn;
    int trace;
} sim_config;

const sim_config &sim_cfg(void);
/* record e as the last error (if not success) and return it */
cudaError_t sim_err(cudaError_t e);
int sim_sticky(void);
cudaError_t sim_sticky_error(void);
/* the runtime's lock (recursive): allocations, launches, queues */
std::recursive_mutex &sim_lock(void);
/* 1 if p lies in a range given to cudaHostRegister */
int sim_is_pinned(const void *p);
int sim_is_device(const void *p);
/* 1 if [p, p + n) lies inside one live device allocation */
int sim_device_range(const void *p, size_t n);
int sim_stream_ok(cudaStream_t s);
/* what a library call may leave in its workspace [p, p + n): NaN bytes (0xff),
 * all of the first 64 KiB and one float every 256 bytes after, so a live
 * buffer (256-byte aligned) that overlaps the workspace reads NaN. The
 * stand-ins call it before and after every GEMM / convolution. */
void sim_scribble(void *p, size_t n);
extern "C" void bf_sim_fault(int err, const char *name, const char *why);
/* work queued on a stream that runs outside the caller's thread (the NCCL
 * stand-in's collectives, sim_nccl.cpp): while any is pending, cudaStreamQuery
 * answers cudaErrorNotReady, and a stream synchronize or a kernel launch waits
 * for it as a real stream would (without a bound: a hung collective hangs) */
void sim_external_begin(void);
void sim_external_end(void);
int sim_external_pending(void);
void sim_wait_external(void);
/* stream work (sim_streams.cpp): run now (BF_SIM_STREAMS=sync, the legacy
 * stream 0, an unknown stream) or queued on s until something needs it */
void sim_submit(cudaStream_t s, std::function<void()> work);
/* the host waits for s (0: for everything): run everything queued, in the
 * order BF_SIM_STREAMS picks among those the events allow */
void sim_drain(cudaStream_t s);
void sim_drain_all(void);

#endif
