/* backend.cu - the CUDA backend's vtable and lifetime: bf_cuda_open checks the
 * device (bf_cuda_check), creates a non-blocking compute stream with the
 * cuBLAS and cuDNN handles bound to it, a copy stream and the events of batch
 * uploads, and fills the vtable; bf_cuda_close undoes it. Also the copies
 * between host and device, pinning, zero fill and sync. State lives in a
 * static array, one slot per device (nothing from the heap). The table of
 * ops is generated from core/backend_ops.h.
 * Copies: to_device returns once the host buffer may be reused (pageable or
 * pinned), to_host once the data is on the host; upload only queues (on the
 * copy stream, ordered with the compute stream by events); other ops only
 * queue on the compute stream. */
#include <stdio.h>
#include <string.h>

#include "cuda_api.h"
#include "cuda_ops.h"
#include "cuda_shim.h"

#define BF_EXPORT extern "C" __attribute__((visibility("default")))

static bf_cuda_state states[BF_CUDA_MAX_DEVICES];

BF_EXPORT int bf_cuda_abi_version(void) { return BF_CUDA_ABI; }

// dst (bytes, device) = src (bytes, host); src is free again on return
bf_status bf_cuda_to_device(bf_backend *be, void *dst, const void *src, size_t bytes) {
    BF_CUDA_ENTER(st, be);
    if (!bytes) return BF_OK;
    if (!dst || !src) return BF_FAIL(BF_ERR_ARG, "to_device: NULL pointer (%zu bytes)", bytes);
    BF_CUDA_CHECK(st, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, st->stream));
    /* the caller (prefetch) refills src right after: wait for the copy */
    BF_CUDA_CHECK(st, cudaStreamSynchronize(st->stream));
    return BF_OK;
}

// dst (bytes, host) = src (bytes, device), after all queued work
bf_status bf_cuda_to_host(bf_backend *be, void *dst, const void *src, size_t bytes) {
    BF_CUDA_ENTER(st, be);
    if (!bytes) return BF_OK;
    if (!dst || !src) return BF_FAIL(BF_ERR_ARG, "to_host: NULL pointer (%zu bytes)", bytes);
    BF_CUDA_CHECK(st, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, st->stream));
    BF_CUDA_CHECK(st, cudaStreamSynchronize(st->stream));
    return BF_OK;
}

// dst (bytes, device) = 0
bf_status bf_cuda_fill_zero(bf_backend *be, void *dst, size_t bytes) {
    BF_CUDA_ENTER(st, be);
    if (!bytes) return BF_OK;
    if (!dst) return BF_FAIL(BF_ERR_ARG, "fill_zero: NULL pointer (%zu bytes)", bytes);
    BF_CUDA_CHECK(st, cudaMemsetAsync(dst, 0, bytes, st->stream));
    return BF_OK;
}

/* waits for the queued work; surfaces asynchronous kernel errors */
bf_status bf_cuda_sync(bf_backend *be) {
    BF_CUDA_ENTER(st, be);
    BF_CUDA_CHECK(st, cudaStreamSynchronize(st->stream));
    BF_CUDA_CHECK(st, cudaGetLastError());
    return BF_OK;
}

BF_EXPORT bf_status bf_cuda_mem_info(bf_backend *be, size_t *free_bytes, size_t *total_bytes) {
    *free_bytes = *total_bytes = 0;
    BF_CUDA_ENTER(st, be);
    BF_CUDA_CHECK(st, cudaMemGetInfo(free_bytes, total_bytes));
    return BF_OK;
}

/* Page-lock the host batch slots (p, bytes) so uploads are true DMA that
 * overlaps compute. Best effort: a refusal (RLIMIT_MEMLOCK, a container) is
 * cleared and leaves the memory pageable, where copies are staged but correct. */
void bf_cuda_host_pin(bf_backend *be, void *p, size_t bytes) {
    bf_cuda_state *st = BF_CUDA_ST(be);
    if (!p || !bytes || !st || !st->open || st->poisoned) return;
    if (cudaSetDevice(st->device) == cudaSuccess) cudaHostRegister(p, bytes, cudaHostRegisterPortable);
    cudaGetLastError();
}

/* undo host_pin before p is unmapped (a no-op if pinning was refused) */
void bf_cuda_host_unpin(bf_backend *be, void *p) {
    bf_cuda_state *st = BF_CUDA_ST(be);
    if (!p || !st || !st->open) return;
    if (cudaSetDevice(st->device) == cudaSuccess) cudaHostUnregister(p);
    cudaGetLastError();
}

static bf_status slot_ok(bf_cuda_state *st, int k) {
    if (k < 0 || k > 1) return BF_FAIL(BF_ERR_INTERNAL, "%s: batch slot %d (0 or 1)", st->name, k);
    return BF_OK;
}

// dst (bytes, device slot k) = src (bytes, pinned host slot k), on the copy stream
bf_status bf_cuda_upload(bf_backend *be, int k, void *dst, const void *src, size_t bytes) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(slot_ok(st, k));
    if (!bytes) return BF_OK;
    if (!dst || !src) return BF_FAIL(BF_ERR_ARG, "upload: NULL pointer (%zu bytes)", bytes);
    /* not before the ops still reading device slot k (an event never recorded is complete) */
    BF_CUDA_CHECK(st, cudaStreamWaitEvent(st->copy, st->consumed[k], 0));
    BF_CUDA_CHECK(st, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, st->copy));
    BF_CUDA_CHECK(st, cudaEventRecord(st->loaded[k], st->copy));
    /* the ops queued from now on see the data */
    BF_CUDA_CHECK(st, cudaStreamWaitEvent(st->stream, st->loaded[k], 0));
    return BF_OK;
}

// the ops reading device slot k are queued: the next upload into k waits for them
bf_status bf_cuda_batch_consumed(bf_backend *be, int k) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(slot_ok(st, k));
    BF_CUDA_CHECK(st, cudaEventRecord(st->consumed[k], st->stream));
    return BF_OK;
}

// returns once upload k has read its host source (the host slot may be refilled)
bf_status bf_cuda_batch_wait(bf_backend *be, int k) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(slot_ok(st, k));
    BF_CUDA_CHECK(st, cudaEventSynchronize(st->loaded[k]));
    return BF_OK;
}

static void fill_vtable(bf_cuda_state *st) {
    bf_backend *be = &st->be;
    memset(be, 0, sizeof *be);
    be->name = st->name;
    be->impl = st;
    be->reserve = bf_cuda_reserve;
    be->release = bf_cuda_release;
    be->to_device = bf_cuda_to_device;
    be->to_host = bf_cuda_to_host;
    be->fill_zero = bf_cuda_fill_zero;
    be->sync = bf_cuda_sync;
    be->run_workspace_bytes = bf_cuda_run_workspace_bytes;
    be->bind_workspace = bf_cuda_bind_workspace;
    be->host_pin = bf_cuda_host_pin;
    be->host_unpin = bf_cuda_host_unpin;
    be->upload = bf_cuda_upload;
    be->batch_consumed = bf_cuda_batch_consumed;
    be->batch_wait = bf_cuda_batch_wait;
    /* every op of backend_ops.h the CUDA backend implements: be->op = bf_cuda_op */
#define BF_OP(ret, op, params, on) BF_ON_CUDA_##on(be->op = bf_cuda_##op;)
#include "backend_ops.h"
#undef BF_OP
}

/* destroy what open created (any subset); the state slot becomes free */
static void teardown(bf_cuda_state *st) {
    if (cudaSetDevice(st->device) == cudaSuccess) {
        if (st->stream && !st->poisoned) cudaStreamSynchronize(st->stream);
        if (st->copy && !st->poisoned) cudaStreamSynchronize(st->copy);
        bf_cuda_conv_forget(st);
        if (st->dnn) cudnnDestroy(st->dnn);
        if (st->blas) cublasDestroy(st->blas);
        for (int k = 0; k < 2; k++) {
            if (st->loaded[k]) cudaEventDestroy(st->loaded[k]);
            if (st->consumed[k]) cudaEventDestroy(st->consumed[k]);
        }
        if (st->copy) cudaStreamDestroy(st->copy);
        if (st->stream) cudaStreamDestroy(st->stream);
    }
    cudaGetLastError();
    st->dnn = NULL;
    st->blas = NULL;
    st->stream = st->copy = NULL;
    for (int k = 0; k < 2; k++) st->loaded[k] = st->consumed[k] = NULL;
    st->scratch = NULL;
    st->flags = NULL;
    st->open = 0;
}

/* streams, events and handles of an open slot */
static bf_status create(bf_cuda_state *st) {
    BF_CUDA_CHECK(st, cudaSetDevice(st->device));
    BF_CUDA_CHECK(st, cudaDeviceGetAttribute(&st->sms, cudaDevAttrMultiProcessorCount, st->device));
    BF_CUDA_CHECK(st, cudaDeviceGetAttribute(&st->cc_major, cudaDevAttrComputeCapabilityMajor, st->device));
    BF_CUDA_CHECK(st, cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking));
    BF_CUDA_CHECK(st, cudaStreamCreateWithFlags(&st->copy, cudaStreamNonBlocking));
    for (int k = 0; k < 2; k++) {
        BF_CUDA_CHECK(st, cudaEventCreateWithFlags(&st->loaded[k], cudaEventDisableTiming));
        BF_CUDA_CHECK(st, cudaEventCreateWithFlags(&st->consumed[k], cudaEventDisableTiming));
    }
    BF_CUBLAS_CHECK(st, cublasCreate(&st->blas));
    BF_CUBLAS_CHECK(st, cublasSetStream(st->blas, st->stream));
    /* exact FP32 GEMMs (no TF32), as on the CPU */
    BF_CUBLAS_CHECK(st, cublasSetMathMode(st->blas, CUBLAS_DEFAULT_MATH));
    BF_CUDNN_CHECK(st, cudnnCreate(&st->dnn));
    BF_CUDNN_CHECK(st, cudnnSetStream(st->dnn, st->stream));
    return BF_OK;
}

BF_EXPORT bf_status bf_cuda_open(const bf_cuda_host *host, int device, bf_backend **out) {
    if (out) *out = NULL;
    bf_cuda_shim_set(host);
    if (!out) return BF_FAIL(BF_ERR_ARG, "bf_cuda_open: no output pointer");
    char msg[768];
    if (bf_cuda_check(device, msg, sizeof msg) != 0)
        return BF_FAIL(BF_ERR_DEVICE, "cuda:%d cannot be used: %s", device, msg);
    bf_cuda_state *st = &states[device]; /* bf_cuda_check bounds the index */
    if (st->open) {
        *out = &st->be;
        return BF_OK;
    }
    memset(st, 0, sizeof *st);
    st->device = device;
    st->open = 1; /* for the error paths of create(); cleared by teardown */
    snprintf(st->name, sizeof st->name, "cuda:%d", device);
    bf_status s = create(st);
    if (s != BF_OK) {
        teardown(st);
        return s;
    }
    fill_vtable(st);
    *out = &st->be;
    return BF_OK;
}

BF_EXPORT void bf_cuda_close(bf_backend *be) {
    if (!be || !be->impl) return;
    bf_cuda_state *st = BF_CUDA_ST(be);
    if (!st->open) return;
    teardown(st);
}
