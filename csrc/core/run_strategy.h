/* run_strategy.h - how a run's training steps are shared among processes: one
 * process (nothing to share) or data parallel (the gradients summed over the
 * ranks: dist_overlap.c's buckets on the CPU, overlapped with backward; NCCL
 * on a device). run.c calls a strategy at the points of a step instead of
 * asking how many ranks there are (the Python side's engine/strategy.py is
 * its counterpart in the fit loop). */
#ifndef BF_RUN_STRATEGY_H
#define BF_RUN_STRATEGY_H

#include "step.h"

typedef struct bf_strategy {
    const char *name;
    int (*ranks)(void);
    /* a training job list begins: the CPU's gradient buckets laid out */
    bf_status (*plan)(bf_run *r);
    /* a step's last micro-batch begins backward: *overlap 1 when the gradients' sum runs beside it */
    bf_status (*begin_backward)(bf_run *r, int *overlap);
    /* node i's backward is done: its gradients are complete */
    bf_status (*node_done)(bf_run *r, int i);
    /* backward is done: *overlapped 1 when the sum ran beside it (now finished) */
    bf_status (*end_backward)(bf_run *r, int *overlapped);
    /* before the update: the gradients summed over the ranks and scaled by 1 / ranks, the non-finite verdict
     * *bad agreed (the max over the ranks) */
    bf_status (*reduce)(bf_run *r, int *bad);
    /* a device run opens: rank 0's weights and optimizer state to every rank */
    bf_status (*broadcast)(bf_run *r);
    /* a job list ends, maybe after a failure mid-step: nothing of it still runs beside */
    void (*drain)(void);
} bf_strategy;

/* the strategy of this process: data parallel once bf_dist_init made more than one rank */
const bf_strategy *bf_run_strategy(void);

#endif
