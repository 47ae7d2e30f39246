"""Keras 3's masking protocol for custom layers (keras/src/layers/layer.py
__call__): a call() with a `mask` parameter, called on one tensor argument
without mask=, receives the mask that tensor carries (`<arg>_mask`
parameters when it takes several); after the call, a layer whose
`supports_masking` is set (or that defines compute_mask) gives each output
that carries no mask compute_mask(inputs, previous_mask); otherwise the
outputs keep only what the layers inside gave them, and keras.ops results
carry none.

The engine carries masks per node kind (csrc/core/layers: a kind's `mask`
hook; keras.ops' Add keeps one, where Keras's ops drop it), so at the end of
a custom call the outputs are made to carry what Keras gives them: a SeqMask
node for a new mask, a view for a dropped one. `_source` mirrors the
engine's hooks: the node whose mask a tensor carries (an
Embedding(mask_zero=True) or a SeqMask), keras=True: as Keras sees it."""

import inspect
import warnings

from . import opnode
from .args import LAYER_KINDS
from .emath import Unary
from .layer import _MASKS
from .masking import with_mask
from .node import MASK_HOOKS, TRACING, KerasTensor, _flat_tensors, trace_layer
from .reshaping import Reshape

_KIND = {v: k for k, v in LAYER_KINDS.items()}
# the kinds whose output carries their first input's mask (bf_mask_keep), and the merges (one of the inputs')
_KEEP = {"DENSE", "ACTIVATION", "BATCHNORM", "DROPOUT", "PRELU", "SPECNORM", "LAYERNORM", "MHA"}
_MERGE = {"ADD", "SUBTRACT", "MULTIPLY", "AVERAGE", "MAXIMUM", "MINIMUM", "CONCAT"}
_RNN = {"SIMPLE_RNN", "LSTM", "GRU", "BIDIR"}
# the kinds that read a mask (a kind's mask_reads, the recurrent layers): inside a custom call, their inputs are
# made to carry Keras's (a mask passed on further is set right where it is read, or at the call's end)
_READERS = _RNN | {"MHA", "GAP"}
_USER_CALLS = []   # the custom layers whose call() is being traced (None: one of boundfit's own)
_OUTER = {}        # _source's substitutions outside nested models: none


def _kind(layer):
    try:
        d = layer.spec()
    except Exception:   # a layer that is no engine node (an Input, a host-side stage): no mask
        return None, {}
    return _KIND.get(d.get("kind")), d


def _source(t, keras=False, subst=None, memo=None):
    """The node whose mask tensor t carries in the engine (keras=True: in Keras 3, where a keras.ops result
    carries none), or None."""
    memo = {} if memo is None else memo
    subst = subst or _OUTER
    key = (id(t), keras, id(subst))   # (a nested model called twice: its tensors under each call's inputs)
    if key in memo:
        return memo[key]
    kept = f"_mask_source_{int(keras)}"   # a tensor's upstream never changes: its answer is kept on it
    if id(t) in subst:
        out = _source(subst[id(t)], keras, None, memo)
    elif "_mask_source" in t.__dict__:   # a custom layer's output: what its call gave it
        out = t.__dict__["_mask_source"]
    elif subst is _OUTER and kept in t.__dict__:
        out = t.__dict__[kept]
    else:
        out = _node_source(t, keras, subst, memo)
        if subst is _OUTER:
            t.__dict__[kept] = out
    memo[key] = out
    return out


def _node_source(t, keras, subst, memo):
    n = t._node
    if n is None or t._input_layer is not None:
        return None
    L = n.layer
    if keras and opnode.of(L) is not None:
        return None
    k = next(i for i, o in enumerate(n.outputs) if o is t)
    if hasattr(L, "_outputs") and hasattr(L, "_inputs"):   # a nested model: its graph, its inputs the call's
        inner = dict(subst)
        inner.update({id(a): b for a, b in zip(L._inputs, n.inputs)})
        return _source(L._outputs[k], keras, inner, memo)
    kind, d = _kind(L)
    up = [_source(x, keras, subst, memo) for x in n.inputs] if kind in _MERGE | {"SWITCH"} else None
    if kind == "EMBEDDING":
        return _source(n.inputs[0], keras, subst, memo) if d.get("reverse") else (n if d.get("mask_zero") else None)
    if kind == "SEQ_MASK":
        return n
    if kind in _KEEP or (kind in _RNN and k == 0 and getattr(L, "return_sequences", False)):
        return _source(n.inputs[0], keras, subst, memo)
    if kind in _MERGE:
        return next((s for s in up if s is not None), None)
    if kind == "SWITCH":
        return up[0] if up[0] is up[1] else None
    return None


def mask_tensor(src):
    """The mask of source node `src` (None: no mask) as a symbolic tensor (batch, T) of 0 / 1 (1: the step is
    kept), made once per outermost custom call that asks for it."""
    if src is None:
        return None
    owner = id(TRACING[0][2]) if TRACING else None
    cache = src.__dict__.setdefault("_mask_tensors", {})
    if owner not in cache:
        m = src.inputs[0]
        if m.__dict__.get("_mask_of") is None:   # (a SeqMask's own 0 / 1 mask is used as it is)
            m = Unary("not_equal", 0.0)(m)
            m.__dict__["_mask_of"] = src
        cache[owner] = m
    return cache[owner]


def _map(v, fn):
    if isinstance(v, KerasTensor):
        return fn(v)
    if isinstance(v, (list, tuple)):
        return type(v)(_map(x, fn) for x in v)
    if isinstance(v, dict):
        return {k: _map(x, fn) for k, x in v.items()}
    return None


def _flat(v):
    return [x for x in (_flat_tensors(v) if v is not None else []) if x is not None]


def _fill_masks(layer, inputs, args, kwargs):
    """Keras's step 6: the mask arguments call() receives (into kwargs); returns previous_mask (the mask given,
    else the first argument's): whether there is one, and a function making it (masks are made only when used)."""
    sig = inspect.signature(layer.call)
    try:
        bound = sig.bind_partial(inputs, *args, **kwargs).arguments
    except TypeError:
        bound = dict(kwargs)
    tensors = {k: v for k, v in bound.items() if k not in ("mask", "training") and _flat(v)}
    keras_mask = lambda t: mask_tensor(_source(t, keras=True))   # noqa: E731

    def unset(name):   # a mask parameter not given, or given None by keyword
        return name in sig.parameters and bound.get(name) is None and (name not in bound or name in kwargs)
    if len(tensors) == 1 and unset("mask"):
        kwargs["mask"] = _map(next(iter(tensors.values())), keras_mask)
    elif len(tensors) > 1:
        for k, v in tensors.items():
            if unset(f"{k}_mask"):
                kwargs[f"{k}_mask"] = _map(v, keras_mask)
    given = kwargs.get("mask", bound.get("mask"))
    if given is not None:
        return bool(_flat(given)), lambda: given
    sources = _map(inputs, lambda t: _source(t, keras=True))
    has = any(s is not None for s in (sources if isinstance(sources, (list, tuple)) else [sources]))
    return has, lambda: _map(inputs, keras_mask)


def _wanted(layer, inputs, outs, previous):
    """(the source node or None, a new mask tensor or None) of each output's mask in Keras."""
    have = [_source(o, keras=True) for o in outs]
    if not layer.supports_masking:
        if previous[0]:
            warnings.warn(f"Layer '{layer.name}' (of type {type(layer).__name__}) was passed an input with a mask "
                          "attached to it. However, this layer does not support masking and will therefore destroy "
                          "the mask information. Downstream layers will not see the mask.", stacklevel=4)
        return [(h, None) for h in have]
    if all(h is not None for h in have):
        return [(h, None) for h in have]
    masks = layer.compute_mask(inputs, previous[1]())
    flat = [None] * len(outs) if masks is None else (
        list(masks) if isinstance(masks, (list, tuple)) else [masks])
    if len(flat) != len(outs):
        raise ValueError(f"{type(layer).__name__}.compute_mask of layer {layer.name!r} returned {len(flat)} masks for "
                         f"{len(outs)} outputs")
    out = []
    for h, m in zip(have, flat):
        if h is not None or m is None:
            out.append((h, None))
        elif not isinstance(m, KerasTensor):
            raise TypeError(f"{type(layer).__name__}.compute_mask of layer {layer.name!r} must return symbolic "
                            f"tensors computed from its inputs (for example keras.ops.not_equal(inputs, 0)) or None, "
                            f"got {type(m).__name__}")
        elif m.__dict__.get("_mask_of") is not None:   # a mask it was given: its source
            out.append((m.__dict__["_mask_of"], None))
        else:
            out.append((None, m))
    return out


def _drop(t):
    """t as a view carrying no mask (the engine's Reshape has no mask hook)."""
    if sum(d is None for d in t._ps) > 1:
        return Unary("multiply", 1.0)(t)
    return Reshape(tuple(-1 if d is None else d for d in t._ps))(t)


def _carry(layer, outs, wanted):
    """The outputs carrying in the engine what they carry in Keras."""
    new = []
    for o, (src, m) in zip(outs, wanted):
        have = _source(o)
        if m is None and src is have:
            x = o
        elif m is None and src is None:
            x = _drop(o)
        else:
            x = with_mask(o, m if m is not None else mask_tensor(src),
                          f"{type(layer).__name__}.compute_mask of layer {layer.name!r}")
            x._node.__dict__.pop("keras_mask_of", None)
            if m is not None:
                m.__dict__["_mask_of"] = x._node
                x._node.__dict__["_mask_tensors"] = {id(TRACING[0][2]): m}
        x.__dict__["_mask_source"] = _source(x)
        new.append(x)
    return new


def _as_keras_sees(layer, tensors):
    """Inside a custom call, each input of a layer that reads masks made to carry in the engine the mask it
    carries in Keras (MASK_HOOKS)."""
    if not _USER_CALLS or _USER_CALLS[-1] is None or _kind(layer)[0] not in _READERS:
        return tensors
    done = {}
    for t in tensors:
        if isinstance(t, KerasTensor) and id(t) not in done:
            src, have = _source(t, keras=True), _source(t)
            done[id(t)] = t if src is have else _carry(layer, [t], [(src, None)])[0]
    return [done.get(id(t), t) for t in tensors]


def _restructure(v, it):
    if isinstance(v, KerasTensor):
        return next(it)
    if isinstance(v, (list, tuple)):
        return type(v)(_restructure(x, it) for x in v)
    if isinstance(v, dict):
        return {k: _restructure(x, it) for k, x in v.items()}
    return v


def call_custom(layer, inputs, args, kwargs):
    """A custom layer's call traced with Keras's masks (layer.Layer.__call__)."""
    if type(layer).__module__.startswith("boundfit."):   # boundfit's own composites: the engine's kinds decide
        _USER_CALLS.append(None)
        try:
            out = trace_layer(layer, inputs, args, kwargs, layer.build)
        finally:
            _USER_CALLS.pop()
        for o in _flat(out):
            o.__dict__["_mask_source"] = _source(o)
        return out
    if not _flat(inputs):   # (trace_layer says what a call takes)
        return trace_layer(layer, inputs, args, kwargs, layer.build)
    kwargs = dict(kwargs)
    TRACING.append((f"layer {layer.name!r} ({type(layer).__name__})", _flat(inputs)[0], layer))
    try:
        previous = _fill_masks(layer, inputs, args, kwargs)
    finally:
        TRACING.pop()
    _USER_CALLS.append(layer)
    try:
        out = trace_layer(layer, inputs, args, kwargs, layer.build)
    finally:
        _USER_CALLS.pop()
    outs = _flat(out)
    TRACING.append((f"layer {layer.name!r} ({type(layer).__name__})", _flat(inputs)[0], layer))
    try:
        new = _carry(layer, outs, _wanted(layer, inputs, outs, previous))
    finally:
        TRACING.pop()
    if all(a is b for a, b in zip(outs, new)):
        return out
    layer._traced_outputs = new
    calls = layer.__dict__["_traced_calls"]
    calls[-1] = (calls[-1][0], new)
    return _restructure(out, iter(new))


_MASKS["call"] = call_custom
MASK_HOOKS["inputs"] = _as_keras_sees
