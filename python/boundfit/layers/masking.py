"""Masks computed in the graph: SeqMask, the engine's SEQ_MASK (a sequence
given a mask tensor: csrc/core/layers/seq_mask.c), which a recurrent call's
`mask=` argument and Masking put in the graph; the output carries the mask as
Embedding(mask_zero=True)'s output carries its own, so the recurrent layers,
GlobalAveragePooling1D, MultiHeadAttention and the loss downstream read it.
Masking is Keras's, composed: mask = any(x != mask_value, axis=-1), output
x * mask (a Keras composite: one layer in .keras files)."""

import numbers

from .args import engine_kinds
from .emath import Binary, Unary
from .layer import Layer, keras_config
from .reduce import Reduce
from .reshaping import Reshape

(SEQ_MASK,) = engine_kinds("SEQ_MASK")


class SeqMask(Layer):
    """[mask (T,), x (T, ...)] -> x carrying the step mask (mask != 0). Not a Keras layer: .keras files write the
    call it stands for (the recurrent layer's mask= keyword, saving/keras_graph.py)."""
    _base = "seq_mask"
    _n_inputs = "many"

    def spec(self):
        return dict(kind=SEQ_MASK, name=self.name)


def with_mask(x, mask, who):
    """x carrying `mask` (a symbolic tensor of shape (batch, T), T that of x), checked naming `who`."""
    from_ = getattr(mask, "_ps", None)
    if from_ is None:
        raise TypeError(f"{who}: mask must be a symbolic tensor of shape (batch, timesteps) computed in the graph "
                        f"(for example keras.ops.not_equal(ids, 0)), got {type(mask).__name__}")
    if len(from_) != 1 or not x._ps or from_[0] != x._ps[0]:
        raise ValueError(f"{who}: mask must have shape (batch, {x._ps[0] if x._ps else '?'}) (one value per step of "
                         f"the sequence {x.shape}), got {mask.shape}")
    out = SeqMask()([mask, x])
    out._node.keras_mask_of = x   # saving: written as the call's mask= keyword on x
    return out


class Masking(Layer):
    """Keras 3's `Masking(mask_value=0.0)`: steps whose features all equal mask_value are masked (the recurrent
    layers skip them, GlobalAveragePooling1D leaves them out) and set to zero."""
    _base = "masking"

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(mask_value, bool) or not isinstance(mask_value, numbers.Real):
            raise ValueError(f"Masking: mask_value must be a number, got {mask_value!r}")
        self.mask_value = float(mask_value)

    def call(self, inputs):
        ps = inputs._ps
        if len(ps) != 2 or None in ps:
            raise ValueError(f"Masking {self.name!r}: boundfit masks sequences of shape (batch, timesteps, features) "
                             f"with known sizes, got {inputs.shape}")
        keep = Reduce("any", 2, keepdims=True)(Unary("not_equal", self.mask_value)(inputs))   # (T, 1)
        out = Binary("multiply")([inputs, keep])
        return SeqMask()([Reshape((ps[0],))(keep), out])


@keras_config(Masking)
def _masking_config(l):
    return dict(mask_value=l.mask_value)
