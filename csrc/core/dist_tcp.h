/* dist_tcp.h - data-parallel collectives over TCP, for a torchrun-style launch
 * (RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT, no mpiexec). The same
 * collectives as dist_mpi.h, which hands every bf_dist_* call here while this
 * transport is the one initialized (so run.c's hook does not change).
 * Topology: a star around rank 0 (rank 0 listens at MASTER_ADDR:MASTER_PORT,
 * every other rank holds one connection to it). Reductions are done by rank 0
 * in rank order (((r0 + r1) + r2) ...), pipelined in 64 KiB blocks (a block
 * goes back while the peers still send the next), so every rank gets bit-identical
 * results and the order never changes between runs. Gradients may travel as
 * bfloat16 (bf_tcp_sum_bf16): half the bytes, sums still in float32. Every wait is a poll()
 * against a deadline; a closed connection is a dead peer, found at once, and
 * rank 0 tells the others (a DEAD / STOP frame) before closing. No memory is
 * allocated: rank 0 reduces through a fixed static scratch block. */
#ifndef BF_DIST_TCP_H
#define BF_DIST_TCP_H

#include <stdint.h>

#include "status.h"

/* rendezvous: rank 0 listens at addr:port and gathers the hellos of size - 1
 * ranks, every connection at once (a silent, garbage or wrong one delays no
 * rank: it is refused, named in the error at the deadline, and a wrong rank
 * hears why); the others connect (retrying until the deadline); hosts are
 * exchanged. On failure no socket stays open: a retry may use the same port. */
bf_status bf_tcp_init(const char *addr, int port, int rank, int size, double timeout_s);
int bf_tcp_active(void); /* initialized with more than one rank */
int bf_tcp_size(void);
int bf_tcp_rank(void);
void bf_tcp_set_timeout(double timeout_s);
double bf_tcp_comm_seconds(void);
const char *bf_tcp_host_of(int rank);

bf_status bf_tcp_step(float *grads, long n, int *bad);
bf_status bf_tcp_abandon(void);
bf_status bf_tcp_agree(const char *what);
bf_status bf_tcp_allreduce_f64(double *buf, long n, int op);
bf_status bf_tcp_bcast(void *buf, long bytes, int root);
bf_status bf_tcp_allgather(const void *send, void *recv, long bytes);
bf_status bf_tcp_finalize(void);
double bf_tcp_timeout(void);
int bf_tcp_peer_gone(void); /* rank whose connection closed, else -1 */
bf_status bf_tcp_fail(const char *msg);
bf_status bf_tcp_sum(float *grads, long n); /* in place, rank order */
/* the same with bfloat16 on the wire: grads (n) rounded into wire (n, the
 * run's buffer), rank 0 sums the expanded values in float32 in rank order and
 * rounds the sum to send it back; grads = the expanded sum on every rank */
bf_status bf_tcp_sum_bf16(float *grads, uint16_t *wire, long n);
long long bf_tcp_grad_bytes_sent(void); /* gradient bytes this rank sent, frame headers included */

#endif
