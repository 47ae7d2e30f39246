/* planner.h - offsets for buffers with known lifetimes, and the exact peak.
 * Like ggml_gallocr / a register allocator: walk the step in order, free each
 * buffer after its last use, place each new one best-fit into the free list. */
#ifndef BF_PLANNER_H
#define BF_PLANNER_H

#include <stddef.h>

#include "status.h"

/* buffers one plan may hold (bf_run.bufs, and the planner's free list on the stack: 20 bytes each) */
#define BF_PLAN_MAX 2048

typedef struct {
    size_t bytes;   /* requested (rounded up to BF_ALIGN by the planner) */
    int first, last;/* op indices of first definition and last use (inclusive) */
    size_t offset;  /* out: offset inside the region */
} bf_plan_buf;

/* Assign offsets to n buffers; *peak = bytes of the region that holds them all. */
bf_status bf_plan_offsets(bf_plan_buf *bufs, int n, size_t *peak);

#endif
