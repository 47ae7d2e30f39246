"""keras.ops statistics over sample axes (re-exported by ops.py): the NaN-
skipping reductions nansum, nanmean, nanmax, nanmin, nanprod, nanvar,
nanstd, nanargmax, nanargmin, nancumsum, nancumprod; median, quantile,
percentile; ptp, average, diff, trapezoid; digitize, searchsorted, isin;
cdist, in_top_k.

On arrays: NumPy, as Keras computes them on JAX. On symbolic tensors,
compositions of the engine's primitives (ops_lax.py): a nan* reduction is
the reduction of nan_to_num(x) with the neutral element for NaN (no
gradient there, as jnp's where), an all-NaN slice NaN as NumPy's (nanargmax
/ nanargmin: -1, as JAX's); a quantile sorts the axes (ArgSort + Gather,
so the gradient reaches the sorted positions) and interpolates the
constant positions; digitize / searchsorted / isin compare against the
constant bins and count (0 / 1 values, no gradient). Over the batch axis
(axis None or 0) each raises OpNotSupportedError naming the op. Each is
recorded as Keras's operation node (layers/opnode.py)."""

import numpy as np

from . import ops_lax as lx
from .layers.emath import Unary
from .layers.index import ArgSort, Gather, Scan
from .layers.node import KerasTensor
from .layers.opnode import record

NUMPY, MATH = lx.NUMPY, lx.MATH
_INF = float("inf")


def _keep(y, x, axes, keepdims):
    """y reduced over per-sample axes; with keepdims those axes back as 1s"""
    if not keepdims:
        return y
    return lx.reshape(y, tuple(1 if d in axes else n for d, n in enumerate(x._ps)))


def _clean(x, nan):
    """x with NaN replaced by `nan` (infinities kept): nan_to_num, gradient 1 where finite"""
    return Unary("nan_to_num", nan, param2=_INF, param3=-_INF)(x)


def _nan_where_all(y, x, axes, keepdims):
    """y + NaN where every element of the reduced set is NaN (0 / 0), else y"""
    all_nan = lx.reduce("all", Unary("isnan")(x), axes, keepdims)
    return lx.add(y, Unary("divide", 0.0, left=True)(Unary("subtract", 1.0, left=True)(all_nan)))


def _count(x, axes, keepdims):
    return lx.reduce("sum", Unary("subtract", 1.0, left=True)(Unary("isnan")(x)), axes, keepdims)


def _nansum(x, axes, keepdims):
    return lx.reduce("sum", _clean(x, 0.0), axes, keepdims)


def _nanmean(x, axes, keepdims):
    return lx.div(_nansum(x, axes, keepdims), _count(x, axes, keepdims))


def _nanvar(x, axes, keepdims):
    d = _clean(lx.sub(x, _nanmean(x, axes, True)), 0.0)   # 0 where NaN, before squaring: no NaN * 0 backward
    return lx.div(lx.reduce("sum", Unary("square")(d), axes, keepdims), _count(x, axes, keepdims))


_NAN = {
    "nansum": _nansum,
    "nanmean": _nanmean,
    "nanmax": lambda x, axes, k: _nan_where_all(lx.reduce("max", _clean(x, -_INF), axes, k), x, axes, k),
    "nanmin": lambda x, axes, k: _nan_where_all(lx.reduce("min", _clean(x, _INF), axes, k), x, axes, k),
    "nanprod": lambda x, axes, k: lx.reduce("prod", _clean(x, 1.0), axes, k),
    "nanvar": _nanvar,
    "nanstd": lambda x, axes, k: Unary("sqrt")(_nanvar(x, axes, k)),
}


def _nan_reduction(name):
    npfn = getattr(np, name)

    def fn(x, axis=None, keepdims=False):
        if not lx.sym(x):
            return npfn(x, axis=axis, keepdims=keepdims)
        axes = lx.sample_axes(name, x, axis)
        y = _NAN[name](x, axes, bool(keepdims))
        return record(y, name.capitalize(), NUMPY, {"axis": axis, "keepdims": bool(keepdims)}, [x])
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"keras.ops.{name} over sample axes: the reduction of nan_to_num(x) with NaN as the neutral "
                  "element (ops_stats.py)")
    return fn


nansum, nanmean, nanmax, nanmin, nanprod, nanvar, nanstd = (_nan_reduction(n) for n in _NAN)


def _nan_arg(name, fill):
    def fn(x, axis=None, keepdims=False):
        if not lx.sym(x):
            x = np.asarray(x)
            all_nan = np.all(np.isnan(x), axis=axis, keepdims=keepdims)
            y = getattr(np, name[3:])(np.where(np.isnan(x), fill, x), axis=axis, keepdims=keepdims)
            return np.where(all_nan, -1, y)
        a = lx.sample_axis(name, x, axis)
        y = lx.reduce(name[3:], _clean(x, fill), (a,), keepdims)
        y = lx.sub(y, lx.reduce("all", Unary("isnan")(x), (a,), keepdims))   # an all-NaN slice: 0 - 1
        return record(y, name.capitalize(), NUMPY, {"axis": axis, "keepdims": bool(keepdims)}, [x])
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"keras.ops.{name}: the position of the first {name[6:]}imum skipping NaN (-1 if all are NaN)"
    return fn


nanargmax, nanargmin = _nan_arg("nanargmax", -_INF), _nan_arg("nanargmin", _INF)


def _nan_scan(name, fill, op):
    npfn = getattr(np, name)

    def fn(x, axis=None, dtype=None):
        if not lx.sym(x):
            return npfn(x, axis=axis, dtype=dtype)
        if dtype is not None and np.dtype(dtype).kind != "f":
            lx.refuse(name, f"dtype={dtype}: symbolic tensors are float32 in the engine")
        a = lx.sample_axis(name, x, axis)
        return record(Scan(a, op)(_clean(x, fill)), name.capitalize(), NUMPY, {"axis": axis, "dtype": dtype}, [x])
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"keras.ops.{name}: Scan of nan_to_num(x) ({fill} for NaN)"
    return fn


nancumsum, nancumprod = _nan_scan("nancumsum", 0.0, "sum"), _nan_scan("nancumprod", 1.0, "prod")


# ---- quantiles ----

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op, x, q, axis, method, keepdims):
    if method not in _METHODS:
        raise ValueError(f"keras.ops.{op}: method must be one of {_METHODS}, got {method!r}")
    if lx.scalar(q) is None:
        lx.refuse(op, f"q={q!r}: only one number (several give a leading axis before the batch axis)")
    q = lx.scalar(q)
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"keras.ops.{op}: q must be in [0, 1] ([0, 100] for percentile), got {q}")
    axes = lx.sample_axes(op, x, axis)
    ps = lx.static(op, x)
    rest = [d for d in range(len(ps)) if d not in axes]
    n = int(np.prod([ps[d] for d in axes]))
    h = lx.reshape(lx.permute(x, rest + list(axes)), tuple(ps[d] for d in rest) + (n,))
    a = len(rest)
    s = Gather(a, along=True)([h, ArgSort(a, n)(h)])             # sorted along the last axis
    pos = q * (n - 1)
    lo, hi = int(np.floor(pos)), int(np.ceil(pos))
    if method == "nearest":
        lo = hi = int(np.round(pos))                                # half to even, as jnp.quantile
    pick = {"lower": (lo, lo, 0.0), "higher": (hi, hi, 0.0), "nearest": (lo, lo, 0.0),
            "midpoint": (lo, hi, 0.5 if hi != lo else 0.0), "linear": (lo, hi, pos - lo)}[method]
    v_lo = lx.take(s, np.array(pick[0]), a)
    y = v_lo if pick[2] == 0.0 else lx.add(v_lo, lx.mul(lx.sub(lx.take(s, np.array(pick[1]), a), v_lo), pick[2]))
    if keepdims:
        y = lx.reshape(y, tuple(1 if d in axes else ps[d] for d in range(len(ps))))
    return y


def _np_quantile(x, q, axis, method, keepdims):
    return np.quantile(np.asarray(x, np.float32), q, axis=tuple(axis) if isinstance(axis, list) else axis,
                       method=method, keepdims=keepdims)


def quantile(x, q, axis=None, method="linear", keepdims=False):
    """keras.ops.quantile of one q over sample axes: a sort (ArgSort + Gather) and the interpolation of its
    constant positions"""
    if not lx.sym(x):
        return _np_quantile(x, q, axis, method, keepdims)
    y = _quantile("quantile", x, q, axis, method, keepdims)
    return record(y, "Quantile", NUMPY, {"axis": axis, "method": method, "keepdims": bool(keepdims)}, [x, q])


def percentile(x, q, axis=None, method="linear", keepdims=False):
    """keras.ops.percentile: quantile(x, q / 100)"""
    if not lx.sym(x):
        return np.percentile(np.asarray(x, np.float32), q, axis=axis, method=method, keepdims=keepdims)
    y = _quantile("percentile", x, lx.scalar(q) / 100.0 if lx.scalar(q) is not None else q, axis, method, keepdims)
    return record(y, "Percentile", NUMPY, {"axis": axis, "method": method, "keepdims": bool(keepdims)}, [x, q])


def median(x, axis=None, keepdims=False):
    """keras.ops.median: quantile(x, 0.5)"""
    if not lx.sym(x):
        return np.median(x, axis=axis, keepdims=keepdims)
    y = _quantile("median", x, 0.5, axis, "linear", keepdims)
    return record(y, "Median", NUMPY, {"axis": axis, "keepdims": bool(keepdims)}, [x])


# ---- ptp, average, diff, trapezoid ----

def ptp(x, axis=None, keepdims=False):
    """keras.ops.ptp: max - min over sample axes"""
    if not lx.sym(x):
        return np.ptp(x, axis=axis, keepdims=keepdims)
    axes = lx.sample_axes("ptp", x, axis)
    y = lx.sub(lx.reduce("max", x, axes, keepdims), lx.reduce("min", x, axes, keepdims))
    return record(y, "Ptp", NUMPY, {"axis": axis, "keepdims": bool(keepdims)}, [x])


def average(x, axis=None, weights=None):
    """keras.ops.average over one sample axis: the mean, or sum(x * w) / sum(w) with weights of x's shape or 1-D
    along the axis (an array or a symbolic tensor of x's shape)"""
    if not lx.sym(x, weights):
        return np.average(x, axis=axis, weights=weights)
    if not isinstance(x, KerasTensor):
        lx.refuse("average", "of an array with symbolic weights")
    a = lx.sample_axis("average", x, axis)
    if weights is None:
        y = lx.reduce("mean", x, (a,))
    elif isinstance(weights, KerasTensor):
        y = lx.div(lx.reduce("sum", lx.mul(x, weights), (a,)), lx.reduce("sum", weights, (a,)))
    else:
        w = np.asarray(weights, np.float32)
        if w.ndim == 1:
            w = w.reshape([w.shape[0] if d == a else 1 for d in range(len(x._ps))])
        elif w.ndim == x.ndim:
            w = w[0]
        den = np.sum(np.broadcast_to(w, lx.static("average", x)), axis=a)
        y = lx.div(lx.reduce("sum", lx.mul(x, w), (a,)), den)
    return record(y, "Average", NUMPY, {"axis": axis}, [x, weights])


def _diff(x, n, a):
    for _ in range(n):
        m = x._ps[a]
        x = lx.sub(lx.cut(x, a, 1, m), lx.cut(x, a, 0, m - 1))
    return x


def diff(a, n=1, axis=-1):
    """keras.ops.diff: n differences of neighbours along a sample axis (two Slices, subtract)"""
    if not lx.sym(a):
        return np.diff(a, n=n, axis=axis)
    ax = lx.sample_axis("diff", a, axis)
    if not 0 <= int(n) < lx.static("diff", a, ax):
        raise ValueError(f"keras.ops.diff: n={n} for an axis of {a._ps[ax]}")
    y = _diff(a, int(n), ax)
    return record(y, "Diff", NUMPY, {"n": int(n), "axis": axis}, [a]) if n else a


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """keras.ops.trapezoid along a sample axis: sum((y[1:] + y[:-1]) / 2 * dx), dx the constant spacing or
    diff(x) of constant sample points x (1-D)"""
    if not lx.sym(y):
        return np.trapezoid(y, x=x, dx=dx, axis=axis)
    if isinstance(x, KerasTensor):
        lx.refuse("trapezoid", "of symbolic sample points x (only an array or None)")
    a = lx.sample_axis("trapezoid", y, axis)
    n = lx.static("trapezoid", y, a)
    mid = lx.add(lx.cut(y, a, 1, n), lx.cut(y, a, 0, n - 1))
    if x is None:
        s = lx.mul(mid, float(dx) / 2.0)
    else:
        d = np.diff(np.asarray(x, np.float32)) / 2.0
        if d.ndim != 1 or d.size != n - 1:
            lx.refuse("trapezoid", f"sample points of shape {np.shape(x)}: 1-D of length {n}")
        shape = [1] * len(y._ps)
        shape[a] = n - 1
        s = lx.mul(mid, d.reshape(shape))
    cfg = {"x": None if x is None else np.asarray(x, np.float32).tolist(), "dx": float(dx), "axis": axis}
    return record(lx.reduce("sum", s, (a,)), "Trapezoid", NUMPY, cfg, [y])


# ---- comparisons against constants: digitize, searchsorted, isin ----

def _count_against(op, x, values, cmp):
    """sum over v of cmp(x, v) for the constant 1-D values: Binary against (1, ..., K), Reduce over K"""
    values = np.asarray(values, np.float32).reshape(-1)
    ps = lx.static(op, x)
    e = lx.reshape(x, ps + (1,))
    return lx.reduce("sum", lx.binary(cmp, e, values.reshape((1,) * len(ps) + (-1,))), (len(ps),))


def digitize(x, bins):
    """keras.ops.digitize with constant bins: the count of bins <= x (increasing bins) or bins > x (decreasing),
    NumPy's right=False"""
    if not lx.sym(x):
        return np.digitize(x, bins).astype(np.int32)
    if isinstance(bins, KerasTensor):
        lx.refuse("digitize", "of symbolic bins (only an array)")
    lx.batched("digitize", x)
    b = np.asarray(bins, np.float32).reshape(-1)
    increasing = bool(np.all(np.diff(b) >= 0))
    if not increasing and not np.all(np.diff(b) <= 0):
        raise ValueError("keras.ops.digitize: bins must be monotonic")
    y = _count_against("digitize", x, b, "greater_equal" if increasing else "less")
    return record(y, "Digitize", NUMPY, {}, [x, b])


def searchsorted(sorted_sequence, values, side="left"):
    """keras.ops.searchsorted of symbolic values in a constant sorted 1-D sequence: the count of its elements
    < value (side "left") or <= value ("right")"""
    if not lx.sym(sorted_sequence, values):
        return np.searchsorted(sorted_sequence, values, side=side).astype(np.int32)
    if isinstance(sorted_sequence, KerasTensor):
        lx.refuse("searchsorted", "in a symbolic sequence (only in a constant 1-D array)")
    if side not in ("left", "right"):
        raise ValueError(f"keras.ops.searchsorted: side must be 'left' or 'right', got {side!r}")
    lx.batched("searchsorted", values)
    seq = np.asarray(sorted_sequence, np.float32)
    if seq.ndim != 1:
        lx.refuse("searchsorted", f"a sequence of shape {seq.shape}: only 1-D")
    y = _count_against("searchsorted", values, seq, "greater" if side == "left" else "greater_equal")
    return record(y, "SearchSorted", NUMPY, {"side": side}, [seq, values])


def isin(x1, x2, assume_unique=False, invert=False):
    """keras.ops.isin of a symbolic tensor in constant values: any(x1 == v) (0 / 1, no gradient)"""
    if not lx.sym(x1, x2):
        return np.isin(x1, x2, assume_unique=assume_unique, invert=invert)
    if isinstance(x2, KerasTensor) or not isinstance(x1, KerasTensor):
        lx.refuse("isin", "only of a symbolic tensor in constant values (an array)")
    lx.batched("isin", x1)
    v = np.unique(np.asarray(x2, np.float32).reshape(-1))
    y = Unary("greater", 0.0)(_count_against("isin", x1, v, "equal"))
    if invert:
        y = Unary("subtract", 1.0, left=True)(y)
    return record(y, "IsIn", NUMPY, {"assume_unique": bool(assume_unique), "invert": bool(invert)}, [x1, v])


# ---- distances and ranks ----

def cdist(x, y):
    """keras.ops.cdist: Euclidean distances of the rows of x (..., P, M) and y (..., R, M), per sample
    (..., P, R): sqrt(sum((x[..., :, None, :] - y[..., None, :, :])**2))"""
    if not lx.sym(x, y):
        x, y = np.asarray(x, np.float32), np.asarray(y, np.float32)
        return np.sqrt(np.sum(np.square(x[..., :, None, :] - y[..., None, :, :]), axis=-1))
    if not isinstance(x, KerasTensor) or not isinstance(y, KerasTensor):
        lx.refuse("cdist", "of a tensor and an array (only of two symbolic tensors)")
    lx.batched("cdist", x, y)
    px, py = lx.static("cdist", x), lx.static("cdist", y)
    if len(px) < 2 or len(px) != len(py) or px[-1] != py[-1]:
        lx.refuse("cdist", f"of {x.shape} and {y.shape}: per sample (..., P, M) and (..., R, M)")
    a = lx.reshape(x, px[:-1] + (1, px[-1]))
    b = lx.reshape(y, py[:-2] + (1,) + py[-2:])
    d = lx.reduce("sum", Unary("square")(lx.sub(a, b)), (len(px),))
    return record(Unary("sqrt")(d), "CDist", MATH, {}, [x, y])


def in_top_k(targets, predictions, k):
    """keras.ops.in_top_k: whether each sample's target class (ids (B,)) is among the k largest predictions
    (B, C): fewer than k predictions above the target's (0 / 1, no gradient)"""
    if not lx.sym(targets, predictions):
        t, p = np.asarray(targets).astype(np.int64), np.asarray(predictions, np.float32)
        return np.sum(p > np.take_along_axis(p, t[:, None], axis=1), axis=1) < k
    if not isinstance(targets, KerasTensor) or not isinstance(predictions, KerasTensor):
        lx.refuse("in_top_k", "targets and predictions must both be symbolic tensors")
    lx.batched("in_top_k", targets, predictions)
    if targets.ndim != 1 or predictions.ndim != 2:
        lx.refuse("in_top_k", f"of {targets.shape} and {predictions.shape}: targets (B,) and predictions (B, C)")
    mine = Gather(0, along=True)([predictions, lx.reshape(targets, (1,))])
    above = lx.reduce("sum", lx.binary("greater", predictions, mine), (0,))
    return record(Unary("less", float(k))(above), "InTopK", MATH, {"k": int(k)}, [targets, predictions])
