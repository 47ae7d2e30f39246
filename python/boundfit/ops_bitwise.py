"""keras.ops bitwise ops (re-exported by ops.py): bitwise_and, bitwise_or,
bitwise_xor, bitwise_invert / bitwise_not, bitwise_left_shift /
left_shift, bitwise_right_shift / right_shift.

On arrays: NumPy's integer ops, as Keras's. On symbolic tensors (the
engine's float32 integers, exact for |values| < 2 ** 24) they are
elementwise arithmetic (Unary, Binary, one Reduce): invert is -x - 1 (two's
complement), a left shift x * 2 ** y, a right shift floor(x / 2 ** y)
(arithmetic, as on signed integers); and(x, y) takes each operand's BITS
low bits at once, mod(floor(x / [1, 2, 4, ...]), 2) along a new last axis
(a Binary with the constant powers), sums their products weighed by 2 ** k
and subtracts 2 ** BITS where both are negative (every higher bit set);
a constant operand's bits are a constant; or = x + y - and, xor = x + y -
2 and. Results are integers: no gradient (stop_gradient)."""

import numpy as np

from . import ops_lax as lx
from .layers.emath import Unary
from .layers.node import KerasTensor
from .layers.opnode import record

NUMPY = lx.NUMPY
BITS = 24


_POW = 2.0 ** np.arange(BITS)


def _bits(x):
    """x's low BITS bits, (..., BITS) 0 / 1: mod(floor(x / 2 ** k), 2) (two's complement for a negative x)"""
    e = lx.reshape(x, tuple(x._ps) + (1,))
    return Unary("mod", 2.0)(lx.binary("floor_divide", e, _POW))


def _and(x, y):
    """and of symbolic integers x and y (a symbolic tensor or an integer): the low bits' products weighed by
    2 ** k and summed, less 2 ** BITS where both are negative (every higher bit set)"""
    a = len(x._ps)
    if isinstance(y, KerasTensor):
        low = lx.mul(lx.mul(_bits(x), _bits(y)), _POW)
        both = lx.mul(Unary("less", 0.0)(x), Unary("less", 0.0)(y))
    else:
        c = int(y)
        if not -2 ** BITS <= c < 2 ** BITS:
            lx.refuse("bitwise_and", f"a constant {c} beyond the float32 integers (|c| < 2 ** {BITS})")
        cbits = np.array([(c >> k) & 1 for k in range(BITS)], np.float32)
        low = lx.mul(_bits(x), cbits * _POW)
        both = Unary("less", 0.0)(x) if c < 0 else None
    out = lx.reduce("sum", low, (a,))
    return out if both is None else lx.sub(out, lx.mul(both, 2.0 ** BITS))


def _eager(npfn, *xs):
    """npfn on integer arrays; float arrays (boundfit's float32 integers) as int64, the result float32"""
    xs = [np.asarray(x) for x in xs]
    if not any(x.dtype.kind == "f" for x in xs):
        return npfn(*xs)
    return npfn(*[x.astype(np.int64) for x in xs]).astype(np.float32)


def _logic(op):
    name = f"bitwise_{op}"
    npfn = getattr(np, name)

    def fn(x, y):
        if not lx.sym(x, y):
            return _eager(npfn, x, y)
        t, c = (x, y) if isinstance(x, KerasTensor) else (y, x)
        if not isinstance(c, KerasTensor) and np.ndim(c) != 0:
            lx.refuse(name, "of a symbolic tensor and an array (a number, or two symbolic tensors)")
        anded = _and(t, c)                     # or = x + y - and, xor = x + y - 2 and
        out = anded if op == "and" else lx.sub(lx.add(t, c if isinstance(c, KerasTensor) else float(int(c))),
                                               anded if op == "or" else lx.mul(anded, 2.0))
        return record(Unary("stop_gradient")(out), "Bitwise" + op.capitalize(), NUMPY, {}, [x, y])
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"keras.ops.{name} of integers (symbolic: float32 integers, |x| < 2 ** {BITS}, no gradient)"
    return fn


bitwise_and, bitwise_or, bitwise_xor = _logic("and"), _logic("or"), _logic("xor")


def bitwise_invert(x):
    """keras.ops.bitwise_invert: ~x = -x - 1"""
    if not lx.sym(x):
        return _eager(np.invert, x)
    return record(Unary("stop_gradient")(Unary("subtract", -1.0, left=True)(x)), "BitwiseInvert", NUMPY, {}, [x])


def bitwise_not(x):
    """keras.ops.bitwise_not: ~x = -x - 1"""
    if not lx.sym(x):
        return _eager(np.invert, x)
    return record(Unary("stop_gradient")(Unary("subtract", -1.0, left=True)(x)), "BitwiseNot", NUMPY, {}, [x])


def _pow2(y):
    return Unary("exp2")(y) if isinstance(y, KerasTensor) else np.exp2(np.asarray(y, np.float32))


def _shift(name, cls, left):
    npfn = np.left_shift if left else np.right_shift

    def fn(x, y):
        if not lx.sym(x, y):
            return _eager(npfn, x, y)
        p = _pow2(y)
        p = float(p) if not isinstance(p, KerasTensor) and np.ndim(p) == 0 else p
        out = lx.mul(x, p) if left else Unary("floor")(lx.div(x, p))
        return record(Unary("stop_gradient")(out), cls, NUMPY, {}, [x, y])
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"keras.ops.{name}: x {'*' if left else '// '} 2 ** y (symbolic: float32 integers, no gradient)"
    return fn


bitwise_left_shift = _shift("bitwise_left_shift", "BitwiseLeftShift", True)
left_shift = _shift("left_shift", "LeftShift", True)
bitwise_right_shift = _shift("bitwise_right_shift", "BitwiseRightShift", False)
right_shift = _shift("right_shift", "RightShift", False)
