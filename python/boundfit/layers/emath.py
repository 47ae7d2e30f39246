"""The graph pieces keras.ops math becomes on symbolic tensors (ops.py), each
an engine kind of csrc/core/layers/emath.c or bmm.c: Unary (sqrt, log,
max(x, c), x > c, ...), Binary (two tensors of one rank, size-1 axes
broadcast), Weight (a custom layer's add_weight used elementwise) and
MatMul (a matrix product per sample); the reductions are layers/reduce.py.
Not Keras layers: Keras files hold
Unary, Binary and MatMul as Keras's operation nodes (saving/keras_ops.py),
a Weight as Keras's Embedding of constant ids (saving/keras_graph.py)."""

import numpy as np

from .. import constraints, initializers, regularizers
from .args import engine_kinds
from .layer import Layer

UNARY, BINARY, WEIGHT, BMM = engine_kinds("UNARY BINARY WEIGHT BMM")

# op codes, as csrc/core/layers/emath.c
UNARY_OPS = ("sqrt", "square", "abs", "exp", "log", "maximum", "minimum", "greater", "greater_equal", "less",
             "less_equal", "rdivide")
BINARY_OPS = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "greater", "greater_equal", "less",
              "less_equal")


class Unary(Layer):
    _scalar_ok = True
    """op(x) elementwise; `param` the scalar of maximum / minimum / the comparisons / rdivide (param / x)."""
    _base = "unary"

    def __init__(self, op, param=0.0, **kwargs):
        super().__init__(**kwargs)
        if op not in UNARY_OPS:
            raise ValueError(f"Unary: unknown op {op!r}; one of {UNARY_OPS}")
        self.op, self.param = op, float(param)

    def spec(self):
        return dict(kind=UNARY, name=self.name, eop=UNARY_OPS.index(self.op), eparam=self.param)


class Binary(Layer):
    _scalar_ok = True
    """op(a, b) elementwise on two tensors of one rank whose axes agree or are 1 (broadcast)."""
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

    # Keras files hold it as an Embedding's (rows, shape[-1]) table (saving/keras_graph.py)
    @property
    def _keras_var_shape(self):
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
