/* cpu_backend.c - the CPU backend vtable: host memory and the csrc/cpu ops
 * (the table of ops is generated from core/backend_ops.h). */
#include <string.h>

#include "arena.h"
#include "cpu_ops.h"

static bf_status cpu_reserve(bf_backend *be, void **out, size_t bytes) {
    (void)be;
    return bf_host_reserve(out, bytes);
}
static void cpu_release(bf_backend *be, void *p) {
    (void)be;
    bf_host_release(p);
}
static bf_status cpu_copy(bf_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (dst != src) memcpy(dst, src, bytes);
    return BF_OK;
}
static bf_status cpu_zero(bf_backend *be, void *dst, size_t bytes) {
    (void)be;
    memset(dst, 0, bytes);
    return BF_OK;
}
static bf_status cpu_sync(bf_backend *be) {
    (void)be;
    return BF_OK;
}

static bf_backend bf_cpu = {
    .name = "cpu",
    .reserve = cpu_reserve,
    .release = cpu_release,
    .to_device = cpu_copy,
    .to_host = cpu_copy,
    .fill_zero = cpu_zero,
    .sync = cpu_sync,
    /* every op of backend_ops.h the CPU implements: .op = bf_cpu_op */
#define BF_OP(ret, op, params, on) BF_ON_CPU_##on(.op = bf_cpu_##op, )
#include "backend_ops.h"
#undef BF_OP
};

bf_backend *bf_cpu_backend(void) { return &bf_cpu; }
