"""A PyDataset's workers, as Keras 3 runs them (workers / max_queue_size):
with workers > 1 and use_multiprocessing=True, N processes
(engine/worker_procs.py, batches in shared memory); otherwise N threads call the data set's __getitem__ for the batch
indices to come, at most max_queue_size batches ahead of the one in
training, and the batches come back in the epoch's order. A worker's
exception is raised in the caller as the user's own exception. close()
cancels the calls not started and waits for the running ones, so no worker
outlives its epoch (end of fit, an exception, Ctrl-C at a step boundary).

The queue is in the memory plan (queue_entries): its batches, sized from the
first one, and the workers' stacks; without workers, the three batches a
source read in the training thread holds. glibc's malloc would keep the batches a
worker thread allocated and the trainer freed in that thread's arena (its
mmap threshold grows with each large free), outside any plan: the threshold
is fixed at its default when workers start, so a freed batch goes back to
the system."""

import collections
import ctypes
import ctypes.util
from concurrent.futures import ThreadPoolExecutor

from ..sizes import format_bytes
from . import worker_procs
from .plan import PlanEntry

# a worker thread's stack as it touches it (Python frames live on the heap; a decoder's C frames are small): a bound
WORKER_STACK = 256 << 10


def settings(src):
    """(workers, max_queue_size, processes) of a Keras PyDataset, checked; workers 0 or 1: no threads (the
    caller's thread reads the batches, as Keras's adapter does). processes (use_multiprocessing=True): worker
    processes (engine/worker_procs.py), for a data set that can be pickled."""
    workers = getattr(src, "workers", 1)
    queue = getattr(src, "max_queue_size", 10)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ValueError(f"PyDataset workers must be a non-negative int, got {workers!r}")
    if workers <= 1:
        return 1, 0, False
    if isinstance(queue, bool) or not isinstance(queue, int) or queue < 1:
        raise ValueError(f"PyDataset max_queue_size must be a positive int with workers={workers} (the queue is "
                         f"bounded so that its batches are in the memory plan), got {queue!r}")
    processes = bool(getattr(src, "use_multiprocessing", False))
    if processes:
        worker_procs.pickled(src, workers)
    return workers, queue, processes


def start(src, indices, settings, block_bytes):
    """The batches src[i] for i in `indices`, in order, from the workers of `settings` (threads: Ahead;
    processes: worker_procs.Procs, in blocks of block_bytes)."""
    workers, queue, processes = settings
    if processes:
        return worker_procs.Procs(src, indices, workers, queue, block_bytes)
    return Ahead(src.__getitem__, indices, workers, queue)


_M_MMAP_THRESHOLD = -3   # glibc malloc.h
_MMAP_THRESHOLD = 128 << 10   # glibc's default: batches above it are mapped, and unmapped when freed
_fixed = []


def fix_mmap_threshold():
    """Once per process, where the C library is glibc: large blocks always mapped (no dynamic threshold)."""
    if _fixed:
        return
    _fixed.append(True)
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    except (OSError, AttributeError):
        pass   # not glibc: its allocator's own policy


class Ahead:
    """Batches get(i) for i in `indices`, in that order, each fetched by one of
    `workers` threads up to `queue_size` batches ahead of the one consumed."""

    def __init__(self, get, indices, workers, queue_size):
        fix_mmap_threshold()
        self._get, self._todo = get, iter(indices)
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="boundfit-pydataset")
        self._window = collections.deque()
        for _ in range(queue_size):
            self._submit()

    def _submit(self):
        i = next(self._todo, None)
        if i is not None:
            self._window.append((i, self._pool.submit(self._get, i)))

    def __iter__(self):
        return self

    def __next__(self):
        """(i, what get(i) returned); get(i)'s exception is raised here, as it was raised."""
        if not self._window:
            raise StopIteration
        i, fut = self._window.popleft()
        try:
            item = fut.result()
        except BaseException as e:
            e.batch_index = getattr(e, "batch_index", i)
            raise
        self._submit()
        return i, item

    def close(self):
        for _, fut in self._window:
            fut.cancel()
        self._window.clear()
        self._pool.shutdown(wait=True, cancel_futures=True)


def batch_bytes(batch):
    """Bytes of one checked batch (x Arrays, y Arrays or None, sample weights or None)."""
    xb, yb, swb = batch
    arrays = list(xb.arrays) + (list(yb.arrays) if yb is not None else []) + ([swb] if swb is not None else [])
    return sum(int(a.nbytes) for a in arrays)


def _read_here(label, s):
    """The batches a Python source read in the training thread holds (a source that states its own
    plan_entries aside): the first, kept as the reference of later batches' shapes, the one in training and
    the next, read while it is still held."""
    ref = getattr(s, "_ref", None)
    if ref is None or hasattr(getattr(s, "src", None), "plan_entries"):
        return []
    b = batch_bytes(ref)
    return [PlanEntry(f"{label}Python batches (3 of {format_bytes(b)}: the first, the one in training and the next "
                      f"being read)", 3 * b, "host", "runtime", "outside the arena: the data source's batches")]


def queue_entries(*sources):
    """Plan entries of the threaded sources among `sources` (data.SequenceData or others): the batches their
    workers hold (the queue; the one in training and the one before it, alive until the next arrives; the first,
    kept as the reference of later batches' shapes), sized from the first batch, and the workers' stacks."""
    out = []
    for label, s in zip(("", "validation: "), sources):
        workers, queue, processes = getattr(s, "workers", (1, 0, False))
        if workers <= 1:
            out += _read_here(label, s)
            continue
        if processes:
            out.append(PlanEntry(f"{label}PyDataset shared-memory blocks ({queue + 2} of {format_bytes(s.block_bytes)}: "
                                 f"{queue} batches ahead, the one in training and the one before; {workers} worker "
                                 f"processes)", (queue + 2) * s.block_bytes, "host", "runtime",
                                 "/dev/shm pages mapped by this process and the workers, counted once; each worker "
                                 "process's own memory (its interpreter, the data set's copy, the batch it builds) "
                                 "is in that process, not in this process's plan"))
            continue
        b = batch_bytes(s._ref)
        out.append(PlanEntry(f"{label}PyDataset queue ({queue} batches of {format_bytes(b)} ahead, the one in "
                             f"training, the one before and the first; {workers} workers)",
                             (queue + 3) * b + workers * WORKER_STACK,
                             "host", "runtime", "outside the arena: Python batches and worker threads"))
    return out
