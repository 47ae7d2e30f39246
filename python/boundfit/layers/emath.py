"""The graph pieces keras.ops math becomes on symbolic tensors (ops.py), each
an engine kind of csrc/core/layers/emath.c or bmm.c: Unary (an elementwise
op: sqrt, sin, erf, round ..., or a binary op with a number: x > c, 2 ** x),
Binary (a binary op of two tensors, NumPy's broadcasting), Weight (a custom layer's add_weight used elementwise) and
MatMul (a matrix product per sample); the reductions are layers/reduce.py.
Not Keras layers: Keras files hold
Unary, Binary and MatMul as Keras's operation nodes (saving/keras_ops.py),
a Weight as Keras's Embedding of constant ids (saving/keras_graph.py)."""

import numpy as np

from .. import _core, constraints, initializers, regularizers
from .args import engine_kinds
from .layer import Layer

UNARY, BINARY, WEIGHT, BMM = engine_kinds("UNARY BINARY WEIGHT BMM")

# the elementwise primitives' ops by their keras.ops names; a name's index is its code
# (csrc/core/emap_ops.h, the one list, with their formulas and derivatives in emap_math.h)
UNARY_OPS, BINARY_OPS = _core.UNARY_OPS, _core.BINARY_OPS


class Unary(Layer):
    """op(x) elementwise: a unary op of UNARY_OPS with its parameters (`param`, `param2`, `param3`: round's
    decimals, nan_to_num's nan / posinf / neginf, threshold's threshold / default_value ...), or a binary op of
    BINARY_OPS with the number `param` as its right operand (x - 2), or its left one with left=True (2 - x)."""
    _scalar_ok = True
    _base = "unary"

    def __init__(self, op, param=0.0, left=False, param2=0.0, param3=0.0, **kwargs):
        super().__init__(**kwargs)
        if op == "rdivide":          # c / x, as files before the binary ops wrote it
            op, left = "divide", True
        if op not in UNARY_OPS and op not in BINARY_OPS:
            raise ValueError(f"Unary: unknown op {op!r}; one of {UNARY_OPS + BINARY_OPS}")
        self.op, self.param, self.left = op, float(param), bool(left)
        self.param2, self.param3 = float(param2), float(param3)

    def spec(self):
        code = UNARY_OPS.index(self.op) if self.op in UNARY_OPS else len(UNARY_OPS) + BINARY_OPS.index(self.op)
        return dict(kind=UNARY, name=self.name, eop=code, eleft=int(self.left), eparam=self.param,
                    eparam2=self.param2, eparam3=self.param3)


class Binary(Layer):
    """op(a, b) elementwise on two tensors with NumPy's broadcasting of their per-sample shapes (right-aligned:
    each axis equal, 1 or missing from the shorter)."""
    _scalar_ok = True
    _base = "binary"
    _n_inputs = "many"

    def __init__(self, op, **kwargs):
        super().__init__(**kwargs)
        if op not in BINARY_OPS:
            raise ValueError(f"Binary: unknown op {op!r}; one of {BINARY_OPS}")
        self.op = op

    def spec(self):
        return dict(kind=BINARY, name=self.name, eop=BINARY_OPS.index(self.op))


class Weight(Layer):
    """A custom layer's weight (add_weight) as a tensor of the graph, the same
    for every sample (its input gives only the batch size); trainable unless
    the Variable is not."""
    _base = "weight"
    _has_weights = True
    _scalar_ok = True   # its input gives only the batch size

    def __init__(self, shape, initializer="glorot_uniform", regularizer=None, constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.shape = tuple(int(d) for d in shape)
        if not 1 <= len(self.shape) <= 3:
            raise ValueError(f"{self.name}: a weight used elementwise needs 1 to 3 axes, got shape {self.shape}")
        self._init = initializers.get(initializer, "initializer")
        self._reg = regularizers.get(regularizer, "regularizer")
        self._con = constraints.get(constraint, "constraint")
        # the attributes a graph file stores (JSON): the serialized forms
        self.initializer = initializers.serialize(self._init)
        self.regularizer = regularizers.serialize(self._reg)
        self.constraint = constraints.serialize(self._con)

    def _check_call_shape(self, shape):
        pass   # any tensor of the call will do

    # Keras files hold it as an Embedding's (rows, shape[-1]) table (saving/keras_graph.py); a weight of a Keras
    # layer boundfit composes (layers/compose.py, _of_layer) as that layer's variable, in its own shape
    _of_layer = False

    @property
    def _keras_var_shape(self):
        if self._of_layer:
            return getattr(self, "_keras_shape", self.shape)
        return (max(1, int(np.prod(self.shape[:-1]))), self.shape[-1])

    def _to_keras_vars(self, ws):
        return [np.asarray(w).reshape(self._keras_var_shape) for w in ws]

    def _from_keras_vars(self, got, want):
        return [g.reshape(s) if g.size == int(np.prod(s)) else g for g, s in zip(got, want)]

    def spec(self):
        return dict(kind=WEIGHT, name=self.name, target_shape=self.shape,
                    inits=initializers._engine_specs(self._init), regs=regularizers._engine_specs(self._reg),
                    cons=constraints._engine_specs([(self._con, len(self.shape), "constraint")]))


class MatMul(Layer):
    """op(a) @ op(b) per sample of two (rows, cols) tensors, op the transpose where transpose_a / transpose_b."""
    _base = "matmul"
    _n_inputs = "many"

    def __init__(self, transpose_a=False, transpose_b=False, **kwargs):
        super().__init__(**kwargs)
        self.transpose_a, self.transpose_b = bool(transpose_a), bool(transpose_b)

    def spec(self):
        return dict(kind=BMM, name=self.name, mm_ta=int(self.transpose_a), mm_tb=int(self.transpose_b))
