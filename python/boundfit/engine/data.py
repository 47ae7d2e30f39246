"""Data sources for fit / evaluate / predict, behind one small interface.

ArrayData: NumPy arrays (and np.memmap) used in place, one per model input and
one per output's labels (a list, a tuple or a dict by name); the engine gathers
the rows of each (shuffled) batch from each array and converts the dtype into
its packed batch buffers, so no copy of the data is made. Memory-mapped files
are checked before each chunk of batches (arrays.check_files).
SequenceData: Keras Sequence / PyDataset objects and Python generators; each
batch is checked against the first one, then handed to the engine.
Inputs of other ecosystems (tf.data, DataLoader, pandas, Parquet / CSV, Hugging
Face datasets) are adapted to these first: adapters/ (adapt_all)."""

import numpy as np

from .. import session
from ..errors import DataError
from .arrays import (DEFAULT_BATCH, as_arrays, as_sample_weight, check_batch_size, check_files, check_x, check_y,
                     engine_batch, mapped_files, same_rows)
from .adapters import adapt_all
from .adapters.csv_stream import from_csv  # noqa: F401 - bf.data.from_csv
from .adapters.hf import from_hf  # noqa: F401 - bf.data.from_hf
from .adapters.parquet import from_parquet  # noqa: F401 - bf.data.from_parquet
from . import workers
from .sources import SequenceData, is_python_source


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
        self.rng = np.random.default_rng(session.next_seed())
        same_rows(x, y)
        if self.num_rows <= 0:
            raise DataError(f"{x.labels[0].split('[')[0]} is empty: no samples to train on")

    @property
    def num_rows(self):
        return self.hi - self.lo

    def steps_for(self, batch_size):
        """Batches an epoch of batch_size runs: all of them, or the first
        `steps` (fit's steps_per_epoch) of each epoch's order."""
        n = -(-self.num_rows // batch_size)
        return min(n, self.steps) if self.steps else n

    @property
    def steps_per_epoch(self):
        """steps_for the batch size it was made with (evaluate, predict, validation)."""
        return self.steps_for(self.batch_size)

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

    def _files(self):
        """The memory-mapped files among x, y and sample_weight (arrays.MappedFile)."""
        sw = [] if self.sw is None else mapped_files([self.sw], ["sample_weight"])
        return self.x.files() + (self.y.files() if self.y is not None else []) + sw

    def run_epoch(self, run, epoch, on_chunk, chunks, batch_size):
        """One epoch in batches of batch_size (the plan's: fit's batch_size may be 'auto')."""
        x, y = self._views()
        sw, cw = self._sw_view(), self.class_weight
        order = self.rng.permutation(self.num_rows) if self.shuffle else None
        files = self._files()

        def train(first, n):
            check_files(files, first)
            return run.train(x, y, order, self.num_rows, batch_size, first, n, sw, cw)
        with engine_batch(files=files):
            chunks(train, self.steps_for(batch_size), on_chunk)

    def run_eval(self, run, on_chunk, chunks):
        x, y = self._views()
        sw = self._sw_view()
        files = self._files()

        def evaluate(first, n):
            check_files(files, first)
            return run.evaluate(x, y, None, self.num_rows, self.batch_size, first, n, sw)
        with engine_batch(files=files):
            chunks(evaluate, self.steps_per_epoch, on_chunk)

    def run_predict(self, run, out_shape, on_step, chunks, view=None, sizes=None):
        """view(out, start, rows): what on_step gets of a chunk's rows (several
        outputs: each output's rows out of its block); None: out[start:start+rows].
        (sizes: the outputs' values per sample, which the engine's layout already follows here.)"""
        x, _ = self._views()
        out = np.empty((self.num_rows,) + tuple(out_shape), dtype=np.float32)
        b = self.batch_size
        files = self.x.files()

        def one(first, n):
            start = first * b
            rows = min(n * b, self.num_rows - start)
            check_files(files, first)
            with engine_batch(first, files):   # the engine counts this call's batches from 0
                run.predict(x, out, start, rows, start)
            return view(out, start, rows) if view is not None else out[start:start + rows]

        chunks(one, self.steps_per_epoch, on_step)
        return out

    def on_epoch_end(self):
        pass


def batch_request(source):
    """The batch size fit asks the planner for: 'auto', or the one given (the
    default when none was, a Python source's first batch's rows). The way is
    one way: check_batch_size (arrays.py) -> batch_request -> memory.plan_fit
    -> plan.batch_size, which the run reads (run_epoch, steps_for)."""
    return "auto" if source.auto_batch else source.batch_size


def from_npy(x_path, y_path=None):
    """Open .npy files memory-mapped (read-only): (x, y) for fit / evaluate /
    predict, streamed from disk by the engine's prefetch thread."""
    x = np.load(x_path, mmap_mode="r")
    y = np.load(y_path, mmap_mode="r") if y_path is not None else None
    if y is not None and x.shape[0] != y.shape[0]:
        raise DataError(f"{x_path} and {y_path} have different lengths: {x.shape[0]} and {y.shape[0]}")
    return x, y


def source_entries(*sources):
    """Plan entries of what the sources themselves hold while they are read,
    whatever the batch size: a PyDataset's worker queue (workers.py), a
    streamed file's row group or block (the entries of a Python source that
    states them: plan_entries())."""
    out = workers.queue_entries(*sources)
    for s in sources:
        fn = getattr(getattr(s, "src", None), "plan_entries", None)
        if fn is not None:
            out += fn()
    return out


def _split(n, validation_split):
    n_val = int(n * validation_split)
    if validation_split and n_val == 0:
        raise DataError(f"validation_split={validation_split} leaves no validation samples out of {n}")
    return n - n_val


def prepare(model, x, y, validation_data=None):
    """x, y and validation_data adapted (tf.data, DataLoader, pandas); a subclassed model traced on the data's
    shapes. Several inputs / outputs need nothing here: the engine gathers each array in place."""
    x, y, validation_data = adapt_all(x, y, validation_data)
    seq = x is not None and _is_sequence(x)
    if not model._functional and x is not None and not seq:
        model._require_built(x)
    return x, y, validation_data


def _is_sequence(x):
    return is_python_source(x)


def _check_validation_steps(v):
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0):
        raise ValueError(f"validation_steps must be a positive int or None, got {v!r}")
    return None if v is None else int(v)


def adapt_for_fit(model, x, y, batch_size, validation_split, validation_data, steps_per_epoch, shuffle, val_bs,
                  sample_weight=None, validation_steps=None):
    """The training and validation data sources of a fit, from Keras's arguments (arrays, Sequences, generators,
    adapted inputs)."""
    batch_size = check_batch_size(batch_size)
    validation_steps = _check_validation_steps(validation_steps)
    if x is None:
        raise DataError("x is required")
    if _is_sequence(x):
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
    """The data source of an evaluate run."""
    batch_size = check_batch_size(batch_size)
    if _is_sequence(x):
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported with a Sequence or generator x; "
                             "yield (x, y, sample_weight) batches instead")
        return SequenceData(x, steps, batch_size, shuffle=False, model=model)
    if x is None or y is None:
        raise DataError("evaluate needs x and y")
    xa, ya = as_arrays(model, x, "x", "input"), as_arrays(model, y, "y", "output")
    sw = as_sample_weight(sample_weight, same_rows(xa, ya))
    return _first_steps(ArrayData(xa, ya, batch_size if batch_size != "auto" else None, sample_weight=sw), steps)


def adapt_for_predict(model, x, batch_size, steps):
    """The data source of a predict run."""
    batch_size = check_batch_size(batch_size)
    if _is_sequence(x):
        return SequenceData(x, steps, batch_size, shuffle=False, model=model)
    if x is None:
        raise DataError("predict needs x")
    xa = as_arrays(model, x, "x", "input")
    same_rows(xa)
    return _first_steps(ArrayData(xa, None, batch_size if batch_size != "auto" else None), steps)


def _first_steps(data, steps):
    """evaluate / predict of arrays with `steps`: the rows of the first `steps` batches, as Keras reads them"""
    if steps is not None and not data.auto_batch:
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
            raise ValueError(f"steps must be a positive int or None, got {steps!r}")
        data.hi = min(data.hi, data.lo + int(steps) * data.batch_size)
    return data
