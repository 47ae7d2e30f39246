"""MultiHeadAttention (Keras 3 names, arguments, defaults and weight
layouts), described to the engine as a spec dict (kinds match
csrc/core/model.h). The engine computes it: csrc/core/run_attn.c with the
backends' attention_* ops."""

import numpy as np

from .. import initializers
from .args import _positive_int, engine_kinds
from .index import Gather
from .layer import Layer, keras_config
from .node import KerasTensor, MaskTensor, Node, keras_masks, output_shape, train_mode
from .reshaping import Const
from .variable import VariableView

MHA, = engine_kinds("MHA")



def check_inputs(name, query, value, key, attention_mask):
    """An attention layer's call: symbolic (batch, T, dim) query / value / key (value when None) and a (batch, Tq, Tk)
    attention_mask; returns the key."""
    named = dict(query=query, value=value, key=key, attention_mask=attention_mask)
    for arg, t in named.items():
        if t is not None and not isinstance(t, KerasTensor):
            raise TypeError(f"{name}: {arg} must be a symbolic tensor (from boundfit.Input or a layer), got "
                            f"{type(t).__name__}; to compute on arrays, build a Model and call predict()")
    key = value if key is None else key
    for arg, t in (("query", query), ("value", value), ("key", key)):
        if len(t._ps) != 2:
            raise ValueError(f"{name}: {arg} must have shape (batch, T, dim), got {t.shape}")
    if key._ps[0] != value._ps[0]:
        raise ValueError(f"{name}: key and value must have the same length; key has shape {key.shape}, "
                         f"value has shape {value.shape}")
    if attention_mask is not None and attention_mask._ps != (query._ps[0], value._ps[0]):
        raise ValueError(f"{name}: attention_mask must have shape (batch, {query._ps[0]}, {value._ps[0]}) "
                         f"(query length, key length), got {attention_mask.shape}")
    return key

def _over_queries(attention_mask, query):
    """A (batch, 1, Tk) attention_mask (a padding mask, keras.ops.expand_dims(mask, 1)) broadcast over the query's
    steps as Keras broadcasts it: a Gather of its row."""
    if isinstance(attention_mask, KerasTensor) and isinstance(query, KerasTensor) and len(query._ps) == 2 and \
            len(attention_mask._ps) == 2 and attention_mask._ps[0] == 1 and query._ps[0] not in (None, 1):
        return Gather(0)([attention_mask, Const(np.zeros(query._ps[0], np.int64))(attention_mask)])
    return attention_mask


class MultiHeadAttention(Layer):
    """Keras 3's `MultiHeadAttention(num_heads, key_dim, value_dim=None, dropout=0.0, ...)`: called as mha(query,
    value, key=None, attention_mask=None, use_causal_mask=False) on (batch, T, dim) tensors."""
    _mode_dependent = True   # its dropout
    """Keras 3's MultiHeadAttention on (batch, T, dim) inputs, called as
    `mha(query, value, key=None, attention_mask=None, use_causal_mask=False)`
    in a functional model. Weights (Keras order): query, key, value kernels
    (dim, num_heads, key_dim / value_dim) and biases (num_heads, key_dim /
    value_dim), output kernel (num_heads, value_dim, out) and bias (out,)."""
    _base = "multi_head_attention"

    def _keras_var_groups(self, n):
        """Keras keeps the weights in four EinsumDense sublayers (and writes two empty ones)."""
        per = n // 4
        return [("query_dense/vars", per), ("key_dense/vars", per), ("value_dense/vars", per),
                ("output_dense/vars", per), ("_dropout_layer/vars", 0), ("_softmax/vars", 0)]
    _has_weights = True

    # Keras's EinsumDense sublayers, as views of their variables (the engine's query/kernel: query_dense.kernel)
    query_dense = property(lambda self: VariableView(self, "query"))
    key_dense = property(lambda self: VariableView(self, "key"))
    value_dense = property(lambda self: VariableView(self, "value"))
    output_dense = property(lambda self: VariableView(self, "attention_output"))
    _query_dense, _key_dense, _value_dense, _output_dense = query_dense, key_dense, value_dense, output_dense

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True, output_shape=None,
                 attention_axes=None, sliding_window=None, flash_attention=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, use_gate=False, seed=None, **kwargs):
        self.num_heads = _positive_int(num_heads, "num_heads")
        self.key_dim = _positive_int(key_dim, "key_dim")
        self.value_dim = _positive_int(value_dim, "value_dim", allow_none=True) or key_dim
        super().__init__(**kwargs)
        if not isinstance(dropout, (int, float)) or isinstance(dropout, bool) or not 0.0 <= dropout < 1.0:
            raise ValueError(f"MultiHeadAttention: dropout must be a float in [0, 1), got dropout={dropout!r}")
        self.dropout, self.use_bias, self.seed = float(dropout), bool(use_bias), seed
        if output_shape is not None and not isinstance(output_shape, int):
            try:
                output_shape = tuple(output_shape)
            except TypeError:
                raise ValueError(f"MultiHeadAttention: output_shape must be an int or a tuple, got {output_shape!r}")
            if len(output_shape) != 1:
                raise ValueError(f"MultiHeadAttention: only a one-dimensional output_shape is supported, got "
                                 f"{output_shape!r}")
            output_shape = output_shape[0]
        self.output_shape_arg = None if output_shape is None else _positive_int(output_shape, "output_shape")
        unsupported = dict(attention_axes=(attention_axes, (None, (1,), 1)), sliding_window=(sliding_window, (None,)),
                           flash_attention=(flash_attention, (None, False)), use_gate=(use_gate, (False,)),
                           kernel_regularizer=(kernel_regularizer, (None,)), bias_regularizer=(bias_regularizer, (None,)),
                           activity_regularizer=(activity_regularizer, (None,)),
                           kernel_constraint=(kernel_constraint, (None,)), bias_constraint=(bias_constraint, (None,)))
        for arg, (v, ok) in unsupported.items():
            if (tuple(v) if isinstance(v, list) else v) not in ok:
                raise ValueError(f"MultiHeadAttention: {arg}={v!r} is not supported by boundfit")
        self.kernel_initializer = initializers.get(kernel_initializer, "kernel_initializer")
        self.bias_initializer = initializers.get(bias_initializer, "bias_initializer")
        self._dims = None    # (query, value, key) dims the weights were made for
        self._causal = None  # use_causal_mask of its calls (one value per layer)

    def __call__(self, query, value, key=None, attention_mask=None, use_causal_mask=False, training=None,
                 return_attention_scores=False, query_mask=None, value_mask=None, key_mask=None, **kwargs):
        if kwargs:
            raise TypeError(f"{self.name}: unknown call arguments {sorted(kwargs)}")
        if return_attention_scores:
            raise ValueError(f"{self.name}: return_attention_scores=True is not supported by boundfit")
        if any(m is not None for m in (query_mask, value_mask, key_mask)):
            raise ValueError(f"{self.name}: query_mask / value_mask / key_mask are not supported; pass attention_mask")
        attention_mask = _over_queries(attention_mask, query)
        key = check_inputs(self.name, query, value, key, attention_mask)
        if not isinstance(use_causal_mask, bool):
            raise TypeError(f"{self.name}: use_causal_mask must be a bool, got {use_causal_mask!r}")
        dims = (query._ps[1], value._ps[1], key._ps[1])
        if self._dims is not None and dims != self._dims:
            raise ValueError(f"layer {self.name!r} was built for query / value / key dims {self._dims} and is called "
                             f"on {dims}; a layer called twice shares its weights, so its inputs must agree")
        if self._causal is not None and use_causal_mask != self._causal:
            raise ValueError(f"{self.name}: called again with use_causal_mask={use_causal_mask}; boundfit takes one "
                             "value per layer")
        self._dims, self._causal = dims, use_causal_mask
        query, value, key = keras_masks(self, [query, value, key])
        ins = [query, value, key] + ([attention_mask] if attention_mask is not None else [])
        out = KerasTensor(output_shape(self, [query._ps, value._ps, key._ps]), name=f"{self.name}_output")
        Node(self, ins, [out], train_mode(training, self._mode_dependent))
        return out

    def _keras_call(self, ts):
        """A node's call as Keras writes it in a Functional config: (query, value) positionally, the rest
        by keyword (ts: the node's input tensors, already in the config's form)."""
        kw = {"key": ts[2], "use_causal_mask": bool(self._causal)}
        if len(ts) > 3:
            kw["attention_mask"] = ts[3]
        return {"args": ts[:2], "kwargs": kw}

    def _call_from_keras(self, args, kwargs, tensor):
        """Replay a Keras node: args (query, value[, key]) and keyword arguments, tensors read by `tensor`."""
        given = keras_call_arguments(self, args, kwargs)
        for k in ("query_mask", "value_mask", "key_mask", "training"):
            v = given.pop(k, None)
            if k != "training" and isinstance(v, dict) and isinstance(tensor(v), MaskTensor):
                continue   # a mask Keras propagated from an Embedding; boundfit's graph carries the same one
            if v not in (None, False):
                raise ValueError(f"layer {self.name!r}: the call argument {k} is not supported by boundfit")
        ts = {k: tensor(given[k]) if given.get(k) is not None else None
              for k in ("query", "value", "key", "attention_mask")}
        return self(ts["query"], ts["value"], key=ts["key"], attention_mask=ts["attention_mask"],
                    use_causal_mask=bool(given.get("use_causal_mask", False)),
                    return_attention_scores=bool(given.get("return_attention_scores", False)))

    def _saved_call(self):
        """Call arguments a saved graph replays (saving/graph_file.py); inputs come positionally."""
        return {"use_causal_mask": bool(self._causal)}

    def spec(self):
        return dict(kind=MHA, name=self.name, heads=self.num_heads, key_dim=self.key_dim, value_dim=self.value_dim,
                    out_dim=self.output_shape_arg or 0, causal=int(bool(self._causal)), rate=self.dropout,
                    use_bias=int(self.use_bias),
                    inits=initializers._engine_specs(self.kernel_initializer, self.bias_initializer))


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(MultiHeadAttention)
def _mha_config(l):
    return dict(num_heads=l.num_heads, key_dim=l.key_dim, value_dim=l.value_dim, dropout=l.dropout,
                use_bias=l.use_bias, use_gate=False,
                output_shape=None if l.output_shape_arg is None else [l.output_shape_arg],
                attention_axes=[1] if l._dims is not None else None, sliding_window=None,
                kernel_initializer=initializers.serialize(l.kernel_initializer),
                bias_initializer=initializers.serialize(l.bias_initializer), kernel_regularizer=None,
                bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                seed=l.seed)


_CALL_NAMES = ("query", "value", "key", "query_mask", "value_mask", "key_mask", "attention_mask",
               "return_attention_scores", "training", "use_causal_mask")


def keras_call_arguments(layer, args, kwargs):
    """{argument: value} of a Keras attention node's call (MultiHeadAttention's, GroupQueryAttention's): its
    positional and keyword arguments by name, an unknown or repeated one refused naming the layer"""
    given = dict(zip(_CALL_NAMES, args))
    for k, v in kwargs.items():
        if k not in _CALL_NAMES or k in given:
            raise ValueError(f"layer {layer.name!r}: the call argument {k}={v!r} is not supported by boundfit")
        given[k] = v
    return given
