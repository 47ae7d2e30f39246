/* arena.h - the one allocator of the engine: a byte budget, one reservation per
 * arena, bump allocation inside it, statistics, and fault injection.
 * Invariant: every byte the engine holds comes from an arena; the planner sizes
 * each reservation exactly, so high_water == the plan's bytes for that arena. */
#ifndef BF_ARENA_H
#define BF_ARENA_H

#include <stddef.h>

#include "backend.h"
#include "status.h"

#define BF_ALIGN 64

typedef struct {
    char where[16];     /* "host" or "cuda:N", used in messages */
    bf_backend *be;     /* who reserves the block (CPU: host memory) */
    char *base;         /* the one reservation */
    size_t capacity;    /* bytes reserved */
    size_t used;        /* bump pointer */
    size_t high_water;  /* max of used */
    size_t budget;      /* bytes this arena may reserve; 0 = unlimited */
    int keep;           /* a host run arena: released into the kept slot, reserved from it */
} bf_arena;

static inline size_t bf_align_up(size_t n) { return (n + BF_ALIGN - 1) & ~(size_t)(BF_ALIGN - 1); }

void bf_arena_init(bf_arena *a, bf_backend *be, const char *where, size_t budget);
/* Reserve `bytes` in one block; BF_ERR_BUDGET above the budget, BF_ERR_NOMEM
 * when the system refuses. */
bf_status bf_arena_reserve(bf_arena *a, size_t bytes);
/* Carve an aligned block from the reservation (sizes are rounded up to BF_ALIGN). */
bf_status bf_arena_alloc(bf_arena *a, size_t bytes, void **out);
void bf_arena_release(bf_arena *a);
/* Reservations currently held, all arenas of the process (leak checks). */
long bf_arena_live(void);

/* Process-wide allocation counter and fault injection: when fail_at > 0 the
 * fail_at-th allocation attempt from now (reserve or alloc) fails with
 * BF_ERR_NOMEM. Counting continues either way. */
void bf_fault_set(long fail_at);
long bf_fault_count(void);
/* Called by every allocation site before it allocates; nonzero = fail now. */
int bf_fault_hit(void);

/* Host memory for the CPU backend: the only malloc of the engine. */
bf_status bf_host_reserve(void **out, size_t bytes);
void bf_host_release(void *p);
/* bytes a live bf_host_reserve reservation holds (as asked) */
size_t bf_host_reserved_bytes(const void *p);

/* Kept run arenas: a host run arena (keep = 1) is not unmapped when its run
 * ends but kept, its pages given to the kernel to take back under pressure
 * (MADV_FREE); the next keep arena takes the smallest one at least its size,
 * one larger than all of them unmaps them before mapping its own. At most two
 * per process. */
size_t bf_host_kept_bytes(void);   /* bytes of the kept arenas (as reserved), 0 when none */
size_t bf_host_kept_taken(void);   /* bytes reused from them still resident when taken (a counter) */
void bf_host_drop_kept(void);      /* unmap them now */
void bf_host_poison_kept(int on);  /* tests: fill a kept arena with NaN when it is reused */

#endif
