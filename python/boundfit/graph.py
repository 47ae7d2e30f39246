"""Graphs of layer calls (the symbolic tensors and nodes are layers/node.py):
a model's inputs and outputs, the nodes between them in Keras's order,
tracing a subclassed model's call() (in both modes when it takes
`training`: node.trace_modes), and the compilation of a graph into the
engine's node list: nested models are inlined (a call given training= fixes
their nodes' mode), a layer called twice gives nodes that share its weights
(csrc/core/model.h), frozen layers are marked, and each node gets the runs
it is part of (`modes`: the training side of a Switch runs in fit only, the
inference side in evaluate / predict; the engine skips the other). (Data for several inputs / outputs is gathered by the
engine from each array in place: engine/arrays.py, csrc/core/gather.c.)"""


import contextlib

import numpy as np

from ._core import MAX_LAYERS, output_shape as _output_shape
from .metrics import Metric
from .layers.args import engine_kinds
from .layers.input_layer import Input, InputLayer
from .layers import node as _node
from .layers.node import KerasTensor, Node, SymbolicTensorError, _as_tensors, takes_training, train_mode
from .layers.masking import SeqMask
from .layers.switch import Switch


class GraphModel:
    """The base of models.Model: what lets graph code here (and saving/) tell a
    nested model from a layer without importing the models package above it."""


def trace_call(model, inputs):
    """model.call(inputs) on symbolic tensors: the graph it builds, in both modes when call() takes `training`
    (its own graph, whatever call of it is being traced around: those contexts are set aside meanwhile)."""
    has = takes_training(model.call)
    saved = [list(x) for x in (_node.CONTEXT, _node._RECORD, _node.TRACING)]
    for x in (_node.CONTEXT, _node._RECORD, _node.TRACING):
        x.clear()
    try:
        out = _node.trace_call(lambda mode: model.call(inputs, training=mode) if has else model.call(inputs), has,
                               None, model)
    except SymbolicTensorError as e:
        raise SymbolicTensorError(f"while tracing {type(model).__name__}.call(): {e}") from None
    finally:
        for x, v in zip((_node.CONTEXT, _node._RECORD, _node.TRACING), saved):
            x[:] = v
    flat = list(out.values()) if isinstance(out, dict) else list(out) if isinstance(out, (list, tuple)) else [out]
    if not flat or not all(isinstance(t, KerasTensor) for t in flat):
        raise TypeError(f"{type(model).__name__}.call() must return the symbolic tensors of layer calls (one, a list "
                        f"or a dict), got {type(out).__name__}")
    return out


def call_model(model, inputs, training=None):
    """A model called on symbolic tensors is one node of the outer graph (a nested model)."""
    ins, many = _as_tensors(model.name, list(inputs.values()) if isinstance(inputs, dict) else inputs)
    if not model._functional:  # an unbuilt Sequential, or a subclassed model: built on these shapes first
        if hasattr(model, "_in_shape"):
            model.build((None,) + ins[0]._ps)
        else:
            model._trace([t._ps for t in ins])
    if len(ins) != len(model._inputs):
        raise ValueError(f"model {model.name!r} takes {len(model._inputs)} inputs, got {len(ins)}")
    for k, (t, want) in enumerate(zip(ins, model._inputs)):
        if len(t._ps) != len(want._ps) or any(w is not None and d != w for d, w in zip(t._ps, want._ps)):
            raise ValueError(f"model {model.name!r}: input {k} must have shape {want.shape}, got {t.shape}")
        if (t.dtype == "string") != (want.dtype == "string"):
            what = "strings" if want.dtype == "string" else "numbers"
            raise ValueError(f"model {model.name!r}: input {k} takes {what}, got a tensor of dtype {t.dtype!r}")
    outs = [KerasTensor(t._ps, name=f"{model.name}_output_{k}") for k, t in enumerate(model._outputs)]
    Node(model, ins, outs, train_mode(training))
    if model._outputs_dict:
        return dict(zip(model._output_names, outs))
    return outs[0] if len(outs) == 1 else outs


def _tensor_list(v, what):
    if isinstance(v, dict):
        names, ts, is_dict = list(v.keys()), list(v.values()), True
    elif isinstance(v, KerasTensor):
        names, ts, is_dict = None, [v], False
    elif isinstance(v, (list, tuple)):
        names, ts, is_dict = None, list(v), False
    else:
        raise TypeError(f"Model: {what} must be a symbolic tensor, a list or a dict of them, got {type(v).__name__}")
    if not ts:
        raise ValueError(f"Model: {what} is empty")
    for i, t in enumerate(ts):
        if not isinstance(t, KerasTensor):
            raise TypeError(f"Model: {what}[{i}] is a {type(t).__name__}, not a symbolic tensor (boundfit.Input or "
                            "a layer's output)")
    return names, ts, is_dict


def cut_at(ins, outs):
    """Keras's Model(inputs=intermediate tensors): each such input is a new
    Input (`<name>CLONE`) and the calls between it and the outputs are called
    anew on it, on the same layers (the same weights); the graph before it is
    not the model's. Returns (inputs, outputs)."""
    clones = {id(t): Input(shape=t._ps, dtype=t.dtype, name=f"{t.name}CLONE") for t in ins if t._input_layer is None}
    if not clones:
        return ins, outs
    stop, nodes, stack = {id(t) for t in ins}, {}, list(outs)
    while stack:
        t = stack.pop()
        if id(t) in stop or t._node is None or t._node.id in nodes:
            continue
        nodes[t._node.id] = t._node
        stack.extend(t._node.inputs)
    new = dict(clones)
    for _, n in sorted(nodes.items()):   # (in the order they were made: producers first)
        if not any(id(t) in new for t in n.inputs):
            continue
        outs_n = [KerasTensor(t._ps, t.dtype, name=t.name, nobatch=t._nobatch) for t in n.outputs]
        m = Node(n.layer, [new.get(id(t), t) for t in n.inputs], outs_n, n.train_mode)
        for k, v in vars(n).items():   # (the custom layer whose call made it, a mask turned off, ...)
            if k not in ("id", "index", "inputs", "outputs"):
                setattr(m, k, v)
        new.update({id(a): b for a, b in zip(n.outputs, outs_n)})
    return [new.get(id(t), t) for t in ins], [new.get(id(t), t) for t in outs]


def normalize_io(inputs, outputs):
    in_names, ins, in_dict = _tensor_list(inputs, "inputs")
    if len({id(t) for t in ins}) != len(ins):
        raise ValueError("Model: the same Input is listed twice in inputs")
    out_names, outs, out_dict = _tensor_list(outputs, "outputs")
    ins, outs = cut_at(ins, outs)
    in_names = in_names or [t._input_layer.name for t in ins]
    if len({id(t) for t in outs}) != len(outs):
        raise ValueError("Model: the same tensor is listed twice in outputs")
    for i, t in enumerate(outs):
        if t._nobatch:
            raise ValueError(f"Model: outputs[{i}] has no batch axis (shape {t.shape}: a sum over the batch, such as "
                             "keras.ops.tensordot of two tensors); a model's outputs need one row per sample: add it "
                             "to a tensor with a batch axis")
    if out_names is None:
        out_names = []
        for t in outs:
            if t._node is None:
                out_names.append(t._input_layer.name)
            elif len(t._node.outputs) > 1:
                out_names.append(f"{t._node.layer.name}_{t._node.outputs.index(t)}")
            else:
                out_names.append(t._node.layer.name)
    if len(set(out_names)) != len(out_names):
        raise ValueError(f"Model: outputs need distinct names, got {out_names}; name the output layers")
    return ins, list(in_names), in_dict, outs, list(out_names), out_dict


def collect_nodes(inputs, outputs):
    """The nodes between inputs and outputs, in Keras's order (keras_order);
    a tensor that needs an Input not among `inputs` is a disconnected graph."""
    inset = {id(t): k for k, t in enumerate(inputs)}
    names = [t._input_layer.name for t in inputs]
    nodes, reached = {}, set()
    stack = [(t, None) for t in outputs]
    while stack:
        t, consumer = stack.pop()
        if id(t) in inset:
            reached.add(id(t))
            continue
        if t._node is None:
            where = f" at layer {consumer.layer.name!r}" if consumer is not None else " (listed as an output)"
            raise ValueError(f"Graph disconnected: cannot obtain the value of tensor {t.name!r}{where}: it comes "
                             f"from an Input that is not among the model's inputs {names}; pass that Input in "
                             "inputs=")
        n = t._node
        if n.id in nodes:
            continue
        nodes[n.id] = n
        stack.extend((u, n) for u in n.inputs)
    if len(reached) < len(inputs):   # an input may feed only a loss a layer adds (keras.io's endpoint layer)
        reached |= _reached_by_added_losses(nodes.values(), inset)
    unused = [names[k] for k, t in enumerate(inputs) if id(t) not in reached]
    if unused:
        raise ValueError(f"Model: input(s) {unused} are not connected to any output; every input must feed an "
                         "output or a loss a layer adds (or leave it out of inputs=)")
    rank = keras_order(inputs, outputs)
    return sorted(nodes.values(), key=lambda n: rank[id(n)])


def _reached_by_added_losses(nodes, inset):
    """ids of the inputs (in inset) that the losses added in the calls of these nodes' layers read"""
    owners = {id(o): o for n in nodes for o in (n.layer, n.traced_in) if o is not None}
    stack = [getattr(v, "x", v) for o in owners.values() for v in o.__dict__.get("_added_losses", ())]
    reached, seen = set(), set()
    while stack:
        t = stack.pop()
        if not isinstance(t, KerasTensor) or id(t) in seen:
            continue
        seen.add(id(t))
        if id(t) in inset:
            reached.add(id(t))
        elif t._node is not None:
            stack.extend(t._node.inputs)
    return reached


def _composite(n):
    """the Keras composite layer (SeparableConv2D, GroupNormalization: one layer of Keras's graph, traced into
    several nodes) whose call made node n, or None"""
    c = n.traced_in
    return c if c is not None and c._keras_composite() else None


def _inside_one_call(n, t):
    """node n reads t within one call of a Keras composite: Keras's depth does not grow between them"""
    c = _composite(n)
    return c is not None and t._node is not None and t._node.traced_in is c and \
        not any(t is u for ins, _ in c.__dict__.get("_traced_calls", ()) for u in ins)


def keras_order(inputs, outputs):
    """{id(node or input tensor): rank} in Keras 3's order of a functional
    model's layers (keras/src/ops/function.py map_graph): by decreasing depth
    (the longest path to an output; a shared layer at its deepest call), ties
    by first visit of a depth-first walk from the outputs through each call's
    inputs in order. A topological order, and the order of `model.layers` and
    of `get_weights()` in Keras. The nodes of a Keras composite layer's call
    are one layer at one depth there; among themselves, by their own depth."""
    inset = {id(t) for t in inputs}
    visit, post, done = {}, [], set()    # visit: id(layer or input) -> first-visit index

    def op(n):
        return _composite(n) or n.layer

    def key(t):
        return id(t) if id(t) in inset else id(op(t._node))

    for root in outputs:
        stack = []

        def enter(t):
            visit.setdefault(key(t), len(visit))
            if id(t) not in inset and id(t._node) not in done:
                done.add(id(t._node))
                stack.append([t._node, 0])
        enter(root)
        while stack:
            top = stack[-1]
            if top[1] < len(top[0].inputs):
                top[1] += 1
                enter(top[0].inputs[top[1] - 1])
            else:
                post.append(stack.pop()[0])
    depth, op_depth, own = {}, {}, {}   # own: the nodes' depth counting every node (inside composites too)
    for n in reversed(post):            # consumers before their producers
        d = max(depth.get(id(n), 0), op_depth.get(id(n.layer), 0))
        depth[id(n)] = op_depth[id(n.layer)] = d
        for t in n.inputs:
            k = id(t) if id(t) in inset else id(t._node)
            depth[k] = max(depth.get(k, 0), d + (0 if id(t) not in inset and _inside_one_call(n, t) else 1))
            own[k] = max(own.get(k, 0), own.get(id(n), 0) + 1)
    items = [(id(n), depth[id(n)], visit[id(op(n))], -own.get(id(n), 0), n.id) for n in post]
    items += [(id(t), depth.get(id(t), 0), visit.get(id(t), 0), 0, -1) for t in inputs]
    items.sort(key=lambda e: (-e[1], e[2], e[3], e[4]))
    return {k: r for r, (k, *_rest) in enumerate(items)}


def host_stages(model):
    """{input index: layer} of the host-side layers (TextVectorization, StringLookup, ...: layers/host_layer.py) a
    model runs on its inputs before the engine: each on a string Input of the
    model itself, one per input; the engine's input k is that layer's output."""
    if getattr(model, "_inputs", None) is None:
        return {}
    index = {id(t): k for k, t in enumerate(model._inputs)}
    out = {}
    for n in model._nodes:
        L = n.layer
        if isinstance(L, GraphModel):
            inner = host_stages(L)
            if inner:
                raise ValueError(f"model {model.name!r}: the nested model {L.name!r} starts with host-side "
                                 f"preprocessing ({type(next(iter(inner.values()))).__name__}); call that layer on "
                                 "the outer model's own string Input instead")
            continue
        if not getattr(L, "_host_side", False):
            continue
        k = index.get(id(n.inputs[0]))
        if k is None:
            raise ValueError(f"model {model.name!r}: layer {L.name!r} ({type(L).__name__}) runs on the host before "
                             "the engine, so it must be called on one of the model's Inputs")
        if k in out:
            raise ValueError(f"model {model.name!r}: input {model._input_names[k]!r} feeds two host-side layers "
                             f"({out[k].name!r} and {L.name!r}); give each its own Input")
        out[k] = L
    for n in model._nodes:
        staged = [t for t in n.inputs if id(t) in index and index[id(t)] in out and out[index[id(t)]] is not n.layer]
        if staged:   # the engine's input k is the stage's output: nothing else can read the raw values
            raise ValueError(f"model {model.name!r}: input {staged[0].name!r} feeds the host-side layer "
                             f"{out[index[id(staged[0])]].name!r} and layer {n.layer.name!r}; give each its own "
                             "Input (the same data may be passed to both)")
        if not getattr(n.layer, "_host_side", False) and any(id(t) in index and t.dtype == "string"
                                                                for t in n.inputs):
            raise ValueError(f"model {model.name!r}: layer {n.layer.name!r} is called on the string input "
                             f"{n.inputs[0].name!r}; strings go through a TextVectorization or a StringLookup / Hashing first")
    return out


class CompiledGraph:
    def __init__(self):
        self.specs, self.node_layers, self.layer_node, self.owners = [], [], {}, []
        self.input_shapes, self.output_ids = [], []


def compile_graph(model):
    """The engine's node list. A host-side layer on input k (host_stages) is
    no engine node: the engine's input k is its output (the ids or counts
    the data sources make per batch, engine/host_stage.py)."""
    g = CompiledGraph()
    n_in = len(model._inputs)
    g.input_shapes = [t._ps for t in model._inputs]
    env = {id(t): ("in", k) for k, t in enumerate(model._inputs)}
    entries = []   # [layer, spec (inputs as env keys), node] in order
    host = set()
    for k, L in host_stages(model).items():
        n = next(n for n in model._nodes if n.layer is L)
        g.input_shapes[k] = n.outputs[0]._ps
        env[id(n.outputs[0])] = ("in", k)
        host.add(id(n))

    def emit(nodes, env, outs, force):
        used = {id(t) for n in nodes for t in n.inputs} | {id(t) for t in outs}
        for n in nodes:
            L = n.layer
            if id(n) in host:
                continue
            tm = n.train_mode or force
            if isinstance(L, GraphModel):
                inner = {id(t): env[id(x)] for t, x in zip(L._inputs, n.inputs)}
                emit(L._nodes, inner, L._outputs, tm)
                for outer, t in zip(n.outputs, L._outputs):
                    env[id(outer)] = inner[id(t)]
                continue
            if isinstance(L, Switch) and tm:   # in a call fixed to one mode: that mode's side
                env[id(n.outputs[0])] = env[id(n.inputs[0 if tm == 1 else 1])]
                continue
            if tm and L._mode_dependent:
                L._check_train_mode(tm, compiling=True)
            d = dict(L.spec())
            d["inputs"] = [env[id(t)] for t in n.inputs]
            d["trainable"] = int(bool(L.trainable))
            if L.compute_dtype in ("bfloat16", "float16"):   # mixed precision: 16-bit storage (docs/mixed-precision.md)
                d["half"] = 1 if L.compute_dtype == "bfloat16" else 2
            if tm and L._mode_dependent:
                d["train_mode"] = tm
            if getattr(n, "mask_off", False):
                d["mask_off"] = 1
            parts = L._parts() if hasattr(L, "_parts") else [None]
            main = ("node", len(entries))
            entries.append([L, d, n])
            for k, (t, p) in enumerate(zip(n.outputs, parts)):
                if p is None:
                    env[id(t)] = main
                elif id(t) in used:  # another output of a recurrent layer: an RNN_PART node reading its node
                    env[id(t)] = ("node", len(entries))
                    entries.append([L, dict(kind=_rnn_part_kind(), name=f"{L.name}_output_{k}", part=p,
                                            inputs=[main], trainable=1, output=k), None])

    emit(model._nodes, env, model._outputs, 0)
    # the runs each node is part of (bit 0 fit, bit 1 evaluate / predict), from the outputs back: a Switch
    # reads its training side in fit and its inference side otherwise; a node no run needs is left out
    modes = [0] * len(entries)
    outs = [env[id(t)] for t in model._outputs]
    for key in outs:
        if key[0] == "node":
            modes[key[1]] = 3
    for e in range(len(entries) - 1, -1, -1):
        L, d, _ = entries[e]
        for j, key in enumerate(d["inputs"]):
            if key[0] == "node":
                modes[key[1]] |= modes[e] & (1 << j if isinstance(L, Switch) else 3)
    index = {}
    for e, (L, d, n) in enumerate(entries):
        if not modes[e]:
            continue
        index[e] = len(g.specs)
        d["inputs"] = [k if kind == "in" else n_in + index[k] for kind, k in d["inputs"]]
        if modes[e] != 3:
            d["modes"] = modes[e]
        if n is not None:   # (an RNN_PART node: its recurrent node's layer, no weights of its own)
            owner = getattr(L, "_weights_of", L)   # a piece using another layer's weights (ReversibleEmbedding's)
            if id(owner) in g.layer_node:
                d["share"] = g.layer_node[id(owner)]
            else:
                g.layer_node[id(owner)] = len(g.specs)
                g.owners.append(owner)
        g.specs.append(d)
        g.node_layers.append(L)
    if not g.specs:
        raise ValueError(f"model {model.name!r} has no layers between its inputs and outputs")
    if len(g.specs) > MAX_LAYERS:
        raise ValueError(f"model {model.name!r} has {len(g.specs)} layer calls (a keras.ops call counts as one or "
                         f"more); at most {MAX_LAYERS} are supported: give layers their activation= instead of "
                         f"separate Activation layers, or split the model into parts trained one after another")
    g.output_ids = [k if kind == "in" else n_in + index[k] for kind, k in outs]
    return g


def output_shapes_at(model, shapes):
    """The per-sample shapes of the model's outputs when its inputs have these per-sample `shapes` (a
    variable-length model at one length): the engine's own inference, node by node over the compiled graph,
    as the engine infers them when it is built for those shapes (nothing is allocated)."""
    g = compile_graph(model)
    at = [tuple(int(d) for d in s) for s in shapes]
    for d in g.specs:
        spec = {k: v for k, v in d.items() if k not in ("inputs", "share")}
        at.append(tuple(int(n) for n in _output_shape(spec, [at[i] for i in d["inputs"]])))
    return [at[i] for i in g.output_ids]


@contextlib.contextmanager
def at_shapes(model, shapes):
    """A variable-length model's inputs and outputs given the per-sample shapes of one length (its inputs'
    `shapes`, its outputs' as the engine infers them) while a loss, a metric or compute_loss() is traced on
    them, then their variable shapes again: the traced loss is that length's (fixed shapes, as Keras traces
    it per shape). No-op for None."""
    if shapes is None:
        yield
        return
    ts = list(model._inputs) + list(model._outputs)
    new = [tuple(s) for s in shapes] + output_shapes_at(model, shapes)
    old = [t._ps for t in ts]
    try:
        for t, s in zip(ts, new):
            t._ps = s
        yield
    finally:
        for t, s in zip(ts, old):
            t._ps = s


def _rnn_part_kind():
    return engine_kinds("RNN_PART")[0]


def _unique(seq):
    seen, out = set(), []
    for x in seq:
        if id(x) not in seen:
            seen.add(id(x))
            out.append(x)
    return out


def model_layers(model):
    """Keras `model.layers` of a functional model, InputLayers included (a nested model as one), in Keras's order."""
    rank = keras_order(model._inputs, model._outputs)
    calls = [(rank[id(t)], t._input_layer) for t in model._inputs] + [(rank[id(n)], n.layer) for n in model._nodes
                                                                       if n.traced_in is None]
    last = {}   # a custom layer (its call() traced into sublayer nodes) stands where its output is made
    for n in model._nodes:
        if n.traced_in is not None:
            last[id(n.traced_in)] = (max(last.get(id(n.traced_in), (-1,))[0], rank[id(n)]), n.traced_in)
    return _unique([layer for _, layer in sorted(calls + list(last.values()), key=lambda c: c[0])
                    if not isinstance(layer, (Switch, SeqMask))])   # (a subclassed model's two traces, a mask=
    # argument: no layer of Keras's)


def graph_layers(model):
    """Every (non-model) layer a model runs, nested models' included."""
    out = []
    for n in model._nodes:
        out += n.layer._own_layers() if isinstance(n.layer, GraphModel) else [n.layer]
    return _unique(out)


def layer_params(model, layer):
    if isinstance(layer, GraphModel):
        return sum(layer_params(model, l) for l in layer._own_layers())
    if getattr(layer, "_traced_outputs", None) is not None:   # a custom layer: its variables and sublayers
        return sum(int(np.prod(w.shape)) for w in layer.get_weights())
    if id(layer) not in model._layer_node:
        return 0
    return sum(int(np.prod(s)) for _, s, _ in model._info()[model._layer_node[id(layer)]][2])


def last_output_shape(layer):
    traced = getattr(layer, "_traced_outputs", None)
    if traced is not None:
        return traced[0].shape if len(traced) == 1 else [t.shape for t in traced]
    if not layer._inbound:
        return None
    outs = layer._inbound[-1].outputs
    return outs[0].shape if len(outs) == 1 else [t.shape for t in outs]


def _ref(t):
    if t._node is None:
        return f"{t._input_layer.name}[0][0]"
    outer = t._node.traced_in
    if outer is not None:   # made inside a custom layer's call(): that call's output
        for k, (_, outs) in enumerate(outer.__dict__.get("_traced_calls", [])):
            if any(o is t for o in outs):
                return f"{outer.name}[{k}][{[id(o) for o in outs].index(id(t))}]"
        return f"{outer.name}[0][0]"
    return f"{t._node.layer.name}[{t._node.index}][{t._node.outputs.index(t)}]"


def summary_rows(model):
    """Keras's functional summary: its header and one (layer, cells) row per layer, with the tensors it is
    connected to."""
    rows = []
    for t in model._inputs:
        rows.append((t._input_layer, (f"{t._input_layer.name} (InputLayer)", str(t.shape), "0", "-")))
    by_layer = {}
    for n in model._nodes:
        if n.traced_in is None:
            by_layer.setdefault(id(n.layer), []).append(n)
    for layer in [l for l in model_layers(model) if not isinstance(l, InputLayer)]:
        calls = layer.__dict__.get("_traced_calls") if id(layer) not in by_layer else None
        if calls:   # a custom layer: one row, its call()s' inputs and outputs
            outs, ins = calls[0][1], [t for c_in, _ in calls for t in c_in]
        else:
            ns = by_layer.get(id(layer), [])
            outs, ins = ns[0].outputs, [t for n in ns for t in n.inputs]
        shape = outs[0].shape if len(outs) == 1 else [t.shape for t in outs]
        conn = ", ".join(_ref(t) for t in ins)
        rows.append((layer, (f"{layer.name} ({type(layer).__name__})", str(shape), f"{layer_params(model, layer):,}",
                             conn)))
    return ("Layer (type)", "Output Shape", "Param #", "Connected to"), rows


# ---- compile() arguments per output ----

def per_output(value, names, what, conv):
    if isinstance(value, dict):
        missing = [n for n in names if n not in value]
        extra = [k for k in value if k not in names]
        if missing or extra:
            raise ValueError(f"{what}: the model's outputs are {names}; "
                             + (f"no entry for {missing}" if missing else f"unknown outputs {extra}"))
        return [conv(value[n]) for n in names]
    if isinstance(value, (list, tuple)):
        if len(value) != len(names):
            raise ValueError(f"{what}: the model has {len(names)} outputs {names}, got a list of {len(value)}")
        return [conv(v) for v in value]
    return [conv(value)] * len(names)


def per_output_metrics(metrics, names, what="metrics"):
    """compile()'s metrics as a list per output: a dict by output name, a list
    of lists (one per output), or one list (or metric) for every output."""
    if metrics is None:
        return [[] for _ in names]
    if isinstance(metrics, (str, Metric)) or callable(metrics) and not isinstance(metrics, type):
        metrics = [metrics]
    if isinstance(metrics, dict):
        extra = [k for k in metrics if k not in names]
        if extra:
            raise ValueError(f"{what}: unknown outputs {extra}; the model's outputs are {names}")
        per = [metrics.get(n) or [] for n in names]
    elif isinstance(metrics, (list, tuple)) and metrics and all(isinstance(m, (list, tuple)) for m in metrics):
        if len(metrics) != len(names):
            raise ValueError(f"{what}: the model has {len(names)} outputs {names}, got {len(metrics)} lists")
        per = list(metrics)
    elif isinstance(metrics, (list, tuple)):
        per = [list(metrics)] * len(names)
    else:
        raise ValueError(f"{what} must be a list, got {metrics!r}")
    out = []
    for ms in per:
        if isinstance(ms, (str, Metric)) or callable(ms) and not isinstance(ms, type):
            ms = [ms]
        if not isinstance(ms, (list, tuple)):
            raise ValueError(f"{what} must be a list, got {ms!r}")
        out.append(list(ms))
    return out


# ---- data: the per-sample shapes a subclassed model is traced on ----

def data_shapes(x):
    if isinstance(x, (list, tuple)):
        return [tuple(np.shape(a)[1:]) for a in x]
    if isinstance(x, dict):   # call() is given the dict, one Input per key (in Keras's order of a dict)
        return {k: tuple(np.shape(x[k])[1:]) for k in sorted(x)}
    return [tuple(np.shape(x)[1:])]
