"""keras.ops bitwise ops (re-exported by ops.py): bitwise_and, bitwise_or,
bitwise_xor, bitwise_invert / bitwise_not, bitwise_left_shift /
left_shift, bitwise_right_shift / right_shift.

On arrays: NumPy's integer ops, as Keras's. On symbolic tensors (the
engine's float32 integers, exact for |values| < 2 ** 24) they are
elementwise arithmetic (Unary, Binary): invert is -x - 1 (two's
complement), a left shift x * 2 ** y, a right shift floor(x / 2 ** y)
(arithmetic, as on signed integers); and / or / xor split each operand
into its BITS low bits, bit k = floor(x / 2 ** k) - 2 floor(x / 2 ** (k+1)),
and a sign (x < 0, every higher bit of a negative number), combine them
(a b, a + b - a b, a + b - 2 a b) and weigh them back, the sign's bit by
-2 ** BITS; with a constant operand c only c's bits are needed (and(x, c)
for c >= 0; or and xor through x + c - and(x, c) and x + c - 2 and(x, c)).
Results are integers: no gradient (stop_gradient)."""

import numpy as np

from . import ops_lax as lx
from .layers.emath import Unary
from .layers.node import KerasTensor
from .layers.opnode import record

NUMPY = lx.NUMPY
BITS = 24


def _floor_div(x, d):
    return Unary("floor_divide", float(d))(x)


def _bits(x):
    """x's low BITS bits (0 / 1 tensors) and its sign (1 for a negative x)"""
    q = [x] + [_floor_div(x, 2.0 ** k) for k in range(1, BITS + 1)]
    return [lx.sub(q[k], lx.mul(q[k + 1], 2.0)) for k in range(BITS)], Unary("less", 0.0)(x)


def _combine(op, a, b):
    if op == "and":
        return lx.mul(a, b)
    s = lx.add(a, b)
    return lx.sub(s, lx.mul(lx.mul(a, b), 1.0 if op == "or" else 2.0))


def _weigh(bits, sign):
    total = None if sign is None else lx.mul(sign, -2.0 ** BITS)
    for k, b in enumerate(bits):
        if b is not None:
            total = b if total is None else lx.add(total, b if k == 0 else lx.mul(b, 2.0 ** k))
    return total


def _and_const(x, c):
    """and(x, c) of symbolic integers x and a non-negative integer c (< 2 ** BITS)"""
    bits = []
    for k in range(BITS):
        if (c >> k) & 1:
            q = _floor_div(x, 2.0 ** k) if k else x
            bits.append(lx.sub(q, lx.mul(_floor_div(x, 2.0 ** (k + 1)), 2.0)))
        else:
            bits.append(None)
    if not any(b is not None for b in bits):
        return Unary("multiply", 0.0)(x)
    return _weigh(bits, None)


def _with_const(op, x, c):
    c = int(c)
    if not -2 ** BITS <= c < 2 ** BITS:
        lx.refuse(f"bitwise_{op}", f"a constant {c} beyond the float32 integers (|c| < 2 ** {BITS})")
    anded = _and_const(x, c) if c >= 0 else lx.sub(x, _and_const(x, -c - 1))   # x & c = x - (x & ~c)
    if op == "and":
        return anded
    return lx.sub(lx.add(x, float(c)), anded if op == "or" else lx.mul(anded, 2.0))


def _logic(op):
    name = f"bitwise_{op}"
    npfn = getattr(np, name)

    def fn(x, y):
        if not lx.sym(x, y):
            return npfn(np.asarray(x), np.asarray(y))
        if isinstance(x, KerasTensor) and isinstance(y, KerasTensor):
            (bx, sx), (by, sy) = _bits(x), _bits(y)
            out = _weigh([_combine(op, a, b) for a, b in zip(bx, by)], _combine(op, sx, sy))
        else:
            t, c = (x, y) if isinstance(x, KerasTensor) else (y, x)
            if np.ndim(c) != 0:
                lx.refuse(name, "of a symbolic tensor and an array (a number, or two symbolic tensors)")
            out = _with_const(op, t, c)
        return record(Unary("stop_gradient")(out), "Bitwise" + op.capitalize(), NUMPY, {}, [x, y])
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"keras.ops.{name} of integers (symbolic: float32 integers, |x| < 2 ** {BITS}, no gradient)"
    return fn


bitwise_and, bitwise_or, bitwise_xor = _logic("and"), _logic("or"), _logic("xor")


def bitwise_invert(x):
    """keras.ops.bitwise_invert: ~x = -x - 1"""
    if not lx.sym(x):
        return np.invert(np.asarray(x))
    return record(Unary("stop_gradient")(Unary("subtract", -1.0, left=True)(x)), "BitwiseInvert", NUMPY, {}, [x])


def bitwise_not(x):
    """keras.ops.bitwise_not: ~x = -x - 1"""
    if not lx.sym(x):
        return np.invert(np.asarray(x))
    return record(Unary("stop_gradient")(Unary("subtract", -1.0, left=True)(x)), "BitwiseNot", NUMPY, {}, [x])


def _pow2(y):
    return Unary("exp2")(y) if isinstance(y, KerasTensor) else np.exp2(np.asarray(y, np.float32))


def _shift(name, cls, left):
    npfn = np.left_shift if left else np.right_shift

    def fn(x, y):
        if not lx.sym(x, y):
            return npfn(np.asarray(x), np.asarray(y))
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
