"""The data-parallel Strategy (engine/strategy.py) of fit, evaluate and
predict under a DataParallel distribution: progress from rank 0,
device='cuda' as this rank's GPU and its NCCL communicator (NCCL's buffers
in the plan), the one plan agreed by every rank, rank 0's weights
broadcast, the data sharded, epoch and evaluate logs summed over ranks
(totals and metric sums), predict's blocks gathered on every rank, and a
rank's error told to the others. strategy() picks it or OneProcess."""

import contextlib
import os
import socket
import warnings

import numpy as np

from .. import _core
from ..errors import BoundfitError, MemoryBudgetError, NonFiniteError
from ..runtime import cuda_libs
from ..runtime.dist_group import (_BF_ERR_DIST_PREFIX, DistributedError, _agree_ok, _allgather_json, _allreduce,
                                  _sync_wire, active, bcast_rng, broadcast_weights, is_chief, nccl_bytes, num_processes,
                                  rank, transport)
from ..runtime.dist_group import _nccl as nccl_state
from ..layers.reduce import require_whole_batches
from ..layers.normalization import BatchNormalization
from ..sizes import format_bytes
from .data import ArrayData, _is_sequence
from .dist_shard import ShardedArrays, ShardedEval, predict_block, shard_predict_rows, shard_source
from .plan import PlanEntry
from .strategy import ONE_PROCESS, Strategy


TCP_SCRATCH = 64 << 10   # dist_tcp.c's static receive block (SCRATCH_DOUBLES * 8)


def _is_cuda(device):
    return device is not None and str(getattr(device, "kind", device)).startswith("cuda")


def _nccl_setup(device):
    """The NCCL communicator of this rank's device, once (before the plan reads
    the free device memory, so NCCL's buffers are already out of it); the
    bytes it took are remembered for the plan (_with_comm). NCCL_RUNTIME_CONNECT=0
    (unless set) makes NCCL allocate its channel buffers at init, where they are
    measured, instead of at the first collective; NCCL_NVLS_ENABLE=0 (unless
    set) keeps NVLink SHARP's large buffers out."""
    dev = str(getattr(device, "kind", device))
    if nccl_state["device"] == dev:
        return
    lib = cuda_libs.nccl_library()
    if lib is None:
        raise DistributedError("fit on a CUDA device under DataParallel needs NCCL: pip install \"boundfit[cuda]\" "
                               "(nvidia-nccl-cu13) or set BF_NCCL_LIB to libnccl.so.2", rank=rank())
    os.environ.setdefault("NCCL_RUNTIME_CONNECT", "0")
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    try:
        nccl_state["bytes"] = int(_core.dist_nccl_setup(dev, lib))
    except BoundfitError as e:
        if str(e).startswith(_BF_ERR_DIST_PREFIX):
            raise DistributedError(str(e), rank=rank()) from None
        raise
    nccl_state["device"] = dev


def _with_comm(plan):
    """The plan with the all-reduce's scratch: over MPI, MPICH's temporary
    buffers for the in-flight gradient buckets, at most the gradients' size
    (estimated); over TCP, the engine's fixed receive block (reductions are
    in place; the sockets' buffers are the kernel's)."""
    if any(e.name.startswith(("all-reduce scratch", "NCCL communicator")) for e in plan.breakdown):
        return plan
    if _is_cuda(plan.device):
        # NCCL's device memory, outside our arena: measured around ncclCommInitRank, before the plan
        # read the free memory, which memory.py counted it back into; a memory_limit covers it too
        plan.breakdown.append(PlanEntry("NCCL communicator buffers (measured at init)", nccl_bytes(plan.device),
                                        str(plan.device), "communication", f"{num_processes()} ranks; NCCL_BUFFSIZE="
                                        f"{os.environ.get('NCCL_BUFFSIZE', 'default 4 MiB')} per channel and peer"))
        return plan
    if transport() == "tcp":
        plan.breakdown.append(PlanEntry("all-reduce scratch (TCP, static)", TCP_SCRATCH, "host", "communication",
                                        f"{num_processes()} ranks, star around rank 0, in place"))
        return plan
    grads = sum(int(e.bytes) for e in plan.breakdown if e.category in ("gradients", "grads") and e.where == "host")
    if grads == 0:  # no separate gradient entry: the trainable parameters' size
        grads = sum(int(e.bytes) for e in plan.breakdown if e.category in ("params", "parameters")
                    and e.where == "host")
    if _compression() == "bfloat16":   # MPICH's buffers hold the bfloat16 wire copy, half the gradients
        grads = sum(int(e.bytes) for e in plan.breakdown if e.name.startswith("gradients on the wire"))
    plan.breakdown.append(PlanEntry("all-reduce scratch (MPI, estimated)", grads, "host", "communication",
                                    f"{num_processes()} ranks, in-place bucketed all-reduce"))
    return plan


def _compression():
    d = active()
    return d.gradient_compression if d is not None else None


def _batchnorms(model):
    out = []
    for layer in getattr(model, "layers", ()):
        if isinstance(layer, BatchNormalization):
            out.append(layer)
        elif hasattr(layer, "layers"):
            out.extend(_batchnorms(layer))
    return out


def warn_batchnorm(model):
    """BatchNormalization under DataParallel is per-rank (ghost batch norm):
    said once per fit, never silently."""
    if active() is not None and is_chief() and _batchnorms(model):
        warnings.warn("BatchNormalization under DataParallel: each rank normalizes with its own batch's statistics "
                      "(B rows, not the N*B of the global batch); the moving mean and variance are averaged over "
                      "the ranks after every epoch (see bf.distribute)", stacklevel=4)


def _shards_arrays(src):
    d = active()
    return d is not None and d.auto_shard_dataset and isinstance(src, ArrayData) and not src.steps


def _call_bcast(buf, root):
    try:
        _core.dist_bcast(buf, root)
    except BoundfitError as e:
        if str(e).startswith(_BF_ERR_DIST_PREFIX):
            raise DistributedError(str(e), rank=rank()) from None
        raise


def on_fit_error(exc):
    """fit failed on this rank. An engine error of a collective comes back as
    DistributedError; any other (a callback raised, Ctrl-C, a watchdog stop)
    is told to the other ranks, whose next step then fails at once. Returns
    the exception to raise."""
    if active() is None or isinstance(exc, (DistributedError, NonFiniteError)):
        return exc   # the others know already (a broken group, or the agreed non-finite step)
    if isinstance(exc, BoundfitError) and str(exc).startswith(_BF_ERR_DIST_PREFIX):
        return DistributedError(str(exc), rank=rank())
    try:
        _core.dist_abandon()
    except BoundfitError:
        pass
    return exc


def comm_seconds():
    """Seconds this rank spent in collectives so far (benchmarks)."""
    return _core.dist_info()[2]


def gradient_bytes_sent():
    """Gradient bytes this rank handed to the transport so far: over TCP the bytes it sent on its sockets in the
    gradient all-reduces (frame headers included), over MPI the buckets' payload (half of float32's under
    DataParallel(gradient_compression="bfloat16"))."""
    return _core.dist_grad_bytes()


def strategy():
    """The Strategy of a run started now: DataParallel when a data-parallel distribution of several ranks is
    active, else one process."""
    return DataParallel() if active() is not None else ONE_PROCESS


class DataParallel(Strategy):
    """fit / evaluate / predict in each rank of a DataParallel distribution (runtime/dist_group.py)."""

    data_parallel = True

    def verbose(self, v):
        """Progress output from rank 0 only."""
        return v if is_chief() else 0

    def device(self, device):
        """device='cuda' under DataParallel: this rank's GPU, cuda:LOCAL_RANK (the
        launcher's local rank: LOCAL_RANK, MPI_LOCALRANKID, OMPI_COMM_WORLD_LOCAL_RANK);
        an explicit 'cuda:N' is kept."""
        if not isinstance(device, str) or device.strip().lower() not in ("cuda", "gpu"):
            return device
        for name in ("LOCAL_RANK", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK"):
            v = os.environ.get(name)
            if v not in (None, "") and v.isdigit():
                return f"cuda:{int(v)}"
        return device

    @contextlib.contextmanager
    def guard(self):
        """Around fit / evaluate / predict: an error on this rank is told to the others (on_fit_error),
        an engine error of a collective comes out as DistributedError."""
        try:
            yield
        except BaseException as e:
            err = on_fit_error(e)
            if err is not e:
                raise err from None
            raise

    def prepare_fit(self, model, x, validation_data, device):
        """Before the data is adapted: on a CUDA device, the NCCL communicator
        (before the plan reads the free device memory); Sequence sources sharded
        by batch index."""
        d = active()
        require_whole_batches(getattr(model, "_node_layers", ()), "data-parallel training, which splits each batch "
                              "across the ranks, would change what it computes: train it in one process")
        if _is_cuda(device):
            if d.gradient_compression:
                raise ValueError(f"DataParallel(gradient_compression={d.gradient_compression!r}) is not available "
                                 "with device='cuda': NCCL's all-reduce carries float32 gradients; use "
                                 "gradient_compression=None there (the option is for the CPU path, MPI or TCP)")
            _nccl_setup(device)
        _sync_wire()
        if d.auto_shard_dataset and x is not None and _is_sequence(x):
            x = shard_source(x)
        if d.auto_shard_dataset and validation_data is not None and _is_sequence(validation_data):
            validation_data = shard_source(validation_data)
        return x, validation_data

    def agree_plan(self, model, plan, replan, auto_batch, train_rows):
        """One plan for all ranks. replan(batch) plans this rank at another batch
        size. Adds the all-reduce scratch to the plan, exchanges verdicts, and
        raises the same MemoryBudgetError on every rank when any rank is short."""
        if str(plan.device) not in ("cpu", "host") and not _is_cuda(plan.device):
            raise ValueError(f"fit: device {plan.device} under DataParallel: only 'cpu' (MPI / TCP) and 'cuda' (NCCL)")
        _agree_ok("the memory plan")
        plan = _with_comm(plan)
        if auto_batch:
            b = int(plan.batch_size)
            while not plan.fits and b > 1:
                b = max(1, int(b * 0.9))
                plan = _with_comm(replan(b))
            recs = _allgather_json({"b": b if plan.fits else 0})
            smallest = min(r["b"] for r in recs)
            if smallest > 0 and smallest != b:
                plan = _with_comm(replan(smallest))
        short = plan.shortfall()
        mine = {"rank": rank(), "host": socket.gethostname(), "fits": bool(plan.fits),
                "rows": -1 if train_rows is None else int(train_rows),
                "batch": int(plan.batch_size), "max_batch": plan.max_batch_size, "wire": _compression(),
                "where": short[0] if short else None, "need": int(short[1]) if short else 0,
                "have": int(short[2]) if short else 0}
        recs = _allgather_json(mine)
        rows = {r["rows"] for r in recs}
        batches = {r["batch"] for r in recs}
        if len(rows) > 1:
            raise DistributedError(f"fit: x has different numbers of rows on the ranks ({sorted(rows)}): every rank "
                                   "must be given the same data (fit shards it)", rank=rank())
        wires = {r["wire"] for r in recs}
        if len(wires) > 1:
            raise DistributedError(f"fit: DataParallel's gradient_compression differs between ranks "
                                   f"({sorted(map(str, wires))}): every rank must pass the same", rank=rank())
        if len(batches) > 1:
            raise DistributedError(f"fit: batch_size differs between ranks ({sorted(batches)})", rank=rank())
        bad = [r for r in recs if not r["fits"]]
        if bad:
            r = bad[0]
            maxes = [x["max_batch"] for x in recs if x["max_batch"] is not None]
            mb = min(maxes) if maxes else None
            others = "".join(f"; also rank {o['rank']} on host {o['host']} ({format_bytes(o['need'])} needed, "
                             f"{format_bytes(o['have'])} available on {o['where']})" for o in bad[1:])
            msg = (f"rank {r['rank']} on host {r['host']} cannot fit the run: needs {format_bytes(r['need'])} on "
                   f"{r['where']}, {format_bytes(r['have'])} available{others}; no rank starts "
                   + (f"(per-rank batch_size <= {mb} fits on every rank)" if mb
                      else "(even batch_size=1 does not fit)"))
            err = MemoryBudgetError(msg, plan=plan, needed_bytes=r["need"], available_bytes=r["have"], where=r["where"],
                                    max_batch_size=mb)
            err.rank, err.host = r["rank"], r["host"]
            raise err
        return plan

    def shard_fit_data(self, model, train, val, device):
        """After the batch size is known: the same weights and data order on every
        rank, then each rank's shard. The order is rank 0's shuffle, drawn from
        the generator one process of the same script draws it from (seeded by
        set_random_seed when the script seeds), so that N ranks of batch B read
        the global batches of one process with batch N*B. On a CUDA device the
        weights go over NCCL once the run holds them (broadcast_on_device), not
        over the host transport."""
        d = active()
        _agree_ok("the weights' broadcast")
        if not _is_cuda(device):
            broadcast_weights(model)
        warn_batchnorm(model)
        if not d.auto_shard_dataset:
            return train, val
        if getattr(train, "shuffle", False):
            bcast_rng(train.rng)   # arrays: the rows' order; a Sequence: its batches' (every rank's i-th the same step)
        if isinstance(train, ArrayData):
            train = ShardedArrays(train)
        if isinstance(val, ArrayData):
            val = ShardedEval(val)
        return train, val

    def start_run(self, run, device):
        """A training run on a CUDA device: rank 0's weights and optimizer state
        broadcast over NCCL into every rank's device copy, before step one."""
        if not _is_cuda(device):
            return
        try:
            run.dist_broadcast()
        except BoundfitError as e:
            if str(e).startswith(_BF_ERR_DIST_PREFIX):
                raise DistributedError(str(e), rank=rank()) from None
            raise

    def end_epoch(self, model):
        """After each epoch, before validation: every BatchNormalization's moving
        mean and variance averaged over the ranks. The update is linear in the
        batch means, so the averaged moving mean is the one a single process
        with the global batch keeps (equal shards); the moving variance is the
        mean of the ranks' (without the spread between the ranks' batch means)."""
        bns = _batchnorms(model)
        if not bns:
            return
        _agree_ok("the moving statistics' average")
        per = [layer.get_weights() for layer in bns]
        flat = np.concatenate([np.ravel(a) for w in per for a in w[-2:]])
        avg = (_allreduce(flat) / num_processes()).astype(np.float32)
        at = 0
        for layer, ws in zip(bns, per):
            for i in (len(ws) - 2, len(ws) - 1):
                ws[i] = avg[at:at + ws[i].size].reshape(ws[i].shape)
                at += ws[i].size
            layer.set_weights(ws)

    def reduce_logs(self, model, parts):
        """The epoch's loss totals and metric sums, in place, summed over the
        ranks, so that the logs made from them are one process's over every
        rank's rows: the losses and every metric (AUC, Precision, weighted means)
        exactly. parts: [(totals, run, sharded)], the same on every rank; an
        unsharded part (validation data every rank reads whole) stays local."""
        _agree_ok("the epoch's logs")
        n_out = model._n_outputs
        flat, spans = [], []
        for tot, run, sharded in parts:
            if not sharded:
                continue
            sums = np.array(run.metric_sums(), np.float64) if run is not None else np.zeros(0)
            flat.append(np.concatenate([[tot[0], tot[1]], np.zeros(n_out) if tot[2] is None else tot[2], sums]))
            spans.append((tot, run, len(sums)))
        if not flat:
            return
        tot_all = _allreduce(np.concatenate(flat)).astype(np.float64)
        at = 0
        for tot, run, m in spans:
            tot[0], tot[1] = float(tot_all[at]), int(round(tot_all[at + 1]))
            tot[2] = [float(v) for v in tot_all[at + 2:at + 2 + n_out]]
            at += 2 + n_out
            if run is not None:
                run.set_metric_sums(tot_all[at:at + m])
            at += m

    def is_sharded(self, src):
        """Whether this rank reads only its share of src's rows (validation and
        evaluate() arrays); a Sequence every rank reads whole is not."""
        return isinstance(src, ShardedEval)

    def shard_eval(self, model, src):
        """evaluate(): rank 0's weights everywhere, then this rank's contiguous
        slice of the rows (arrays; a Sequence, or steps=, is evaluated whole on
        every rank)."""
        require_whole_batches(getattr(model, "_node_layers", ()), "a distributed evaluate, which gives each rank a "
                              "share of the rows, would change what it computes: evaluate it in one process")
        _agree_ok("evaluate's start")
        broadcast_weights(model)
        return ShardedEval(src) if _shards_arrays(src) else src

    def shard_predict(self, model, src):
        """predict(): rank 0's weights everywhere, then this rank's block of
        ceil(n / N) rows. Returns (src, gather): gather is (n, per) or None."""
        require_whole_batches(getattr(model, "_node_layers", ()), "a distributed predict, which gives each rank a "
                              "block of the rows, would change what it computes: predict in one process")
        _agree_ok("predict's start")
        broadcast_weights(model)
        if not _shards_arrays(src):
            return src, None
        n = src.num_rows
        per = predict_block(n)
        if per == 0:
            return src, None
        return shard_predict_rows(src, per), (n, per)

    def predict_rows(self, src, gather):
        """predict's rows for the plan: the source's (None for a Sequence), plus,
        when sharded, the gathered result's N blocks of per rows."""
        return src.num_rows if gather is None else src.num_rows + num_processes() * gather[1]

    def gather_predictions(self, preds, gather):
        """Every rank's block of each output, in rank order, on every rank: the
        full predictions, as one process returns them."""
        if gather is None:
            return preds
        n, per = gather
        _agree_ok("predict's gather")
        N, me = num_processes(), rank()

        def one(a):
            full = np.zeros((N * per,) + a.shape[1:], dtype=a.dtype)
            full[me * per:me * per + a.shape[0]] = a
            for r in range(N):
                _call_bcast(full[r * per:(r + 1) * per], r)
            return full[:n]
        if isinstance(preds, dict):
            return {k: one(v) for k, v in preds.items()}
        if isinstance(preds, list):
            return [one(v) for v in preds]
        return one(preds)
