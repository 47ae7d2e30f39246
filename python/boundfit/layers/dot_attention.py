"""Attention (Luong: dot-product or concat scores) and AdditiveAttention
(Bahdanau) as Keras 3 writes them in keras.ops, composed from the engine's
primitives (compose.py): scores by MatMul (dot) or broadcast add, tanh and a
sum over the features (concat, additive); the masks (value_mask, the causal
mask, built as Keras does from cumsums of ones) subtract 1e9 from masked
scores; softmax over the keys; dropout of the weights in fit; MatMul with the
values; query_mask zeroes masked query steps. Weights in Keras's order:
Attention's scale and concat_score_weight (scalars: shape () in Keras, (1,)
in the engine), AdditiveAttention's scale (dim,).

Masks are tensors of 0 / 1 given as mask=[query_mask, value_mask]; the masks
an Embedding(mask_zero=True) carries are not read: a query or value that may
carry one (a sequence downstream of such an Embedding) in a call without mask= is
refused by name, where Keras would apply it (a mask= given replaces the
carried masks, in Keras too)."""

import numbers

import numpy as np

from .compose import KerasShapedWeights, graph_seed, weight
from .core import Activation
from .draw import RandomDraw
from .emath import Binary, MatMul, Unary
from .index import Scan
from .layer import Layer, keras_config
from .node import KerasTensor
from .reduce import Reduce
from .reshaping import Reshape
from .spatial_dropout import _checked_seed

_MASKED = 1.0e9   # Keras subtracts it from masked scores (float32)


def _mask_zero_source(t):
    """The name of an Embedding(mask_zero=True) upstream of sequence t (through tensors with a step axis), or None"""
    seen, todo = set(), [t]
    while todo:
        t = todo.pop()
        node = t._node
        if node is None or id(node) in seen or len(t._ps) < 2:
            continue
        seen.add(id(node))
        if getattr(node.layer, "mask_zero", False):
            return node.layer.name
        todo.extend(x for x in node.inputs if isinstance(x, KerasTensor))
    return None


def _checked_call(layer, inputs, mask):
    """[query, value(, key)] and the masks (query_mask, value_mask), each a symbolic tensor or None"""
    cls = type(layer).__name__
    if not isinstance(inputs, (list, tuple)) or not 2 <= len(inputs) <= 3:
        raise ValueError(f"{cls} {layer.name!r}: called on a list [query, value] or [query, value, key], got "
                         f"{type(inputs).__name__}{'' if not isinstance(inputs, (list, tuple)) else ' of ' + str(len(inputs))}")
    for t in inputs:
        if not isinstance(t, KerasTensor) or len(t._ps) != 2:
            raise ValueError(f"{cls} {layer.name!r}: query, value and key must be symbolic tensors of shape "
                             f"(batch, T, dim), got {getattr(t, 'shape', type(t).__name__)}")
    q, v = inputs[0], inputs[1]
    k = inputs[2] if len(inputs) > 2 else v
    if q._ps[1] != k._ps[1] or k._ps[0] != v._ps[0]:
        raise ValueError(f"{cls} {layer.name!r}: query {q.shape} and key {k.shape} need one dim, key and value "
                         f"{v.shape} one length")
    if mask is None:
        return list(inputs), (None, None)
    if not isinstance(mask, (list, tuple)) or len(mask) != 2:
        raise ValueError(f"{cls} {layer.name!r}: mask must be a list [query_mask, value_mask], got {mask!r}")
    for m, t, what in zip(mask, (q, v), ("query_mask", "value_mask")):
        if m is not None and (not isinstance(m, KerasTensor) or m._ps != t._ps[:1]):
            raise ValueError(f"{cls} {layer.name!r}: mask: {what} must be None or a symbolic tensor of 0 / 1 of "
                             f"shape (batch, {t._ps[0]}), got {getattr(m, 'shape', m)!r}")
    return list(inputs), tuple(mask)


class Attention(KerasShapedWeights, Layer):
    """Keras 3's `Attention(use_scale=False, score_mode='dot', dropout=0.0, seed=None)`: called on
    [query, value] or [query, value, key] ((batch, Tq, dim), (batch, Tv, dim)), with mask=[query_mask,
    value_mask] (0 / 1 tensors), return_attention_scores=, use_causal_mask=, training=."""
    _base = "attention"
    _n_inputs = "many"
    _modes = ("dot", "concat")

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        cls = type(self).__name__
        if score_mode not in self._modes:
            raise ValueError(f"{cls}: score_mode must be one of {self._modes}, got score_mode={score_mode!r}")
        if not isinstance(use_scale, (bool, np.bool_)):
            raise ValueError(f"{cls}: use_scale must be a bool, got use_scale={use_scale!r}")
        self.use_scale, self.score_mode = bool(use_scale), score_mode
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real) or not 0.0 <= dropout < 1.0:
            raise ValueError(f"{cls}: dropout must be a number in [0, 1), got dropout={dropout!r}")
        self.dropout = float(dropout)
        self.seed = _checked_seed(cls, seed)
        self._layout = None   # (inputs, has query_mask, has value_mask, use_causal_mask, return_attention_scores)

    def __call__(self, inputs, mask=None, training=None, return_attention_scores=False, use_causal_mask=False):
        inputs, masks = _checked_call(self, inputs, mask)
        for arg, v in (("return_attention_scores", return_attention_scores), ("use_causal_mask", use_causal_mask)):
            if not isinstance(v, bool):
                raise TypeError(f"{self.name}: {arg} must be a bool, got {v!r}")
        layout = (len(inputs), masks[0] is not None, masks[1] is not None, use_causal_mask, return_attention_scores)
        if self._layout is not None and layout != self._layout:
            raise ValueError(f"{type(self).__name__} {self.name!r}: called again with other inputs, masks, "
                             "use_causal_mask or return_attention_scores; boundfit takes one call layout per layer")
        self._layout = layout
        for t, m, what in ((inputs[0], masks[0], "query"), (inputs[1], masks[1], "value")):
            source = _mask_zero_source(t) if mask is None else None   # a mask= given is Keras's, whole
            if source is not None:
                raise NotImplementedError(
                    f"{type(self).__name__} {self.name!r}: its {what} comes from Embedding {source!r} with "
                    "mask_zero=True, whose mask Keras would apply here and boundfit does not carry into this layer; "
                    f"pass the mask as a tensor: mask=[query_mask, value_mask] (e.g. ops.not_equal(ids, 0))")
        flat = inputs + [m for m in masks if m is not None]
        return super().__call__(flat, **({} if training is None else {"training": training}))

    def build(self, input_shape):
        self.scale = weight(self, "scale", (1,), "ones", keras_shape=()) if self.use_scale else None
        self.concat_score_weight = weight(self, "concat_score_weight", (1,), "ones", keras_shape=()) \
            if self.score_mode == "concat" else None

    def _scores(self, q, k):   # (Tq, Tv)
        if self.score_mode == "dot":
            s = MatMul(transpose_b=True)([q, k])
            return Binary("multiply")([s, self.scale(s)]) if self.scale is not None else s
        s = _pairs(q, k)                                                                 # (Tq, Tv, dim)
        if self.scale is not None:
            s = Binary("multiply")([self.scale(s), s])
        s = Reduce("sum", 3)(Unary("tanh")(s))
        return Binary("multiply")([self.concat_score_weight(s), s])

    def call(self, inputs, training=False):
        n, has_q, has_v, causal, with_scores = self._layout
        q, v = inputs[0], inputs[1]
        k = inputs[2] if n > 2 else v
        q_mask = inputs[n] if has_q else None
        v_mask = inputs[n + has_q] if has_v else None
        scores = self._scores(q, k)
        keep = _score_mask(scores, v_mask, causal)
        if keep is not None:   # scores - 1e9 where masked
            pad = Unary("multiply", _MASKED)(Unary("subtract", 1.0, left=True)(keep))
            scores = Binary("subtract")([scores, pad])
        w = Activation("softmax")(scores)
        if training and self.dropout > 0.0:
            keep_w = RandomDraw(w._ps, "dropout", self.dropout, 1.0 / (1.0 - self.dropout),
                                seed=graph_seed(self.seed))(w)
            w = Binary("multiply")([w, keep_w])
        out = MatMul()([w, v])
        if q_mask is not None:
            out = Binary("multiply")([out, Reshape((q._ps[0], 1))(q_mask)])
        return (out, w) if with_scores else out

    def _keras_call(self, ts):
        """The node as Keras writes it: [query, value(, key)], the masks and flags by keyword."""
        n, has_q, has_v, causal, with_scores = self._layout
        kw = {}
        if has_q or has_v:
            kw["mask"] = [ts[n] if has_q else None, ts[n + has_q] if has_v else None]
        if causal:
            kw["use_causal_mask"] = True
        if with_scores:
            kw["return_attention_scores"] = True
        return {"args": [ts[:n]], "kwargs": kw}

    def _call_from_keras(self, args, kwargs, tensor):
        kwargs = dict(kwargs)
        extra = sorted(set(kwargs) - {"mask", "training", "use_causal_mask", "return_attention_scores"})
        if len(args) != 1 or extra:
            raise ValueError(f"layer {self.name!r}: the call {args!r} {extra} is not one boundfit can rebuild")
        mask = kwargs.get("mask")
        masks = None if mask is None else [None if m is None else tensor(m) for m in mask]
        training = kwargs.get("training")
        return self([tensor(t) for t in args[0]], mask=masks, training=training if training else None,
                    use_causal_mask=bool(kwargs.get("use_causal_mask", False)),
                    return_attention_scores=bool(kwargs.get("return_attention_scores", False)))


class AdditiveAttention(Attention):
    """Keras 3's `AdditiveAttention(use_scale=True, dropout=0.0, seed=None)` (Bahdanau): scores sum(scale * tanh(q + k))
    over the features, scale (dim,); called as Attention."""
    _base = "additive_attention"
    _modes = ("dot",)

    def __init__(self, use_scale=True, dropout=0.0, seed=None, **kwargs):
        super().__init__(use_scale=use_scale, dropout=dropout, seed=seed, **kwargs)

    def build(self, input_shape):
        dim = input_shape[0][-1]
        self.scale = weight(self, "scale", (dim,), "glorot_uniform") if self.use_scale else None

    def _scores(self, q, k):
        s = Unary("tanh")(_pairs(q, k))                                                  # (Tq, Tv, dim)
        if self.scale is not None:
            s = Binary("multiply")([self.scale(s), s])
        return Reduce("sum", 3)(s)


def _pairs(q, k):
    """q + k of every query and key step: (Tq, 1, dim) + (1, Tv, dim) -> (Tq, Tv, dim)"""
    return Binary("add")([Reshape((q._ps[0], 1, q._ps[1]))(q), Reshape((1,) + tuple(k._ps))(k)])


def _score_mask(scores, v_mask, causal):
    """1 where a score counts, 0 where it is masked (Tq, Tv): the value mask (1, Tv) and, use_causal_mask, the
    causal mask row >= column (Keras's: cumsums of ones); None without either"""
    keep = None
    if causal:
        ones = Unary("full_like", 1.0)(scores)
        keep = Binary("greater_equal")([Scan(0)(ones), Scan(1)(ones)])
    if v_mask is not None:
        vm = Reshape((1, v_mask._ps[0]))(v_mask)
        keep = vm if keep is None else Binary("multiply")([keep, vm])
    return keep


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(Attention)
def _attention_config(l):
    return dict(use_scale=l.use_scale, score_mode=l.score_mode, dropout=l.dropout, seed=l.seed)


@keras_config(AdditiveAttention)
def _additive_attention_config(l):
    return dict(use_scale=l.use_scale, dropout=l.dropout, seed=l.seed)
