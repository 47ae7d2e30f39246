"""Data-parallel training past one process (CPU path, over MPI): Keras 3's
names (`DataParallel`, `initialize`, `set_distribution`, `distribution`,
`list_devices`), also reachable as `bf.distribution`.

Launch with `mpiexec -n N python train.py` (MPICH from PyPI: `pip install
boundfit[distributed]`). The MPI library is the standard-ABI libmpi_abi.so,
dlopen'ed by the C engine (csrc/core/dist_mpi.c); it is found through
BF_MPI_LIB, the `mpich` package's install prefix, or the `mpiexec` on PATH.

Under a DataParallel distribution, fit():
- agrees ONE plan before step one: every rank plans its run (with the
  all-reduce's scratch), the verdicts are exchanged, and if any rank cannot
  fit, every rank raises the same MemoryBudgetError naming that rank and
  host; batch_size="auto" takes the largest per-rank batch that fits on the
  smallest rank;
- broadcasts rank 0's weights, shards the data by rank (arrays, memmaps,
  from_npy: global batch s of N*B rows is split in N slices of B rows, so N
  ranks with batch B follow one process with batch N*B; Sequences: batch
  i*N + rank), averages the gradients in the engine between backward and
  the update, and gives callbacks global epoch logs (losses and metrics
  averaged over ranks by rows; per-batch logs stay per rank);
- saves from rank 0 only (Model.save / save_weights are no-ops elsewhere).
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
die are found by the deadline.
"""

import contextlib
import json
import os
import shutil
import socket
import sys

import numpy as np

from . import _core
from .errors import BoundfitError, MemoryBudgetError
from .plan import PlanEntry, format_bytes

_BF_ERR_DIST_PREFIX = "distributed:"
_state = {"rank": 0, "size": 1, "initialized": False, "distribution": None, "timeout": None, "lib": None}


class DistributedError(BoundfitError, RuntimeError):
    """Another rank died, raised or disagrees; the process group cannot go on.
    Attributes: rank (this process's rank)."""

    def __init__(self, message, rank=None):
        super().__init__(message)
        self.rank = rank


def _env_int(*names):
    for n in names:
        v = os.environ.get(n)
        if v not in (None, ""):
            try:
                return int(v)
            except ValueError:
                raise DistributedError(f"environment variable {n}={v!r} is not an integer") from None
    return None


def _launched_by_mpi():
    return any(k in os.environ for k in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "HYDRA_CONTROL_FD", "PMI_FD"))


def _is_elf(path):
    """A shared object, not a linker script (the wheel's libmpi_abi.so is one)."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def find_mpi_library():
    """The standard-ABI MPI library: BF_MPI_LIB, the `mpich` wheel's prefix, next to
    this Python, or next to the `mpiexec` on PATH. None when not found."""
    env = os.environ.get("BF_MPI_LIB")
    if env:
        return env
    prefixes = []
    try:
        from importlib import metadata
        dist = metadata.distribution("mpich")
        for f in sorted(dist.files or (), key=lambda f: -len(str(f))):   # libmpi_abi.so.1 before .so
            path = str(dist.locate_file(f))
            if os.path.basename(path).startswith("libmpi_abi.so") and _is_elf(path):
                return path
    except Exception:  # noqa: BLE001 - the wheel is optional
        pass
    prefixes.append(sys.prefix)
    exe = shutil.which("mpiexec")
    if exe:
        prefixes.append(os.path.dirname(os.path.dirname(os.path.realpath(exe))))
        prefixes.append(os.path.dirname(os.path.dirname(exe)))
    for p in prefixes:
        for name in ("libmpi_abi.so.1", "libmpi_abi.so.0", "libmpi_abi.so"):
            cand = os.path.join(p, "lib", name)
            if _is_elf(cand):
                return cand
    return None


def _raise_dist(e):
    """An engine error of a collective (BF_ERR_DIST) as DistributedError."""
    if isinstance(e, BoundfitError) and not isinstance(e, DistributedError) and str(e).startswith(_BF_ERR_DIST_PREFIX):
        raise DistributedError(str(e), rank=_state["rank"]) from None
    raise e


def _call(fn, *args):
    try:
        return fn(*args)
    except BoundfitError as e:
        _raise_dist(e)


def initialize(job_addresses=None, num_processes=None, process_id=None, timeout=None):
    """Join the process group (Keras 3's keras.distribution.initialize). Under
    mpiexec the group comes from MPI; num_processes / process_id, when given,
    must agree with it. Without a launcher this is a group of one.
    timeout: the bound in seconds on every wait for the other ranks."""
    if timeout is None:
        timeout = float(os.environ.get("BF_DIST_TIMEOUT", "60"))
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    _state["timeout"] = float(timeout)
    if _state["initialized"]:
        _core.dist_set_timeout(float(timeout))
        return
    if _launched_by_mpi():
        lib = find_mpi_library()
        if lib is None:
            raise DistributedError("launched by mpiexec, but no libmpi_abi.so was found: pip install mpich "
                                   "(boundfit[distributed]) or set BF_MPI_LIB to its path")
        rank, size = _call(_core.dist_init, lib, float(timeout))
        _state["lib"] = lib
        _share_cores()
        import atexit
        atexit.register(_finalize)
    else:
        world = _env_int("WORLD_SIZE")
        if world is not None and world > 1:
            raise DistributedError(
                f"WORLD_SIZE={world} (a torchrun-style launch) but no MPI launcher: the CPU path needs "
                f"`mpiexec -n {world} python ...` (MPICH); torchrun's TCP rendezvous (MASTER_ADDR) is not "
                "implemented")
        rank, size = 0, 1
    for name, want, have in (("num_processes", num_processes, size), ("process_id", process_id, rank)):
        if want is not None and int(want) != have:
            raise ValueError(f"initialize: {name}={want!r} disagrees with the launcher's {have}")
    if job_addresses is not None and not isinstance(job_addresses, (str, list, tuple)):
        raise ValueError(f"initialize: job_addresses must be a string or a list of addresses, got {job_addresses!r}")
    _state.update(rank=rank, size=size, initialized=True)


def _share_cores():
    """Ranks on one host share its cores: each runs the engine's pool on its
    share (MPI_LOCALNRANKS from hydra), unless BF_DIST_THREADS says otherwise."""
    local = _env_int("MPI_LOCALNRANKS") or 1
    want = _env_int("BF_DIST_THREADS")
    if want is None and local > 1:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        want = max(1, cores // local)
    if want is not None and want >= 1:
        _core.set_num_threads(int(want))


def _finalize():
    try:
        _core.dist_finalize()
    except BoundfitError:
        pass


def rank():
    return _state["rank"]


def num_processes():
    return _state["size"]


def is_chief():
    """True on rank 0 (or in a single process): the one that saves and prints."""
    return _state["rank"] == 0


def list_devices(device_type=None):
    """The devices of the group, one CPU per rank: ["cpu:0", "cpu:1", ...]."""
    if device_type not in (None, "cpu", "CPU"):
        raise ValueError(f"list_devices: device_type={device_type!r}: only 'cpu' is distributed (no NCCL path yet)")
    if not _state["initialized"]:
        initialize()
    return [f"cpu:{i}" for i in range(_state["size"])]


class DataParallel:
    """Keras 3's keras.distribution.DataParallel: the model is replicated, the
    data split by rank, gradients averaged. devices: None (all of the group) or
    the list of list_devices(); auto_shard_dataset: shard fit's data by rank."""

    def __init__(self, device_mesh=None, devices=None, auto_shard_dataset=True):
        if not _state["initialized"]:
            initialize()
        if device_mesh is not None:
            raise ValueError("DataParallel: device_mesh is not supported; pass devices (or nothing)")
        all_devices = list_devices()
        if devices is not None:
            devices = [str(d) for d in devices]
            if sorted(devices) != sorted(all_devices):
                raise ValueError(f"DataParallel: devices={devices!r} must be every device of the group "
                                 f"{all_devices!r} (one CPU per rank)")
        self.devices = devices or all_devices
        self.auto_shard_dataset = bool(auto_shard_dataset)

    @property
    def num_processes(self):
        return _state["size"]

    @property
    def process_id(self):
        return _state["rank"]

    @contextlib.contextmanager
    def scope(self):
        prev = _state["distribution"]
        _state["distribution"] = self
        try:
            yield self
        finally:
            _state["distribution"] = prev

    def __repr__(self):
        return f"<DataParallel devices={self.devices}>"


def set_distribution(value):
    if value is not None and not isinstance(value, DataParallel):
        raise ValueError(f"set_distribution: expected a DataParallel or None, got {value!r}")
    _state["distribution"] = value


def distribution():
    return _state["distribution"]


def active():
    """The DataParallel that fit() runs under, when the group has several ranks."""
    d = _state["distribution"]
    return d if isinstance(d, DataParallel) and _state["size"] > 1 else None


# ---- collectives over small Python values ----

def _allgather_json(obj, width=1024):
    raw = json.dumps(obj).encode()
    if len(raw) > width:
        raise DistributedError(f"internal: exchange record of {len(raw)} bytes is over {width}")
    raw = raw.ljust(width, b" ")
    out = _call(_core.dist_allgather, raw)
    return [json.loads(out[i * width:(i + 1) * width]) for i in range(_state["size"])]


def _allreduce(values, op=0):
    buf = np.ascontiguousarray(values, dtype=np.float64).copy()
    _call(_core.dist_allreduce_f64, buf, op)
    return buf


def _bcast_seed():
    seed = np.array([np.random.SeedSequence().entropy % (2 ** 62) if is_chief() else 0], dtype=np.int64)
    _call(_core.dist_bcast, seed, 0)
    return int(seed[0])


def broadcast_weights(model):
    """Rank 0's weights on every rank (fit's first act under DataParallel)."""
    ws = [np.ascontiguousarray(w, dtype=np.float32) for w in model.get_weights()]
    for w in ws:
        _call(_core.dist_bcast, w, 0)
    model.set_weights(ws)


# ---- fit's hooks (python/boundfit/training.py) ----

def verbose(v):
    """Progress output from rank 0 only."""
    return v if active() is None or is_chief() else 0


def prepare_fit(model, x, validation_data, device):
    """Before the data is adapted: refuse what the CPU path cannot do, shard
    Sequence sources by batch index."""
    d = active()
    if d is None:
        return x, validation_data
    if device is not None and str(getattr(device, "kind", device)).startswith("cuda"):
        raise ValueError(f"fit: device={device!r} under DataParallel: the GPU (NCCL) path is not implemented; "
                         "use device='cpu'")
    from .data import _is_sequence
    if d.auto_shard_dataset and x is not None and _is_sequence(x):
        x = _shard_source(x)
    if d.auto_shard_dataset and validation_data is not None and _is_sequence(validation_data):
        validation_data = _shard_source(validation_data)
    return x, validation_data


def agree_plan(model, plan, replan, auto_batch, train_rows):
    """One plan for all ranks. replan(batch) plans this rank at another batch
    size. Adds the all-reduce scratch to the plan, exchanges verdicts, and
    raises the same MemoryBudgetError on every rank when any rank is short."""
    if active() is None:
        return plan
    if str(plan.device) not in ("cpu", "host"):
        raise ValueError(f"fit: device {plan.device} under DataParallel: the GPU (NCCL) path is not implemented")
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
    mine = {"rank": rank(), "host": socket.gethostname(), "fits": bool(plan.fits), "rows": -1 if train_rows is None else int(train_rows),
            "batch": int(plan.batch_size), "max_batch": plan.max_batch_size,
            "where": short[0] if short else None, "need": int(short[1]) if short else 0,
            "have": int(short[2]) if short else 0}
    recs = _allgather_json(mine)
    rows = {r["rows"] for r in recs}
    batches = {r["batch"] for r in recs}
    if len(rows) > 1:
        raise DistributedError(f"fit: x has different numbers of rows on the ranks ({sorted(rows)}): every rank must "
                               "be given the same data (fit shards it)", rank=rank())
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
               + (f"(per-rank batch_size <= {mb} fits on every rank)" if mb else "(even batch_size=1 does not fit)"))
        err = MemoryBudgetError(msg, plan=plan, needed_bytes=r["need"], available_bytes=r["have"], where=r["where"],
                                max_batch_size=mb)
        err.rank, err.host = r["rank"], r["host"]
        raise err
    return plan


def _with_comm(plan):
    """The plan with the all-reduce's scratch: MPICH's temporary buffers for the
    in-flight gradient buckets, at most the gradients' size (estimated)."""
    if any(e.category == "communication" for e in plan.breakdown):
        return plan
    grads = sum(int(e.bytes) for e in plan.breakdown if e.category in ("gradients", "grads") and e.where == "host")
    if grads == 0:  # no separate gradient entry: the trainable parameters' size
        grads = sum(int(e.bytes) for e in plan.breakdown if e.category in ("params", "parameters")
                    and e.where == "host")
    plan.breakdown.append(PlanEntry("all-reduce scratch (MPI, estimated)", grads, "host", "communication",
                                    f"{num_processes()} ranks, in-place bucketed all-reduce"))
    return plan


def shard_fit_data(model, train, val):
    """After the batch size is known: the same weights and data order on every
    rank, then each rank's shard."""
    d = active()
    if d is None:
        return train, val
    _agree_ok("the weights' broadcast")
    broadcast_weights(model)
    if not d.auto_shard_dataset:
        return train, val
    from .data import ArrayData
    seed = _bcast_seed()
    if isinstance(train, ArrayData):
        train = _ShardedArrays(train, seed)
    if isinstance(val, ArrayData):
        val = _ShardedEval(val)
    return train, val


def global_logs(logs, train_rows, val):
    """Epoch logs averaged over ranks, weighted by each rank's rows (exact for
    losses and mean metrics such as accuracy)."""
    if active() is None:
        return logs
    _agree_ok("the epoch's logs")
    vrows = getattr(val, "local_rows", 0) if val is not None else 0
    keys = sorted(logs)
    vals = np.array([float(logs[k]) * (vrows if k.startswith("val_") else train_rows) for k in keys]
                    + [float(train_rows), float(vrows)])
    tot = _allreduce(vals)
    tr, vr = tot[-2], tot[-1]
    out = dict(logs)
    for i, k in enumerate(keys):
        w = vr if k.startswith("val_") else tr
        out[k] = float(tot[i] / w) if w else logs[k]
    return out


@contextlib.contextmanager
def fit_guard():
    """Around fit: an error on this rank is told to the others (on_fit_error),
    an engine error of a collective comes out as DistributedError."""
    try:
        yield
    except BaseException as e:
        err = on_fit_error(e)
        if err is not e:
            raise err from None
        raise


def _agree_ok(what):
    """The flag every collective phase of fit starts with (the same one each
    step starts with in the engine): a rank that stopped with an error posts
    it instead (bf_dist_abandon), and every other rank raises here at once."""
    _call(_core.dist_agree, what)


def on_fit_error(exc):
    """fit failed on this rank. An engine error of a collective comes back as
    DistributedError; any other (a callback raised, Ctrl-C, a watchdog stop)
    is told to the other ranks, whose next step then fails at once. Returns
    the exception to raise."""
    from .errors import NonFiniteError
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


class _Delegate:
    def __init__(self, inner):
        object.__setattr__(self, "_inner", inner)

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def __setattr__(self, name, value):
        if name in type(self).__dict__ or name.startswith("_s_"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._inner, name, value)


class _ShardedArrays(_Delegate):
    """ArrayData of this rank: the global order (the same permutation on every
    rank) in global batches of N*B rows, rank r taking slice r of each; the
    last global batch is split evenly. Up to N-1 trailing rows are dropped so
    that every rank runs the same steps on the same number of rows."""

    def __init__(self, inner, seed):
        super().__init__(inner)
        object.__setattr__(self, "_s_rng", np.random.default_rng(seed))

    @property
    def num_rows(self):
        return self._inner.num_rows // num_processes()

    @property
    def steps_per_epoch(self):
        n = -(-self.num_rows // self._inner.batch_size)
        return min(n, self._inner.steps) if self._inner.steps else n

    def _local_order(self):
        N, r, B = num_processes(), rank(), self._inner.batch_size
        n = self.num_rows * N
        g = self._s_rng.permutation(self._inner.num_rows)[:n] if self._inner.shuffle else np.arange(n)
        parts = []
        for lo in range(0, n, N * B):
            per = min(N * B, n - lo) // N
            parts.append(g[lo + r * per: lo + (r + 1) * per])
        return np.ascontiguousarray(np.concatenate(parts), dtype=np.int64)

    def run_epoch(self, run, epoch, on_chunk, chunks):
        from .data import engine_batch
        inner = self._inner
        x, y = inner._views()
        sw, cw = inner._sw_view(), inner.class_weight
        order, n = self._local_order(), self.num_rows
        with engine_batch():
            chunks(lambda first, k: run.train(x, y, order, n, inner.batch_size, first, k, sw, cw),
                   self.steps_per_epoch, on_chunk)


class _ShardedEval(_Delegate):
    """Validation ArrayData of this rank: a contiguous slice of the rows (all
    of them on every rank when there are fewer rows than ranks)."""

    def _bounds(self):
        n, N, r = self._inner.num_rows, num_processes(), rank()
        if n < N:
            return 0, n
        return r * n // N, (r + 1) * n // N

    @property
    def local_rows(self):
        lo, hi = self._bounds()
        return hi - lo

    @property
    def num_rows(self):
        return self.local_rows

    @property
    def steps_per_epoch(self):
        n = -(-self.local_rows // self._inner.batch_size)
        return min(n, self._inner.steps) if self._inner.steps else n

    def run_eval(self, run, on_chunk, chunks):
        from .data import engine_batch
        inner = self._inner
        x, y = inner._views()
        sw = inner._sw_view()
        lo, hi = self._bounds()
        order = np.arange(lo, hi, dtype=np.int64)
        with engine_batch():
            chunks(lambda first, k: run.evaluate(x, y, order, hi - lo, inner.batch_size, first, k, sw),
                   self.steps_per_epoch, on_chunk)


class _ShardSequence:
    """A Sequence seen by one rank: batches rank, rank + N, ... (len // N of them)."""

    def __init__(self, seq):
        self.seq = seq
        self.N, self.r = num_processes(), rank()
        if len(seq) < self.N:
            raise ValueError(f"fit: the Sequence has {len(seq)} batches, fewer than the {self.N} ranks")

    def __len__(self):
        return len(self.seq) // self.N

    def __getitem__(self, i):
        if i < 0 or i >= len(self):
            raise IndexError(i)
        return self.seq[i * self.N + self.r]

    def on_epoch_end(self):
        f = getattr(self.seq, "on_epoch_end", None)
        if f is not None:
            f()


def _shard_source(src):
    if hasattr(src, "__getitem__") and hasattr(src, "__len__"):
        return _ShardSequence(src)
    raise ValueError("fit: under DataParallel x must be arrays or a keras.utils.Sequence / PyDataset (indexed); "
                     "a generator cannot be sharded by rank")


# ---- `python -m boundfit.distribute script.py args...`: the rank wrapper ----

def _launch_main(argv):
    """Run `python script args` as a child and exit with its status, after a
    grace period when it died. hydra's mpiexec (MPICH 5.0.2) kills every rank
    as soon as one exits abnormally, even with -disable-auto-cleanup, and its
    proxy fails when the dead rank's PMI socket closes; this wrapper keeps the
    PMI socket open and holds the dead rank's status back for BF_DIST_GRACE
    seconds (default 5), so that the survivors find the death (the engine's
    heartbeat, every 50 ms) and raise DistributedError themselves."""
    import subprocess
    import time
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: mpiexec -disable-auto-cleanup -n N python -m boundfit.distribute script.py [args...]")
        return 0 if argv else 2
    fds = tuple(int(os.environ[k]) for k in ("PMI_FD",) if os.environ.get(k, "").isdigit())
    child = subprocess.Popen([sys.executable] + argv, pass_fds=fds)
    while True:
        try:
            status = child.wait()
            break
        except KeyboardInterrupt:
            continue   # the child got the signal too; its exit is what counts
    if status != 0:
        sig = -status if status < 0 else None
        what = f"signal {sig}" if sig else f"status {status}"
        sys.stderr.write(f"boundfit.distribute: rank {os.environ.get('PMI_RANK', '?')} ended with {what}\n")
        time.sleep(float(os.environ.get("BF_DIST_GRACE", "5")))
        return 128 + sig if sig else status
    return 0


if __name__ == "__main__":
    sys.exit(_launch_main(sys.argv[1:]))
