"""Keras 3's view of a boundfit graph, for its files.

- The order of a functional model's layers as Keras lists them
  (keras/src/ops/function.py map_graph: by depth from the outputs, ties by
  first visit of a depth-first walk from the outputs, a dict's entries by
  sorted key), which fixes the config's layer list and the weights paths.
- The Functional config both ways: `layers` (each with `inbound_nodes` of
  `__keras_tensor__` / `keras_history` references, node indices counted over
  this model's nodes only), `input_layers`, `output_layers` (where a nested
  Functional's nodes count from 1: its own graph is node 0); nested
  Sequential and Functional models inside.
- Where each layer's variables live in a weights file (saving_lib's walk):
  `layers/<snake_case class name>` (numbered per class) for the layers of a
  Sequential or Functional model, nested models under their own path, a
  layer used twice stored once; a subclassed model's attributes by name
  (sorted, private ones last), with `layers` among them.

- A keras.ops call boundfit built from layers of other kinds (an OpNode,
  layers/opnode.py: Mean, Clip, Softmax, Reshape, Where, x + 1.0, x[:, 1]
  ...) as the one operation node Keras writes for it, one node deep in
  Keras's depth, its arguments met in order by the walk.
- Operations (not layers) of a graph: the Slice kind as Keras's GetItem,
  the Const kind as zeros_like(x[:, 0, None]) + values, the keras.ops math
  kinds (Unary, Binary, MatMul) as Keras's Sqrt / Maximum / Divide / Greater
  + Cast / Matmul ... (keras_ops.py); read back from Keras's files with the
  same operations (and Where, Transpose, Cast, OneHot, Take, the index ops: ops_index.py).
- Keras composite layers (SeparableConv2D), which boundfit traces into
  sublayers, as one layer of Keras's graph with its own weights path.

A traced subclassed model is written to `.keras` as the Functional graph it
was traced into: Keras needs the user's class to rebuild a subclassed model,
and the graph is what boundfit runs. Its `.weights.h5` keeps Keras's
subclassed layout, so Keras's instance of the same class reads it."""

import re
from types import SimpleNamespace

import numpy as np

from .. import layers as L, mixed_precision, ops as bf_ops
from ..layers.layer import keras_object as _obj, layer_config, layer_object
from ..layers.merge import _Merge
from ..layers.node import KerasTensor, MaskTensor
from ..layers.variable import engine_parts
from ..layers import opnode
from .. import object_registration
from . import config as keras_config, keras_ops
from .registry import model_classes

FUNCTIONAL, SEQUENTIAL, SUBCLASSED = "Functional", "Sequential", "Subclassed"

# build_config is written for layers whose Keras class has a build() of its own
_BUILT = (L.Dense, L.Conv2D, L.BatchNormalization, L.Flatten, _Merge)


def snake(name):
    """keras.src.utils.naming.to_snake_case."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def _models():
    return model_classes()


def is_model(x):
    return isinstance(x, _models()[0])


def kind(model, as_functional=True):
    """How Keras sees a boundfit model: a Sequential, a Functional, or (its
    weights layout when not written as a graph) a subclassed model."""
    Model, Sequential = _models()
    if isinstance(model, Sequential):   # one with custom layers is written as the graph their calls traced
        return FUNCTIONAL if model._has_custom_layers() else SEQUENTIAL
    if type(model) is Model or as_functional:
        return FUNCTIONAL
    return SUBCLASSED


def _flat(names, tensors, is_dict):
    """tree.flatten: a dict's values by sorted key."""
    if is_dict:
        return [t for _, t in sorted(zip(names, tensors), key=lambda p: p[0])]
    return list(tensors)


class _CallNode:
    """Call k of a Keras composite layer (SeparableConv2D), which boundfit
    traced into sublayer nodes: one node of Keras's graph."""

    def __init__(self, layer, k, inputs, outputs):
        self.layer, self.index, self.inputs, self.outputs = layer, k, list(inputs), list(outputs)


def _composite_calls(layer):
    calls = layer.__dict__.get("_keras_call_nodes")
    if calls is None or len(calls) != len(layer.__dict__["_traced_calls"]):
        calls = [_CallNode(layer, k, ins, outs) for k, (ins, outs) in enumerate(layer.__dict__["_traced_calls"])]
        layer.__dict__["_keras_call_nodes"] = calls
    return calls


def _src(t):
    """(operation, node key) producing tensor t: an Input's key is its InputLayer;
    a Keras composite layer's output, that layer's call."""
    if t._node is None:
        return t._input_layer, t._input_layer
    outer = t._node.traced_in
    if outer is not None and outer._keras_composite():
        for c in _composite_calls(outer):
            if any(o is t for o in c.outputs):
                return outer, c
    if getattr(t._node, "keras_mask_of", None) is not None:   # x given a mask (mask=): x, the mask a keyword
        return _src(t._node.keras_mask_of)
    return t._node.layer, t._node


def _keras_inputs(node):
    """A node's input tensors as Keras's call has them: those given a mask (layers/masking.py with_mask) as the
    sequence, their masks after the others (the mask= keyword)."""
    ins = list(node.inputs)
    masks = [u._node.inputs[0] for u in ins if u._node is not None and
             getattr(u._node, "keras_mask_of", None) is not None]
    return ins + masks


def graph_order(model, keys=False):
    """(Keras's `model.layers` of a graph: InputLayers, layers and nested
    models; the set of node keys that belong to this model); keys: and
    {id(op): (its depth, its first visit)}, the order's sort keys."""
    finished, order, first = set(), [], {}

    def visit(t):   # depth first, on a stack of its own (a chain of thousands of layers is no Python recursion)
        stack = [(t, False)]
        while stack:
            t, inputs_done = stack.pop()
            op, key = _src(t)
            if key in finished:
                continue
            if not inputs_done:
                first.setdefault(id(op), (len(first), op))
                ins = []
                if key is not op:
                    g = opnode.of(op)
                    if g is not None and g.head is op:   # a keras.ops call: Keras's walk meets its arguments in order
                        ins += list(g.inputs)
                    ins += _keras_inputs(key)
                stack.append((t, True))
                stack += [(u, False) for u in reversed(ins)]
                continue
            finished.add(key)
            order.append((key, op))
            g = opnode.of(op) if key is not op else None
            if g is not None and g.head is not op and g.outputs:   # another output of a keras.ops node: its head
                stack.append((g.outputs[0], False))                 # writes it

    for t in _flat(model._output_names, model._outputs, model._outputs_dict):
        visit(t)
    node_depth, op_depth = {}, {}
    for key, op in reversed(order):
        d = max(node_depth.setdefault(key, 0), op_depth.get(id(op), 0))
        op_depth[id(op)] = node_depth[key] = d
        if key is not op:  # a layer call: its parents are one deeper
            for i, u in enumerate(_keras_inputs(key)):
                pop, pk = _src(u)
                if pk in finished:   # the layers of one keras.ops call are one node of Keras's graph
                    inner = opnode.of(key.layer) is not None and opnode.of(key.layer) is opnode.of(pop)
                    node_depth[pk] = max(d + (0 if inner else 1 + _chain(key.layer, i)), node_depth.get(pk, 0))
    ops = sorted(first.values(), key=lambda p: (-op_depth[id(p[1])], p[0]))
    if keys:
        return [op for _, op in ops], finished, {i: (op_depth[i], r) for i, (r, _) in first.items()}
    return [op for _, op in ops], finished


def _chain(op, i):
    """The operations Keras's graph has between input i of op's node and its
    output beyond the one node of boundfit's (a Const's zeros_like(x[:, 0, None])
    + values: 2), which deepen the layers before it as Keras counts depth."""
    if opnode.of(op) is not None:
        return 0
    if isinstance(op, L.Const):
        return 2
    if isinstance(op, L.Weight):
        return 3 if len(op.shape) > 1 else 2
    return keras_ops.chain(op, i) if isinstance(op, keras_ops.WRITTEN) else 0


def _chain_depths(chain):
    """How far each entry of an op's chain (upstream first, the op's own entry
    last) is above the last: Keras's depth of each is the op's plus that, and
    a depth-first walk from the outputs meets them right after the op."""
    names = {e["name"]: i for i, e in enumerate(chain)}
    up = [0] * len(chain)

    def refs(v):
        if isinstance(v, dict) and v.get("class_name") == "__keras_tensor__":
            yield v["config"]["keras_history"][0]
        elif isinstance(v, (list, tuple)):
            for x in v:
                yield from refs(x)
        elif isinstance(v, dict):
            for x in v.values():
                yield from refs(x)
    for i in reversed(range(len(chain))):
        for name in refs(chain[i].get("inbound_nodes")):
            if name in names and names[name] < i:
                up[names[name]] = max(up[names[name]], up[i] + 1)
    return up


def _op_nodes(op):
    if isinstance(op, L.InputLayer):
        return [op]
    if isinstance(op, L.Layer) and op._keras_composite():
        return _composite_calls(op)
    return list(op._inbound)


def _out_index(node, t):
    """Keras's tensor index of t among node's outputs (a nested model's dict outputs by sorted name)."""
    i = node.outputs.index(t)
    m = node.layer
    if getattr(m, "_outputs_dict", False):
        names = m._output_names
        return sorted(names).index(names[i])
    return i


# ---- Functional config: boundfit -> Keras ----

def _entry(module, class_name, config, registered=None):
    return {"module": module, "class_name": class_name, "config": config, "registered_name": registered}


def model_entry(model, nested=False):
    """serialize_keras_object(model): a Sequential's or a Functional's entry
    (a nested model's compile_config is {} unless it was compiled itself)."""
    if kind(model) == SEQUENTIAL:
        e = model_config(model)
    else:
        e = _entry("keras.src.models.functional", "Functional", functional_config(model), "Functional")
        e["build_config"] = {"input_shape": None}
        if model.optimizer is not None:
            e["compile_config"] = keras_config.compile_config(model)
    e.setdefault("compile_config", {})
    return e


# ---- traced keras.ops nodes as Keras's operations (keras/src/ops/numpy.py) ----

_OPS_MODULE = "keras.src.ops.numpy"


def is_keras_op(op):
    """A node Keras writes as operations, not a layer (not in `model.layers`, no weights path)."""
    return isinstance(op, (L.Slice, L.Const) + keras_ops.WRITTEN) or opnode.of(op) is not None


def _history(name, k, shape):
    return {"class_name": "__keras_tensor__",
            "config": {"shape": [None, *shape], "dtype": "float32", "keras_history": [name, k, 0]}}


def _const_entries(op, calls):
    """A Const (values V, the same for every sample, hung on a tensor x of the
    call) as Keras operations: z = zeros_like(x[:, 0, ..., 0, None, ...]) of
    shape (batch, 1, ..., 1), then z + V. calls: [(node index, x as a
    __keras_tensor__)]. The last entry carries the Const's name, so its
    consumers' references stay."""
    r = len(op.shape)
    ones = [1] * r
    values = {"class_name": "__numpy__", "config": {"value": op._values.tolist(), "dtype": "float32"}}
    anchor, zeros = f"{op.name}_anchor", f"{op.name}_zeros"
    out = []
    for name, cls, extra, node in (
            (anchor, "GetItem", {}, lambda k, x: {"args": [x, [_slice_entry(None, None, None)] +
                                                          [0] * (len(x["config"]["shape"]) - 1) + [None] * r],
                                                 "kwargs": {}}),
            (zeros, "ZerosLike", {"dtype": None}, lambda k, x: {"args": [_history(anchor, k, ones)], "kwargs": {}}),
            (op.name, "Add", {}, lambda k, x: {"args": [_history(zeros, k, ones), values], "kwargs": {}})):
        e = _entry(_OPS_MODULE, cls, dict(name=name, **extra), cls)
        e["name"] = name
        e["inbound_nodes"] = [node(k, x) for k, x in calls]
        out.append(e)
    return out


def _weight_entries(op, calls):
    """A custom layer's weight used elementwise (Weight, shape S) as Keras's
    Embedding(R, S[-1]) of constant ids: arange(R).reshape(S[:-1]) (R their
    count; the Const's operations, named <weight>_ids), or for S of one axis
    zeros_like(x[:, 0, ..., 0]); its table, the weight as (R, S[-1]), trains
    in Keras as here, and Keras opens the file without the layer's class.
    calls: [(node index, the call's tensor as a __keras_tensor__)]."""
    lead, ids = op.shape[:-1], f"{op.name}_ids"
    if lead:
        out = _const_entries(SimpleNamespace(name=ids, shape=lead, _values=np.arange(
            int(np.prod(lead)), dtype=np.float32).reshape(lead)), calls)
    else:
        anchor = f"{op.name}_anchor"
        out = []
        for name, cls, extra, node in (
                (anchor, "GetItem", {}, lambda k, x: {"args": [x, [_slice_entry(None, None, None)] +
                                                              [0] * (len(x["config"]["shape"]) - 1)], "kwargs": {}}),
                (ids, "ZerosLike", {"dtype": None}, lambda k, x: {"args": [_history(anchor, k, [])], "kwargs": {}})):
            e = _entry(_OPS_MODULE, cls, dict(name=name, **extra), cls)
            e["name"] = name
            e["inbound_nodes"] = [node(k, x) for k, x in calls]
            out.append(e)
    emb = L.Embedding(op._keras_var_shape[0], op.shape[-1], embeddings_initializer=op._init,
                      embeddings_regularizer=op._reg, embeddings_constraint=op._con, name=op.name)
    emb.trainable = op.trainable
    e = _entry("keras.layers", "Embedding", keras_config.layer_config(emb))
    e["name"] = op.name
    e["inbound_nodes"] = [{"args": [_history(ids, k, list(lead))], "kwargs": {}} for k, _ in calls]
    return out + [e]


def _weight_from_embedding(emb, x):
    """An Embedding of the constant ids _weight_entries writes (named
    <embedding>_ids) read back as the Weight it was; else None."""
    ids = f"{emb.name}_ids"
    if isinstance(x, _ConstAnchor) and x.zeros and x.r == 0 and x.name == ids and emb.input_dim == 1:
        lead, anchor = (), x.x
    elif isinstance(x, KerasTensor) and x._node is not None and isinstance(x._node.layer, L.Const) and \
            x._node.layer.name == ids:
        v = x._node.layer._values
        if emb.input_dim != v.size or not np.array_equal(v.ravel(), np.arange(v.size)):
            return None
        lead, anchor = v.shape, x._node.inputs[0]
    else:
        return None
    w = L.Weight(tuple(lead) + (emb.output_dim,), initializer=emb.embeddings_initializer,
                 regularizer=emb.embeddings_regularizer, constraint=emb.embeddings_constraint, name=emb.name)
    w.trainable = emb.trainable
    return w(anchor)


def _slice_entry(start, stop, step):
    return {"class_name": "__slice__", "config": {"start": start, "stop": stop, "step": step}}


def _slice_key(op):
    """The Slice's key as Keras serializes GetItem's: [__slice__ per axis] (the batch axis whole)."""
    sl = _slice_entry
    key = [sl(None, None, None)]
    for b, st, n in zip(op.begin, op.step, op.length):
        key.append(sl(None, None, None) if n == -1 else sl(int(b), int(b + (n - 1) * st + 1),
                                                           None if st == 1 else int(st)))
    return key


def _op_entry(op):
    return _entry(_OPS_MODULE, "GetItem", {"name": op.name}, "GetItem")


def _op_call(op, ts):
    return {"args": [ts[0], _slice_key(op)], "kwargs": {}}


def _key_from_keras(v):
    """GetItem's key back from Keras's serialization (slices, ellipsis, ints)."""
    if isinstance(v, list):
        return tuple(_key_from_keras(k) for k in v)
    if isinstance(v, dict) and v.get("class_name") == "__slice__":
        c = v.get("config") or {}
        return slice(c.get("start"), c.get("stop"), c.get("step"))
    if isinstance(v, dict) and v.get("class_name") == "__ellipsis__":
        return Ellipsis
    if v is None or (isinstance(v, int) and not isinstance(v, bool)):
        return v
    raise ValueError(f"GetItem: the key element {v!r} is not one boundfit can read (slices, ..., integers, None)")


class _ConstAnchor:
    """x[:, 0, ..., 0, None, ...] (r new axes) of a Functional config, read back:
    only zeros_like of it, plus an array of r axes, is readable (a Const)."""

    def __init__(self, name, x, r, zeros=False):
        self.name, self.x, self.r, self.zeros = name, x, r, zeros


def _anchor_key(key, x):
    """r when key is [:, 0, ..., 0 (every axis of x), None * r], else None (r = 0: one number per sample,
    which only zeros_like of it, the ids of a Weight's Embedding, reads)."""
    n = len(x._ps)
    if (len(key) >= n + 1 and key[0] == slice(None) and all(k == 0 and not isinstance(k, bool) for k in key[1:n + 1])
            and all(k is None for k in key[n + 1:])):
        return len(key) - n - 1
    return None


def _array_arg(v):
    if isinstance(v, dict) and v.get("class_name") in ("__numpy__", "__tensor__"):
        return np.array(v["config"]["value"], dtype=np.float32)
    return None


class KerasOp:
    """A Keras operation node of a Functional config, rebuilt by calling the
    keras.ops function boundfit traces it with: GetItem (x[key]), the math
    of keras_ops.py (Sqrt, Maximum, Divide, Where, Matmul, OneHot, Take ...);
    and the constant boundfit writes a Const as (zeros_like(x[:, 0, None]) + V)."""

    def __init__(self, entry):
        self.name = entry.get("name") or (entry.get("config") or {}).get("name")
        self.class_name = entry.get("class_name")
        self.config = entry.get("config") or {}

    def _fail(self, args):
        raise ValueError(f"operation {self.name!r} ({self.class_name}): arguments {args!r} are not a form boundfit "
                         "reads (x[key] with slices, ... and integers; zeros_like(x[:, 0, None]) + an array; the "
                         "keras.ops math of saving/keras_ops.py on tensors and numbers)")

    def _call_from_keras(self, args, kwargs, tensor):
        try:
            return self._replay(args, kwargs, tensor)
        except bf_ops.OpNotSupportedError as e:   # a form of the operation boundfit's graphs do not take
            raise ValueError(f"operation {self.name!r} ({self.class_name}): {e}") from None

    def _replay(self, args, kwargs, tensor):
        ts = [tensor(a) if isinstance(a, dict) and a.get("class_name") == "__keras_tensor__" else a for a in args]
        if kwargs or not ts:
            self._fail(args)
        if self.class_name == "GetItem" and len(ts) == 2 and isinstance(ts[0], KerasTensor):
            key = _key_from_keras(args[1])
            key = key if isinstance(key, tuple) else (key,)
            r = _anchor_key(key, ts[0])
            if r == 0:   # x[:, 0, ..., 0]: one number per sample, which zeros_like may still read as an anchor
                y = bf_ops.getitem(ts[0], key)
                self._own_name(y, ts)
                y._const_anchor = _ConstAnchor(self.name, ts[0], 0)
                return y
            if r is not None:
                return _ConstAnchor(self.name, ts[0], r)
            y = bf_ops.getitem(ts[0], key)
            self._own_name(y, ts)
            return y
        if self.class_name == "ZerosLike" and len(ts) == 1 and getattr(ts[0], "_const_anchor", None) is not None:
            ts = [ts[0]._const_anchor]
        if self.class_name == "ZerosLike" and len(ts) == 1 and isinstance(ts[0], _ConstAnchor):
            return _ConstAnchor(self.name, ts[0].x, ts[0].r, zeros=True)
        if self.class_name == "Add" and len(ts) == 2 and isinstance(ts[0], _ConstAnchor) and ts[0].zeros:
            v = _array_arg(args[1])
            if v is not None and v.ndim == ts[0].r:
                return L.Const(v, name=self.name)(ts[0].x)
        vals = [keras_ops.arg(a, tensor) for a in args]
        if any(isinstance(v, _ConstAnchor) for v in vals):
            self._fail(args)
        read = keras_ops.READ.get(self.class_name)
        fn = _BINARY.get(self.class_name)
        if fn is not None and len(vals) == 2 and all(isinstance(v, KerasTensor) for v in vals):
            read = keras_ops.BROADCAST[self.class_name]   # two tensors: a merge layer, or Binary to broadcast
        elif fn is not None and len(vals) == 2:
            read = keras_ops.through_ops(fn)   # x + 2.0, x * array ...: as keras.ops traces them here
        if read is None:
            self._fail(args)
        try:
            y = read(self.config, *vals)
        except (bf_ops.OpNotSupportedError, ValueError) as e:
            raise ValueError(f"operation {self.name!r} ({self.class_name}): {e}") from None
        except TypeError:   # a call of another form (arguments) than the one boundfit reads
            self._fail(args)
        self._own_name(y, vals)
        return y

    def _own_name(self, y, vals):
        """The file's name on the operation node this call made (the layer of its output, of its first output
        for several, when that is a node Keras files hold as an operation), so that writing it back names it as
        read, no other layer's name."""
        y = y[0] if isinstance(y, tuple) and y else y
        if not isinstance(y, KerasTensor) or y._node is None or any(y is v for v in vals):
            return
        layer = y._node.layer
        if len(layer._inbound) == 1 and is_keras_op(layer) and (opnode.of(layer) is None or
                                                                opnode.of(layer).head is layer):
            layer.name = self.name


_BINARY = {"Add": "add", "Subtract": "subtract", "Multiply": "multiply"}
_READ_OPS = {"GetItem", "ZerosLike"} | set(_BINARY) | set(keras_ops.READ)


def _dtype(dtype):
    """A tensor's dtype in a Keras file: strings (a TextVectorization's input) or float32."""
    return "string" if dtype == "string" else "float32"


def _layer_entry(op):
    Model, _ = _models()
    if is_keras_op(op):
        return _op_entry(op)
    if isinstance(op, L.InputLayer):
        return _entry("keras.layers", "InputLayer", {"batch_shape": [None, *op.shape], "dtype": _dtype(op.dtype),
                                                     "sparse": False, "ragged": False, "name": op.name,
                                                     "optional": False})
    if isinstance(op, Model):
        return model_entry(op, nested=True)
    if isinstance(op, L.SeqMask) and op._inbound and op._inbound[0].traced_in is not None:
        outer = op._inbound[0].traced_in
        raise NotImplementedError(
            f"layer {outer.name!r} ({type(outer).__name__}): its output's mask (from its compute_mask or "
            "supports_masking, layers/custom_masks.py) cannot be written to a .keras file, which holds a custom "
            "layer as the graph its call() traced (Keras rebuilds masks by calling the class's compute_mask); save "
            "the weights (model.save_weights(...).weights.h5) and rebuild the model from its code")
    e = layer_object(op, keras_config.layer_config(op))
    if isinstance(op, _BUILT) and op._inbound:
        ins = op._inbound[0].inputs
        shapes = [[None, *t._ps] for t in ins]
        e["build_config"] = {"input_shape": shapes if op._n_inputs == "many" else shapes[0]}
    return e


def functional_config(model):
    """Keras 3's Functional config (models/functional.py get_config) of a graph."""
    Model, _ = _models()
    ops, own, keys = graph_order(model, keys=True)
    pos = {}   # a node's index among its operation's nodes in this model
    for op in ops:
        for k, n in enumerate(n for n in _op_nodes(op) if n in own):
            pos[n] = k

    def ref(t, io=False):
        """[operation, node, tensor]; in input_layers / output_layers a nested
        Functional's nodes count from 1 (its own graph is node 0), in calls from 0."""
        while t._node is not None and getattr(t._node, "keras_mask_of", None) is not None:
            t = t._node.keras_mask_of   # a sequence given a mask: the sequence
        op, key = _src(t)
        g = opnode.of(op)
        if g is not None and g.outputs and any(t is o for o in g.outputs):   # output k of a keras.ops node
            hop, hkey = _src(g.outputs[0])
            return [hop.name, pos[hkey], next(k for k, o in enumerate(g.outputs) if o is t)]
        shift = 1 if io and isinstance(op, Model) and kind(op) == FUNCTIONAL else 0
        return [op.name, pos[key] + shift, 0 if t._node is None else _out_index(key, t)]

    def tensor(t):
        return {"class_name": "__keras_tensor__",
                "config": {"shape": [None, *t._ps], "dtype": _dtype(t.dtype), "keras_history": ref(t)}}

    def node(n):
        ts = [tensor(t) for t in n.inputs]
        if len(_keras_inputs(n)) > len(ts):   # a recurrent call given mask=: Keras's mask keyword
            e = n.layer._keras_call(ts)
            e["kwargs"] = dict(e["kwargs"], mask=tensor(_keras_inputs(n)[-1]))
            return e
        if is_keras_op(n.layer):   # an operation's call: the tensor and its other arguments
            return _op_call(n.layer, ts)
        if isinstance(n, _CallNode) and hasattr(n.layer, "_keras_call_of"):   # a composite's call k (its kwargs)
            return n.layer._keras_call_of(n.index, ts)
        if hasattr(n.layer, "_keras_call"):   # a layer with keyword tensor arguments (MultiHeadAttention)
            return n.layer._keras_call(ts)
        # a layer of several tensors (a merge, or layers.Dot, which boundfit traces) takes them as one list
        many = len(ts) > 1 if isinstance(n.layer, Model) else n.layer._n_inputs == "many" or len(ts) > 1
        if isinstance(n.layer, (Model, L.BatchNormalization)):
            kwargs = {"mask": None}
        elif isinstance(n.layer, L.Dropout):
            kwargs = {"training": False}
        else:
            kwargs = {}
        return {"args": [ts] if many else ts, "kwargs": kwargs}

    entries = []
    for op in ops:
        g = opnode.of(op)
        if g is not None:   # a keras.ops call's layers: Keras's one node, written by the layer of its output
            chain = [keras_ops.group_entry(g, pos[op._inbound[0]], tensor)] if g.head is op else []
        elif isinstance(op, L.Const):
            chain = _const_entries(op, [(pos[n], tensor(n.inputs[0])) for n in _op_nodes(op) if n in own])
        elif isinstance(op, L.Weight):
            chain = _weight_entries(op, [(pos[n], tensor(n.inputs[0])) for n in _op_nodes(op) if n in own])
        elif isinstance(op, keras_ops.WRITTEN):   # keras.ops math: Keras's operation nodes
            calls = [(pos[n], n, [tensor(t) for t in n.inputs]) for n in _op_nodes(op) if n in own]
            chain = keras_ops.op_entries(op, calls)
        else:
            e = _layer_entry(op)
            e["name"] = op.name
            e["inbound_nodes"] = [] if isinstance(op, L.InputLayer) else [node(n) for n in _op_nodes(op) if n in own]
            chain = [e]
        depth, first = keys[id(op)]
        entries += [((-depth - up, first, up), e) for up, e in zip(_chain_depths(chain), chain)]
    entries = [e for _, e in sorted(entries, key=lambda p: p[0])]

    def io(names, tensors, is_dict):
        if is_dict:
            return {n: ref(t, True) for n, t in zip(names, tensors)}
        return ref(tensors[0], True) if len(tensors) == 1 else [ref(t, True) for t in tensors]
    return {"name": model.name, "trainable": bool(model.trainable), "layers": entries,
            "input_layers": io(model._input_names, model._inputs, model._inputs_dict),
            "output_layers": io(model._output_names, model._outputs, model._outputs_dict)}


# ---- Functional config: Keras -> boundfit ----

def model_from_config(cfg, custom_objects=None):
    """A boundfit model from Keras 3's serialization of a Sequential or a Functional."""
    custom_objects = object_registration.lookup(custom_objects)
    cls = cfg.get("class_name")
    if cls == "Sequential":
        return sequential_from_config(cfg, custom_objects)
    if cls in ("Functional", "Model") and "layers" in (cfg.get("config") or {}):
        return functional_from_config(cfg, custom_objects)
    raise ValueError(f"boundfit reads Sequential and Functional models from .keras files; this one is a {cls!r}, "
                     "a subclassed model (Keras rebuilds it from the user's class; boundfit has no such class: build "
                     "the model here and use load_weights)")


def layer_or_model(entry, custom_objects=None):
    if entry.get("class_name") in ("Sequential", "Functional", "Model") and (custom_objects or {}).get(
            entry.get("class_name")) is None:
        return model_from_config(entry, custom_objects)
    return keras_config.layer_from_config(entry, custom_objects)


def _is_ref(v):
    return isinstance(v, list) and len(v) == 3 and isinstance(v[0], str)


# Keras 3 writes the masks it passes to a layer explicitly (Embedding(mask_zero=True)'s
# not_equal(ids, 0), merged by logical_or / logical_and) as op nodes of the graph;
# boundfit derives the same masks from its Embedding layers, so those nodes are read
# as mask tensors, accepted only where a mask goes (the call argument `mask`,
# MultiHeadAttention's query_mask / value_mask / key_mask).
_MASK_OPS = {"NotEqual", "LogicalOr", "LogicalAnd", "Any"}   # Embedding(mask_zero), Masking, merges


def _mask_tensor(mt, node, tensor):
    """A mask op of the file (MaskTensor) as the graph tensor it computes, for a call that reads it as a mask=
    argument (recurrent layers): NotEqual / LogicalAnd / LogicalOr of tensors and numbers, Any over an axis."""
    e = mt.entry
    args = [tensor(a) if isinstance(a, dict) else a for a in (node.get("args") or [])]
    args = [a.materialize() if isinstance(a, MaskTensor) else a for a in args]
    op = {"NotEqual": "not_equal", "LogicalAnd": "logical_and", "LogicalOr": "logical_or"}.get(e["class_name"])
    if op and len(args) == 2:
        a, b = args
        if not hasattr(a, "_ps"):
            a, b = b, a
        return L.Binary(op)([a, b]) if hasattr(b, "_ps") else L.Unary(op, float(b))(a)
    if e["class_name"] == "Any" and len(args) == 1:
        cfg = e.get("config") or {}
        axis = cfg.get("axis")
        axis = [axis] if isinstance(axis, int) else axis
        if axis is not None:
            rank = len(args[0]._ps)
            return L.Reduce("any", [a + rank + 1 if a < 0 else a for a in axis], bool(cfg.get("keepdims")))(args[0])
    raise ValueError(f"the file's mask op {mt.name!r} ({e['class_name']}) is not one boundfit computes as a mask=")


def _is_mask_op(e):
    return e.get("class_name") in _MASK_OPS and str(e.get("module", "")).startswith("keras.src.ops")


def functional_from_config(cfg, custom_objects=None):
    """models/functional.py functional_from_config: create every layer, then
    call each on its inbound nodes' tensors, deferring a call whose inputs do
    not exist yet, until all are made."""
    custom_objects = object_registration.lookup(custom_objects)
    Model, _ = _models()
    c = cfg["config"]
    made, outs, pending = {}, {}, {}
    for e in c["layers"]:
        name = e.get("name") or (e.get("config") or {}).get("name")
        if e.get("class_name") == "InputLayer":
            ec = e["config"]
            shape = ec.get("batch_shape") or ec.get("batch_input_shape")
            made[name] = layer = L.InputLayer(shape=tuple(shape[1:]), name=ec.get("name", name),
                                              dtype="string" if ec.get("dtype") == "string" else None)
            outs[name] = [[layer.output]]
            continue
        if _is_mask_op(e):
            made[name] = MaskTensor(name)
            made[name].entry = e
        elif e.get("class_name") in _READ_OPS and str(e.get("module", "")).startswith("keras.src.ops"):
            made[name] = KerasOp(e)
        elif str(e.get("module", "")).startswith("keras.src.ops"):
            raise ValueError(f"the file's layer {name!r} is the keras.ops operation {e.get('class_name')} "
                             f"({e.get('module')}), which boundfit does not run; it reads "
                             f"{', '.join(sorted(_READ_OPS | _MASK_OPS))}")
        else:
            made[name] = layer_or_model(e, custom_objects)
        outs[name] = []
        pending[name] = list(e.get("inbound_nodes") or [])

    def tensor(v, shift=0):
        if isinstance(v, dict) and v.get("class_name") == "__keras_tensor__":
            v = v["config"]["keras_history"]
        elif not _is_ref(v):
            raise ValueError(f"a node argument {v!r} is not a tensor reference boundfit can read")
        lname, ni, ti = v
        if lname not in outs:
            raise ValueError(f"Invalid Functional model configuration: no layer named {lname!r}")
        got = outs[lname]
        if shift and isinstance(made[lname], Model) and kind(made[lname]) == FUNCTIONAL:
            ni -= 1   # input_layers / output_layers count a nested Functional's own graph as node 0
        if not 0 <= ni < len(got):
            raise IndexError(lname)
        return got[ni][ti]

    def call(layer, node):
        if isinstance(layer, KerasOp) and isinstance(node, dict):
            y = layer._call_from_keras(node.get("args") or [], node.get("kwargs") or {}, tensor)
            return list(y) if isinstance(y, (list, tuple)) else [y]
        if isinstance(layer, MaskTensor):   # its tensor arguments must exist first (IndexError defers it)
            for a in node.get("args") or []:
                for t in a if isinstance(a, list) else [a]:
                    if isinstance(t, dict) and t.get("class_name") == "__keras_tensor__":
                        tensor(t)
            layer.materialize = lambda: _mask_tensor(layer, node, tensor)
            return [layer]
        if not isinstance(node, list) and hasattr(layer, "_call_from_keras"):
            y = layer._call_from_keras(node.get("args") or [], node.get("kwargs") or {}, tensor)
            return list(y) if isinstance(y, (list, tuple)) else [y]
        if isinstance(node, list):   # the legacy form: [[name, node, tensor, kwargs], ...]
            args = [tensor(r[:3]) for r in node]
            x = args if len(args) > 1 else args[0]
        else:
            a = node.get("args") or []
            if len(a) != 1:
                raise ValueError(f"layer {layer.name!r}: a call with {len(a)} positional arguments is not one "
                                 "boundfit can rebuild")
            for k, v in (node.get("kwargs") or {}).items():
                if k == "mask" and isinstance(v, dict) and isinstance(tensor(v), MaskTensor):
                    continue   # a mask Keras propagated; boundfit's graph carries the same one
                if k == "training" and isinstance(layer, L.Layer) and layer._keras_records_training:
                    continue   # (Keras records training=True on its image layers' calls: the run's mode decides)
                if not (k in ("mask", "training") and v in (None, False)):
                    raise ValueError(f"layer {layer.name!r}: the call argument {k}={v!r} is not supported by boundfit")
            x = a[0]
            x = [tensor(t) for t in x] if isinstance(x, list) else \
                {k: tensor(t) for k, t in x.items()} if isinstance(x, dict) and "class_name" not in x else tensor(x)
        if isinstance(layer, L.Embedding) and not isinstance(x, (list, dict)):
            w = _weight_from_embedding(layer, x)   # a custom layer's weight used elementwise, as written here
            if w is not None:
                return [w]
        for t in x if isinstance(x, list) else x.values() if isinstance(x, dict) else [x]:
            if isinstance(t, MaskTensor):
                raise ValueError(f"layer {layer.name!r}: its input is the Keras op {t.name!r}, which boundfit reads "
                                 "only as a mask (from Embedding(mask_zero=True)), not as data")
            if isinstance(t, _ConstAnchor):
                raise ValueError(f"layer {layer.name!r}: its input is the Keras op {t.name!r}, which boundfit reads "
                                 "only as zeros_like(x[:, 0, None]) + an array (a constant)")
        try:
            y = layer(x)
        except TypeError as e:   # inputs of a form the layer does not take (as the file gives them)
            raise ValueError(f"layer {layer.name!r}: {e}") from None
        if isinstance(y, dict):
            return [y[k] for k in sorted(y)]
        return list(y) if isinstance(y, (list, tuple)) else [y]

    while pending:
        progressed = False
        for e in c["layers"]:
            name = e.get("name") or (e.get("config") or {}).get("name")
            nodes = pending.get(name)
            while nodes:
                try:
                    outs[name].append(call(made[name], nodes[0]))
                except IndexError:
                    break
                nodes.pop(0)
                progressed = True
            if nodes is not None and not nodes:
                del pending[name]
        if pending and not progressed:
            raise ValueError("Invalid Functional model configuration: the graph has loops or disconnected nodes "
                             f"({sorted(pending)})")

    def io(v):
        if _is_ref(v):
            return tensor(v, shift=1)
        if isinstance(v, dict):
            return {k: io(x) for k, x in v.items()}
        return [io(x) for x in v]
    try:
        inputs, outputs = io(c["input_layers"]), io(c["output_layers"])
    except IndexError as e:
        raise ValueError(f"Invalid Functional model configuration: layer {e} has no such node") from None
    if isinstance(inputs, list) and len(inputs) == 1:
        inputs = inputs[0]
    if isinstance(outputs, list) and len(outputs) == 1:
        outputs = outputs[0]
    try:
        model = Model(inputs, outputs, name=c.get("name"))
    except TypeError as e:   # inputs or outputs that are no layers' tensors (a mask, a constant's anchor)
        raise ValueError(f"Invalid Functional model configuration: {e}") from None
    if c.get("trainable") is False:
        model.trainable = False
    return model


# ---- weights file layout ----

# boundfit's own attributes of a Model that hold layers or models (Keras's walk skips its internals too)
_INTERNAL = {"_node_layers", "_model", "_layers", "_input_layer", "_inbound", "_nodes", "_inputs", "_outputs",
             "_eager_models"}   # (the one-layer models of eager calls: layers/eager.py)


def _saveable(v):
    Model, _ = _models()
    return isinstance(v, (L.Layer, Model))


def _holds(v):
    if _saveable(v):
        return True
    if isinstance(v, dict):
        v = list(v.values())
    return isinstance(v, (list, tuple)) and any(_holds(x) for x in v)


def _tracked(model):
    """Keras's `_layers` of a subclassed model: layers and models assigned as attributes, in assignment order."""
    out, seen = [], set()

    def add(v):
        if _saveable(v):
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                add(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                add(x)
    for k, v in vars(model).items():
        if k not in _INTERNAL:
            add(v)
    return out


def keras_layers(model, as_functional):
    """Keras's `model.layers`: a Sequential's layers, a graph's in Keras's
    order (InputLayers included), a subclassed model's tracked layers."""
    k = kind(model, as_functional)
    if k == SEQUENTIAL:
        return list(model._layers)
    if k == FUNCTIONAL:
        return [op for op in graph_order(model)[0] if not is_keras_op(op)]
    return _tracked(model)


def _class_path(obj, as_functional):
    Model, _ = _models()
    if isinstance(obj, Model):
        k = kind(obj, as_functional)
        return snake(type(obj).__name__) if k == SUBCLASSED else k.lower()
    if isinstance(obj, L.Weight):
        return "embedding"   # Keras files hold it as an Embedding's table (_weight_entries)
    return getattr(type(obj), "_keras_class_path", None) or snake(type(obj).__name__)


def _join(a, b):
    return f"{a}/{b}" if a else b


def weight_groups(model, as_functional=False):
    """[(path, object)] of saving_lib's walk: object's variables (none for a
    model or an InputLayer) go under `<path>/vars`; each object once."""
    out, visited = [], set()

    def saveable(obj, path):
        if id(obj) in visited:
            return
        visited.add(id(obj))
        out.append((path, obj))
        Model, _ = _models()
        if isinstance(obj, Model):
            walk(obj, path)

    def container(items, path):
        used = {}
        for it in items:
            if isinstance(it, (list, tuple, dict)):
                container(list(it.values()) if isinstance(it, dict) else it, _join(path, _unique("container", used)))
            elif _saveable(it) or isinstance(it, L.InputLayer):
                saveable(it, _join(path, _unique(_class_path(it, as_functional), used)))

    def walk(m, path):
        if kind(m, as_functional) != SUBCLASSED:
            container(keras_layers(m, as_functional), _join(path, "layers"))
            return
        attrs = {k: v for k, v in vars(m).items() if k not in _INTERNAL and _holds(v)}
        for name in sorted(list(attrs) + ["layers"], key=lambda n: "~" + n if n.startswith("_") else n):
            if name == "layers":
                container(_tracked(m), _join(path, "layers"))
            elif _saveable(attrs[name]):
                saveable(attrs[name], _join(path, name))
            else:
                v = attrs[name]
                container(list(v.values()) if isinstance(v, dict) else v, _join(path, name))

    saveable(model, "")
    return out


def _unique(name, used):
    if name in used:
        used[name] += 1
        return f"{name}_{used[name]}"
    used[name] = 0
    return name


engine_layers = engine_parts   # (layers/variable.py)


def trainable_order(model, as_functional=False):
    """The layers in the order of Keras's `model.trainable_variables` (nested
    models' layers in place, a shared layer once)."""
    Model, _ = _models()
    out, seen = [], set()

    def rec(m):
        for l in keras_layers(m, as_functional):
            if isinstance(l, L.InputLayer) or id(l) in seen:
                continue
            seen.add(id(l))
            if isinstance(l, Model):
                rec(l)
            else:
                out.extend(engine_layers(l))
    rec(model)
    return out


# ---- Sequential models (a Functional's entry is model_entry / functional_config) ----

def model_config(model):
    """Keras 3 serialization of a model (with compile_config when compiled): a
    Sequential here (an unbuilt one has no InputLayer or build_config, as in
    Keras; nested models as their own entries), a functional, nested or
    subclassed model as Keras's Functional (py)."""
    if kind(model) != SEQUENTIAL:
        return model_entry(model)
    built = model.built
    sym = model._inputs[0]._ps if model._inputs else model._input_shape  # None: a variable length
    in_shape = [None] + [None if d is None else int(d) for d in sym] if sym is not None else None
    entries = []
    if in_shape is not None:
        entries.append(_obj("keras.layers", "InputLayer", dict(batch_shape=in_shape, dtype=_dtype(
            model._inputs[0].dtype if model._inputs else None), sparse=False,
                                                               ragged=False, name="input_layer")))
    shape = in_shape
    for layer in model._layers:
        if is_model(layer):
            e = model_entry(layer, nested=True)
        else:
            e = layer_object(layer, layer_config(layer))
            if built:
                e["build_config"] = {"input_shape": shape}
        if built:
            own = set(model._nodes)
            shape = [None] + [None if d is None else int(d)
                              for d in next(n for n in _op_nodes(layer) if n in own or (
                                     isinstance(n, _CallNode) and n.outputs[0]._node in own)).outputs[0]._ps]
        entries.append(e)
    cfg = _obj("keras", "Sequential", dict(name=model.name, trainable=bool(model.trainable),
                                           dtype=mixed_precision.serialize(model.dtype_policy),
                                           layers=entries))
    if built:
        cfg["config"]["build_input_shape"] = in_shape
        cfg["build_config"] = {"input_shape": in_shape}
    if model.optimizer is not None:
        cfg["compile_config"] = keras_config.compile_config(model)
    return cfg


def sequential_from_config(cfg, custom_objects=None):
    """A boundfit Sequential from Keras 3's model config (config.json); nested
    Sequential / Functional models in it are built as such."""
    custom_objects = object_registration.lookup(custom_objects)
    Sequential = model_classes()[1]
    if cfg.get("class_name") != "Sequential":
        raise ValueError(f"boundfit reads Sequential models from .keras files; this one is a {cfg.get('class_name')}")
    entries = cfg["config"]["layers"]
    input_shape, in_dtype = None, None
    built = []
    for e in entries:
        if e.get("class_name") == "InputLayer":
            c = e["config"]
            shape = c.get("batch_shape") or c.get("batch_input_shape")
            input_shape = tuple(shape[1:])
            in_dtype = "string" if c.get("dtype") == "string" else None
            continue
        built.append(layer_or_model(e, custom_objects))
    if input_shape is None:
        shape = (cfg.get("build_config") or {}).get("input_shape") or cfg["config"].get("build_input_shape")
        if shape is None and entries:
            shape = (entries[0].get("build_config") or {}).get("input_shape")
        input_shape = tuple(shape[1:]) if shape is not None else None
    first = [L.InputLayer(shape=input_shape, dtype=in_dtype)] if input_shape is not None else []
    model = Sequential(first + built, name=cfg["config"].get("name"))
    if isinstance(cfg["config"].get("dtype"), (str, dict)):   # the model's own policy (compile reads it)
        model._dtype_policy = mixed_precision.layer_policy(cfg["config"]["dtype"], model.name)
    if cfg["config"].get("trainable") is False:
        model.trainable = False
    return model
