"""Data-parallel training past one process (CPU path, over MPI or TCP): Keras 3's
names (`DataParallel`, `initialize`, `set_distribution`, `distribution`,
`list_devices`, `get_device_count`, `DeviceMesh`; the model-parallel ones refused
by name: mesh.py), also reachable as `bf.distribution`.

Launch with `mpiexec -n N python train.py` (MPICH from PyPI: `pip install
boundfit[distributed]`). The MPI library is the standard-ABI libmpi_abi.so,
dlopen'ed by the C engine (csrc/core/dist_mpi.c); it is found through
BF_MPI_LIB, the `mpich` package's install prefix, or the `mpiexec` on PATH.

Or launch torchrun-style, without MPI: every process with RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT (LOCAL_WORLD_SIZE shares the host's cores), as
torchrun sets them; on one host `python -m boundfit.distribute
--nproc-per-node N train.py` starts them (launch.py). Keras 3's own way works
too: initialize(job_addresses="host:port,...", num_processes=N,
process_id=r), or KERAS_DISTRIBUTION_JOB_ADDRESSES / _NUM_PROCESSES /
_PROCESS_ID: the first address is the coordinator. Then the engine's TCP
transport (csrc/core/dist_tcp.c, behind the same bf_dist_* calls) carries
the collectives: rank 0 listens at MASTER_ADDR:MASTER_PORT, the others
connect to it, rank 0 reduces in rank order, block by block, and sends each
block back while the others still send (every rank the same bits). A peer
whose connection closes is found at once and rank 0 tells the others, so the
survivors raise DistributedError naming it within about a second.

Under a DataParallel distribution, fit():
- agrees ONE plan before step one: every rank plans its run (with the
  all-reduce's scratch), the verdicts are exchanged, and if any rank cannot
  fit, every rank raises the same MemoryBudgetError naming that rank and
  host; batch_size="auto" takes the largest per-rank batch that fits on the
  smallest rank;
- broadcasts rank 0's weights, shards the data by rank (arrays, memmaps,
  from_npy: global batch s of N*B rows is split in N slices of B rows, so N
  ranks with batch B follow one process with batch N*B, shuffled too: the
  order is rank 0's draw from the generator one process draws it from,
  seeded by set_random_seed; Sequences: batch i*N + rank), averages the gradients in the engine between backward and
  the update, and gives callbacks global epoch logs (the loss totals and
  the metrics' sums added over ranks, so every metric, AUC and Precision
  included, is the one over all rows; per-batch logs stay per rank);
- saves from rank 0 only (Model.save / save_weights are no-ops elsewhere).

Under a DataParallel distribution, evaluate() and predict() broadcast rank
0's weights, then split array rows by rank (evaluate: contiguous slices;
predict: blocks of ceil(n / N) rows) and combine, so that every rank returns
what one process returns: evaluate's loss and metrics over all rows (the
metrics' sums, AUC's buckets and the confusion counts added over ranks, so
Precision, AUC and sample-weighted metrics too); predict's blocks gathered
in rank order on every rank. A
Sequence x, steps=, or auto_shard_dataset=False: each rank runs all of it.
Every rank must call them (they are collectives, like fit).

BatchNormalization under DataParallel is per rank ("ghost" batch norm, as
TF's MirroredStrategy without SyncBatchNormalization, not Keras-on-JAX's
global-batch statistics): in training each rank normalizes with its own
batch of B rows, so N ranks do not follow one process with batch N*B when
the model has BatchNormalization; fit says so in a warning (rank 0). After
every epoch (before validation and callbacks) the moving mean and variance
are averaged over the ranks, so every rank holds the same model and rank 0
saves it: the moving mean is then exactly the single process's with the
global batch (the update is linear in the batch means), the moving variance
the mean of the ranks' (less the spread between their batch means).
Synchronized batch statistics would need an all-reduce inside the engine's
forward and backward passes: not implemented.

DataParallel(gradient_compression="bfloat16") sends the gradients as
bfloat16 (half the bytes; each rank's rounded once, every partial sum
computed in float32 and rounded again only to travel on; the run's plan
holds the wire buffer); refused on NCCL. gradient_bytes_sent() counts the
gradient bytes this rank handed to the transport.

On the CPU (MPI or TCP) the gradient all-reduce overlaps the step's
backward pass (of its last micro-batch): the gradients are cut in
layer-aligned buckets, and a communication thread sums each one as soon as
backward has passed its last writer (a shared layer's bucket after its last
use), in the same order on every rank (csrc/core/dist_overlap.c, posted from
csrc/core/run.c's backward loop; BF_DIST_OVERLAP=0 sums the same buckets
after backward, with the same bits). On GPUs (NCCL) it runs after backward.

Every wait is bounded: a rank that dies or raises makes the others raise
DistributedError within `timeout` seconds (initialize(timeout=...),
BF_DIST_TIMEOUT, default 60), and at once when they can tell: a rank that
raises tells the others through the flag every step agrees on first, and a
rank that dies on the same host is found by the engine's heartbeat (its pid
checked every 50 ms while waiting). hydra's mpiexec kills the whole job as
soon as one rank exits abnormally (MPICH 5.0.2, even with
-disable-auto-cleanup); to let the survivors raise instead, launch through
the wrapper: `mpiexec -disable-auto-cleanup -n N python -m
boundfit.distribute train.py` (see _launch_main). Ranks on other hosts that
die are found by the deadline (under MPI; over TCP, by their closed connection).
Neither launcher waits forever for a stuck rank (asleep, SIGSTOPped): once
the job has failed (a rank ended abnormally; under mpiexec, hydra's SIGUSR1
to the other wrappers), a rank still running BF_DIST_GRACE seconds later is
ended, and the launcher exits non-zero naming it (distribute/reap.py).

Where it lives: the process group and its collectives in
runtime/dist_group.py (the engine's transports: csrc/core/dist_mpi.c and
dist_tcp.c), the data-parallel Strategy of fit / evaluate / predict in
engine/dist_fit.py and the per-rank data in engine/dist_shard.py; this
package is the public face (and `python -m boundfit.distribute`: launch.py,
reap.py). Where the rest meets it (a hook outside a Strategy is marked
`[dist hook]`):
- csrc/core/run_strategy.c: the engine's strategies (one process, data
  parallel), which csrc/core/run.c's step calls: the gradient buckets
  planned, backward overlapped with their sum, the gradients averaged and
  the non-finite flag agreed before the update, rank 0's weights broadcast
  on a device;
- csrc/python/module.c, module_exec(): bf_dist_py_init() adds dist_py.c's functions;
- engine/fit_loop.py / engine/training.py: fit, evaluate and predict take a
  Strategy (engine/strategy.py); DataParallel in engine/dist_fit.py is the
  data-parallel one: verbose(), device(), prepare_fit() (Sequences by rank),
  agree_plan() (after the plan, before require_fits), shard_fit_data()
  (after the batch size is known), start_run() (rank 0's weights over NCCL),
  end_epoch() (moving statistics averaged), reduce_logs() (before the
  epoch's logs); shard_eval(), shard_predict() (before the plan, which counts
  the gathered rows), gather_predictions(); guard() around each
  (models/fitting.py picks the strategy: dist_fit.strategy());
- models/persistence.py, Model.save() and Model.save_weights(): rank 0 only
  (so ModelCheckpoint too);
- callbacks/checkpoint.py, BackupAndRestore._save() and on_train_end():
  rank 0 writes and deletes the backup.
"""

from ..engine.dist_fit import comm_seconds, gradient_bytes_sent
from .mesh import DeviceMesh, LayoutMap, ModelParallel, TensorLayout, distribute_tensor, get_device_count
from ..runtime.dist_group import (DataParallel, DistributedError, distribution, find_mpi_library, initialize, is_chief,
                                  list_devices, num_processes, rank, set_distribution, transport)

__all__ = ["DataParallel", "DistributedError", "initialize", "set_distribution", "distribution", "list_devices",
           "rank", "num_processes", "is_chief", "find_mpi_library", "comm_seconds", "gradient_bytes_sent", "transport",
           "DeviceMesh", "LayoutMap", "ModelParallel", "TensorLayout", "distribute_tensor", "get_device_count"]
