"""Arrays for fit / evaluate / predict: NumPy arrays (and np.memmap) used in
place, one per model input and one per output's labels (a list, a tuple or a
dict by name), checked against the model; the checks of batch_size; the
batch index the engine's data errors carry. The engine gathers the rows of
each batch from each array itself (csrc/core/gather.c). The file of a
memory-mapped array is checked before each chunk of batches is read: one
truncated under the run (by another process) is a DataError naming it, not a
SIGBUS (the engine reads mapped rows through the kernel, so a truncation
between the check and the read fails that read instead)."""

import collections
import contextlib
import mmap
import re

import numpy as np

from ..errors import DataError
from ..losses import SCCE

DEFAULT_BATCH = 32


def _as_array(a, what, text=False):
    """An array of numbers (text: the input's host-side layer, which takes the
    dtype kinds of its _input_kinds; TextVectorization's strings)."""
    if a is None:
        return None
    if isinstance(a, (list, tuple)) and a and isinstance(a[0], np.ndarray) and len(a) == 1:
        a = a[0]
    if not isinstance(a, np.ndarray):
        try:
            a = np.asarray(a)
        except Exception as e:  # ragged lists and the like
            raise DataError(f"{what} could not be converted to an array: {e}") from e
    if text:
        kinds = getattr(text, "_input_kinds", "USO")
        if a.dtype.kind not in kinds:
            raise DataError(f"{what} has dtype {a.dtype}; this input takes "
                            f"{'strings' if kinds == 'USO' else 'numbers' if 'S' not in kinds else 'values'} "
                            f"(encoded on the host by its {type(text).__name__})")
        if a.ndim == 0:
            raise DataError(f"{what} must have a batch axis, got a scalar")
        return a
    if a.dtype.kind not in "biuf":
        raise DataError(f"{what} has dtype {a.dtype}, which cannot be converted to float32 "
                        "(expected bool, integer or floating point)")
    if a.ndim == 0:
        raise DataError(f"{what} must have a batch axis, got a scalar")
    return a


def check_batch_size(batch_size):
    if batch_size is None or batch_size == "auto":
        return batch_size
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or not 0 < batch_size < 2**31:
        raise ValueError(f"batch_size must be a positive int below 2**31 (the engine's rows) or 'auto', got {batch_size!r}")
    return int(batch_size)


MappedFile = collections.namedtuple("MappedFile", "label path size mmap")


def mapped_files(arrays, labels):
    """[MappedFile] of the arrays whose bytes are a memory-mapped file's (np.memmap, np.load(mmap_mode=...), a
    view of one): the file's path, the size it had when mapped (the mapping's end) and the mapping."""
    out = []
    for a, lab in zip(arrays, labels):
        while isinstance(a, np.ndarray) and not (isinstance(a, np.memmap) and a._mmap is not None):
            a = a.base
        if isinstance(a, np.memmap) and not a._mmap.closed:
            start = a.offset - a.offset % mmap.ALLOCATIONGRANULARITY   # where np.memmap's mapping begins
            out.append(MappedFile(lab, a.filename, start + len(a._mmap), a._mmap))
    return out


def check_files(files, batch):
    """Before batch `batch` is read: each mapped file still as long as when it was mapped (MappedFile)."""
    for f in files:
        try:
            size = f.mmap.size()   # fstat of the mapped file itself, wherever its path now points
        except (OSError, ValueError):
            continue
        if size < f.size:
            raise DataError(f"batch {batch}: {f.label}: the file {f.path or '(unnamed)'} is {size} bytes, {f.size} "
                            "expected (its size when it was mapped): it was truncated while in use, by another "
                            "process?", batch_index=batch)


@contextlib.contextmanager
def engine_batch(offset=0, files=()):
    """Give engine DataErrors ("batch N: ...") their batch_index, shifted by
    offset for sources that hand the engine one batch at a time; a read the
    engine refused because a mapped file (files: MappedFile) was truncated
    names the file and its sizes."""
    try:
        yield
    except DataError as e:
        m = re.match(r"batch (\d+): (.*)", str(e), re.S)
        if not m or e.batch_index is not None:
            raise
        k = int(m.group(1)) + offset
        check_files(files, k)
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

    def files(self):
        """[MappedFile] of the memory-mapped arrays among them."""
        return mapped_files(self.arrays, self.labels)

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
    text = set(model._host_stages) if kind == "input" and hasattr(model, "_host_stages") else set()
    if text:
        return _text_arrays(model, v, what, names, text)
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


def _text_arrays(model, v, what, names, text):
    """as_arrays for a model with string inputs: a list of strings is one
    input's data, not one array per input."""
    if isinstance(v, dict):
        missing = [n for n in names if n not in v]
        if missing:
            raise DataError(f"{what}: no array for input {missing}; the model's inputs are {names}")
        vs = [v[n] for n in names]
        labels = [f"{what}[{n!r}]" for n in names] if len(names) > 1 else [what]
    elif len(names) > 1:
        if not isinstance(v, (list, tuple)) or len(v) != len(names):
            raise DataError(f"{what}: the model has {len(names)} inputs {names}; pass a list or a dict of "
                            f"{len(names)} arrays")
        vs, labels = list(v), [f"{what}[{k}] (input {n!r})" for k, n in enumerate(names)]
    else:
        vs, labels = [v], [what]
    stages = model._host_stages
    return Arrays([_as_array(a, lab, text=stages.get(k, False)) for k, (a, lab) in enumerate(zip(vs, labels))],
                  labels)


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
    """Each input's per-sample shape (xs: Arrays, or one array named `what`); an array with one axis of size 1
    less or more at the end than its input takes the input's shape (a view), as Keras adjusts the rank."""
    if not isinstance(xs, Arrays):
        xs = Arrays([xs], [what or "x"])
    bound = getattr(model, "_bound", None)  # variable-length inputs: the shapes this run was built for
    shapes = bound if bound is not None else [t._ps for t in model._inputs]
    if len(xs.arrays) != len(shapes):
        raise DataError(f"{xs.labels[0].split('[')[0]}: {len(xs.arrays)} arrays for the model's {len(shapes)} inputs")
    text = set(model._host_stages) if hasattr(model, "_host_stages") else set()
    for k, (a, lab, want, t) in enumerate(zip(xs.arrays, xs.labels, shapes, model._inputs)):
        got = tuple(a.shape[1:])
        if k in text and (got == tuple(want) or (tuple(want) == (1,) and got == ())):   # (N,) for an Input (1,)
            continue
        if k in text:
            raise DataError(f"{lab} must hold {'one value' if tuple(want) == (1,) else tuple(want)} per sample "
                            f"(shape (N,{' ' + str(want[0]) if want else ''}){' or (N,)' if tuple(want) == (1,) else ''}"
                            f"), got shape {a.shape}")
        if got != tuple(want) and want and want[-1] == 1 and got == tuple(want[:-1]):   # Keras adjusts the rank:
            xs.arrays[k] = a.reshape(a.shape + (1,))                                      # (N, T) for (T, 1)
            continue
        if got != tuple(want) and got and got[-1] == 1 and got[:-1] == tuple(want):      # and (N, T, 1) for (T,)
            xs.arrays[k] = a.reshape(a.shape[:-1])
            continue
        if got != tuple(want):
            hint = ""
            if None in t._ps and len(got) == len(want):
                hint = (f"; the input {t.shape} takes any length, but the arrays of one call run at one shape: pad "
                        "to one length (keras.utils.pad_sequences), make one call per length, or pass batches of "
                        "several lengths as a Sequence / PyDataset")
            raise DataError(f"{lab} has per-sample shape {got}, the model expects {tuple(want)} (array shape "
                            f"{a.shape}){hint}")


def check_y(model, ys, what=None):
    """Each output's labels against its loss and shape (ys: Arrays, or one array named `what`)."""
    if not isinstance(ys, Arrays):
        ys = Arrays([ys], [what or "y"])
    if model._n_outputs > 1:
        losses, outs = model._out_losses, [tuple(t._ps) for t in model._outputs]
        if getattr(model, "_dynamic", False) and model._engine is not None:   # at the length it is built for
            outs = [tuple(s) for s in model._engine.output_shapes]
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
        elif got != out and not ({got, out} == {(), (1,)}):   # one number per sample, either way (Keras)
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
