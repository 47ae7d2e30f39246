"""keras.ops.i0 and the NaN-ignoring quantiles (nanquantile, nanpercentile,
nanmedian), re-exported by ops.py.

i0 on a symbolic tensor is Abramowitz & Stegun's 9.8.1 / 9.8.2 rational
approximations (relative error < 2e-7, float32's own), the two branches
joined at |x| = 3.75 by where = b + (|x| <= 3.75) * (a - b), each branch fed
a clamped |x| so neither overflows: Unary and Binary nodes, whose
derivative is the approximation's (I1's to the same precision). On arrays:
np.i0, as jnp.i0.

The nan quantiles compute on arrays (jnp.nanquantile's values) and are
refused by name on symbolic tensors: where a quantile falls depends on how
many values of each sample are NaN, a position the engine's sort and gather
take only as constants."""

import numpy as np

from . import ops_lax as lx
from .layers.opnode import record

_SMALL = (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813)        # in t = (x / 3.75)^2
_LARGE = (0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281, -0.02057706, 0.02635537, -0.01647633,
          0.00392377)                                                                    # in u = 3.75 / |x|


def _horner(t, coefs):
    y = lx.add(lx.mul(t, coefs[-1]), coefs[-2])
    for c in reversed(coefs[:-2]):
        y = lx.add(lx.mul(y, t), c)
    return y


def i0(x):
    """keras.ops.i0: the modified Bessel function of the first kind, order 0"""
    if not lx.sym(x):
        return np.i0(np.asarray(x, np.float32)).astype(np.float32)
    ax = lx.unary("abs", x)
    small = _horner(lx.mul(lx.mul(lx.unary("minimum", ax, param=3.75), lx.unary("minimum", ax, param=3.75)),
                           1.0 / 3.75 ** 2), _SMALL)
    big_x = lx.unary("maximum", ax, param=3.75)
    big = lx.div(lx.mul(lx.unary("exp", big_x), _horner(lx.binary("divide", 3.75, big_x), _LARGE)),
                 lx.unary("sqrt", big_x))
    near = lx.unary("less_equal", ax, param=3.75)
    return record(lx.add(big, lx.mul(near, lx.sub(small, big))), "I0", lx.NUMPY, {}, [x])


_WHY = ("where the quantile falls depends on how many of each sample's values are NaN; use keras.ops.quantile "
        "(ops.where(ops.isnan(x), ...) first) or compute it on arrays")


def _nan(name, fn):
    fn = lx.arrays_only(name, _WHY)(fn)
    fn.__doc__ = f"keras.ops.{name}: NaNs ignored (arrays only; NaN where a slice is all NaN)"
    return fn


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def _nanquantile(x, q, axis=None, method="linear", keepdims=False):
    with np.errstate(all="ignore"):
        return np.nanquantile(np.asarray(x, np.float32), q, axis=_axis(axis), method=method,
                              keepdims=keepdims).astype(np.float32)


def _nanpercentile(x, q, axis=None, method="linear", keepdims=False):
    return _nanquantile(x, np.asarray(q, np.float64) / 100.0, axis, method, keepdims)


def _nanmedian(x, axis=None, keepdims=False):
    return _nanquantile(x, 0.5, axis, "linear", keepdims)


nanquantile = _nan("nanquantile", _nanquantile)
nanpercentile = _nan("nanpercentile", _nanpercentile)
nanmedian = _nan("nanmedian", _nanmedian)
