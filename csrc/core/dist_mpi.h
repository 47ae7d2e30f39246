/* dist_mpi.h - data-parallel collectives over MPI (CPU path). libmpi_abi.so
 * (the MPI-5 standard ABI, e.g. from the `mpich` wheel) is dlopen'ed at run
 * time; nothing here needs MPI to build. Every wait is a non-blocking
 * collective polled with MPI_Test against a deadline, so a dead or stuck peer
 * becomes a status within `timeout` seconds, never a hang; after one failure
 * the group is marked broken and every later call fails at once. With one
 * process (or before bf_dist_init) bf_dist_size() is 1 and nothing is done. */
#ifndef BF_DIST_MPI_H
#define BF_DIST_MPI_H

#include <stdint.h>

#include "status.h"

/* open `lib` (a path to libmpi_abi.so), MPI_Init_thread, duplicate
 * MPI_COMM_WORLD with MPI_ERRORS_RETURN; rank and size out */
bf_status bf_dist_init(const char *lib, double timeout_s, int *rank, int *size);
int bf_dist_size(void);
int bf_dist_rank(void);
void bf_dist_set_timeout(double timeout_s);
/* seconds spent in collectives since init (benchmarks: communication share) */
double bf_dist_comm_seconds(void);

/* One training step's agreement, called between backward and the update:
 * first a flag agreed (max over ranks: 1 non-finite gradients somewhere,
 * 2 + r rank r stopped with an error, which fails here), then grads (n
 * floats) summed over ranks in buckets and divided by the size. grads NULL:
 * the flag only (on a device, dist_nccl.c reduces the gradients). */
bf_status bf_dist_step(float *grads, long n, int *bad);

/* This rank stopped with an error mid-run: post the failure flag the others'
 * next step agrees on, so that they raise at once instead of at the deadline */
bf_status bf_dist_abandon(void);
/* the same flag, agreed at the start of each collective phase of fit outside
 * the engine (plan, weights, logs): fails when a rank posted its abandon */
bf_status bf_dist_agree(const char *what);
const char *bf_dist_host_of(int rank);

/* in-place reductions and exchanges (planning, logs, weights, seeds) */
bf_status bf_dist_allreduce_f64(double *buf, long n, int op); /* op 0 sum, 1 max, 2 min */
bf_status bf_dist_bcast(void *buf, long bytes, int root);
/* each rank's `bytes` bytes of `send`, in rank order, into `recv` (size * bytes) */
bf_status bf_dist_allgather(const void *send, void *recv, long bytes);
/* MPI_Finalize when the group is healthy (a broken one is left to exit) */
bf_status bf_dist_finalize(void);

/* grads[lo[b], hi[b]) summed over the ranks in place, bucket by bucket
 * (all in flight at once over MPI); the same buckets give the same bits.
 * wire: NULL, float32 travels; else the gradients travel as bfloat16 through
 * wire (as many values as grads, the run's buffer): each rank rounds its own
 * to nearest even once, every partial sum is computed in float32 from the
 * expanded values and rounded again only to travel on (MPI: a user op on
 * MPI_UINT16_T; TCP: rank 0's float32 sum in rank order), and grads ends as
 * the expanded result, the same bits on every rank */
bf_status bf_dist_sum_buckets(float *grads, uint16_t *wire, const long *lo, const long *hi, int nb);
/* DataParallel(gradient_compression="bfloat16") of the active distribution
 * (set from Python with it): training runs plan and carve the wire buffer */
void bf_dist_set_wire_bf16(int on);
int bf_dist_wire_bf16(void);
/* gradient bytes this rank has handed to the transport (TCP: sent on its
 * sockets, frame headers included; MPI: the buckets' payload) */
long long bf_dist_grad_bytes(void);
/* grads (n) *= 1 / size */
void bf_dist_scale(float *grads, long n);

/* for the NCCL path (dist_nccl.c): the collectives' deadline, a peer found
 * dead by the heartbeat (its rank, else -1), and a failure found there
 * recorded so that the group is broken and later calls fail at once */
double bf_dist_timeout(void);
int bf_dist_dead_peer(void);
bf_status bf_dist_fail(const char *msg);

#endif
