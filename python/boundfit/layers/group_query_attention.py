"""GroupQueryAttention (Keras 3's GroupedQueryAttention, exported as
keras.layers.GroupQueryAttention), composed from the engine's primitives
(compose.py): EinsumDense projections named and ordered as Keras's (query,
key, gate (use_gate), value, attention_output), the query scaled by
1/sqrt(head_dim); per key/value head g, the query heads of its group as one
(group * T, head_dim) matrix: scores by MatMul with that head's keys (the
repeat of keys and values over the group is never materialized), the masks
(attention_mask, use_causal_mask, sliding_window: Keras's where(mask, s,
-1e9), softmax, where(mask, w, 0)), dropout of the weights in fit, MatMul
with the values; the heads concatenated back and projected. Scores
(return_attention_scores) are Keras's (batch, heads, T, S). flash_attention
changes nothing computed (accepted); the masks an Embedding(mask_zero=True)
carries are refused by name, as Attention does (pass attention_mask)."""

import math
import numbers

from .compose import graph_seed
from .core import Activation
from .dot_attention import _mask_zero_source, _score_mask
from .draw import RandomDraw
from .einsum_dense import EinsumDense
from .emath import Binary, MatMul, Unary
from .index import Scan
from .layer import Layer, keras_config
from .merge import Concatenate
from .attention import check_inputs, keras_call_arguments
from .reshaping import Permute, Reshape, Slice
from .spatial_dropout import _checked_seed
from .. import constraints, initializers, regularizers

_MASKED = 1.0e9


def _size(v, argument):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
        raise ValueError(f"GroupQueryAttention: {argument} must be an int >= 1, got {argument}={v!r}")
    return int(v)


class GroupQueryAttention(Layer):
    """Keras 3's `GroupQueryAttention(head_dim, num_query_heads, num_key_value_heads, dropout=0.0, use_bias=True,
    sliding_window=None, flash_attention=None, ..., use_gate=False, seed=None)`: called as gqa(query, value,
    key=None, attention_mask=None, return_attention_scores=False, training=None, use_causal_mask=False) on
    (batch, T, dim) tensors."""
    _base = "grouped_query_attention"
    _keras_class_path = "grouped_query_attention"   # Keras's class is GroupedQueryAttention (saving_lib's paths)

    def __init__(self, head_dim, num_query_heads, num_key_value_heads, dropout=0.0, use_bias=True,
                 sliding_window=None, flash_attention=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, use_gate=False, seed=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.head_dim = _size(head_dim, "head_dim")
        self.num_query_heads = _size(num_query_heads, "num_query_heads")
        self.num_key_value_heads = _size(num_key_value_heads, "num_key_value_heads")
        if self.num_query_heads % self.num_key_value_heads:
            raise ValueError(f"GroupQueryAttention: num_query_heads must be divisible by num_key_value_heads, got "
                             f"num_query_heads={num_query_heads}, num_key_value_heads={num_key_value_heads}")
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real) or not 0.0 <= dropout < 1.0:
            raise ValueError(f"GroupQueryAttention: dropout must be a number in [0, 1), got dropout={dropout!r}")
        if sliding_window is not None and (isinstance(sliding_window, bool) or not isinstance(
                sliding_window, int) or sliding_window <= 0):
            raise ValueError(f"GroupQueryAttention: sliding_window must be None or a positive integer, got "
                             f"sliding_window={sliding_window!r}")
        if flash_attention not in (None, True, False):
            raise ValueError(f"GroupQueryAttention: flash_attention must be None or a bool, got "
                             f"flash_attention={flash_attention!r}")
        if flash_attention and dropout > 0.0:
            raise ValueError("GroupQueryAttention: dropout is not supported when flash attention is enabled; set "
                             "dropout=0.0 to use flash_attention=True")
        self.dropout, self.use_bias, self.use_gate = float(dropout), bool(use_bias), bool(use_gate)
        self.sliding_window, self.flash_attention = sliding_window, flash_attention
        self.seed = _checked_seed("GroupQueryAttention", seed)
        self.kernel_initializer = initializers.get(kernel_initializer, "kernel_initializer")
        self.bias_initializer = initializers.get(bias_initializer, "bias_initializer")
        self.kernel_regularizer = regularizers.get(kernel_regularizer, "kernel_regularizer")
        self.bias_regularizer = regularizers.get(bias_regularizer, "bias_regularizer")
        self.kernel_constraint = constraints.get(kernel_constraint, "kernel_constraint")
        self.bias_constraint = constraints.get(bias_constraint, "bias_constraint")
        self._layout = None   # (has key, has attention_mask, use_causal_mask, return_attention_scores)

    def __call__(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None, attention_mask=None,
                 return_attention_scores=False, training=None, use_causal_mask=False):
        for arg, v in (("query_mask", query_mask), ("value_mask", value_mask), ("key_mask", key_mask)):
            if v is not None:
                raise ValueError(f"{self.name}: {arg} is not supported by boundfit; pass attention_mask")
        for arg, v in (("return_attention_scores", return_attention_scores), ("use_causal_mask", use_causal_mask)):
            if not isinstance(v, bool):
                raise TypeError(f"{self.name}: {arg} must be a bool, got {arg}={v!r}")
        if return_attention_scores and self.flash_attention:
            raise ValueError(f"{self.name}: returning attention scores is not supported when flash attention is "
                             "enabled; leave flash_attention None or False")
        check_inputs(self.name, query, value, key, attention_mask)
        if query._ps[1] != value._ps[1]:
            raise ValueError(f"{self.name}: the last dimension of query and value must be equal, got query shape "
                             f"{query.shape} and value shape {value.shape}")
        for t, what in ((query, "query"), (value, "value")):
            source = _mask_zero_source(t)
            if source is not None:
                raise NotImplementedError(
                    f"GroupQueryAttention {self.name!r}: its {what} comes from Embedding {source!r} with "
                    "mask_zero=True, whose mask Keras would apply here and boundfit does not carry into this layer; "
                    "pass the mask as attention_mask (batch, T, S)")
        layout = (key is not None, attention_mask is not None, use_causal_mask, return_attention_scores)
        if self._layout is not None and layout != self._layout:
            raise ValueError(f"GroupQueryAttention {self.name!r}: called again with another key, attention_mask, "
                             "use_causal_mask or return_attention_scores; boundfit takes one call layout per layer")
        self._layout = layout
        ins = [query, value] + ([key] if key is not None else []) + ([attention_mask] if attention_mask is not None
                                                                      else [])
        return super().__call__(ins, **({} if training is None else {"training": training}))

    def _dense(self, equation, shape, bias_axes, name, activation=None):
        return EinsumDense(equation, shape, activation=activation, bias_axes=bias_axes if self.use_bias else None,
                           kernel_initializer=self.kernel_initializer, bias_initializer=self.bias_initializer,
                           kernel_regularizer=self.kernel_regularizer, bias_regularizer=self.bias_regularizer,
                           kernel_constraint=self.kernel_constraint, bias_constraint=self.bias_constraint,
                           name=f"{self.name}_{name}")

    def build(self, input_shape):
        dim, H, G, D = input_shape[0][-1], self.num_query_heads, self.num_key_value_heads, self.head_dim
        self.query_dense = self._dense("bqm,muh->bquh", (None, H, D), "uh", "query")
        self.key_dense = self._dense("bkm,mvh->bkvh", (None, G, D), "vh", "key")
        self.gate_dense = self._dense("bqm,muh->bquh", (None, H, D), "uh", "gate", "sigmoid") if self.use_gate \
            else None
        self.value_dense = self._dense("bkm,mvh->bkvh", (None, G, D), "vh", "value")
        self.output_dense = self._dense("bquh,uhm->bqm", (None, dim), "m", "attention_output")

    def _keep(self, ones_ts):
        """1 where a score counts (T, S): attention_mask, the causal mask, the sliding window; None without any"""
        has_key, has_mask, causal, _ = self._layout
        keep = _score_mask(ones_ts, None, causal) if causal else None
        if self.sliding_window is not None:
            ones = Unary("full_like", 1.0)(ones_ts)
            dist = Unary("abs")(Binary("subtract")([Scan(0)(ones), Scan(1)(ones)]))
            band = Unary("less", float(self.sliding_window))(dist)
            keep = band if keep is None else Binary("multiply")([keep, band])
        return keep

    def call(self, inputs, training=False):
        has_key, has_mask, causal, with_scores = self._layout
        query, value = inputs[0], inputs[1]
        key = inputs[2] if has_key else value
        mask = inputs[2 + has_key] if has_mask else None
        T, S, H, G, D = query._ps[0], value._ps[0], self.num_query_heads, self.num_key_value_heads, self.head_dim
        r = H // G
        gate = self.gate_dense(query) if self.use_gate else None
        q = Permute((2, 1, 3))(Unary("multiply", 1.0 / math.sqrt(float(D)))(self.query_dense(query)))   # (H, T, D)
        k = Permute((2, 1, 3))(self.key_dense(key))                                                    # (G, S, D)
        v = Permute((2, 1, 3))(self.value_dense(value))                                                # (G, S, D)
        keep = None
        outs, scores = [], []
        for g in range(G):
            qg = Reshape((r * T, D))(Slice((g * r, 0, 0), (1, 1, 1), (r, T, D))(q) if G > 1 else q)
            kg = Reshape((S, D))(Slice((g, 0, 0), (1, 1, 1), (1, S, D))(k) if G > 1 else k)
            vg = Reshape((S, D))(Slice((g, 0, 0), (1, 1, 1), (1, S, D))(v) if G > 1 else v)
            s = Reshape((r, T, S))(MatMul(transpose_b=True)([qg, kg]))                              # (r, T, S)
            if g == 0:
                keep = self._keep(Reshape((T, S))(Slice((0, 0, 0), (1, 1, 1), (1, T, S))(s)))
                if mask is not None:
                    m = Unary("not_equal", 0.0)(mask)
                    keep = m if keep is None else Binary("multiply")([keep, m])
                keep = Reshape((1, T, S))(keep) if keep is not None else None
            if keep is not None:   # where(keep, s, -1e9)
                s = Binary("add")([Binary("multiply")([s, keep]), Unary("multiply", _MASKED)(
                    Unary("subtract", 1.0)(keep))])
            w = Activation("softmax")(s)
            if keep is not None:   # where(keep, w, 0): a fully masked row gives zeros
                w = Binary("multiply")([w, keep])
            scores.append(w)
            if training and self.dropout > 0.0:
                w = Binary("multiply")([w, RandomDraw(w._ps, "dropout", self.dropout, 1.0 / (1.0 - self.dropout),
                                                      seed=graph_seed(self.seed, g))(w)])
            outs.append(Reshape((r, T, D))(MatMul()([Reshape((r * T, S))(w), vg])))             # (r, T, D)
        o = Permute((2, 1, 3))(Concatenate(axis=1)(outs) if G > 1 else outs[0])                # (T, H, D)
        if gate is not None:
            o = Binary("multiply")([o, gate])
        out = self.output_dense(o)
        if not with_scores:
            return out
        return out, (Concatenate(axis=1)(scores) if G > 1 else scores[0])                      # (H, T, S)

    def _keras_call(self, ts):
        """The node as Keras writes it: (query, value) positionally, the rest by keyword."""
        has_key, has_mask, causal, with_scores = self._layout
        kw = {"use_causal_mask": causal}
        if has_key:
            kw["key"] = ts[2]
        if has_mask:
            kw["attention_mask"] = ts[2 + has_key]
        if with_scores:
            kw["return_attention_scores"] = True
        return {"args": ts[:2], "kwargs": kw}

    def _call_from_keras(self, args, kwargs, tensor):
        given = keras_call_arguments(self, args, kwargs)
        ts = {k: tensor(given[k]) if isinstance(given.get(k), dict) else None
              for k in ("query", "value", "key", "attention_mask")}
        return self(ts["query"], ts["value"], key=ts["key"], attention_mask=ts["attention_mask"],
                    use_causal_mask=bool(given.get("use_causal_mask", False)),
                    return_attention_scores=bool(given.get("return_attention_scores", False)))

    # weights: the EinsumDense sublayers' in Keras's order and shapes; Keras files: each in its sublayer's vars
    def _subs(self):
        return [(n, getattr(self, f"{n}_dense")) for n in ("query", "key", "gate", "value", "output")
                if getattr(self, f"{n}_dense", None) is not None]

    def _keras_var_groups(self, n):
        return [(f"_{name}_dense/vars", len(l._shapes())) for name, l in self._subs()] + \
            [("_softmax/vars", 0), ("_dropout_layer/vars", 0)]

    def _to_keras_vars(self, ws):
        out, k = [], 0
        for _, l in self._subs():
            n = len(l._shapes())
            out += l._to_keras_vars(ws[k:k + n])
            k += n
        return out

    def _from_keras_vars(self, got, want):
        out, k = [], 0
        for _, l in self._subs():
            n = len(l._shapes())
            out += l._from_keras_vars(got[k:k + n], want[k:k + n])
            k += n
        return out


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(GroupQueryAttention)
def _gqa_config(l):
    return dict(head_dim=l.head_dim, num_query_heads=l.num_query_heads, num_key_value_heads=l.num_key_value_heads,
                use_bias=l.use_bias, use_gate=l.use_gate, sliding_window=l.sliding_window, dropout=l.dropout,
                kernel_initializer=initializers.serialize(l.kernel_initializer),
                bias_initializer=initializers.serialize(l.bias_initializer),
                kernel_regularizer=regularizers.serialize(l.kernel_regularizer),
                bias_regularizer=regularizers.serialize(l.bias_regularizer),
                activity_regularizer=regularizers.serialize(l.activity_regularizer),
                kernel_constraint=constraints.serialize(l.kernel_constraint),
                bias_constraint=constraints.serialize(l.bias_constraint), seed=l.seed)
