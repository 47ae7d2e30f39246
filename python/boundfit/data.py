"""Data sources for fit / evaluate / predict, behind one small interface.

ArrayData: NumPy arrays (and np.memmap) used in place; the engine gathers the
rows of each (shuffled) batch and converts the dtype into its batch buffers.
SequenceData: Keras Sequence / PyDataset objects and Python generators; each
batch is checked against the first one, then handed to the engine."""

import contextlib
import re

import numpy as np

from . import utils
from .errors import DataError
from .losses import SCCE

DEFAULT_BATCH = 32


def _as_array(a, what):
    if a is None:
        return None
    if isinstance(a, (list, tuple)) and a and isinstance(a[0], np.ndarray) and len(a) == 1:
        a = a[0]
    if not isinstance(a, np.ndarray):
        try:
            a = np.asarray(a)
        except Exception as e:  # ragged lists and the like
            raise DataError(f"{what} could not be converted to an array: {e}") from e
    if a.dtype.kind not in "biuf":
        raise DataError(f"{what} has dtype {a.dtype}, which cannot be converted to float32 "
                        "(expected bool, integer or floating point)")
    if a.ndim == 0:
        raise DataError(f"{what} must have a batch axis, got a scalar")
    return a


def _check_batch_size(batch_size):
    if batch_size is None or batch_size == "auto":
        return batch_size
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
        raise ValueError(f"batch_size must be a positive int or 'auto', got {batch_size!r}")
    return int(batch_size)


@contextlib.contextmanager
def engine_batch(offset=0):
    """Give engine DataErrors ("batch N: ...") their batch_index, shifted by
    offset for sources that hand the engine one batch at a time."""
    try:
        yield
    except DataError as e:
        m = re.match(r"batch (\d+): (.*)", str(e), re.S)
        if not m or e.batch_index is not None:
            raise
        k = int(m.group(1)) + offset
        raise DataError(f"batch {k}: {m.group(2)}", batch_index=k) from None


def check_x(model, x, what="x"):
    want = tuple(model._input_shape)
    got = tuple(x.shape[1:])
    if got != want:
        raise DataError(f"{what} has per-sample shape {got}, the model expects {want} (array shape {x.shape})")


def check_y(model, y, what="y"):
    got = tuple(y.shape[1:])
    if model._n_outputs > 1:  # packed by functional.pack_y, which checked each output's labels
        want = sum(1 if l.kind == SCCE else int(np.prod(t._ps)) for l, t in zip(model._out_losses, model._outputs))
        if got != (want,):
            raise DataError(f"{what} has per-sample shape {got}, the model's packed labels are ({want},)")
        return
    out = tuple(model._engine.output_shape)
    if model.loss.kind == SCCE:
        if got not in ((), (1,)):
            raise DataError(f"{what} must hold one class id per sample for sparse_categorical_crossentropy, "
                            f"got per-sample shape {got}")
        return
    if got != out and not (got == () and out == (1,)):
        raise DataError(f"{what} has per-sample shape {got}, the model's output is {out}")


def as_sample_weight(sw, n, what="sample_weight"):
    """Keras's sample_weight: one weight per sample ((n,) or (n, 1)), any real dtype, used in place."""
    if sw is None:
        return None
    sw = _as_array(sw, what)
    if sw.ndim > 2 or (sw.ndim == 2 and sw.shape[1] != 1):
        raise DataError(f"{what} must hold one weight per sample (shape ({n},)), got shape {sw.shape}")
    if sw.shape[0] != n:
        raise DataError(f"{what} has {sw.shape[0]} entries, x has {n} samples")
    return sw


class ArrayData:
    class_weight = None

    def __init__(self, x, y, batch_size, lo=0, hi=None, shuffle=False, what=("x", "y"), sample_weight=None,
                 steps=None):
        self.x, self.y, self.lo, self.steps = x, y, lo, steps
        self.sw = sample_weight
        self.hi = x.shape[0] if hi is None else hi
        self.what = what
        self.shuffle = shuffle
        self.auto_batch = batch_size == "auto"
        self.batch_size = DEFAULT_BATCH if batch_size in (None, "auto") else batch_size
        self.rng = np.random.default_rng(utils.next_seed())
        if self.y is not None and self.y.shape[0] != self.x.shape[0]:
            raise DataError(f"{what[0]} and {what[1]} have different lengths: {self.x.shape[0]} and {self.y.shape[0]}")
        if self.num_rows <= 0:
            raise DataError(f"{what[0]} is empty: no samples to train on")

    @property
    def num_rows(self):
        return self.hi - self.lo

    @property
    def steps_per_epoch(self):
        """Batches an epoch runs: all of them, or the first `steps` (fit's
        steps_per_epoch) of each epoch's order."""
        n = -(-self.num_rows // self.batch_size)
        return min(n, self.steps) if self.steps else n

    def set_batch_size(self, b):
        self.batch_size = int(b)

    def sample_x(self):
        return self.x[:1]

    def check(self, model, need_y=True):
        check_x(model, self.x, self.what[0])
        if need_y:
            if self.y is None:
                raise DataError(f"{self.what[1]} is required")
            check_y(model, self.y, self.what[1])

    @property
    def weighted(self):
        return self.sw is not None or self.class_weight is not None

    def _views(self):
        if self.lo == 0 and self.hi == self.x.shape[0]:
            return self.x, self.y
        return self.x[self.lo:self.hi], (self.y[self.lo:self.hi] if self.y is not None else None)

    def _sw_view(self):
        if self.sw is None or (self.lo == 0 and self.hi == self.sw.shape[0]):
            return self.sw
        return self.sw[self.lo:self.hi]

    def run_epoch(self, run, epoch, on_chunk, chunks):
        x, y = self._views()
        sw, cw = self._sw_view(), self.class_weight
        order = self.rng.permutation(self.num_rows) if self.shuffle else None
        with engine_batch():
            chunks(lambda first, n: run.train(x, y, order, self.num_rows, self.batch_size, first, n, sw, cw),
                   self.steps_per_epoch, on_chunk)

    def run_eval(self, run, on_chunk, chunks):
        x, y = self._views()
        sw = self._sw_view()
        with engine_batch():
            chunks(lambda first, n: run.evaluate(x, y, None, self.num_rows, self.batch_size, first, n, sw),
                   self.steps_per_epoch, on_chunk)

    def run_predict(self, run, out_shape, on_step, chunks, view=None):
        """view(out, start, rows): what on_step gets of a chunk's rows (several
        outputs: each output's rows out of its block); None: out[start:start+rows]."""
        x, _ = self._views()
        out = np.empty((self.num_rows,) + tuple(out_shape), dtype=np.float32)
        b = self.batch_size

        def one(first, n):
            start = first * b
            rows = min(n * b, self.num_rows - start)
            run.predict(x, out, start, rows, start)
            return view(out, start, rows) if view is not None else out[start:start + rows]

        chunks(one, self.steps_per_epoch, on_step)
        return out

    def on_epoch_end(self):
        pass


def from_npy(x_path, y_path=None):
    """Open .npy files memory-mapped (read-only): (x, y) for fit / evaluate /
    predict, streamed from disk by the engine's prefetch thread."""
    x = np.load(x_path, mmap_mode="r")
    y = np.load(y_path, mmap_mode="r") if y_path is not None else None
    if y is not None and x.shape[0] != y.shape[0]:
        raise DataError(f"{x_path} and {y_path} have different lengths: {x.shape[0]} and {y.shape[0]}")
    return x, y


def _split(x, y, validation_split):
    n = x.shape[0]
    n_val = int(n * validation_split)
    if validation_split and n_val == 0:
        raise DataError(f"validation_split={validation_split} leaves no validation samples out of {n}")
    return n - n_val


def _is_sequence(x):
    from .sources import is_python_source
    return is_python_source(x)


def _check_validation_steps(v):
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0):
        raise ValueError(f"validation_steps must be a positive int or None, got {v!r}")
    return None if v is None else int(v)


def adapt_for_fit(model, x, y, batch_size, validation_split, validation_data, steps_per_epoch, shuffle, val_bs,
                  sample_weight=None, validation_steps=None):
    batch_size = _check_batch_size(batch_size)
    validation_steps = _check_validation_steps(validation_steps)
    if x is None:
        raise DataError("x is required")
    if _is_sequence(x):
        from .sources import SequenceData
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported with a Sequence or generator x; "
                             "yield (x, y, sample_weight) batches instead")
        if validation_split:
            raise ValueError("validation_split is not supported with a Sequence or generator x; use validation_data")
        train = SequenceData(x, steps_per_epoch, batch_size, shuffle=shuffle)
    else:
        x, y = _as_array(x, "x"), _as_array(y, "y")
        if y is None:
            raise DataError("y is required when x is an array")
        if x.shape[0] != y.shape[0]:
            raise DataError(f"x and y have different lengths: {x.shape[0]} and {y.shape[0]}")
        sw = as_sample_weight(sample_weight, x.shape[0])
        n_train = _split(x, y, validation_split) if validation_split else x.shape[0]
        if steps_per_epoch is not None and (isinstance(steps_per_epoch, bool) or not isinstance(steps_per_epoch, int)
                                            or steps_per_epoch <= 0):
            raise ValueError(f"steps_per_epoch must be a positive int or None, got {steps_per_epoch!r}")
        train = ArrayData(x, y, batch_size, 0, n_train, shuffle=bool(shuffle) and shuffle != "batch",
                          sample_weight=sw, steps=steps_per_epoch)
        if validation_split:
            validation_data = ArrayData(x, y, val_bs or train.batch_size, n_train, x.shape[0],
                                        what=("x (validation split)", "y (validation split)"), sample_weight=sw,
                                        steps=validation_steps)
    val = None
    if isinstance(validation_data, ArrayData):
        val = validation_data
    elif validation_data is not None:
        if _is_sequence(validation_data):
            from .sources import SequenceData
            val = SequenceData(validation_data, validation_steps, val_bs, shuffle=False)
        else:
            if not isinstance(validation_data, (tuple, list)) or len(validation_data) not in (2, 3):
                raise ValueError("validation_data must be a tuple (x_val, y_val) or a Sequence")
            vx, vy = _as_array(validation_data[0], "validation_data[0]"), _as_array(validation_data[1], "validation_data[1]")
            vsw = None
            if len(validation_data) == 3 and validation_data[2] is not None:
                vsw = as_sample_weight(validation_data[2], vx.shape[0], "validation_data[2] (sample weights)")
            val = ArrayData(vx, vy, val_bs or train.batch_size, what=("validation_data[0]", "validation_data[1]"),
                            sample_weight=vsw, steps=validation_steps)
    return train, val


def adapt_for_eval(model, x, y, batch_size, steps, sample_weight=None):
    batch_size = _check_batch_size(batch_size)
    if _is_sequence(x):
        from .sources import SequenceData
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported with a Sequence or generator x; "
                             "yield (x, y, sample_weight) batches instead")
        return SequenceData(x, steps, batch_size, shuffle=False)
    x, y = _as_array(x, "x"), _as_array(y, "y")
    if x is None or y is None:
        raise DataError("evaluate needs x and y")
    sw = as_sample_weight(sample_weight, x.shape[0])
    return ArrayData(x, y, batch_size if batch_size != "auto" else None, sample_weight=sw)


def adapt_for_predict(model, x, batch_size, steps):
    batch_size = _check_batch_size(batch_size)
    if _is_sequence(x):
        from .sources import SequenceData
        return SequenceData(x, steps, batch_size, shuffle=False)
    x = _as_array(x, "x")
    if x is None:
        raise DataError("predict needs x")
    return ArrayData(x, None, batch_size if batch_size != "auto" else None)
