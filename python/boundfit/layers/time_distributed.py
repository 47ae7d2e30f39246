"""TimeDistributed as Keras 3 defines it (the layer on every time step of
(batch, T, ...) inputs), composed without merging the batch and time axes:
the engine's batch axis is its micro-batch and data-parallel axis, so a
(batch * T, ...) reshape would mix samples across micro-batches. Instead:

- a layer that acts on the last axis of any rank (Dense, Activation,
  Dropout, ReLU, LeakyReLU, ELU) is called on the (T, ...) samples as they
  are: the same numbers as on each step;
- Flatten flattens each step: a Reshape to (T, prod(rest));
- any other layer (Conv2D, pooling, frozen BatchNormalization, Conv1D ...)
  is called once per step on x[:, t] (a Slice), sharing its weights, and
  the steps are stacked back (Concatenate): T calls of the layer, so T is
  capped (MAX_STEPS).

BatchNormalization in training would take its statistics over batch * T
rows in Keras, over each step here: refused by name unless frozen
(trainable=False, inference mode as in Keras). Weights: the inner layer's
(Keras keeps them under the wrapper's `layer/`)."""

from .activation import ELU, LeakyReLU, ReLU
from .core import Activation, Dense
from .layer import Layer, keras_config, keras_object, layer_config
from .merge import Concatenate
from .normalization import BatchNormalization
from .regularization import Dropout
from .reshaping import Flatten, Reshape, Slice

_ROWWISE = (Dense, Activation, Dropout, ReLU, LeakyReLU, ELU)
MAX_STEPS = 64


class TimeDistributed(Layer):
    """Keras 3's `TimeDistributed(layer)`: `layer` on every time step of (batch, T, ...) inputs, with one set of
    weights."""
    _base = "time_distributed"
    _config_sublayer = True   # saving/config.py: its `layer` config becomes a layer first

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(layer, Layer):
            raise ValueError(f"TimeDistributed: layer must be a Layer instance, got {layer!r}")
        self.layer = layer

    def _keras_var_groups(self, n):
        return [("layer/vars", n)]

    def _refuse(self, why):
        raise NotImplementedError(f"TimeDistributed {self.name!r}: cannot run {type(self.layer).__name__} "
                                  f"{self.layer.name!r} on each time step: {why}")

    def call(self, inputs, training=None):
        ps = inputs._ps
        if len(ps) < 2:
            raise ValueError(f"TimeDistributed {self.name!r}: inputs of shape (batch, T, ...) are needed, got "
                             f"{inputs.shape}")
        inner = self.layer
        kw = {} if training is None or not inner._mode_dependent else {"training": training}
        if isinstance(inner, _ROWWISE):
            return inner(inputs, **kw)
        if isinstance(inner, Flatten):
            rest = ps[1:]
            if None in rest:
                self._refuse(f"a step of shape {rest} has a variable axis")
            n = 1
            for d in rest:
                n *= d
            return Reshape((-1 if ps[0] is None else ps[0], n))(inputs)
        if isinstance(inner, BatchNormalization) and inner.trainable:
            self._refuse("in training Keras normalizes over batch * T rows, boundfit's batch axis is the samples' "
                         "alone; freeze it (trainable=False: inference mode, as in Keras) or put the "
                         "BatchNormalization outside TimeDistributed")
        if ps[0] is None or ps[0] > MAX_STEPS:
            self._refuse(f"it is called once per step, on at most {MAX_STEPS} known steps, got T={ps[0]}; use a "
                         "layer that takes (T, ...) samples itself (Conv1D, Dense), or Reshape first")
        steps = []
        for t in range(ps[0]):
            step = Reshape(tuple(-1 if d is None else d for d in ps[1:]))(
                Slice((t,) + (0,) * (len(ps) - 1), (1,) * len(ps), (1,) + (-1,) * (len(ps) - 1))(inputs))
            y = inner(step, **kw)
            steps.append(Reshape((1,) + tuple(-1 if d is None else d for d in y._ps))(y))
        return steps[0] if len(steps) == 1 else Concatenate(axis=1)(steps)


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(TimeDistributed)
def _time_distributed_config(l):
    inner = keras_object("keras.layers", type(l.layer).__name__, layer_config(l.layer))
    ins = l.__dict__.get("_traced_calls")
    if ins:
        inner["build_config"] = {"input_shape": [None] + list(ins[0][0][0]._ps[1:])}
    return dict(layer=inner)
