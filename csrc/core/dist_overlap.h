/* dist_overlap.h - the CPU path's gradient all-reduce overlapped with
 * backward: the gradients are cut into buckets along layer boundaries (in
 * backward order, about BUCKET floats each); as soon as backward has passed
 * the last layer that writes a bucket, a communication thread sums it over
 * the ranks (dist_mpi.c / dist_tcp.c) while backward goes on; the update
 * waits for all of them. The same buckets are reduced in the same order
 * without overlap (BF_DIST_OVERLAP=0), so both give the same bits. One
 * thread, started on first use and kept for the process; no memory is
 * allocated here (static tables). With MPI (MPI_THREAD_SERIALIZED) the main
 * thread makes no MPI call while the thread is busy: it waits first. */
#ifndef BF_DIST_OVERLAP_H
#define BF_DIST_OVERLAP_H

#include <stdint.h>

#include "model.h"
#include "status.h"

/* the bucket table of model m (trainable gradients, layer-aligned; about
 * BF_DIST_BUCKET floats each when that is set) */
bf_status bf_overlap_plan(const bf_model *m);
/* buckets of the current table: [lo, hi) floats of the gradients */
int bf_overlap_buckets(const long **lo, const long **hi);
/* 1 unless BF_DIST_OVERLAP=0 (read once) */
int bf_overlap_enabled(void);
/* start of the last micro-batch's backward of a step: the thread agrees
 * first that every rank goes on (a rank that stopped fails this at once).
 * wire: the bfloat16 wire buffer, or NULL (float32 travels; bf_dist_sum_buckets) */
bf_status bf_overlap_begin(float *grads, uint16_t *wire);
/* backward has finished layer i: hand over every bucket now complete */
bf_status bf_overlap_layer_done(int i);
/* the step's buckets all summed (posting those not posted yet), or the
 * thread's error; the thread is idle on return */
bf_status bf_overlap_wait(void);
/* after a failure mid-step: let the thread finish what it holds (bounded by
 * the transport's deadline); errors are dropped */
void bf_overlap_drain(void);
/* overlapped steps, buckets handed over during backward, buckets in all,
 * seconds the main thread waited for the thread, seconds the thread worked
 * (in collectives: also in bf_dist_comm_seconds) */
void bf_overlap_counters(long *steps, long *early, long *buckets, double *wait_s, double *thread_s);
/* 1 between begin and wait */
int bf_overlap_active(void);

#endif
