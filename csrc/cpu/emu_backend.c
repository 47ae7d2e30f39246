/* emu_backend.c - "emu": the CPU ops behind a device's interface, for tests of
 * the core's device path on machines without a GPU (see backend.h). It has
 * its own memory (host mappings standing in for device memory, counted
 * against BF_EMU_TOTAL_BYTES), copies weights and batches both ways, uploads
 * batches through the double-buffer calls and takes a run workspace, whose
 * binding it checks on every sum (as the CUDA backend needs it). */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "arena.h"
#include "cpu_ops.h"

#define BF_EMU_WS_BYTES 4096

static atomic_size_t emu_held;     /* bytes of live reservations */
static atomic_long emu_wait_calls; /* calls that would make the host wait on a GPU */
static void *emu_ws;               /* the bound run workspace */

long bf_emu_waits(void) { return atomic_load(&emu_wait_calls); }

static bf_status emu_reserve(bf_backend *be, void **out, size_t bytes) {
    (void)be;
    *out = NULL;
    size_t held = atomic_load(&emu_held);
    if (bytes > BF_EMU_TOTAL_BYTES - held)
        return BF_FAIL(BF_ERR_BUDGET, "needs %zu bytes of device memory on emu:0, %zu free", bytes,
                       BF_EMU_TOTAL_BYTES - held);
    BF_TRY(bf_host_reserve(out, bytes));
    atomic_fetch_add(&emu_held, bytes);
    return BF_OK;
}

static void emu_release(bf_backend *be, void *p) {
    (void)be;
    if (!p) return;
    atomic_fetch_sub(&emu_held, bf_host_reserved_bytes(p));
    bf_host_release(p);
}

void bf_emu_mem_info(size_t *free_bytes, size_t *total_bytes) {
    *total_bytes = BF_EMU_TOTAL_BYTES;
    *free_bytes = BF_EMU_TOTAL_BYTES - atomic_load(&emu_held);
}

static bf_status emu_copy(bf_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (!bytes) return BF_OK;
    if (!dst || !src) return BF_FAIL(BF_ERR_ARG, "emu copy: NULL pointer (%zu bytes)", bytes);
    memcpy(dst, src, bytes);
    return BF_OK;
}

static bf_status emu_read(bf_backend *be, void *dst, const void *src, size_t bytes) {
    atomic_fetch_add(&emu_wait_calls, 1);
    return emu_copy(be, dst, src, bytes);
}

static bf_status emu_sync(bf_backend *be) {
    (void)be;
    atomic_fetch_add(&emu_wait_calls, 1);
    return BF_OK;
}

static size_t emu_ws_bytes(bf_backend *be) {
    (void)be;
    return BF_EMU_WS_BYTES;
}

static bf_status emu_bind(bf_backend *be, void *ws, size_t bytes) {
    (void)be;
    /* as the CUDA backend: cuBLAS wants its workspace 256-byte aligned */
    if (ws && (bytes < BF_EMU_WS_BYTES || (uintptr_t)ws % 256))
        return BF_FAIL(BF_ERR_INTERNAL, "emu: run workspace of %zu bytes at %p, needs %d aligned to 256", bytes, ws,
                       BF_EMU_WS_BYTES);
    emu_ws = ws;
    return BF_OK;
}

static bf_status emu_upload(bf_backend *be, int k, void *dst, const void *src, size_t bytes) {
    if (k < 0 || k > 1) return BF_FAIL(BF_ERR_INTERNAL, "emu upload: batch slot %d", k);
    return emu_copy(be, dst, src, bytes);
}

static bf_status emu_slot(bf_backend *be, int k) {
    (void)be;
    if (k < 0 || k > 1) return BF_FAIL(BF_ERR_INTERNAL, "emu: batch slot %d", k);
    return BF_OK;
}

static bf_status emu_batch_wait(bf_backend *be, int k) {
    atomic_fetch_add(&emu_wait_calls, 1);
    return emu_slot(be, k);
}

/* sums need the run workspace on a GPU (partials): require it here too */
static bf_status emu_sum(bf_backend *be, double *out, const float *x, long n) {
    if (!emu_ws) return BF_FAIL(BF_ERR_INTERNAL, "emu: sum without a bound run workspace");
    return bf_cpu_backend()->sum(be, out, x, n);
}

static bf_backend bf_emu;

bf_backend *bf_emu_backend(void) {
    if (!bf_emu.name) {
        bf_backend b = *bf_cpu_backend();
        b.name = "emu:0";
        b.reserve = emu_reserve;
        b.release = emu_release;
        b.to_device = emu_copy;
        b.to_host = emu_read;
        b.sync = emu_sync;
        b.run_workspace_bytes = emu_ws_bytes;
        b.bind_workspace = emu_bind;
        b.upload = emu_upload;
        b.batch_consumed = emu_slot;
        b.batch_wait = emu_batch_wait;
        b.sum = emu_sum;
        bf_emu = b;
    }
    return &bf_emu;
}
