/* arena.c - reservation, bump allocation and fault injection (see arena.h).
 * The host reservation is the engine's only malloc; pages are touched by the
 * steps that use them, so RSS follows the plan. */
#include "arena.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>

#define BF_HOST_HEADER 4096
#define BF_HUGE_MIN (4u << 20)

static atomic_long bf_alloc_attempts;
static atomic_long bf_fail_at;
static atomic_long bf_live_reservations;

long bf_arena_live(void) { return atomic_load(&bf_live_reservations); }

void bf_fault_set(long fail_at) {
    atomic_store(&bf_alloc_attempts, 0);
    atomic_store(&bf_fail_at, fail_at);
}

long bf_fault_count(void) { return atomic_load(&bf_alloc_attempts); }

int bf_fault_hit(void) {
    long n = atomic_fetch_add(&bf_alloc_attempts, 1) + 1;
    long f = atomic_load(&bf_fail_at);
    return f > 0 && n == f;
}

/* Host reservations are fresh anonymous mappings: their pages count toward
 * RSS exactly when a step first touches them (heap reuse would hide them), and
 * release returns them to the system at once. One header page keeps the size.
 * Large ones ask for transparent huge pages (2 MiB: a 166 MiB Transformer
 * arena took 24k page faults per fit, 640 with them); RSS still stays within
 * the mapping, so within the plan. */
bf_status bf_host_reserve(void **out, size_t bytes) {
    *out = NULL;
    size_t total = bytes + BF_HOST_HEADER;
    void *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return BF_FAIL(BF_ERR_NOMEM, "the system refused %zu bytes of host memory", bytes);
    if (total >= BF_HUGE_MIN) madvise(p, total, MADV_HUGEPAGE); /* advice only; ignored where THP is off */
    *(size_t *)p = total;
    *out = (char *)p + BF_HOST_HEADER;
    return BF_OK;
}

size_t bf_host_reserved_bytes(const void *p) {
    return p ? *(const size_t *)((const char *)p - BF_HOST_HEADER) - BF_HOST_HEADER : 0;
}

void bf_host_release(void *p) {
    if (!p) return;
    char *base = (char *)p - BF_HOST_HEADER;
    munmap(base, *(size_t *)base);
}

void bf_arena_init(bf_arena *a, bf_backend *be, const char *where, size_t budget) {
    memset(a, 0, sizeof *a);
    a->be = be;
    a->budget = budget;
    strncpy(a->where, where, sizeof a->where - 1);
}

bf_status bf_arena_reserve(bf_arena *a, size_t bytes) {
    if (a->base)
        return BF_FAIL(BF_ERR_INTERNAL, "arena on %s reserved twice", a->where);
    bytes = bf_align_up(bytes);
    if (a->budget && bytes > a->budget)
        return BF_FAIL(BF_ERR_BUDGET, "needs %zu bytes on %s, budget is %zu bytes", bytes,
                       a->where, a->budget);
    if (bf_fault_hit())
        return BF_FAIL(BF_ERR_NOMEM, "injected failure reserving %zu bytes on %s", bytes,
                       a->where);
    void *p = NULL;
    BF_TRY(a->be->reserve(a->be, &p, bytes));
    a->base = p;
    atomic_fetch_add(&bf_live_reservations, 1);
    a->capacity = bytes;
    a->used = 0;
    a->high_water = 0;
    return BF_OK;
}

bf_status bf_arena_alloc(bf_arena *a, size_t bytes, void **out) {
    *out = NULL;
    bytes = bf_align_up(bytes);
    if (bf_fault_hit())
        return BF_FAIL(BF_ERR_NOMEM, "injected failure allocating %zu bytes on %s", bytes,
                       a->where);
    if (!a->base || a->used + bytes > a->capacity)
        return BF_FAIL(BF_ERR_INTERNAL,
                       "arena on %s: %zu bytes asked with %zu of %zu used (plan mismatch)",
                       a->where, bytes, a->used, a->capacity);
    *out = a->base + a->used;
    a->used += bytes;
    if (a->used > a->high_water) a->high_water = a->used;
    return BF_OK;
}

void bf_arena_release(bf_arena *a) {
    if (a->base) {
        a->be->release(a->be, a->base);
        atomic_fetch_sub(&bf_live_reservations, 1);
    }
    a->base = NULL;
    a->capacity = a->used = 0;
}
