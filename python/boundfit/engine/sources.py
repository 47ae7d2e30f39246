"""Python data sources: Keras Sequence / PyDataset objects, generators and
iterables of (x, y) batches. Batches are read between steps; each is checked
against the first batch (per-sample shapes and dtype kinds) and then trained
on by the engine from the arrays the source returned (no further copy). An
exception the source itself raises reaches the caller as it is (as in Keras),
with the batch index added as a note; a malformed batch is a DataError. For a
model with several inputs / outputs, x and y are tuples, lists or dicts (by
input / output name) of arrays, as Keras takes them."""

import collections.abc
import contextlib
import inspect
import time

import numpy as np

from .. import session
from ..errors import DataError
from ..pydataset import PyDataset
from . import shm_batch, workers
from .adapters import is_frame
from .arrays import as_arrays, check_files, check_x, check_y, engine_batch, same_rows


def _before(chunks, k):
    """Batch-begin hooks and the scheduled learning rate (stepping.Stepper) before batch k."""
    if hasattr(chunks, "before_step"):
        chunks.before_step(k)


def _stopped(chunks):
    return hasattr(chunks, "stopped") and chunks.stopped()


def is_python_source(x):
    if isinstance(x, (np.ndarray, list, tuple, dict)) or x is None or is_frame(x):
        return False
    if isinstance(x, PyDataset) or inspect.isgenerator(x) or isinstance(x, collections.abc.Iterator):
        return True
    return (hasattr(x, "__getitem__") and hasattr(x, "__len__")) or isinstance(x, collections.abc.Iterable)


@contextlib.contextmanager
def _told(i):
    """The data source's own exception, as Keras lets it through (`except MyError` works), told the batch;
    boundfit's own check of a batch inside the source (a training graph's view of it) names the batch as
    the other checks do."""
    try:
        yield
    except DataError as e:
        if e.batch_index is not None:
            raise
        raise DataError(f"batch {i}: {e}", batch_index=i) from None
    except Exception as e:
        e.add_note(f"boundfit: raised by the data source while fetching batch {i}")
        raise


def _same_but(a, b, free):
    """Per-sample shapes a and b equal except on the axes in `free`."""
    return len(a) == len(b) and all(x == y or i in free for i, (x, y) in enumerate(zip(a, b)))


def _files(k, xb, yb=None):
    """The memory-mapped files batch k reads (its arrays may be views of np.memmaps), checked before it is read."""
    files = xb.files() + (yb.files() if yb is not None else [])
    check_files(files, k)
    return files


def _run_for(run, k, xb, yb):
    """The run for batch k: the run itself, or, for batches of several shapes
    (buckets.ShapeRuns), the run of this batch's shape."""
    return run.for_batch(k, xb, yb) if hasattr(run, "for_batch") else run


class SequenceData:
    """Batches (x, y) or (x, y, sample_weight), as Keras's PyDataset yields them."""
    auto_batch = False
    class_weight = None

    def __init__(self, source, steps, batch_size, shuffle=False, model=None):
        self.src, self.model = source, model
        self.indexed = hasattr(source, "__getitem__") and hasattr(source, "__len__")
        # fit(shuffle=True) reorders a Sequence's batches, as Keras does a PyDataset's, but not those of a data
        # set that is tf.data in Keras (timeseries_dataset_from_array: _keeps_order)
        self.shuffle = bool(shuffle) and self.indexed and not getattr(source, "_keeps_order", False)
        self.rng = np.random.default_rng(session.next_seed())
        if steps is not None and (not isinstance(steps, int) or steps <= 0):
            raise ValueError(f"steps_per_epoch must be a positive int, got {steps!r}")
        # a PyDataset's worker threads or processes and queue (engine/workers.py), checked before the first batch
        # is read; worker processes' shared-memory blocks are sized from the first batch (block_bytes)
        self.workers = workers.settings(source) if self.indexed else (1, 0, False)
        self.block_bytes = 0
        if self.indexed:
            n = len(source)
            if n <= 0:
                raise DataError("the Sequence is empty (len() == 0)")
            self._steps = min(steps, n) if steps else n
        else:
            self._steps = steps
        self._iter = None
        self._first = self._fetch(0, first=True)   # pending: trained on as batch 0
        if self._first is None:
            raise DataError("the data source yielded no batches")
        self._ref = self._first                      # later batches are checked against it
        self.batch_size = int(self._first[0].rows)

    # ---- reading ----
    def _next_from_iter(self, i):
        if self._iter is None:
            self._iter = iter(self.src)
        try:
            return next(self._iter)
        except StopIteration:
            return None

    def _arrays(self, i, v, what, kind):
        try:
            return as_arrays(self.model, v, what, kind)
        except DataError as e:
            raise DataError(f"batch {i}: {e}", batch_index=i) from None

    def _fetch(self, i, first=False):
        """Batch i as (x Arrays, y Arrays or None, sample weights or None), checked against the first."""
        with _told(i):
            item = self.src[i] if self.indexed else self._next_from_iter(i)
        if first and self.workers[2]:
            self.block_bytes = shm_batch.size(item)
        return self._checked(i, item, first)

    def _checked(self, i, item, first=False):
        """Batch i, read, as _fetch returns it."""
        if item is None:
            return None
        if isinstance(item, np.ndarray):   # x alone, as Keras's PyDataset adapter takes it
            item = (item,)
        if not isinstance(item, (tuple, list)) or len(item) not in (1, 2, 3):
            raise DataError(f"batch {i}: expected (x, y) or (x,), got {type(item).__name__}", batch_index=i)
        xb = self._arrays(i, item[0], "x", "input")
        yb = self._arrays(i, item[1], "y", "output") if len(item) > 1 and item[1] is not None else None
        swb = np.asarray(item[2]) if len(item) > 2 and item[2] is not None else None
        n = xb.rows
        if swb is not None and (swb.dtype.kind not in "biuf" or swb.ndim not in (1, 2) or swb.shape[0] != n
                                or (swb.ndim == 2 and swb.shape[1] != 1)):
            raise DataError(f"batch {i}: sample_weight must hold one number per sample, got dtype {swb.dtype} "
                            f"and shape {swb.shape} for {n} samples", batch_index=i)
        if any(a.shape[0] == 0 for a in xb.arrays):
            raise DataError(f"batch {i}: x is empty", batch_index=i)
        try:
            same_rows(xb, yb)
        except DataError as e:
            raise DataError(f"batch {i}: {e}", batch_index=i) from None
        if not first:
            fx, fy, fsw = self._ref
            if (swb is None) != (fsw is None):
                raise DataError(f"batch {i}: sample_weight {'missing' if swb is None else 'present'}, "
                                f"unlike the first batch", batch_index=i)
            if len(xb.arrays) != len(fx.arrays):
                raise DataError(f"batch {i}: x has {len(xb.arrays)} arrays, the first batch had {len(fx.arrays)}",
                                batch_index=i)
            var = self._variable_axes()
            for j, (a, f, lab) in enumerate(zip(xb.arrays, fx.arrays, xb.labels)):
                if not _same_but(a.shape[1:], f.shape[1:], var[j]) or a.dtype.kind != f.dtype.kind:
                    raise DataError(f"batch {i}: {lab} has per-sample shape {a.shape[1:]} and dtype {a.dtype}, "
                                    f"the first batch had {f.shape[1:]} and {f.dtype}", batch_index=i)
            if (yb is None) != (fy is None):
                raise DataError(f"batch {i}: y {'missing' if yb is None else 'present'}, unlike the first batch",
                                batch_index=i)
            same_x = all(a.shape[1:] == f.shape[1:] for a, f in zip(xb.arrays, fx.arrays))
            for a, f, lab in zip(yb.arrays if yb else [], fy.arrays if fy else [], yb.labels if yb else []):
                # another length: its targets may follow it (checked against the model when its shape is first run)
                if a.shape[1:] != f.shape[1:] and (same_x or a.ndim != f.ndim):
                    raise DataError(f"batch {i}: {lab} has per-sample shape {a.shape[1:]}, the first batch had "
                                    f"{f.shape[1:]}", batch_index=i)
        return xb, yb, swb

    def _variable_axes(self):
        """Per input, the per-sample axes a variable-length model takes at any length."""
        ins = getattr(self.model, "_inputs", None) if getattr(self.model, "_dynamic", False) else None
        if not ins:
            return collections.defaultdict(frozenset)
        return [frozenset(i for i, d in enumerate(t._ps) if d is None) for t in ins]

    @property
    def weighted(self):
        return self._ref[2] is not None or self.class_weight is not None

    def _batches(self):
        """Yield (index, x, y, sample_weight) for one epoch."""
        if self.indexed:
            order = [int(i) for i in (self.rng.permutation(self._steps) if self.shuffle else range(self._steps))]
            first, self._first = self._first, None   # read again in later epochs (on_epoch_end may change it)
            if self.workers[0] > 1:   # worker threads or processes, a bounded queue ahead (engine/workers.py)
                ahead = workers.start(self.src, [i for i in order if i or first is None], self.workers,
                                      self.block_bytes)
                try:
                    for k, i in enumerate(order):
                        if i == 0 and first is not None:
                            yield k, *first
                            continue
                        with _told(i):
                            _, item = next(ahead)
                        yield k, *self._checked(i, item)
                finally:
                    ahead.close()
                return
            for k, i in enumerate(order):
                yield k, *(first if i == 0 and first is not None else self._fetch(i))
            return
        k = 0
        if self._first is not None:
            yield 0, *self._first
            self._first = None
            k = 1
        while self._steps is None or k < self._steps:
            b = self._fetch(k)
            if b is None:
                if self._steps is not None:
                    raise DataError(f"the generator ran dry after {k} batches; steps_per_epoch is {self._steps}",
                                    batch_index=k)
                break
            yield k, *b
            k += 1

    def _engine_x(self, xb, k):
        """Batch k's x as the engine takes it (host_stage.StagedSequence vectorizes strings here)."""
        return xb.view(0, xb.rows)

    # ---- the interface of data.ArrayData ----
    @property
    def steps_per_epoch(self):
        return self._steps

    def steps_for(self, batch_size):
        return self._steps   # the source's own batches, whatever the plan's batch size

    @property
    def num_rows(self):
        return None

    def sample_x(self):
        return self._ref[0].sample()

    def check(self, model, need_y=True):
        fx, fy, _ = self._ref
        check_x(model, fx.relabel(" (first batch)"))
        if need_y:
            if fy is None:
                raise DataError("the data source yields no y")
            check_y(model, fy.relabel(" (first batch)"))

    def run_epoch(self, run, epoch, on_chunk, chunks, batch_size=None):
        with contextlib.closing(self._batches()) as batches:   # workers stopped however the epoch ends
            self._train(batches, run, on_chunk, chunks)

    def _train(self, batches, run, on_chunk, chunks):
        t = time.perf_counter()
        for k, xb, yb, swb in batches:
            fetched = time.perf_counter() - t            # the source's time counts as waiting for data
            if yb is None:
                raise DataError(f"batch {k}: no y", batch_index=k)
            n = xb.rows
            _before(chunks, k)
            r = _run_for(run, k, xb, yb)
            with engine_batch(k, _files(k, xb, yb)):
                out = r.train(self._engine_x(xb, k), yb.view(0, n), None, n, n, 0, 1, swb, self.class_weight)
            on_chunk(k + 1, out[:3] + (out[3] + fetched,) + out[4:])
            if _stopped(chunks):
                break
            t = time.perf_counter()

    def run_eval(self, run, on_chunk, chunks):
        with contextlib.closing(self._batches()) as batches:
            self._eval(batches, run, on_chunk, chunks)

    def _eval(self, batches, run, on_chunk, chunks):
        for k, xb, yb, swb in batches:
            if yb is None:
                raise DataError(f"batch {k}: no y", batch_index=k)
            n = xb.rows
            _before(chunks, k)
            r = _run_for(run, k, xb, yb)
            with engine_batch(k, _files(k, xb, yb)):
                on_chunk(k + 1, r.evaluate(self._engine_x(xb, k), yb.view(0, n), None, n, n, 0, 1, swb))
        self._rewind()   # validation reads a re-iterable (tf.data, DataLoader) from its start each epoch

    def _rewind(self):
        """A re-iterable (not an iterator) source starts over at its next read."""
        if not self.indexed and self._first is None and isinstance(self.src, collections.abc.Iterable) \
                and not isinstance(self.src, collections.abc.Iterator):
            self._iter = None

    def run_predict(self, run, out_shape, on_step, chunks, view=None, sizes=None):
        """The batches' predictions in the engine's layout: with several outputs
        (sizes: each one's values per sample) output k is one (n, its size)
        block after the blocks before it, so each batch's blocks are joined."""
        with contextlib.closing(self._batches()) as batches:
            outs = self._predict(batches, run, out_shape, on_step, chunks, view)
        return self._joined(outs, out_shape, sizes)

    def _predict(self, batches, run, out_shape, on_step, chunks, view):
        outs, first = [], None
        for k, xb, *_ in batches:
            if hasattr(run, "for_batch"):   # several lengths: each batch on its length's engine
                r = run.for_batch(k, xb)
                shapes = [tuple(s) for s in self.model._engine.output_shapes]
                what = "output"
            else:
                r, shapes, what = run, [a.shape[1:] for a in xb.arrays], "input"
            first = shapes if first is None else first
            if shapes != first:
                raise DataError(f"batch {k}: the predictions of one call are joined, so they need one {what} "
                                f"shape; this batch has {[(None,) + tuple(s) for s in shapes]}, the first had "
                                f"{[(None,) + tuple(s) for s in first]} (make one predict call per length)",
                                batch_index=k)
            o = np.empty((xb.rows,) + tuple(out_shape), dtype=np.float32)
            _before(chunks, k)
            with engine_batch(k, _files(k, xb)):
                r.predict(self._engine_x(xb, k), o, 0, xb.rows, 0)
            outs.append(o)
            on_step(k + 1, view(o, 0, o.shape[0]) if view is not None else o)
        return outs

    def _joined(self, outs, out_shape, sizes):
        if not outs:
            return np.empty((0,) + tuple(out_shape), np.float32)
        if not sizes or len(sizes) == 1:
            return np.concatenate(outs)
        n, off = sum(o.shape[0] for o in outs), 0
        out = np.empty((n,) + tuple(out_shape), np.float32)
        flat = out.reshape(-1)
        for size in sizes:
            flat[n * off:n * (off + size)] = np.concatenate([o.reshape(-1)[len(o) * off:len(o) * (off + size)]
                                                             for o in outs])
            off += size
        return out

    def on_epoch_end(self):
        if hasattr(self.src, "on_epoch_end"):
            self.src.on_epoch_end()
        self._rewind()   # re-iterable: start over next epoch
