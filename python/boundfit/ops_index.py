"""keras.ops' indexing and scan functions (re-exported by ops.py): take,
take_along_axis, cumsum, cumprod, sort, argsort, top_k. On arrays they
compute eagerly with NumPy, with Keras 3's semantics on JAX (an index out of
range gives NaN, jnp.take's mode "fill"; a negative one counts from the end;
argsort and top_k are stable, NaN above every number). On symbolic tensors
each is built from three engine primitives (layers/index.py):

- take(x, constant indices, axis >= 1), take(constant table, ids) (axis 0 or
  None of the table), take_along_axis(x, ids or constant indices, axis >= 1):
  Gather (its backward a scatter-add in a fixed order); take(weight, ids) of
  a custom layer's 2-D weight: an Embedding whose table is the weight;
- cumsum / cumprod(x, axis >= 1): Scan;
- argsort(x, axis): ArgSort; sort(x, axis) and top_k(x, k): ArgSort, then
  Gather of x at those positions (the values' gradient flows to the sorted
  positions; the positions get none).

Each is recorded as Keras's operation node (layers/opnode.py): Take,
TakeAlongAxis, Cumsum, Cumprod, Sort, Argsort, TopK. What mixes the samples
of a batch (axis=None, which flattens the batch axis too; axis 0; take of
two symbolic tensors, whose result has two batch axes) raises
OpNotSupportedError naming the op."""

import numpy as np

from .errors import OpNotSupportedError
from .layers.embedding import Embedding
from .layers.index import ArgSort, Gather, Scan
from .layers.layer import Variable
from .layers.node import KerasTensor, tracing_where
from .layers.opnode import record
from .layers.reshaping import Const, Reshape

NUMPY, MATH = "keras.src.ops.numpy", "keras.src.ops.math"


def _sym(*xs):
    return any(isinstance(x, KerasTensor) for x in xs)


def _refuse(op, hint):
    raise OpNotSupportedError(f"keras.ops.{op} on a symbolic tensor{tracing_where()} is not supported by boundfit's "
                              f"graphs: {hint}. Compute it on arrays outside the model, or within each sample "
                              "(an axis >= 1)")


def _sample_axis(op, x, axis):
    """the per-sample axis (0-based after the batch axis) of Keras's axis of symbolic x"""
    if getattr(x, "_nobatch", False):
        _refuse(op, f"of a tensor without a batch axis (shape {x.shape})")
    if axis is None:
        _refuse(op, "axis=None flattens the batch axis with the others, mixing the samples")
    if not isinstance(axis, (int, np.integer)) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"keras.ops.{op}: axis {axis!r} is out of range for a tensor of rank {x.ndim}")
    a = int(axis) % x.ndim
    if a == 0:
        _refuse(op, "along the batch axis (axis=0), which mixes the samples")
    return a - 1


def _static_len(op, x, a):
    n = x._ps[a]
    if n is None:
        _refuse(op, f"axis {a + 1} of {x.shape} has a variable length")
    return n


def _int_array(op, v):
    a = np.asarray(v)
    if a.dtype.kind not in "iu":
        raise TypeError(f"keras.ops.{op}: indices must be integers, got an array of {a.dtype}")
    return a


# ---- eager: NumPy with Keras's semantics on JAX ----

def _fill(out, bad, where_axis, ndim):
    """out with NaN where an index was out of range (bad: the indices' shape, placed at where_axis)"""
    if not bad.any():
        return out
    out = out.astype(np.result_type(out.dtype, np.float32))
    shape = (1,) * where_axis + bad.shape + (1,) * (ndim - where_axis - 1)
    out[np.broadcast_to(bad.reshape(shape), out.shape)] = np.nan
    return out


def _np_take(x, indices, axis):
    x, i = np.asarray(x), np.asarray(indices).astype(np.int64)
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis %= x.ndim
    n = x.shape[axis]
    bad = (i < -n) | (i >= n)
    return _fill(np.take(x, np.where(bad, 0, i), axis=axis), bad, axis, x.ndim)


def _np_take_along(x, indices, axis):
    x, i = np.asarray(x), np.asarray(indices).astype(np.int64)
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis %= x.ndim
    shape = [max(p, q) if d != axis else None for d, (p, q) in enumerate(zip(x.shape, i.shape))]
    x = np.broadcast_to(x, [x.shape[axis] if s is None else s for s in shape])
    i = np.broadcast_to(i, [i.shape[axis] if s is None else s for s in shape])
    n = x.shape[axis]
    bad = (i < -n) | (i >= n)
    out = np.take_along_axis(x, np.where(bad, 0, i) % n, axis=axis)
    if bad.any():
        out = out.astype(np.result_type(out.dtype, np.float32))
        out[bad] = np.nan
    return out


def _np_argsort(x, axis, descending=False):
    """a stable argsort along axis, NaN above every number"""
    x = np.asarray(x)
    nan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
    key = np.where(nan, 0, -x if descending else x)
    rank = ~nan if descending else nan                    # NaN last ascending, first descending
    return np.moveaxis(np.lexsort((np.moveaxis(key, axis, -1), np.moveaxis(rank, axis, -1)), axis=-1), -1, axis)


# ---- take, take_along_axis: Gather ----

def take(x, indices, axis=None):
    """keras.ops.take; on symbolic tensors a Gather (see the module's notes), Keras's Take node in files"""
    if not _sym(x, indices) and not isinstance(x, Variable):
        return _np_take(x, indices, axis)
    y = _take(x, indices, axis)
    return record(y, "Take", NUMPY, {"axis": axis}, [x, indices])


def _take(x, indices, axis):
    if isinstance(x, Variable):
        return _take_weight(x, indices, axis)
    if isinstance(x, KerasTensor):
        a = _sample_axis("take", x, axis)
        if isinstance(indices, KerasTensor):
            _refuse("take", f"of two symbolic tensors ({x.shape} at ids {indices.shape}): Keras's result has both "
                    "batch axes; for ids per sample use keras.ops.take_along_axis")
        idx = _int_array("take", indices)
        if idx.ndim == 0:                                 # one index: that axis dropped
            y = Gather(a)([x, Const(idx.reshape(1).astype(np.float32))(x)])
            return Reshape(tuple(-1 if n is None else n for d, n in enumerate(y._ps) if d != a))(y)
        return Gather(a)([x, Const(idx.astype(np.float32))(x)])
    table = np.asarray(x, np.float32)                     # a constant table at symbolic ids: a lookup per sample
    if axis is None:
        table = table.reshape(-1)
    elif not -table.ndim <= axis < table.ndim or axis % table.ndim != 0:
        _refuse("take", f"of an array of shape {table.shape} at symbolic ids along axis {axis}: the result's batch "
                "axis would not come first; only along axis 0 (or None)")
    return Gather(0)([Const(table)(indices), indices])


def _take_weight(w, ids, axis):
    """take(weight, ids): an Embedding whose table is the custom layer's 2-D weight"""
    if not isinstance(ids, KerasTensor):
        _refuse("take", f"of the weight {w.name!r} at constant indices")
    if len(w.shape) != 2 or axis not in (None, 0):
        _refuse("take", f"of the weight {w.name!r} of shape {w.shape}: a 2-D table along axis 0")
    if w.dense is not None or (w.holder is not None and not isinstance(w.holder, Embedding)):
        _refuse("take", f"the weight {w.name!r} is used by another op too; boundfit holds a weight in one place")
    if w.holder is None:
        w.holder = Embedding(w.shape[0], w.shape[1], embeddings_initializer=w.initializer,
                             embeddings_regularizer=w.regularizer, embeddings_constraint=w.constraint,
                             name=f"{w.layer.name}_{w.name}")
        w.holder.trainable = w.trainable
    return w.holder(ids)


def take_along_axis(x, indices, axis=None):
    """keras.ops.take_along_axis: on symbolic tensors a Gather of x at ids of its rank (a symbolic tensor, or an
    array whose batch axis is 1), the other axes equal or 1 (broadcast)"""
    if not _sym(x, indices):
        return _np_take_along(x, indices, axis)
    if not isinstance(x, KerasTensor):
        _refuse("take_along_axis", "of an array at symbolic indices (their batch axis would index the array)")
    a = _sample_axis("take_along_axis", x, axis)
    ids = indices
    if not isinstance(indices, KerasTensor):
        idx = _int_array("take_along_axis", indices)
        if idx.ndim != x.ndim or idx.shape[0] != 1:
            _refuse("take_along_axis", f"constant indices of shape {idx.shape} for {x.shape}: of x's rank, with a "
                    "batch axis of 1")
        ids = Const(idx[0].astype(np.float32))(x)
    elif indices.ndim != x.ndim:
        raise ValueError(f"keras.ops.take_along_axis: indices of shape {indices.shape} need the rank of x "
                         f"{x.shape}")
    return record(Gather(a, along=True)([x, ids]), "TakeAlongAxis", NUMPY, {"axis": axis}, [x, indices])


# ---- cumsum, cumprod: Scan ----

def _scan(op, cls, npfn):
    def fn(x, axis=None, dtype=None):
        if not _sym(x):
            return npfn(x, axis=axis, dtype=dtype)
        if dtype is not None and np.dtype(dtype).kind != "f":
            _refuse(op, f"dtype={dtype}: symbolic tensors are float32 in the engine")
        a = _sample_axis(op, x, axis)
        return record(Scan(a, cls.lower()[3:])(x), cls, NUMPY, {"axis": axis, "dtype": dtype}, [x])
    fn.__name__ = op
    fn.__doc__ = f"keras.ops.{op}; on a symbolic tensor along an axis >= 1: the engine's Scan"
    return fn


cumsum = _scan("cumsum", "Cumsum", np.cumsum)
cumprod = _scan("cumprod", "Cumprod", np.cumprod)


# ---- argsort, sort, top_k: ArgSort (and Gather) ----

def argsort(x, axis=-1):
    """keras.ops.argsort (stable; the positions as float32 in a graph): ArgSort"""
    if not _sym(x):
        return _np_argsort(np.asarray(x).reshape(-1), 0) if axis is None or np.ndim(x) == 0 else _np_argsort(x, axis)
    a = _sample_axis("argsort", x, axis)
    return record(ArgSort(a, _static_len("argsort", x, a))(x), "Argsort", NUMPY, {"axis": axis}, [x])


def sort(x, axis=-1):
    """keras.ops.sort: x at its ArgSort's positions (Gather), so the gradient goes back to the sorted positions"""
    if not _sym(x):
        return np.sort(x, axis=axis)
    a = _sample_axis("sort", x, axis)
    pos = ArgSort(a, _static_len("sort", x, a))(x)
    return record(Gather(a, along=True)([x, pos]), "Sort", NUMPY, {"axis": axis}, [x])


def top_k(x, k, sorted=True):   # noqa: A002 - keras.ops' argument name
    """keras.ops.top_k: (values, indices) of the k largest along the last axis, the lower index first among
    ties (jax.lax.top_k); the values are a Gather of x at an ArgSort's first k positions (descending)"""
    if not _sym(x):
        x = np.asarray(x)
        idx = _np_argsort(x, -1, descending=True)[..., :k]
        return np.take_along_axis(x, idx, axis=-1), idx.astype(np.int32)
    a = _sample_axis("top_k", x, -1)
    n = _static_len("top_k", x, a)
    if not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
        raise ValueError(f"keras.ops.top_k: k={k!r} must be an integer in 1 .. {n} (the last axis of {x.shape})")
    pos = ArgSort(a, int(k), descending=True)(x)
    return record((Gather(a, along=True)([x, pos]), pos), "TopK", MATH, {"k": int(k), "sorted": bool(sorted)}, [x])
