"""Data sources for fit / evaluate / predict, behind one small interface.

ArrayData: NumPy arrays (and np.memmap) used in place, one per model input and
one per output's labels (a list, a tuple or a dict by name); the engine gathers
the rows of each (shuffled) batch from each array and converts the dtype into
its packed batch buffers, so no copy of the data is made.
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


class Arrays:
    """The arrays of x (one per model input) or y (one per output's labels), as
    the user gave them (any real dtype, memmaps, any strides), and how messages
    name each: `x`, `x['image']` (a dict) or `x[0] (input 'image')` (a list).
    The engine gathers each one's rows in place into its columns of the packed
    batch (csrc/core/gather.c): nothing is concatenated or converted here."""

    def __init__(self, arrays, labels):
        self.arrays, self.labels = list(arrays), list(labels)

    @property
    def rows(self):
        return self.arrays[0].shape[0]

    def view(self, lo, hi):
        """Rows [lo, hi) of each array (views, no copy) as the tuple the engine takes."""
        if lo == 0 and hi == self.rows:
            return tuple(self.arrays)
        return tuple(a[lo:hi] for a in self.arrays)

    def relabel(self, suffix):
        return Arrays(self.arrays, [lab + suffix for lab in self.labels])

    def sample(self):
        """The first sample: one array, or a list of them (what subclassed models are traced on)."""
        return self.arrays[0][:1] if len(self.arrays) == 1 else [a[:1] for a in self.arrays]


def _io_names(model, kind):
    if kind == "input":
        return list(model._input_names) if model._inputs is not None else []
    return list(model._output_names) if model._outputs is not None else []


def as_arrays(model, v, what, kind):
    """x (kind "input") or y ("output") as Arrays in the model's order: a dict by
    input / output name (other keys are ignored, as Keras does), a list or tuple
    with one array per input / output, or one array when there is one."""
    names = _io_names(model, kind)
    if isinstance(v, dict):
        if not names:
            raise DataError(f"{what}: a dict of arrays needs a built model to match its keys with the {kind} names; "
                            "build the model first or pass a list")
        missing = [n for n in names if n not in v]
        if missing:
            raise DataError(f"{what}: no array for {kind} {missing}; the model's {kind}s are {names}")
        labels = [f"{what}[{n!r}]" for n in names] if len(names) > 1 else [what]
        return Arrays([_as_array(v[n], lab) for n, lab in zip(names, labels)], labels)
    if len(names) > 1:
        if not isinstance(v, (list, tuple)) or len(v) != len(names):
            got = f"a {type(v).__name__} of {len(v)}" if isinstance(v, (list, tuple)) else f"a {type(v).__name__}"
            raise DataError(f"{what}: the model has {len(names)} {kind}s {names}; pass a list or a dict of "
                            f"{len(names)} arrays, got {got}")
        labels = [f"{what}[{k}] ({kind} {n!r})" for k, n in enumerate(names)]
        return Arrays([_as_array(a, lab) for a, lab in zip(v, labels)], labels)
    if (not names and kind == "input" and isinstance(v, (list, tuple)) and len(v) > 1
            and all(isinstance(a, np.ndarray) for a in v) and not hasattr(model, "_in_shape")):
        # a subclassed model not traced yet: one array per input of its call()
        labels = [f"{what}[{k}]" for k in range(len(v))]
        return Arrays([_as_array(a, lab) for a, lab in zip(v, labels)], labels)
    return Arrays([_as_array(v, what)], [what])


def same_rows(*groups):
    """Every array of the Arrays groups (None: absent) holds the same number of samples."""
    arrs = [(a, lab) for g in groups if g is not None for a, lab in zip(g.arrays, g.labels)]
    a0, l0 = arrs[0]
    for a, lab in arrs[1:]:
        if a.shape[0] != a0.shape[0]:
            if len(arrs) == 2:
                raise DataError(f"{l0} and {lab} have different lengths: {a0.shape[0]} and {a.shape[0]}")
            raise DataError(f"{l0} has {a0.shape[0]} samples, {lab} has {a.shape[0]} (different lengths)")
    return a0.shape[0]


def check_x(model, xs, what=None):
    """Each input's per-sample shape (xs: Arrays, or one array named `what`)."""
    if not isinstance(xs, Arrays):
        xs = Arrays([xs], [what or "x"])
    shapes = [t._ps for t in model._inputs]
    if len(xs.arrays) != len(shapes):
        raise DataError(f"{xs.labels[0].split('[')[0]}: {len(xs.arrays)} arrays for the model's {len(shapes)} inputs")
    for a, lab, want in zip(xs.arrays, xs.labels, shapes):
        got = tuple(a.shape[1:])
        if got != tuple(want):
            raise DataError(f"{lab} has per-sample shape {got}, the model expects {tuple(want)} (array shape {a.shape})")


def check_y(model, ys, what=None):
    """Each output's labels against its loss and shape (ys: Arrays, or one array named `what`)."""
    if not isinstance(ys, Arrays):
        ys = Arrays([ys], [what or "y"])
    if model._n_outputs > 1:
        losses, outs = model._out_losses, [tuple(t._ps) for t in model._outputs]
    else:
        losses, outs = [model.loss], [tuple(model._engine.output_shape)]
    if len(ys.arrays) != len(outs):
        raise DataError(f"{ys.labels[0].split('[')[0]}: {len(ys.arrays)} arrays for the model's {len(outs)} outputs")
    for a, lab, loss, out in zip(ys.arrays, ys.labels, losses, outs):
        got = tuple(a.shape[1:])
        if loss.kind == SCCE and len(out) >= 2:  # a sequence: one class id per position, as Keras
            if got not in (out[:-1], out[:-1] + (1,)):
                raise DataError(f"{lab} must hold one class id per position for sparse_categorical_crossentropy on "
                                f"the model's output {out}: per-sample shape {out[:-1]}, got {got}")
        elif loss.kind == SCCE:
            if got not in ((), (1,)):
                raise DataError(f"{lab} must hold one class id per sample for sparse_categorical_crossentropy, "
                                f"got per-sample shape {got}")
        elif got != out and not (got == () and out == (1,)):
            raise DataError(f"{lab} has per-sample shape {got}, the model's output is {out}")


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
    """x / y as Arrays, used in place; rows [lo, hi) of them, in batches."""
    class_weight = None

    def __init__(self, x, y, batch_size, lo=0, hi=None, shuffle=False, sample_weight=None, steps=None):
        self.x, self.y, self.lo, self.steps = x, y, lo, steps
        self.sw = sample_weight
        self.hi = x.rows if hi is None else hi
        self.shuffle = shuffle
        self.auto_batch = batch_size == "auto"
        self.batch_size = DEFAULT_BATCH if batch_size in (None, "auto") else batch_size
        self.rng = np.random.default_rng(utils.next_seed())
        same_rows(x, y)
        if self.num_rows <= 0:
            raise DataError(f"{x.labels[0].split('[')[0]} is empty: no samples to train on")

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
        return self.x.sample()

    def check(self, model, need_y=True):
        check_x(model, self.x)
        if need_y:
            if self.y is None:
                raise DataError("y is required")
            check_y(model, self.y)

    @property
    def weighted(self):
        return self.sw is not None or self.class_weight is not None

    def _views(self):
        return self.x.view(self.lo, self.hi), (self.y.view(self.lo, self.hi) if self.y is not None else None)

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

    def run_predict(self, run, out_shape, on_step, chunks, view=None, sizes=None):
        """view(out, start, rows): what on_step gets of a chunk's rows (several
        outputs: each output's rows out of its block); None: out[start:start+rows].
        (sizes: the outputs' values per sample, which the engine's layout already follows here.)"""
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


def _split(n, validation_split):
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
        train = SequenceData(x, steps_per_epoch, batch_size, shuffle=shuffle, model=model)
    else:
        if y is None:
            raise DataError("y is required when x is an array")
        xa, ya = as_arrays(model, x, "x", "input"), as_arrays(model, y, "y", "output")
        n = same_rows(xa, ya)
        sw = as_sample_weight(sample_weight, n)
        n_train = _split(n, validation_split) if validation_split else n
        if steps_per_epoch is not None and (isinstance(steps_per_epoch, bool) or not isinstance(steps_per_epoch, int)
                                            or steps_per_epoch <= 0):
            raise ValueError(f"steps_per_epoch must be a positive int or None, got {steps_per_epoch!r}")
        train = ArrayData(xa, ya, batch_size, 0, n_train, shuffle=bool(shuffle) and shuffle != "batch",
                          sample_weight=sw, steps=steps_per_epoch)
        if validation_split:
            validation_data = ArrayData(xa.relabel(" (validation split)"), ya.relabel(" (validation split)"),
                                        val_bs or train.batch_size, n_train, n, sample_weight=sw,
                                        steps=validation_steps)
    val = None
    if isinstance(validation_data, ArrayData):
        val = validation_data
    elif validation_data is not None:
        if _is_sequence(validation_data):
            from .sources import SequenceData
            val = SequenceData(validation_data, validation_steps, val_bs, shuffle=False, model=model)
        else:
            if not isinstance(validation_data, (tuple, list)) or len(validation_data) not in (2, 3):
                raise ValueError("validation_data must be a tuple (x_val, y_val) or a Sequence")
            vx = as_arrays(model, validation_data[0], "validation_data[0]", "input")
            vy = as_arrays(model, validation_data[1], "validation_data[1]", "output")
            n = same_rows(vx, vy)
            vsw = None
            if len(validation_data) == 3 and validation_data[2] is not None:
                vsw = as_sample_weight(validation_data[2], n, "validation_data[2] (sample weights)")
            val = ArrayData(vx, vy, val_bs or train.batch_size, sample_weight=vsw, steps=validation_steps)
    return train, val


def adapt_for_eval(model, x, y, batch_size, steps, sample_weight=None):
    batch_size = _check_batch_size(batch_size)
    if _is_sequence(x):
        from .sources import SequenceData
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported with a Sequence or generator x; "
                             "yield (x, y, sample_weight) batches instead")
        return SequenceData(x, steps, batch_size, shuffle=False, model=model)
    if x is None or y is None:
        raise DataError("evaluate needs x and y")
    xa, ya = as_arrays(model, x, "x", "input"), as_arrays(model, y, "y", "output")
    sw = as_sample_weight(sample_weight, same_rows(xa, ya))
    return ArrayData(xa, ya, batch_size if batch_size != "auto" else None, sample_weight=sw)


def adapt_for_predict(model, x, batch_size, steps):
    batch_size = _check_batch_size(batch_size)
    if _is_sequence(x):
        from .sources import SequenceData
        return SequenceData(x, steps, batch_size, shuffle=False, model=model)
    if x is None:
        raise DataError("predict needs x")
    xa = as_arrays(model, x, "x", "input")
    same_rows(xa)
    return ArrayData(xa, None, batch_size if batch_size != "auto" else None)
