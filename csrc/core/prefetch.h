/* prefetch.h - batch assembly ahead of the step loop. A worker thread gathers
 * the rows of micro-batch j+1 (shuffled order, dtype conversion, memmap page
 * faults; each model input's and output's own arrays side by side) into host batch slot (j+1) % depth while the step loop computes on
 * slot j % depth. The slots are the run's planned batch buffers; the thread
 * allocates nothing but its fixed, stated stack. */
#ifndef BF_PREFETCH_H
#define BF_PREFETCH_H

#include <pthread.h>

#include "program.h"

#define BF_PREFETCH_STACK (256 * 1024)

/* the micro-batches of steps [first_step, first_step + nsteps), in order */
typedef struct {
    long n, batch, mb;    /* rows in the epoch, rows per step, rows per micro-batch */
    long step, step_end;  /* current step, one past the last */
    long done;            /* rows of the current step already handed out */
} bf_jobs;

void bf_jobs_init(bf_jobs *it, long n, long batch, long mb, long first_step, long nsteps);
/* next micro-batch: rows [*start, *start + *rows) of the order; *step_rows =
 * rows of its step; *first = first micro-batch of its step. 0 when done. */
int bf_jobs_next(bf_jobs *it, long *start, long *rows, long *step, long *step_rows, int *first);

typedef struct {
    bf_run *r;
    const bf_srcs *x, *y; /* y NULL: predict */
    const int64_t *order;
    long base;            /* row offset added when order is NULL */
    long slot_base;       /* slots continue alternating across calls (r->job_seq) */
    bf_jobs jobs;
    int threaded;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long produced, consumed, failed_job;
    int stop;
    bf_error err;
    double wait_seconds;  /* time the step loop spent waiting for data */
} bf_prefetch;

bf_status bf_prefetch_start(bf_prefetch *p, bf_run *r, const bf_srcs *x, const bf_srcs *y, const int64_t *order,
                            long base, const bf_jobs *jobs);
/* wait until job j's rows are in a host slot; *slot receives its index.
 * The worker refills a slot only after its job is released. */
bf_status bf_prefetch_acquire(bf_prefetch *p, long j, int *slot);
void bf_prefetch_release(bf_prefetch *p, long j);
void bf_prefetch_stop(bf_prefetch *p);

#endif
