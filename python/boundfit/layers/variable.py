"""Keras 3's Variable: a weight as an object (name, path, shape, dtype, trainable, numpy(), value, assign, NumPy's
operators on its value). One surface, three homes:
- a custom layer's add_weight, or a standalone keras.Variable (Variable): held by the node its traced call()
  makes (ops.py sets `dense` / `holder`), or before that by itself (its initial or assigned value);
- a built-in layer's weight (EngineVariable): a live view of the engine's copy, read and written through the
  model that holds the layer's newest weights. Its name is the engine's (csrc/core/layers/: bf_add_param, the
  names .keras files and layers_info() carry), renamed where a composed layer's piece is named otherwise
  (`_keras_var_names`), and scoped by `_keras_var_scope` (an RNN's cell, MultiHeadAttention's query, ...).
variables_of(layer) lists a layer's in Keras 3's order: own trainable, own non-trainable, then sublayers'."""

import numpy as np

from .. import initializers
from ..session import LAYER_NAMES as _counters
from .eager import build_alone
from .node import tracing_anchor

# the attribute names Keras gives built-in layers' variables (Dense.kernel, BatchNormalization.moving_mean, ...):
# only these look a variable up (Layer.__getattr__), so that no other missing attribute builds a layer
KERAS_ATTRS = frozenset({"kernel", "bias", "depthwise_kernel", "pointwise_kernel", "gamma", "beta", "moving_mean",
                         "moving_variance", "embeddings", "alpha", "recurrent_kernel"})


def keras_var_shapes(layer):
    """The shapes Keras keeps an engine layer's weights in, where they differ from the engine's (a composed
    layer's scalar as (), an EinsumDense kernel), else None."""
    shapes = getattr(layer, "_keras_var_shapes", None)
    if shapes is None and getattr(layer, "_keras_shape", None) is not None:
        shapes = [layer._keras_shape]
    return shapes


def _join(a, b):
    return f"{a}/{b}" if a else b


class Variable:
    """Keras 3's `keras.Variable(initializer, shape=None, dtype=None, trainable=True, name=None)`, and what a
    layer's add_weight returns. Standalone it holds its value; a custom layer keeping it as an attribute tracks
    it as an add_weight (its call() uses it through keras.ops), and the model built then holds its value."""

    def __init__(self, initializer, shape=None, dtype=None, trainable=True, autocast=True, aggregation="none",
                 synchronization="auto", name=None, **kwargs):
        if kwargs:
            raise TypeError(f"Variable: unknown arguments {sorted(kwargs)}")
        if dtype not in (None, "float32", np.float32):
            raise ValueError(f"Variable: dtype {dtype!r} is not supported: boundfit's variables are float32")
        if name is None:
            n = _counters.get("variable", 0)
            _counters["variable"] = n + 1
            name = "variable" if n == 0 else f"variable_{n}"
        if not isinstance(name, str) or "/" in name:
            raise ValueError(f"Variable: name must be a string without '/', got {name!r}")
        value = None
        if isinstance(initializer, (str, dict, initializers.Initializer)) or callable(initializer):
            if shape is None:
                raise ValueError(f"Variable {name!r}: shape is needed with an initializer ({initializer!r})")
            init = initializers.get(initializer, "initializer")
        else:
            value = np.array(initializer, dtype=np.float32)
            if shape is not None and tuple(shape) != value.shape:
                raise ValueError(f"Variable {name!r}: shape {tuple(shape)} differs from the value's {value.shape}")
            init, shape = None, value.shape
        self._setup(None, tuple(int(d) for d in shape), init, None, None, trainable, name)
        if isinstance(init, (initializers.Zeros, initializers.Ones)):
            value = np.full(self.shape, float(isinstance(init, initializers.Ones)), np.float32)
        elif init is not None and (init._computed or isinstance(init, initializers.Constant)):
            value = np.asarray(init(self.shape), np.float32).reshape(self.shape)
        self._value = value   # the value before a model holds it (None: a random draw the engine makes)
        if tracing_anchor() is None:   # made outside any layer's build / call: Keras's path is its name alone
            self._free_path = name

    @classmethod
    def of_layer(cls, layer, shape, initializer, regularizer, constraint, trainable, name):
        """add_weight's Variable of a layer (or a subclassed model)"""
        v = cls.__new__(cls)
        v._setup(layer, shape, initializer, regularizer, constraint, trainable, name)
        v._value = None
        return v

    def _setup(self, layer, shape, initializer, regularizer, constraint, trainable, name):
        self.layer, self.shape, self.name, self._trainable = layer, shape, name, bool(trainable)
        self._initializer, self.regularizer, self.constraint = initializer, regularizer, constraint
        self.dense = None   # set by ops.matmul
        self.holder = None  # set by an elementwise op (ops.add, ...): a layers.emath.Weight

    @property
    def initializer(self):
        """What the engine starts it from: its value where it holds one (assigned, or a standalone value)"""
        if self._value is not None:
            return initializers.Constant(self._value.reshape(-1) if self._value.ndim else self._value.reshape(1))
        return self._initializer

    @property
    def path(self):
        """Keras's path: "<layer path>/<name>" (the name alone for a standalone Variable)"""
        if self.layer is None or "_free_path" in self.__dict__:
            return self.name
        return _join(_join(self.layer.__dict__.get("_keras_scope", ""), self.layer.name), self.name)

    @property
    def trainable(self):
        return self._trainable and (self.layer is None or bool(self.layer.trainable))

    @trainable.setter
    def trainable(self, value):
        if self._owner() is not None:
            raise ValueError(f"{self._where()}: trainable is fixed once a model holds it; set the layer's "
                             "trainable instead")
        self._trainable = bool(value)

    dtype = "float32"

    @property
    def ndim(self):
        return len(self.shape)

    def _where(self):
        return f"variable {self.path!r}"

    def _owner(self):
        return self.dense if self.dense is not None else self.holder

    def _read(self):
        owner = self._owner()
        if owner is not None and owner._model is not None:
            return np.reshape(owner.get_weights()[0], self.shape)
        if self._value is not None:
            return self._value.copy()
        raise ValueError(f"{self._where()} has no value yet: its initializer is drawn when a model using it is "
                         "built (or give the value: keras.Variable(array), assign)")

    def _write(self, a):
        owner = self._owner()
        if owner is not None and owner._model is not None:
            owner.set_weights([a.reshape(owner.get_weights()[0].shape)])
        elif owner is not None:
            raise ValueError(f"{self._where()} cannot be set between its first use and its model's build")
        else:
            self._value = a.copy()   # a model built later starts from it (initializer)

    # ---- Keras's Variable surface ----
    def numpy(self):
        return self._read()

    @property
    def value(self):
        """The current value, a NumPy array (Keras's JAX backend gives a jax Array)"""
        return self._read()

    def assign(self, value):
        """Write `value` (of the variable's shape) into it; returns the value, as Keras."""
        a = np.asarray(value, dtype=np.float32)
        if a.shape != tuple(self.shape):
            raise ValueError(f"{self._where()}: assign needs a value of shape {tuple(self.shape)}, got {a.shape}")
        self._write(a)
        return a

    def assign_add(self, value):
        return self.assign(self._read() + np.asarray(value, np.float32))

    def assign_sub(self, value):
        return self.assign(self._read() - np.asarray(value, np.float32))

    def set_weights(self, weights):   # as a part of its layer's set_weights
        self.assign(weights[0])

    def __array__(self, dtype=None, copy=None):
        a = self._read()
        return a.astype(dtype) if dtype is not None else a

    def __getitem__(self, idx):
        return self._read()[idx]

    def __int__(self):
        return int(self._scalar())

    def __float__(self):
        return float(self._scalar())

    def _scalar(self):
        if self.ndim > 0:
            raise TypeError(f"Only scalar arrays can be converted to Python scalars. Got: shape={self.shape}")
        return self._read()

    def __bool__(self):
        raise TypeError("A Keras Variable cannot be used as a boolean.")

    def __repr__(self):
        try:
            value = f", value={self._read()}"
        except ValueError:
            value = ""
        return f"<Variable path={self.path}, shape={tuple(self.shape)}, dtype={self.dtype}{value}>"

    __hash__ = object.__hash__


def _numpy_op(name):
    """Keras's operators on a Variable: NumPy's on its value; on a symbolic tensor, that tensor's (ops.py)"""
    def op(self, *args):
        if args and hasattr(args[0], "_ps"):   # a symbolic tensor inside a traced call(): its reflected operator
            return NotImplemented
        return getattr(self._read(), name)(*args)
    op.__name__ = name
    return op


for _name in ("__neg__", "__pos__", "__abs__", "__invert__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
              "__ge__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
              "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__",
              "__matmul__", "__rmatmul__", "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__",
              "__round__"):
    setattr(Variable, _name, _numpy_op(_name))


class EngineVariable(Variable):
    """A built-in layer's weight: the k-th weight of the engine layer `part` (the layer itself, or a piece of a
    composed one), a live view of the engine's copy."""

    def __init__(self, layer, part, k, scope, shape):
        self.layer, self._part, self._k, self._scope, self.shape = layer, part, k, scope, tuple(shape)
        self.name = scope.split("/")[-1]
        self._value, self.regularizer, self.constraint = None, None, None

    @property
    def path(self):
        return _join(_join(self.layer.__dict__.get("_keras_scope", ""), self.layer.name), self._scope)

    # traced calls use a layer's weights through the layer; ops.py asks these of a custom layer's Variable
    dense = holder = property(lambda self: None, lambda self, v: self._traced())
    initializer = property(lambda self: self._traced())

    def _traced(self):
        raise ValueError(f"{self._where()} belongs to the built-in layer {self.layer.name!r}: a traced call() uses "
                         "it by calling that layer (keras.ops on another layer's weight is not traced)")

    def _holder(self):
        m = self._part._model
        got = m._holder(self._part) if m is not None else None
        if got is None:
            raise ValueError(f"{self._where()}: no model holds layer {self.layer.name!r} any more")
        return m, got[0], got[1][self._k]

    def _read(self):
        _, eng, j = self._holder()
        return np.reshape(eng.get_weights_range(j, j + 1)[0], self.shape)

    def _write(self, a):
        m, _, _ = self._holder()
        ws = m._layer_weights(self._part)
        ws[self._k] = a.reshape(ws[self._k].shape)
        m._set_layer_weights(self._part, ws)

    @property
    def trainable(self):
        m, _, _ = self._holder()
        m._refresh_trainable()
        return bool(m._info()[m._layer_node[id(self._part)]][2][self._k][2])

    @trainable.setter
    def trainable(self, value):
        raise ValueError(f"{self._where()}: set the layer's trainable instead (a built-in layer's variables train "
                         "with their layer)")


def engine_parts(layer):
    """The layers whose weights the engine holds for a layer: itself, or a Keras composite's (a layer boundfit
    traces into pieces, one layer in Keras files): its own variables' holders (add_weight), then its
    sublayers' (Keras's weights order)."""
    if layer._keras_composite():
        own = [v._owner() for v in layer.__dict__.get("_own_variables", []) if v._owner() is not None]
        return own + [x for sub in layer._sublayers() for x in engine_parts(sub)]
    return [layer]


def _ensure_built(layer, parts):
    """A built-in layer called on symbolic tensors has its weights before any model, as in Keras: made by the
    one-layer model an eager call would run (layers/eager.py)."""
    if all(p._model is not None for p in parts) or not (layer._inbound or layer.__dict__.get("_traced_calls")):
        return
    shapes = [tuple(t.shape) for t in layer._first_call()[0]]
    try:
        build_alone(layer, shapes if len(shapes) > 1 else shapes[0])
    except (TypeError, ValueError):   # (a call a one-layer model cannot make alone: MultiHeadAttention's two)
        raise ValueError(f"layer {layer.name!r}: its variables exist once a model using it is built "
                         "(keras.Model(inputs, outputs))") from None


def _scoped_parts(layer, scope=""):
    """[(engine layer, Keras scope of its variables within `layer`) or a Variable]: a Keras composite's own
    variables, then its pieces' (flat: SeparableConv's two convolutions are one Keras layer), its Keras
    sublayers' (a composite in a composite, GroupQueryAttention's EinsumDense `<name>_query`: under `query`) and
    a custom sublayer's (an RNN's custom cell) as that layer lists them"""
    if not layer._keras_composite():
        return [(layer, scope)]
    out = list(own_variables(layer))
    for sub in layer._sublayers():
        if sub._custom() and not sub._keras_composite() and "_act_fn" not in sub.__dict__:
            sub.__dict__.setdefault("_keras_scope", _join(layer.__dict__.get("_keras_scope", ""), layer.name))
            out += variables_of(sub)
            continue
        inner = _join(scope, sub.name.removeprefix(layer.name + "_")) if sub._keras_composite() else scope
        out += _scoped_parts(sub, inner)
    return out


def _engine_variables(layer):
    """A built-in (or composed) layer's Variables (EngineVariables of its engine pieces), made once its weights
    exist, then kept"""
    got = layer.__dict__.get("_variables")
    if got is not None:
        return got
    items = [(layer._act_linear(), "")] if "_act_fn" in layer.__dict__ else _scoped_parts(layer)
    parts = [x for x in items if isinstance(x, tuple) and getattr(x[0], "keras_weight", True)]   # (a constant
    if not any(getattr(p, "_has_weights", False) or p._custom() for p, _ in parts) and len(parts) == len(items):
        return []                                                         # no Keras model has as a weight: none)
    _ensure_built(layer, [p for p, _ in parts])
    built = {id(p) for p, _ in parts if p._model is not None and id(p) in getattr(p._model, "_layer_node", {})}
    if not built and len(parts) == len(items):
        return []   # not built yet: none, as an unbuilt Keras layer
    out = []   # (a piece no model runs, SpectralNormalization's wrapped layer itself, holds none)
    for x in items:
        if not isinstance(x, tuple):
            out.append(x)
            continue
        p, scope = x
        if id(p) not in built:
            continue
        m = p._model
        params = m._info()[m._layer_node[id(p)]][2]
        shapes = keras_var_shapes(p) or [s for _, s, _ in params]
        for k, ((pname, _, _), shape) in enumerate(zip(params, shapes)):
            out.append(EngineVariable(layer, p, k, _join(scope, p._keras_var_scope(pname.split("/", 1)[1])), shape))
    if built or not parts:
        layer.__dict__["_variables"] = out
    return out


def own_variables(layer):
    """add_weight's variables and the keras.Variables a custom layer keeps as attributes (tracked then, as
    Keras does), trainable first, in creation order"""
    own = layer.__dict__.setdefault("_own_variables", [])
    for v in list(vars(layer).values()):
        if type(v) is Variable and v.layer is None:
            v.layer = layer
            own.append(v)
    return [v for v in own if v._trainable] + [v for v in own if not v._trainable]


def variables_of(layer):
    """A layer's variables in Keras 3's order (layer.weights)"""
    if layer._custom() and "_act_fn" not in layer.__dict__ and not layer._keras_composite():
        path = _join(layer.__dict__.get("_keras_scope", ""), layer.name)
        out, seen = [], set()
        for l in layer._sublayers():
            l.__dict__.setdefault("_keras_scope", path)   # built inside it: Keras paths it under this layer
        for v in own_variables(layer) + [v for l in layer._sublayers() for v in l.weights]:
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        return out
    return _engine_variables(layer)


class VariableView:
    """A part of a built-in layer Keras keeps as a sublayer of its own (an RNN's cell, MultiHeadAttention's
    query_dense, Bidirectional's forward_layer): its variables (those scoped under `scope`) by Keras's names."""

    def __init__(self, layer, scope, name=None, cell=None):
        self._layer, self._scope, self.name, self._cell = layer, scope, name or scope.split("/")[-1], cell

    @property
    def cell(self):
        if self._cell is None:
            raise AttributeError(f"{self.name!r} of layer {self._layer.name!r} has no cell")
        return VariableView(self._layer, f"{self._scope}/{self._cell}", self._cell)

    @property
    def weights(self):
        pre = self._scope + "/"
        return [v for v in self._layer.weights if v._scope.startswith(pre)]

    variables = weights

    @property
    def trainable_weights(self):
        return [v for v in self.weights if v.trainable]

    @property
    def non_trainable_weights(self):
        return [v for v in self.weights if not v.trainable]

    trainable_variables, non_trainable_variables = trainable_weights, non_trainable_weights

    def get_weights(self):
        return [v.numpy() for v in self.weights]

    def set_weights(self, weights):
        vs = self.weights
        if len(weights) != len(vs):
            raise ValueError(f"{self.name!r} of layer {self._layer.name!r} has {len(vs)} weights, got {len(weights)}")
        for v, w in zip(vs, weights):
            v.assign(w)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        got = [v for v in self.weights if v.name == name]
        if not got:
            raise AttributeError(f"{self.name!r} of layer {self._layer.name!r} has no attribute {name!r}")
        return got[0]

    def __repr__(self):
        return f"<{self.name} of {self._layer.name}>"
