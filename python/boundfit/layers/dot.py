"""layers.Dot (Keras 3): the dot product of two samples along the given axes,
traced into the engine's per-sample matrix product (MatMul, the BMM kind) with
Reshape views for rank-1 samples; normalize=True L2-normalizes each input
along its axis first as Keras does (x * min(1 / sqrt(sum x^2), 1 / 1e-7))."""

import numpy as np

from .emath import Binary, MatMul, Unary
from .layer import Layer, keras_config
from .reshaping import Const, Reshape

_EPSILON = 1e-7   # keras.backend.epsilon()


class Dot(Layer):
    """Keras 3's `Dot(axes, normalize=False)`: the dot product of two tensors along `axes`, per sample."""
    _base = "dot"

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axes, int):
            ok = axes != 0
        else:
            axes = tuple(axes)
            ok = len(axes) == 2 and all(isinstance(a, int) and a != 0 for a in axes)
        if not ok:
            raise ValueError(f"Dot: axes must be a non-zero int or a pair of them (axis 0 is the batch axis), "
                             f"got {axes!r}")
        self.axes, self.normalize = axes, bool(normalize)

    def _axes(self, shapes):
        pair = (self.axes, self.axes) if isinstance(self.axes, int) else self.axes
        out = []
        for a, ps in zip(pair, shapes):
            r = len(ps) + 1
            if not -r < a < r or a % r == 0 or r > 3:
                raise ValueError(f"{self.name}: axis {a} does not fit an input of shape {(None,) + tuple(ps)} "
                                 "(boundfit: inputs of rank 2 or 3, batch axis included)")
            out.append(a % r - 1)   # the per-sample axis
        return out

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"{self.name}: Dot is called on a list of 2 tensors")
        x1, x2 = inputs
        a1, a2 = self._axes([x1._ps, x2._ps])
        if x1._ps[a1] != x2._ps[a2] or x1._ps[a1] is None:
            raise ValueError(f"{self.name}: axis sizes differ: {x1.shape} on axis {a1 + 1}, {x2.shape} on axis "
                             f"{a2 + 1}")
        if self.normalize:
            x1, x2 = _l2_normalize(x1, a1), _l2_normalize(x2, a2)
        r1, r2 = len(x1._ps), len(x2._ps)
        A = Reshape((1, x1._ps[0]))(x1) if r1 == 1 else x1
        B = Reshape((x2._ps[0], 1))(x2) if r2 == 1 else x2
        y = MatMul(transpose_a=r1 == 2 and a1 == 0, transpose_b=r2 == 2 and a2 == 1)([A, B])
        if r1 == 1 or r2 == 1:
            keep = tuple(d for d, drop in zip(y._ps, (r1 == 1, r2 == 1)) if not drop)
            y = Reshape(keep or (1,))(y)
        return y


def _l2_normalize(x, axis):
    """x * min(1 / sqrt(sum over axis of x^2), 1 / epsilon) (keras.ops.normalize, order 2)"""
    ps = x._ps
    sq = Unary("square")(x)
    if len(ps) == 1:
        ssum = MatMul()([Reshape((1, ps[0]))(sq), Const(np.ones((ps[0], 1), np.float32))(x)])   # (1, 1)
        ssum = Reshape((1,))(ssum)
    elif axis == 1:
        ssum = MatMul()([sq, Const(np.ones((ps[1], 1), np.float32))(x)])                        # (T, 1)
    else:
        ssum = MatMul()([Const(np.ones((1, ps[0]), np.float32))(x), sq])                        # (1, D)
    inv = Unary("minimum", 1.0 / _EPSILON)(Unary("rdivide", 1.0)(Unary("sqrt")(ssum)))
    return Binary("multiply")([x, inv])


@keras_config(Dot)
def _dot_config(l):
    return dict(axes=l.axes if isinstance(l.axes, int) else list(l.axes), normalize=l.normalize)
