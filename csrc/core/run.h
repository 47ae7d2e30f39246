/* run.h - executing a planned step program: open (one reservation per
 * arena), train / evaluate / predict over chunks of steps, close.
 * Steps allocate nothing. Ops are called through the backend vtable. */
#ifndef BF_RUN_H
#define BF_RUN_H

#include "program.h"

typedef struct {
    double loss_sum;          /* sum over outputs of loss_weight * (sum of sample weight * per-sample loss) */
    double out_loss[BF_MAX_OUTPUTS]; /* per output: sum of sample weight * per-sample loss */
    long rows, steps;
    double wait_seconds;      /* step loop waiting for batches */
} bf_totals;

/* Reserve the run's arenas (budgets in bytes, 0 = unlimited) and move the
 * weights and optimizer state where the backend computes. */
bf_status bf_run_open(bf_run *r, size_t host_budget, size_t device_budget);
/* Copy weights / optimizer state back to the model (device runs). */
bf_status bf_run_sync_model(bf_run *r);
/* The reverse: the model's weights / optimizer state onto the run's device. */
bf_status bf_run_load_model(bf_run *r);
/* data parallel on a device: rank 0's weights / optimizer state broadcast over NCCL (dist_nccl.c) */
bf_status bf_run_dist_bcast(bf_run *r);
void bf_run_close(bf_run *r);

/* Sample weights (sw: one per row of x, any real dtype, used in place) and
 * class weights (cw[class id], ncw of them; other classes weigh 1) for the
 * next train / evaluate calls; NULL: none. The run must have been planned
 * `weighted`. The weight of a row is sw[row] * cw[class of its label], the
 * class being the label (rounded) or the argmax of a one-hot row, as Keras. */
bf_status bf_run_set_weights(bf_run *r, const bf_src *sw, const float *cw, long ncw);
/* metric statistics summed since the last reset, and the values (Keras result()) */
void bf_run_reset_metrics(bf_run *r);
void bf_run_metric_results(const bf_run *r, double *out /* (m->nmetrics) */);

/* Steps [first_step, first_step+nsteps) of an epoch over n rows taken in
 * `order` (NULL: 0..n-1), `batch` rows per step (the last may be short), each
 * split into micro-batches of r->B rows. Gradients of a step are summed over
 * its micro-batches with the loss scaled by 1/rows, so the update equals the
 * full-batch one. The update is applied only when loss and gradients are finite.
 * x holds one array per model input and y one per output (labels), gathered
 * side by side into the packed batch rows (offsets are set here; one array
 * of the whole packed row is taken too); callers fill n and src[] only, and the run fills off[] and row. */
bf_status bf_run_train(bf_run *r, bf_srcs *x, bf_srcs *y, const int64_t *order, long n,
                       long batch, long first_step, long nsteps, bf_totals *tot);
bf_status bf_run_evaluate(bf_run *r, bf_srcs *x, bf_srcs *y, const int64_t *order,
                          long n, long batch, long first_step, long nsteps, bf_totals *tot);
/* rows [out_start, out_start + n) of out_host = model(x[start .. start+n)); out_host holds
 * each output k in turn as an (out_rows, its size) block at out_rows * out_offs[k] */
bf_status bf_run_predict(bf_run *r, float *out_host, long out_rows, long out_start, bf_srcs *x, long start,
                         long n);


#endif
