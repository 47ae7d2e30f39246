/* dist_nccl.h - data parallel on CUDA devices: the gradient all-reduce over
 * NCCL on the device's gradient buffer (the backend's nccl_* entries,
 * csrc/cuda/nccl.cu), set up and watched from here with the host transport
 * (dist_mpi.c / dist_tcp.c): rank 0's ncclUniqueId is broadcast over it, and
 * every wait is polled against its deadline and heartbeat; a dead, stuck or
 * failing peer makes ncclCommAbort and BF_ERR_DIST within the timeout. */
#ifndef BF_DIST_NCCL_H
#define BF_DIST_NCCL_H

#include <stddef.h>

#include "backend.h"
#include "status.h"

/* after an agreement that every rank is alive: rank 0's unique id
 * broadcast, ncclCommInitRank on be's device. bytes: device memory NCCL
 * took (outside our arena; the plan counts it) */
bf_status bf_nccl_setup(bf_backend *be, const char *lib, size_t *bytes);
/* grads (n floats, device) summed over the ranks in buckets on the compute
 * stream, waited for with a bound, then scaled by 1 / size */
bf_status bf_nccl_step(bf_backend *be, float *grads, long n);
/* buf (bytes, device) = rank 0's (the weights before step one), waited
 * for with the same bound */
bf_status bf_nccl_bcast(bf_backend *be, void *buf, size_t bytes);
/* seconds spent in bf_nccl_step (benchmarks: communication share) */
double bf_nccl_seconds(void);
/* the communicator destroyed (a broken group's is aborted) */
bf_status bf_nccl_teardown(void);

#endif
