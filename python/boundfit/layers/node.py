"""Symbolic tensors (KerasTensor) and the Node recorded by each call of a
layer (or a model) on them: calling a layer on symbolic tensors records a node
of a graph and returns a symbolic tensor, shapes inferred so that a bad graph
fails where it is written, as in Keras; a custom layer's call() traced on
them (trace_layer). MaskTensor stands for a Keras mask op read from a file
(boundfit recomputes masks itself).

`training`, as Keras 3: inside a call() being traced, a call given
training=True / False runs in that mode always (the node's train_mode); at
a functional graph's own level fit / evaluate / predict pass their mode to
every call, overriding a training= given there (Keras's operation_fn), so
it is ignored there. A custom layer's call() that takes
`training` and is called without it is traced twice, with training=False
then True (trace_modes): the nodes both traces make alike are kept once,
and where the outputs differ a Switch node (layers/switch.py) gives the
training trace's output in fit and the inference trace's in evaluate /
predict (graph.py marks which nodes run in which runs). Layers called
inside such a trace inherit its mode, as Keras's call context does."""

import inspect
import itertools

_ids = itertools.count()

_CONTROL_FLOW = (
    "a symbolic tensor has no value: boundfit traces call() on symbolic inputs, without data (once per training "
    "mode), to build a static graph, so Python control flow on a tensor's values ({what}) cannot be decided. "
    "Express it with layers instead (for example layers.Maximum / layers.Minimum or an Activation for a max or a "
    "clip, a Multiply by a mask for a select), and branch only on Python values: arguments of __init__, the shape "
    "(x.shape), or `training`.")


class SymbolicTensorError(TypeError):
    """A Python operation that needs a symbolic tensor's value (if / while / bool / float...)."""


class KerasTensor:
    """A symbolic tensor: the shape (batch axis None) and where it comes from."""

    def __init__(self, shape, dtype="float32", name=None, node=None, input_layer=None, nobatch=False):
        self._ps = tuple(None if d is None else int(d) for d in shape)  # None: a variable length; (): one number
        self.dtype = dtype
        self.name = name
        self._node = node
        self._input_layer = input_layer
        # no batch axis (Keras's result of a sum over the batch, ops.tensordot of two tensors): the engine holds
        # it as a per-sample tensor of shape _ps whose value is the same in every sample
        self._nobatch = bool(nobatch)

    @property
    def shape(self):
        return self._ps if self._nobatch else (None,) + self._ps

    @property
    def ndim(self):
        return len(self._ps) + (0 if self._nobatch else 1)

    def __repr__(self):
        return f"<KerasTensor shape={self.shape}, dtype={self.dtype}, name={self.name}>"

    def _no_value(self, what):
        raise SymbolicTensorError(_CONTROL_FLOW.format(what=what))

    def __bool__(self):
        self._no_value("`if tensor:`, `while tensor:`, `and` / `or` / `not` on a tensor")

    def __len__(self):
        self._no_value("len(tensor); use tensor.shape")

    def __iter__(self):
        self._no_value("iterating over a tensor")

    def __float__(self):
        self._no_value("float(tensor)")

    def __int__(self):
        self._no_value("int(tensor)")

    def __index__(self):
        self._no_value("using a tensor as an index")

    def __array__(self, *args, **kwargs):
        self._no_value("converting a tensor to a NumPy array")

    def numpy(self):
        self._no_value("tensor.numpy()")

    # comparisons are keras.ops calls too (a 0 / 1 tensor; `if x > 0:` then fails in __bool__)
    def __lt__(self, other):
        return self._ops["less"](self, other)

    def __le__(self, other):
        return self._ops["less_equal"](self, other)

    def __gt__(self, other):
        return self._ops["greater"](self, other)

    def __ge__(self, other):
        return self._ops["greater_equal"](self, other)

    __hash__ = object.__hash__
    __array_ufunc__ = None   # array (op) tensor: NumPy defers to the tensor's reflected operator (ops.py)

    # Python operators are keras.ops calls: the functions, filled in by ops.py
    # (which imports this module): add, subtract, multiply, divide, negative,
    # matmul, power, getitem, greater, greater_equal, less, less_equal
    _ops = {}

    def __add__(self, other):
        return self._ops["add"](self, other)

    def __radd__(self, other):
        return self._ops["add"](other, self)

    def __sub__(self, other):
        return self._ops["subtract"](self, other)

    def __rsub__(self, other):
        return self._ops["subtract"](other, self)

    def __mul__(self, other):
        return self._ops["multiply"](self, other)

    def __rmul__(self, other):
        return self._ops["multiply"](other, self)

    def __truediv__(self, other):
        return self._ops["divide"](self, other)

    def __rtruediv__(self, other):
        return self._ops["divide"](other, self)

    def __neg__(self):
        return self._ops["negative"](self)

    def __matmul__(self, other):
        return self._ops["matmul"](self, other)

    def __rmatmul__(self, other):
        return self._ops["matmul"](other, self)

    def __pow__(self, other):
        return self._ops["power"](self, other)

    def __rpow__(self, other):
        return self._ops["power"](other, self)

    def __mod__(self, other):
        return self._ops["mod"](self, other)

    def __rmod__(self, other):
        return self._ops["mod"](other, self)

    def __floordiv__(self, other):
        return self._ops["floor_divide"](self, other)

    def __rfloordiv__(self, other):
        return self._ops["floor_divide"](other, self)

    def __abs__(self):
        return self._ops["absolute"](self)

    def __and__(self, other):
        return self._ops["logical_and"](self, other)

    def __or__(self, other):
        return self._ops["logical_or"](self, other)

    def __xor__(self, other):
        return self._ops["logical_xor"](self, other)

    def __invert__(self):
        return self._ops["logical_not"](self)

    def __getitem__(self, key):
        return self._ops["getitem"](self, key)


# the custom layers whose call() is being traced, innermost last: (a label for
# error messages, a tensor of the call's inputs that constants hang on, the layer)
TRACING = []


def outer_layer(node):
    """The layer a node stands for in Keras's view: the outermost custom layer
    whose traced call() made it, else its own layer."""
    return node.traced_in if node.traced_in is not None else node.layer


def tracing_where():
    """' (in layer 'x' call())' while a custom layer's call() is traced, else ''."""
    return f" (in {TRACING[-1][0]}'s call())" if TRACING else ""


def tracing_anchor():
    """A symbolic input of the call() being traced (None outside a trace): an
    array a layer is called on there becomes a constant node hung on it."""
    return TRACING[-1][1] if TRACING else None


# the training mode of the call() being traced: (True / False, fixed), fixed when a call was given training=
# (every node then runs in that mode), else one of trace_modes' two passes (its nodes run only in its runs,
# unless the other pass made them alike); (None, False): a call() without `training` (the run's mode);
# none: a functional graph's own level
CONTEXT = []
# the nodes each pass of trace_modes makes, and the keras.random draws per SeedGenerator so far (random.py):
# both passes start from the same counts, so a draw made alike in both is one node
_RECORD = []
DRAWS = {}


def inference_pass():
    """Whether the call() being traced is in trace_modes' inference pass (its training pass traces it again)."""
    return bool(CONTEXT) and CONTEXT[-1] == (False, False)


def train_mode(training, mode_dependent=True):
    """The engine's train_mode of a layer call given `training` (None: not given): 0 the run's mode, 1 always
    training, 2 always inference. Within a pass of trace_modes, its own mode is the run's."""
    if not mode_dependent or not CONTEXT:   # a functional graph's own calls: the run's mode (Keras 3)
        return 0
    value, fixed = CONTEXT[-1] if CONTEXT else (None, False)
    t = value if training is None else bool(training)
    if t is None or (t == value and not fixed):
        return 0
    return 1 if t else 2


class Node:
    """One call of a layer (or a model) on symbolic tensors; train_mode: train_mode() of its call."""

    def __init__(self, layer, inputs, outputs, train_mode=0):
        self.id = next(_ids)
        self.layer, self.inputs, self.outputs = layer, list(inputs), list(outputs)
        self.train_mode = train_mode
        self.traced_in = TRACING[0][2] if TRACING else None   # the outermost custom layer tracing this call
        self.index = len(layer._inbound)
        layer._inbound.append(self)
        for t in self.outputs:
            t._node = self
        if _RECORD:
            _RECORD[-1].append(self)


def get_source_inputs(tensor):
    """Keras's get_source_inputs: the Input tensors `tensor` is computed from, in the order a depth-first walk
    of its graph meets them (a tensor not from a layer call is its own source)."""
    if not isinstance(tensor, KerasTensor):
        return tensor
    node = tensor._node
    if node is None or tensor._input_layer is not None:
        return [tensor]
    sources = []
    for t in node.inputs:
        for s in get_source_inputs(t):
            if all(s is not u for u in sources):
                sources.append(s)
    return sources


def _as_tensors(layer_name, inputs):
    if isinstance(inputs, KerasTensor):
        return [inputs], False
    if isinstance(inputs, (list, tuple)) and inputs and all(isinstance(t, KerasTensor) for t in inputs):
        return list(inputs), True
    raise TypeError(f"{layer_name}: layers are called on symbolic tensors (from boundfit.Input, or other layers' "
                    f"outputs) to build a model, got {type(inputs).__name__}; to compute on arrays, build a Model "
                    "and call predict()")


# Stand-ins for a variable (None) dimension while inferring a layer's output
# shape: a dimension that comes out the same for both does not depend on it.
_FREE = (1031, 1063)


def infer_shape(fn, shapes):
    """fn(shapes) -> the output shape, where `shapes` (one shape, or a list of
    shapes for a merge layer) may hold None for a variable length: fn runs
    with each stand-in length and the dimensions that differ become None."""
    def put(v, s):
        return [put(v, x) for x in s] if isinstance(s, list) else tuple(v if d is None else d for d in s)

    def has_free(s):
        return any(has_free(x) for x in s) if isinstance(s, list) else None in s

    if not has_free(shapes):
        return fn(shapes)
    a, b = (fn(put(v, shapes)) for v in _FREE)

    def merge(x, y):
        if isinstance(x, list):
            return [merge(u, v) for u, v in zip(x, y)]
        return tuple(u if u == v else None for u, v in zip(x, y))
    return merge(a, b)


def output_shape(layer, shapes):
    """The per-sample output shape of `layer` for per-sample input `shapes` (one, or a list for several
    inputs): its Keras compute_output_shape, a batch axis put in and taken off."""
    batched = [(None,) + tuple(s) for s in shapes] if isinstance(shapes, list) else (None,) + tuple(shapes)
    return tuple(layer.compute_output_shape(batched))[1:]


# "inputs": fn(layer, tensors) -> the tensors carrying in the engine the masks Keras gives them inside a custom
# layer's call() (layers/custom_masks.py registers it: keras.ops results there carry none)
MASK_HOOKS = {}


def keras_masks(layer, tensors):
    """`tensors` (a list) as a built-in layer called on them sees their masks in Keras."""
    fn = MASK_HOOKS.get("inputs")
    return fn(layer, tensors) if fn is not None else tensors


def call_layer(layer, inputs, training=None, **kwargs):
    tm = train_mode(training, layer._mode_dependent)
    if tm:
        layer._check_train_mode(tm)
    if kwargs:
        raise TypeError(f"{layer.name}: unknown call arguments {sorted(kwargs)}")
    ins, many = _as_tensors(layer.name, inputs)
    ins = keras_masks(layer, ins)
    if any(t.dtype == "string" for t in ins):
        raise ValueError(f"{layer.name} ({type(layer).__name__}) takes numbers, got the string tensor "
                         f"{ins[0].name!r}; strings go through a TextVectorization first")
    if layer._n_inputs == "many":
        if not many:
            raise ValueError(f"{layer.name}: a merge layer is called on a list of tensors, got one tensor")
        shape = output_shape(layer, [t._ps for t in ins])
    else:
        if len(ins) != 1:
            raise ValueError(f"{layer.name} ({type(layer).__name__}) takes one input tensor, got a list of {len(ins)}")
        if ins[0]._ps == () and not layer._scalar_ok:
            raise ValueError(f"layer {layer.name!r} ({type(layer).__name__}) does not take one number per sample: "
                             f"its input has shape {ins[0].shape}; give it shape (None, 1) "
                             "(keras.ops.expand_dims(x, -1)), as Keras asks for at least 2 dimensions")
        layer._check_call_shape(ins[0]._ps)
        shape = output_shape(layer, ins[0]._ps)
    nobatch = layer._nobatch_out or all(t._nobatch for t in ins)
    if any(t._nobatch for t in ins) and layer._random:
        raise ValueError(f"layer {layer.name!r} ({type(layer).__name__}) is called on a tensor without a batch axis "
                         "(a sum over the batch, e.g. keras.ops.tensordot of two tensors): Keras draws one random "
                         "value for it, boundfit one per sample; apply it to a tensor with a batch axis")
    out = KerasTensor(shape, name=f"{layer.name}_output", nobatch=nobatch)
    Node(layer, ins, [out], tm)
    return out


class MaskTensor:
    """The output of a Keras mask op in a file: boundfit recomputes the mask itself."""

    def __init__(self, name):
        self.name = name


def _flat_tensors(v):
    if isinstance(v, KerasTensor):
        return [v]
    if isinstance(v, dict):
        v = list(v.values())
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _flat_tensors(x)]
    return [None]


def _keras_shapes(v):
    """Keras's input_shape argument of build(): (None, ...) per tensor, in the inputs' structure."""
    if isinstance(v, KerasTensor):
        return v.shape
    if isinstance(v, dict):
        return {k: _keras_shapes(x) for k, x in v.items()}
    return [_keras_shapes(x) for x in v]


SWITCH = {}   # "cls": the Switch layer (switch.py), for the outputs the two passes of trace_modes give apart


def _same_op(a, b):
    """Layers of two passes' nodes that compute alike: one layer, or two made afresh by the passes (called
    once each: keras.ops pieces) of one class and spec, without trainable weights, equal constants."""
    if a is b:
        return True
    if type(a) is not type(b) or len(a._inbound) != 1 or len(b._inbound) != 1 or a.trainable and a._has_weights:
        return False
    sa, sb = dict(a.spec()), dict(b.spec())
    sa.pop("name", None)
    sb.pop("name", None)
    try:
        if sa != sb:
            return False
    except ValueError:   # arrays in a spec
        return False
    va, vb = getattr(a, "_values", None), getattr(b, "_values", None)
    return (va is None) == (vb is None) and (va is None or va.shape == vb.shape and bool((va == vb).all()))


def _replace(v, new):
    if isinstance(v, KerasTensor):
        return new.get(id(v), v)
    if isinstance(v, dict):
        return {k: _replace(x, new) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_replace(x, new) for x in v)
    return v


def trace_modes(run, who):
    """run(training) -> call()'s outputs, traced with training=False then True (who: the layer or model, for
    messages). The training pass's nodes that compute what an inference pass's node does (same layer, same
    inputs) are dropped for it; where the outputs still differ, a Switch node picks the training pass's in
    fit and the inference pass's in evaluate / predict. Returns the inference pass's outputs with those
    replaced by the Switches' (the same structure)."""
    snapshot = dict(DRAWS)
    passes = []
    for training in (False, True):
        DRAWS.clear()
        DRAWS.update(snapshot)
        _RECORD.append([])
        CONTEXT.append((training, False))
        try:
            out = run(training)
        finally:
            CONTEXT.pop()
            nodes = _RECORD.pop()
        passes.append((out, nodes))
    (out_i, nodes_i), (out_t, nodes_t) = passes
    alias, free = {}, {}
    for n in nodes_i:
        free.setdefault(tuple(id(t) for t in n.inputs), []).append(n)
    for n in nodes_t:
        n.inputs = [alias.get(id(t), t) for t in n.inputs]
        cands = free.get(tuple(id(t) for t in n.inputs), [])
        twin = next((m for m in cands if m.train_mode == n.train_mode and len(m.outputs) == len(n.outputs)
                     and _same_op(m.layer, n.layer)), None)
        if twin is None:
            continue
        cands.remove(twin)
        alias.update({id(a): b for a, b in zip(n.outputs, twin.outputs)})
        n.layer._inbound.remove(n)
        for k, m in enumerate(n.layer._inbound):
            m.index = k
    flat_i, flat_t = _flat_tensors(out_i), [alias.get(id(t), t) for t in _flat_tensors(out_t)]
    if len(flat_i) != len(flat_t) or any(t is None for t in flat_i + flat_t):
        raise TypeError(f"{_who(who)}: call() returns {len(flat_t)} tensors with training=True and {len(flat_i)} "
                        "with training=False; both must return the same structure of symbolic tensors")
    new = {}
    for a, b in zip(flat_t, flat_i):
        if a is not b:
            if a._ps != b._ps:
                raise ValueError(f"{_who(who)}: call() returns shape {a.shape} with training=True and {b.shape} "
                                 "with training=False; both must agree")
            new[id(b)] = SWITCH["cls"]()([a, b])
    return _replace(out_i, new)


def _who(x):
    return f"layer {x.name!r} ({type(x).__name__})"


def trace_call(call, takes_training, training, who):
    """call(training or None) traced in Keras's mode: `training` given (not None) inside a call() being traced
    fixes the mode of every layer under it; else the mode of the call() being traced around it (CONTEXT);
    else, when call() takes `training`, both modes (trace_modes)."""
    value, fixed = CONTEXT[-1] if CONTEXT else (None, False)
    if training is not None and CONTEXT:   # (at a functional graph's own level the run's mode overrides it)
        training = bool(training)
        fixed = fixed or value is None or training != value
        value = training
    if value is None and takes_training:
        return trace_modes(call, who)
    CONTEXT.append((value, fixed))   # (None: inside a call(), each layer in the run's mode)
    try:
        return call(value)
    finally:
        CONTEXT.pop()


def takes_training(fn):
    try:
        return "training" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def trace_layer(layer, inputs, args, kwargs, build):
    """A custom layer (a Layer subclass with its own call()) called on
    symbolic tensors: build() once with the inputs' shapes, then call() runs
    on the tensors themselves, so the layers and keras.ops it uses become
    nodes of the graph being built (as a subclassed model's call() does), in
    Keras's training mode (trace_call)."""
    flat = _flat_tensors(inputs)
    if not flat or any(t is None for t in flat):
        raise TypeError(f"{layer.name} ({type(layer).__name__}): a layer is called on symbolic tensors (from "
                        f"boundfit.Input, or other layers' outputs) to build a model, got {type(inputs).__name__}; "
                        "to compute on arrays, build a Model and call predict()")
    if not layer.built:   # build(self) without a shape (Keras allows it) or build(self, input_shape)
        build() if not inspect.signature(build).parameters else build(_keras_shapes(inputs))
        layer.built = True
    kwargs = dict(kwargs)
    training = kwargs.pop("training", None)
    has = takes_training(layer.call)

    def call(mode):
        return layer.call(inputs, *args, **(dict(kwargs, training=mode) if has else kwargs))

    TRACING.append((f"layer {layer.name!r} ({type(layer).__name__})", flat[0], layer))
    try:
        out = trace_call(call, has, training, layer)
    except SymbolicTensorError as e:
        raise SymbolicTensorError(f"while tracing {type(layer).__name__}.call() of layer {layer.name!r}: {e}") \
            from None
    finally:
        TRACING.pop()
    outs = _flat_tensors(out)
    if not outs or any(t is None for t in outs):
        raise TypeError(f"{type(layer).__name__}.call() of layer {layer.name!r} must return symbolic tensors (the "
                        f"outputs of layers or keras.ops on its inputs), got {type(out).__name__}")
    layer._traced_outputs = outs   # for summary(): the layer itself is no node of the graph
    layer.__dict__.setdefault("_traced_calls", []).append((flat, outs))   # (inputs, outputs) of each call
    return out
