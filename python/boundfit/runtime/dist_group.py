"""The process group (bf.distribute): joining it under mpiexec (the
standard-ABI libmpi_abi.so found and handed to the engine, csrc/core/dist_mpi.c)
or after a torchrun-style launch (RANK / WORLD_SIZE / MASTER_ADDR /
MASTER_PORT: the engine's TCP transport, csrc/core/dist_tcp.c),
Keras 3's DataParallel / initialize / set_distribution / distribution /
list_devices, DistributedError, and the small collectives over Python values
that fit's hooks use. Every collective is the engine's, bounded by its deadline."""

import atexit
import contextlib
import json
import os
import shutil
import sys
from importlib import metadata

import numpy as np

from .. import _core
from ..errors import BoundfitError

_BF_ERR_DIST_PREFIX = "distributed:"
_state = {"rank": 0, "size": 1, "initialized": False, "distribution": None, "timeout": None, "lib": None,
          "transport": None}   # "mpi" or "tcp" once a group of several ranks is joined


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
    mpiexec the group comes from MPI; with WORLD_SIZE > 1 in the environment
    (torchrun-style: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) rank 0 listens
    at MASTER_ADDR:MASTER_PORT and the others connect over TCP; as in Keras,
    job_addresses="host:port,..." with num_processes and process_id (or the
    KERAS_DISTRIBUTION_* variables) make the first address the coordinator,
    over TCP too. num_processes / process_id, when given, must agree with it. Without a launcher this is a group of one.
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
        _state["transport"] = "mpi"
        _share_cores()
        atexit.register(_finalize)
    else:
        if job_addresses is not None and not isinstance(job_addresses, (str, list, tuple)):
            raise ValueError(f"initialize: job_addresses must be a string or a list of addresses, "
                             f"got {job_addresses!r}")
        world = _env_int("WORLD_SIZE")
        keras = _keras_group(job_addresses, num_processes, process_id)
        if world is not None and world > 1:
            rank, size = _init_tcp(world, float(timeout))
        elif keras is not None:
            rank, size = _call(_core.dist_init_tcp, *keras, float(timeout))
        else:
            rank, size = 0, 1
        if size > 1:
            _state["transport"] = "tcp"
            _share_cores()
            atexit.register(_finalize)
    for name, want, have in (("num_processes", num_processes, size), ("process_id", process_id, rank)):
        if want is not None and int(want) != have:
            raise ValueError(f"initialize: {name}={want!r} disagrees with the launcher's {have}")
    if job_addresses is not None and not isinstance(job_addresses, (str, list, tuple)):
        raise ValueError(f"initialize: job_addresses must be a string or a list of addresses, got {job_addresses!r}")
    _state.update(rank=rank, size=size, initialized=True)


def _keras_group(job_addresses, num_processes, process_id):
    """Keras 3's way without a launcher: initialize(job_addresses="host:port,...",
    num_processes=N, process_id=r), or KERAS_DISTRIBUTION_JOB_ADDRESSES /
    _NUM_PROCESSES / _PROCESS_ID; the first address is the coordinator (rank 0
    listens there). (host, port, rank, size), or None for a group of one."""
    addrs = job_addresses if job_addresses is not None else os.environ.get("KERAS_DISTRIBUTION_JOB_ADDRESSES")
    n = num_processes if num_processes is not None else _env_int("KERAS_DISTRIBUTION_NUM_PROCESSES")
    if not addrs or n is None or int(n) <= 1:
        return None
    r = process_id if process_id is not None else _env_int("KERAS_DISTRIBUTION_PROCESS_ID")
    if r is None or not 0 <= int(r) < int(n):
        raise ValueError(f"initialize: process_id={r!r} must be given, between 0 and num_processes - 1 = {int(n) - 1}")
    first = (addrs.split(",") if isinstance(addrs, str) else list(addrs))[0].strip()
    host, _, port = first.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"initialize: job_addresses' first entry {first!r} must be host:port (the coordinator)")
    return host, int(port), int(r), int(n)


def _init_tcp(world, timeout):
    """A torchrun-style launch (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; no
    mpiexec): the engine's TCP transport (csrc/core/dist_tcp.c), rank 0
    listening at MASTER_ADDR:MASTER_PORT."""
    rank_ = _env_int("RANK")
    if rank_ is None:
        raise DistributedError(f"WORLD_SIZE={world} but RANK is not set: a torchrun-style launch needs RANK, "
                               "WORLD_SIZE, MASTER_ADDR and MASTER_PORT on every process")
    if not 0 <= rank_ < world:
        raise DistributedError(f"RANK={rank_} must be between 0 and WORLD_SIZE - 1 = {world - 1}")
    port = _env_int("MASTER_PORT")
    if port is None or not 0 < port < 65536:
        raise DistributedError(f"MASTER_PORT={os.environ.get('MASTER_PORT')!r}: a torchrun-style launch needs "
                               "the TCP port rank 0 listens on (1-65535)")
    addr = os.environ.get("MASTER_ADDR") or "127.0.0.1"
    return _call(_core.dist_init_tcp, addr, int(port), int(rank_), int(world), timeout)


def _share_cores():
    """Ranks on one host share its cores: each runs the engine's pool on its
    share (MPI_LOCALNRANKS from hydra), unless BF_DIST_THREADS says otherwise."""
    local = _env_int("MPI_LOCALNRANKS", "LOCAL_WORLD_SIZE") or 1
    want = _env_int("BF_DIST_THREADS")
    if want is None and local > 1:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        want = max(1, cores // local)
    if want is not None and want >= 1:
        _core.set_num_threads(int(want))


_nccl = {"device": None, "bytes": 0}   # this rank's NCCL communicator: its device, the device bytes it took


def nccl_bytes(device):
    """Device memory this rank's NCCL communicator holds on `device` (0 when none):
    the planner counts it back into the free memory it reads, as a plan entry
    takes it out again (engine/memory.py, engine/dist_fit.py)."""
    return int(_nccl["bytes"]) if _nccl["device"] == str(device) else 0


def _finalize():
    try:
        _core.dist_nccl_teardown()
        _core.dist_finalize()
    except BoundfitError:
        pass


def rank():
    return _state["rank"]


def transport():
    """"mpi", "tcp" (torchrun-style launch), or None in a group of one."""
    return _state["transport"] if _state["size"] > 1 else None


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
    the list of list_devices(); auto_shard_dataset: shard fit's data by rank.
    gradient_compression (boundfit's, as Horovod's compression= and PyTorch
    DDP's bf16_compress_hook): None, gradients travel in float32; "bfloat16",
    they travel rounded to bfloat16 (half the bytes) and every partial sum is
    computed in float32 (CPU: MPI and TCP; refused on NCCL)."""

    def __init__(self, device_mesh=None, devices=None, auto_shard_dataset=True, *, gradient_compression=None):
        self.gradient_compression = _check_compression(gradient_compression)
        if not _state["initialized"]:
            initialize()
        if device_mesh is not None:   # Keras's 1-D mesh of the devices the batch is split over
            if devices is not None:
                raise ValueError("DataParallel: pass device_mesh or devices, not both")
            if len(getattr(device_mesh, "shape", ())) != 1:
                raise ValueError(f"DataParallel: device_mesh must be a 1-D DeviceMesh (the batch axis), got "
                                 f"{device_mesh!r}")
            devices = list(device_mesh.devices.reshape(-1))
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
        _sync_wire()
        try:
            yield self
        finally:
            _state["distribution"] = prev
            _sync_wire()

    def __repr__(self):
        extra = f" gradient_compression={self.gradient_compression!r}" if self.gradient_compression else ""
        return f"<DataParallel devices={self.devices}{extra}>"


def _check_compression(value):
    """DataParallel's gradient_compression: None (float32 on the wire) or "bfloat16" (also "bf16")."""
    if value is None or (isinstance(value, str) and value.lower() in ("none", "float32")):
        return None
    if isinstance(value, str) and value.lower() in ("bfloat16", "bf16"):
        return "bfloat16"
    if isinstance(value, str) and value.lower() in ("float16", "fp16", "half"):
        raise ValueError(f"DataParallel: gradient_compression={value!r} is not offered: a sum of float16 gradients "
                         "overflows past 65504 (Horovod's Compression.fp16 needs loss scaling for that); use "
                         "gradient_compression='bfloat16', which keeps float32's range")
    raise ValueError(f"DataParallel: gradient_compression must be None or 'bfloat16', got {value!r}")


def _sync_wire():
    """The engine plans and carves the bfloat16 wire buffer of a training run while the active distribution asks
    for it (csrc/core/program.c)."""
    d = active()
    _core.dist_set_wire(bool(d is not None and d.gradient_compression == "bfloat16"))


def set_distribution(value):
    if value is not None and not isinstance(value, DataParallel):
        raise ValueError(f"set_distribution: expected a DataParallel or None, got {value!r}")
    _state["distribution"] = value
    _sync_wire()


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


def _bcast_json(obj, width=1024):
    """Rank 0's small JSON value on every rank (obj is read on rank 0 only)."""
    buf = np.zeros(width, dtype=np.uint8)
    if is_chief():
        raw = json.dumps(obj).encode()
        if len(raw) > width:
            raise DistributedError(f"internal: broadcast record of {len(raw)} bytes is over {width}")
        buf[:len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    _call(_core.dist_bcast, buf, 0)
    return json.loads(buf.tobytes().rstrip(b"\0"))


def bcast_rng(rng):
    """rng (a NumPy Generator) set to rank 0's state on every rank: the shuffle
    fit draws is then rank 0's, which is one process's for the same script
    and set_random_seed, and with fresh seeds every rank still draws the same."""
    rng.bit_generator.state = _bcast_json(rng.bit_generator.state)


def _agree_ok(what):
    """The flag every collective phase of fit starts with (the same one each
    step starts with in the engine): a rank that stopped with an error posts
    it instead (bf_dist_abandon), and every other rank raises here at once."""
    _call(_core.dist_agree, what)


def broadcast_weights(model):
    """Rank 0's weights on every rank (fit's first act under DataParallel)."""
    ws = [np.ascontiguousarray(w, dtype=np.float32) for w in model.get_weights()]
    for w in ws:
        _call(_core.dist_bcast, w, 0)
    model.set_weights(ws)
