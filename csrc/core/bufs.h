/* bufs.h - listing the planned buffers of a step (program.c, the layer
 * files, the sequence losses): a new buffer of some bytes and a name, and
 * its uses at step times, from which the planner takes its lifetime. */
#ifndef BF_BUFS_H
#define BF_BUFS_H

#include "step.h"

/* the most bytes of one planned buffer or batch slot (4 PiB, beyond any machine): a larger one is a
 * BF_ERR_BUDGET naming it, and the sums of at most BF_RUN_MAXBUF of them never wrap a size_t */
#define BF_MAX_BUF_BYTES ((size_t)1 << 52)

/* a new buffer named by fmt with a and b (two %s) */
bf_status bf_run_newbuf_fmt(bf_run *r, int *id, size_t bytes, const char *fmt, const char *a, const char *b);
/* a new buffer named name + what */
bf_status bf_run_newbuf(bf_run *r, int *id, size_t bytes, const char *name, const char *what);
/* buffer id (none when < 0) is used at time t */
void bf_run_use(bf_run *r, int id, int t);

#endif
