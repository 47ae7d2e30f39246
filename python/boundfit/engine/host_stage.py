"""Host-side preprocessing stages. A model whose Input feeds a host-side
layer (graph.host_stages: TextVectorization on strings; StringLookup,
IntegerLookup, Hashing, CategoryEncoding, Discretization) runs that layer
here, in Python, one batch at a time: the batch's values are encoded into a
buffer of the plan's batch rows, which the engine takes as it takes any input batch (its
input k is the layer's output). The other arrays of a batch are views of
the data (rows in order) or gathered into buffers of the batch's rows
(shuffled training). Only these buffers are held: memory.stage_entries
puts them in the plan."""

import time

import numpy as np

from ..errors import DataError
from .arrays import engine_batch
from .data import ArrayData
from .sources import SequenceData, _before, _stopped


def staged(model, src):
    """The data source as a model with host-side stages needs it (src itself otherwise)."""
    stages = model._host_stages if src is not None and hasattr(model, "_host_stages") else {}
    if not stages:
        return src
    for k, L in stages.items():   # the engine was built for the layer's shape then (a vocabulary's size)
        built = next(n for n in model._nodes if n.layer is L).outputs[0]._ps
        now, built = tuple(L._stage_shape()), tuple(built)
        if now != built:
            what = f"{now[0]} values" if len(now) == 1 else f"values of shape {now}"
            built = built[0] if len(built) == 1 else built
            raise ValueError(f"layer {L.name!r} now makes {what} per sample, the model "
                             f"{model.name!r} was built for {built} (its vocabulary changed after the model was "
                             "made); build the model again on the layer, e.g. keras.Model(inputs, outputs)")
    if isinstance(src, ArrayData):
        return StagedArrays.of(src, stages)
    if isinstance(src, SequenceData):
        return StagedSequence.of(src, stages)
    return src


def longest_text(*sources):
    """Characters of the longest string the staged sources will vectorize (0
    for none): every row of arrays, a Python source's first batch (later
    batches are not seen before the run; the watchdog covers them). The plan
    bounds the Python objects vectorizing a batch makes with it."""
    out = 0
    for src in sources:
        if not isinstance(src, (StagedArrays, StagedSequence)):
            continue
        if isinstance(src, StagedArrays):
            arrays = [a[src.lo:src.hi] for k, a in enumerate(src.x.arrays) if k in src.stages]
        else:
            arrays = [a for k, a in enumerate(src._ref[0].arrays) if k in src.stages]
        for a in arrays:
            if a.size == 0 or a.dtype.kind not in "USO":
                continue
            if a.dtype.kind in "US":
                out = max(out, int(np.char.str_len(a).max()))
            else:
                out = max(out, max(len(v) if isinstance(v, (str, bytes)) else 0 for v in a.reshape(-1)))
    return out


def _adopt(cls, src, stages):
    obj = cls.__new__(cls)
    obj.__dict__.update(src.__dict__)
    obj.stages, obj._bufs = stages, {}
    return obj


def _vectorized(stages, bufs, k, strings, rows, batch):
    """Input k's strings vectorized into its buffer of `rows` rows (grown if a batch has more)."""
    L = stages[k]
    buf = bufs.get(k)
    if buf is None or buf.shape[0] < rows:
        buf = bufs[k] = np.empty((rows,) + tuple(L._stage_shape()), L.batch_dtype())
    try:
        return L.vectorize(strings, out=buf)
    except DataError as e:
        raise DataError(f"batch {batch}: {e}", batch_index=batch) from None


class StagedArrays(ArrayData):
    """ArrayData whose string inputs are vectorized batch by batch: one engine
    call per batch (the arrays' rows of a step are not in one place)."""

    of = classmethod(_adopt)

    def _gather(self, key, a, sel, n, rows):
        """Rows `sel` of a: a view for a slice, else copied into a buffer of `rows` rows."""
        if isinstance(sel, slice):
            return a[sel]
        buf = self._bufs.get(key)
        if buf is None or buf.shape[0] < rows:
            buf = self._bufs[key] = np.empty((rows,) + a.shape[1:], a.dtype)
        return np.take(a, sel, axis=0, out=buf[:n])

    def _batch(self, x, y, sw, sel, n, rows, batch):
        xb = tuple(_vectorized(self.stages, self._bufs, k, a[sel], rows, batch) if k in self.stages
                   else self._gather(("x", k), a, sel, n, rows) for k, a in enumerate(x))
        yb = None if y is None else tuple(self._gather(("y", k), a, sel, n, rows) for k, a in enumerate(y))
        swb = None if sw is None else self._gather("sw", sw, sel, n, rows)
        return xb, yb, swb

    def _steps(self, batch_size, order, steps):
        for k in range(steps):
            lo = k * batch_size
            hi = min(lo + batch_size, self.num_rows)
            yield k, lo, hi - lo, (order[lo:hi] if order is not None else slice(lo, hi))

    def run_epoch(self, run, epoch, on_chunk, chunks, batch_size):
        x, y = self._views()
        sw, cw = self._sw_view(), self.class_weight
        order = self.rng.permutation(self.num_rows) if self.shuffle else None
        t = time.perf_counter()
        for k, lo, n, sel in self._steps(batch_size, order, self.steps_for(batch_size)):
            xb, yb, swb = self._batch(x, y, sw, sel, n, batch_size, k)
            fetched = time.perf_counter() - t            # vectorizing counts as waiting for data
            _before(chunks, k)
            with engine_batch(k):
                out = run.train(xb, yb, None, n, n, 0, 1, swb, cw)
            on_chunk(k + 1, out[:3] + (out[3] + fetched,) + out[4:])
            if _stopped(chunks):
                break
            t = time.perf_counter()

    def run_eval(self, run, on_chunk, chunks):
        x, y = self._views()
        sw = self._sw_view()
        for k, lo, n, sel in self._steps(self.batch_size, None, self.steps_per_epoch):
            xb, yb, swb = self._batch(x, y, sw, sel, n, self.batch_size, k)
            _before(chunks, k)
            with engine_batch(k):
                on_chunk(k + 1, run.evaluate(xb, yb, None, n, n, 0, 1, swb))

    def run_predict(self, run, out_shape, on_step, chunks, view=None, sizes=None):
        x, _ = self._views()
        out = np.empty((self.num_rows,) + tuple(out_shape), dtype=np.float32)
        for k, lo, n, sel in self._steps(self.batch_size, None, self.steps_per_epoch):
            xb, _, _ = self._batch(x, None, None, sel, n, self.batch_size, k)
            _before(chunks, k)
            run.predict(xb, out, 0, n, lo)
            on_step(k + 1, view(out, lo, n) if view is not None else out[lo:lo + n])
        return out


class StagedSequence(SequenceData):
    """SequenceData whose batches' strings are vectorized before the engine takes them."""

    of = classmethod(_adopt)

    def _engine_x(self, xb, k):
        n = xb.rows
        return tuple(_vectorized(self.stages, self._bufs, j, a, max(n, self.batch_size), k) if j in self.stages else a
                     for j, a in enumerate(xb.view(0, n)))
