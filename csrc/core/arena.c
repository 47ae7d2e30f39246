/* arena.c - reservation, bump allocation, the kept run arena and fault
 * injection (see arena.h). The host reservation is the engine's only malloc;
 * pages are touched by the steps that use them, so RSS follows the plan. */
#include "arena.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <unistd.h>

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

/* Kept run arenas: up to BF_KEPT host mappings (header included), oldest
 * first. Their pages are MADV_FREE: the kernel takes them back under memory
 * pressure (no OOM for what a finished run left behind; they count as
 * inactive_file in the cgroup and in MemAvailable), and a run of their size or less
 * writes into them without page faults or a zeroing pass. Two slots: a fit's
 * training and validation runs. */
#define BF_KEPT 2
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static char *kept[BF_KEPT];
static atomic_size_t kept_taken;
static int kept_poison;

static size_t map_bytes(const char *p) { return *(const size_t *)p; }

size_t bf_host_kept_bytes(void) {
    size_t n = 0;
    pthread_mutex_lock(&kept_lock);
    for (int k = 0; k < BF_KEPT; k++) n += kept[k] ? map_bytes(kept[k]) - BF_HOST_HEADER : 0;
    pthread_mutex_unlock(&kept_lock);
    return n;
}

size_t bf_host_kept_taken(void) { return atomic_load(&kept_taken); }

void bf_host_drop_kept(void) {
    char *ps[BF_KEPT];
    pthread_mutex_lock(&kept_lock);
    for (int k = 0; k < BF_KEPT; k++) ps[k] = kept[k], kept[k] = NULL;
    pthread_mutex_unlock(&kept_lock);
    for (int k = 0; k < BF_KEPT; k++)
        if (ps[k]) munmap(ps[k], map_bytes(ps[k]));
}

void bf_host_poison_kept(int on) { kept_poison = on; }

/* bytes of [p, p + n) resident now (p page-aligned), asked of mincore a chunk
 * at a time through a vector on the stack; all of n where it cannot tell */
static size_t resident_bytes(char *p, size_t n) {
    unsigned char vec[1024];
    const long ps = sysconf(_SC_PAGESIZE);
    const size_t page = ps > 0 ? (size_t)ps : 4096, chunk = sizeof vec * page;
    size_t total = 0;
    for (size_t off = 0; off < n; off += chunk) {
        const size_t len = n - off < chunk ? n - off : chunk;
        if (mincore(p + off, len, vec) != 0) return n;
        for (size_t i = 0; i < (len + page - 1) / page; i++) total += (vec[i] & 1) ? page : 0;
    }
    return total < n ? total : n;
}

/* the smallest kept mapping of at least `bytes` (a predict after a fit
 * writes the start of the fit's arena; what it leaves stays MADV_FREE), or
 * NULL after unmapping every kept one (so that what the caller maps next
 * comes on top of no kept memory) */
static void *take_kept(size_t bytes) {
    char *hit = NULL;
    int at = -1;
    pthread_mutex_lock(&kept_lock);
    for (int k = 0; k < BF_KEPT; k++)
        if (kept[k] && map_bytes(kept[k]) >= bytes + BF_HOST_HEADER && (at < 0 || map_bytes(kept[k]) < map_bytes(hit)))
            hit = kept[k], at = k;
    if (hit) { /* the others move up, oldest first */
        for (int k = at; k + 1 < BF_KEPT; k++) kept[k] = kept[k + 1];
        kept[BF_KEPT - 1] = NULL;
    }
    pthread_mutex_unlock(&kept_lock);
    if (!hit) {
        bf_host_drop_kept();
        return NULL;
    }
    atomic_fetch_add(&kept_taken, resident_bytes(hit + BF_HOST_HEADER, bytes)); /* before the poison touches it */
    if (kept_poison) memset(hit + BF_HOST_HEADER, 0xff, bytes); /* NaN: tests that nothing reads before it writes */
    return hit + BF_HOST_HEADER;
}

/* keep a released host run arena in a free slot, else in place of the oldest;
 * where the kernel has no MADV_FREE it is unmapped as any other */
static void keep(void *q) {
    char *p = (char *)q - BF_HOST_HEADER, *old = NULL;
#ifdef MADV_FREE
    if (madvise(p, map_bytes(p), MADV_FREE) == 0) {
        pthread_mutex_lock(&kept_lock);
        int n = 0; /* the kept ones moved to the front, oldest first, then p */
        for (int k = 0; k < BF_KEPT; k++)
            if (kept[k]) kept[n++] = kept[k];
        if (n == BF_KEPT) {
            old = kept[0];
            for (int k = 0; k + 1 < BF_KEPT; k++) kept[k] = kept[k + 1];
            n--;
        }
        kept[n] = p;
        for (int k = n + 1; k < BF_KEPT; k++) kept[k] = NULL;
        pthread_mutex_unlock(&kept_lock);
        if (old) munmap(old, map_bytes(old));
        return;
    }
#endif
    munmap(p, map_bytes(p));
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
    void *p = a->keep ? take_kept(bytes) : NULL;
    if (!p) BF_TRY(a->be->reserve(a->be, &p, bytes));
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
        if (a->keep) keep(a->base);
        else a->be->release(a->be, a->base);
        atomic_fetch_sub(&bf_live_reservations, 1);
    }
    a->base = NULL;
    a->capacity = a->used = 0;
}
