"""A PyDataset's worker processes (workers=N, use_multiprocessing=True, as
Keras 3 takes them): N processes call the data set's __getitem__ and write
each batch into a shared-memory block (engine/shm_batch.py); the parent maps
the blocks and hands the batches' arrays to the engine without another copy,
in the epoch's order, at most max_queue_size batches in flight.

Start method: "forkserver", with boundfit preloaded in the server. Forking
this process would copy it in whatever state its other threads are in (the
engine's prefetch and BLAS threads, another thread holding a lock), a child
that can deadlock; the fork server is a fresh, idle process, so each worker
forks from a quiet one (without re-importing NumPy and boundfit as "spawn"
would). As with "spawn" (and as Keras's and PyTorch's non-fork workers
require), the data set travels pickled: one that cannot be pickled is refused
by name before any batch is read.

Blocks: max_queue_size + 2, sized from the first batch (the queue, the batch
in training and the one before it). A worker's exception is raised here as
the user's own (pickled back; one that cannot be is a DataError naming its
type and message), with the worker's traceback as a note. close() stops the
workers and unlinks every block, however the epoch ends."""

import collections
import mmap
import multiprocessing
import os
import pickle
import signal
import traceback
from multiprocessing import connection, shared_memory

from ..errors import DataError
from . import shm_batch

START_METHOD = "forkserver"
_HANG_GUARD = 60.0   # seconds an idle worker told to stop may take to exit before it is killed


def pickled(src, workers):
    """The data set pickled for the workers; ValueError naming it if it cannot be."""
    try:
        return pickle.dumps(src)
    except Exception as e:
        raise ValueError(f"PyDataset use_multiprocessing=True (workers={workers}) needs a data set that can be "
                         f"pickled (worker processes are started with {START_METHOD!r} and get a copy); "
                         f"{type(src).__name__} cannot be: {type(e).__name__}: {e}") from None


def _portable(e):
    """An exception as it crosses to the parent: (pickled or None, its type's name, message, traceback)."""
    try:
        data = pickle.dumps(e)
    except Exception:
        data = None
    name = f"{type(e).__module__}.{type(e).__qualname__}".removeprefix("builtins.")
    return data, name, str(e), "".join(traceback.format_exception(e))


def _worker(conn, names, data):
    """A worker process: for each (i, block) it is sent, batch i written into that block; answers
    ("ok", skeleton), ("error", exception), ("layout", message) or, when the data set does not load,
    ("load", exception). None (or the parent gone) stops it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's: it stops the workers
    blocks = {}
    try:
        try:
            src = pickle.loads(data)
        except Exception as e:
            conn.send(("load", _portable(e)))
            return
        while (task := conn.recv()) is not None:
            i, b = task
            try:
                item = src[i]
            except Exception as e:
                conn.send(("error", _portable(e)))
                continue
            if b not in blocks:
                blocks[b] = shared_memory.SharedMemory(names[b])
            try:
                conn.send(("ok", shm_batch.write(item, blocks[b].buf)))
            except ValueError as e:
                conn.send(("layout", str(e)))
    except (EOFError, OSError):
        pass   # the parent is gone
    finally:
        for s in blocks.values():
            s.close()


def _mapped(block):
    """The block mapped by a mapping of its own, which the batches' arrays keep alive (unmapped when the last
    goes), so that closing the block never meets arrays that still view it."""
    fd = os.open(os.path.join("/dev/shm", block.name), os.O_RDWR)
    try:
        return mmap.mmap(fd, block.size)
    finally:
        os.close(fd)


class Procs:
    """Batches src[i] for i in `indices`, in that order, made by `workers`
    processes up to `queue_size` ahead, in blocks of `block_bytes`."""

    def __init__(self, src, indices, workers, queue_size, block_bytes):
        self._todo, self._queue = iter(indices), queue_size
        self._blocks, self._maps, self._procs, self._conns = [], [], [], []
        self._pending = collections.deque()   # (i, worker, block) sent, in order
        self._given = collections.deque()     # blocks of the batches handed out (the last two)
        data = pickled(src, workers)
        try:
            for _ in range(queue_size + 2):
                self._blocks.append(shared_memory.SharedMemory(create=True, size=max(int(block_bytes), 1)))
                self._maps.append(_mapped(self._blocks[-1]))
                self._blocks[-1].close()
            ctx = multiprocessing.get_context(START_METHOD)
            ctx.set_forkserver_preload(["boundfit"])
            names = [s.name for s in self._blocks]
            for w in range(workers):
                mine, theirs = ctx.Pipe()
                p = ctx.Process(target=_worker, args=(theirs, names, data), name=f"boundfit-pydataset-{w}",
                                daemon=True)
                p.start()
                theirs.close()
                self._procs.append(p)
                self._conns.append(mine)
        except BaseException:
            self.close()
            raise
        self._free = list(range(len(self._blocks)))
        self._turn = 0
        self._fill()

    def _fill(self):
        while len(self._pending) < self._queue and self._free:
            i = next(self._todo, None)
            if i is None:
                return
            b, w = self._free.pop(), self._turn
            self._turn = (self._turn + 1) % len(self._procs)
            try:
                self._conns[w].send((i, b))
            except OSError:
                pass   # that worker died: told when its oldest batch is awaited (_answer)
            self._pending.append((i, w, b))

    def __iter__(self):
        return self

    def __next__(self):
        """(i, batch i with its arrays views of a block); batch i's exception is raised here."""
        while len(self._given) > 1:
            self._free.append(self._given.popleft())
        self._fill()
        if not self._pending:
            raise StopIteration
        i, w, b = self._pending.popleft()
        kind, what = self._answer(i, w)
        if kind == "ok":
            self._given.append(b)
            return i, shm_batch.read(what, self._maps[b])
        self._free.append(b)
        if kind == "layout":
            raise DataError(f"batch {i} does not fit the shared-memory block of worker processes: it {what}",
                            batch_index=i)
        data, name, msg, tb = what
        if kind == "load":
            raise DataError(f"PyDataset use_multiprocessing=True: a worker process could not load the pickled data "
                            f"set: {name}: {msg} (define its class in a module the workers can import)",
                            batch_index=i)
        try:
            e = pickle.loads(data) if data is not None else None
        except Exception:
            e = None
        if not isinstance(e, BaseException):
            raise DataError(f"batch {i}: the data set raised {name}: {msg} in a worker process (the exception "
                            f"could not be pickled back)\n{tb}", batch_index=i)
        e.add_note(f"boundfit: in worker process {self._procs[w].name}:\n{tb}")
        raise e

    def _answer(self, i, w):
        """Worker w's answer for batch i, or a DataError if it died first."""
        conn, p = self._conns[w], self._procs[w]
        connection.wait([conn, p.sentinel])
        try:
            if conn.poll():
                return conn.recv()
        except (EOFError, OSError):
            pass
        p.join()
        raise DataError(f"batch {i}: worker process {p.name} (pid {p.pid}) ended with exit code {p.exitcode} "
                        f"before returning it", batch_index=i)

    def close(self):
        """Workers stopped (told to, when idle; terminated, when batches were still asked of them) and every
        block unlinked."""
        busy = bool(self._pending)
        for c, p in zip(self._conns, self._procs):
            try:
                if busy:
                    p.terminate()
                else:
                    c.send(None)
            except (OSError, ValueError):
                pass
        for p in self._procs:
            p.join(_HANG_GUARD)
            if p.exitcode is None:
                p.kill()
                p.join()
        for c in self._conns:
            c.close()
        self._procs, self._conns = [], []
        self._pending.clear()
        self._given.clear()
        for s in self._blocks:
            try:
                s.unlink()
            except FileNotFoundError:
                pass
        self._blocks, self._maps = [], []   # each mapping unmapped when the last array viewing it goes
