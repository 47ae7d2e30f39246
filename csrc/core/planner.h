/* planner.h - offsets for buffers with known lifetimes, and the exact peak.
 * Like ggml_gallocr / a register allocator: walk the step in order, free each
 * buffer after its last use, place each new one best-fit into the free list. */
#ifndef BF_PLANNER_H
#define BF_PLANNER_H

#include <stddef.h>

#include "status.h"

/* the least buffers a run's table holds (bf_run_buf_cap in step.h adds per node and per edge) */
#define BF_PLAN_MAX 2048

typedef struct {
    size_t bytes;   /* requested (rounded up to BF_ALIGN by the planner) */
    int first, last;/* op indices of first definition and last use (inclusive) */
    size_t offset;  /* out: offset inside the region */
} bf_plan_buf;

/* bytes of the work space bf_plan_offsets needs for up to n buffers (its free list and order) */
size_t bf_plan_work_bytes(int n);
/* Assign offsets to n buffers; *peak = bytes of the region that holds them all. work: bf_plan_work_bytes(n) or
 * more, cap buffers' worth (n above cap: BF_ERR_ARG) */
bf_status bf_plan_offsets(bf_plan_buf *bufs, int n, size_t *peak, void *work, int cap);

#endif
