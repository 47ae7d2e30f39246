"""keras.ops that boundfit computes on arrays only (re-exported by ops.py):
segment_sum / max / min / prod, scatter, scatter_update, bincount,
histogram, corrcoef, correlate, unique, nonzero, argpartition, meshgrid,
gcd, lcm, nextafter, polar, view, view_as_complex, view_as_real.

On arrays: NumPy with Keras's (JAX's) semantics: segments and scatters
over the leading axis, ids out of range dropped, an empty segment the
reduction's identity (-inf, inf, 1); argpartition in jnp's order (the kth+1
smallest ascending, then the others by position). On a symbolic tensor
each raises OpNotSupportedError naming the op and why: the shape of the
result depends on the values (unique, nonzero, bincount without minlength,
histogram), the op reduces or indexes the leading axis, which in a model is
the batch's (segments, scatters, corrcoef, correlate and meshgrid of 1-D
tensors), it needs integer or complex storage the engine's float32 graphs
do not have (gcd, lcm, nextafter, polar, view*), or its result's order is
JAX's sort of ties (argpartition)."""

import builtins

import numpy as np

from . import ops_lax as lx

_BATCH = "it reduces or indexes the leading axis, which on a symbolic tensor is the batch axis (mixing the samples)"
_VALUES = "the shape of its result depends on the values, which a model's plan cannot"
_DTYPE = "it needs integer or complex storage; the engine's graphs hold float32 tensors"


def _segment(name, ufunc, identity):
    @lx.arrays_only(name, _BATCH)
    def fn(data, segment_ids, num_segments=None, sorted=False):
        data, ids = np.asarray(data), np.asarray(segment_ids).astype(np.int64)
        if num_segments is None:
            raise ValueError(f"keras.ops.{name}: num_segments must be given (as Keras's JAX backend requires)")
        if ids.ndim != 1 or ids.shape[0] != data.shape[0]:
            raise ValueError(f"keras.ops.{name}: segment_ids must be 1-D of data's first length {data.shape[0]}, "
                             f"got shape {ids.shape}")
        init = identity(data.dtype)
        out = np.full((int(num_segments),) + data.shape[1:], init, data.dtype)
        keep = (ids >= 0) & (ids < int(num_segments))
        ufunc.at(out, ids[keep], data[keep])
        return out
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"keras.ops.{name}: data's rows reduced per segment id (arrays only)"
    return fn


def _lowest(dt):
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


def _highest(dt):
    return np.inf if dt.kind == "f" else np.iinfo(dt).max


segment_sum = _segment("segment_sum", np.add, lambda dt: 0)
segment_max = _segment("segment_max", np.maximum, _lowest)
segment_min = _segment("segment_min", np.minimum, _highest)
segment_prod = _segment("segment_prod", np.multiply, lambda dt: 1)


@lx.arrays_only("scatter", _BATCH)
def scatter(indices, values, shape):
    """zeros of `shape` with values added at indices (N, k): duplicates add up"""
    values = np.asarray(values)
    idx = np.asarray(indices).astype(np.int64)
    out = np.zeros(tuple(int(d) for d in shape), values.dtype)
    np.add.at(out, tuple(np.moveaxis(idx, -1, 0)), values)
    return out


_REDUCE = {"add": np.add, "max": np.maximum, "min": np.minimum, "mul": np.multiply}


@lx.arrays_only("scatter_update", _BATCH)
def scatter_update(inputs, indices, updates, reduction=None):
    """inputs with updates set (or combined by reduction: add, max, min, mul) at indices (N, k)"""
    out = np.array(inputs)
    key = tuple(np.asarray(indices).astype(np.int64).T)
    if reduction is None:
        out[key] = updates
    elif reduction in _REDUCE:
        _REDUCE[reduction].at(out, key, np.asarray(updates, out.dtype))
    else:
        raise ValueError(f"keras.ops.scatter_update: reduction must be None, 'add', 'max', 'min' or 'mul', got "
                         f"{reduction!r}")
    return out


@lx.arrays_only("bincount", _VALUES)
def bincount(x, weights=None, minlength=0, sparse=False):
    """counts (or weight sums) of each non-negative integer in x; of a 2-D x, per row"""
    if sparse:
        raise ValueError("keras.ops.bincount: sparse=True is not supported by boundfit (no sparse tensors)")
    x = np.asarray(x).astype(np.int64)
    if x.ndim == 2:
        n = builtins.max(int(minlength), int(x.max()) + 1 if x.size else 0)
        rows = [np.bincount(r, None if weights is None else np.asarray(weights)[i], n) for i, r in enumerate(x)]
        return np.stack(rows)
    out = np.bincount(x, weights, int(minlength))
    return out if weights is not None else out.astype(np.int32)


@lx.arrays_only("histogram", _BATCH + " and its bins are counted over every element")
def histogram(x, bins=10, range=None):
    """(counts, bin edges) of x's elements"""
    x = np.asarray(x)
    counts, edges = np.histogram(x, bins=bins, range=range)
    return counts.astype(np.int32), edges.astype(x.dtype if x.dtype.kind == "f" else np.float32)


@lx.arrays_only("corrcoef", _BATCH)
def corrcoef(x):
    x = np.asarray(x)
    return np.corrcoef(x).astype(x.dtype if x.dtype.kind == "f" else np.float32)


@lx.arrays_only("correlate", _BATCH)
def correlate(x1, x2, mode="valid"):
    if mode not in ("valid", "same", "full"):
        raise ValueError(f"keras.ops.correlate: mode must be 'valid', 'same' or 'full', got {mode!r}")
    return np.correlate(np.asarray(x1, np.float32), np.asarray(x2, np.float32), mode)


@lx.arrays_only("unique", _VALUES)
def unique(x, sorted=True, return_index=False, return_inverse=False, return_counts=False, axis=None, size=None,
           fill_value=None):
    """the distinct values (sorted), with their first positions, the inverse and counts if asked; size pads (with
    fill_value, else the smallest value) or cuts to that many, as jnp.unique"""
    x = np.asarray(x)
    out = np.unique(x, return_index=return_index, return_inverse=return_inverse, return_counts=return_counts,
                    axis=axis)
    out = list(out) if isinstance(out, tuple) else [out]
    if size is not None:
        vals = out[0]
        fill = vals.min() if fill_value is None and vals.size else (0 if fill_value is None else fill_value)
        k = builtins.min(int(size), vals.shape[0])
        pad = int(size) - k
        out[0] = np.concatenate([vals[:k], np.full((pad,) + vals.shape[1:], fill, vals.dtype)])
        pos = 1
        if return_index:
            out[pos] = np.concatenate([out[pos][:k], np.zeros(pad, out[pos].dtype)])
            pos += 1
        if return_inverse:
            pos += 1
        if return_counts:
            out[pos] = np.concatenate([out[pos][:k], np.zeros(pad, out[pos].dtype)])
    if return_inverse and axis is None:
        i = 1 + bool(return_index)
        out[i] = out[i].reshape(x.shape)
    return out[0] if len(out) == 1 else tuple(out)


@lx.arrays_only("nonzero", _VALUES)
def nonzero(x):
    return tuple(i.astype(np.int32) for i in np.nonzero(np.asarray(x)))


@lx.arrays_only("argpartition", "jnp's order of the elements after the kth, which the engine's sorts do not give")
def argpartition(x, kth, axis=-1):
    """jnp.argpartition's positions: the kth + 1 smallest in ascending order (ties by position), then the others by
    position (axis None: of the flattened x)"""
    x = np.asarray(x)
    if axis is None:
        x, axis = x.reshape(-1), 0
    a = np.moveaxis(x, axis, -1)
    kth = int(kth) % a.shape[-1]
    low = np.argsort(a, axis=-1, kind="stable")[..., :kth + 1]
    rest = np.ones(a.shape, bool)
    np.put_along_axis(rest, low, False, axis=-1)
    high = np.argsort(~rest, axis=-1, kind="stable")[..., :a.shape[-1] - kth - 1]
    return np.moveaxis(np.concatenate([low, high], axis=-1), -1, axis).astype(np.int32)


@lx.arrays_only("meshgrid", _BATCH)
def meshgrid(*x, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError(f"keras.ops.meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    return list(np.meshgrid(*[np.asarray(v) for v in x], indexing=indexing))


@lx.arrays_only("gcd", _DTYPE)
def gcd(x1, x2):
    return np.gcd(np.asarray(x1), np.asarray(x2))


@lx.arrays_only("lcm", _DTYPE)
def lcm(x1, x2):
    return np.lcm(np.asarray(x1), np.asarray(x2))


@lx.arrays_only("nextafter", "it steps one float32 unit, a bit-level step no elementwise op of the engine gives")
def nextafter(x1, x2):
    x1 = np.asarray(x1)
    dt = x1.dtype if x1.dtype.kind == "f" else np.float32
    return np.nextafter(x1.astype(dt), np.asarray(x2, dt))


@lx.arrays_only("polar", _DTYPE)
def polar(abs_, angle):
    """abs_ * exp(1j * angle), complex"""
    a = np.asarray(abs_)
    c = np.complex128 if a.dtype == np.float64 else np.complex64
    return (a * np.exp(1j * np.asarray(angle, a.dtype))).astype(c)


@lx.arrays_only("view", _DTYPE)
def view(x, dtype=None):
    x = np.asarray(x)
    return x if dtype is None else x.view(np.dtype(dtype))


@lx.arrays_only("view_as_complex", _DTYPE)
def view_as_complex(x):
    """(..., 2) real and imaginary parts as complex (...)"""
    x = np.asarray(x)
    if x.ndim < 1 or x.shape[-1] != 2:
        raise ValueError(f"keras.ops.view_as_complex: x's last axis must have length 2, got shape {x.shape}")
    return (x[..., 0] + 1j * x[..., 1]).astype(np.complex128 if x.dtype == np.float64 else np.complex64)


@lx.arrays_only("view_as_real", _DTYPE)
def view_as_real(x):
    """complex (...) as (..., 2) real and imaginary parts"""
    x = np.asarray(x)
    return np.stack([x.real, x.imag], axis=-1)
