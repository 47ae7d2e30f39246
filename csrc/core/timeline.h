/* timeline.h - the step program as a sequence of ops, for reports (plan.plot()):
 * how many ops a run's step has, what each one is, and the planned bytes live
 * at each. Read-only over a planned bf_run; allocates nothing. */
#ifndef BF_TIMELINE_H
#define BF_TIMELINE_H

#include <stddef.h>

#include "program.h"

/* Ops of the step: split, forward of each node, loss, (train) backward of each node. */
int bf_run_nops(const bf_run *r);

/* Label of op t ("forward conv2d", "loss", "backward dense"), at most n bytes with the NUL. */
void bf_run_op_label(const bf_run *r, int t, char *out, size_t n);

/* At op t: *live = the aligned bytes of the buffers live there, *top = the end
 * of the highest of them in the planned region. max over t of *top is the
 * planner's peak (each buffer is live at its first op); *live <= *top, the
 * difference being free gaps between live buffers. */
void bf_plan_live_at(const bf_plan_buf *bufs, int n, int t, size_t *live, size_t *top);

#endif
