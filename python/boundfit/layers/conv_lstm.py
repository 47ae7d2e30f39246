"""ConvLSTM1D / ConvLSTM2D / ConvLSTM3D as Keras 3 defines them
(keras/src/layers/rnn/conv_lstm.py), composed from the engine's convolution,
slice and elementwise kinds (compose.py's way): no kernel of their own.

A (batch, T, *spatial, C) sequence is unrolled step by step. Step t:
    zx = conv(x[:, t], kernel)                       (S', 4F), the layer's strides / padding / dilation
    z  = zx + conv(h, recurrent_kernel) + bias       recurrent conv: strides 1, padding 'same'
    i, f, g, o = z[..., :F], z[..., F:2F], z[..., 2F:3F], z[..., 3F:]   (Keras's gate order)
    c = ract(f) * c + ract(i) * act(g);  h = ract(o) * act(c)
The input convolution is one Conv1D / Conv2D / Conv3D (no bias) called on
every step, the recurrent one another of the same kind holding the bias, so
the engine's weights come in Keras's order: kernel, recurrent_kernel, bias.
With no initial_state the first step has h = c = 0: its recurrent conv is
taken of zeros (the bias alone), and f * c is skipped.

Each step is ~18 engine nodes, so T is capped at MAX_STEPS (refused by name
beyond). dropout / recurrent_dropout > 0, stateful=True, masks and
data_format='channels_first' are refused by name; a dilation_rate other than
1 is refused for 2D / 3D (the engine's Conv2D / Conv3D have none).
ConvLSTM3D runs on the CPU only (Conv3D's kind). Keras files hold each as
the one Keras layer, its weights under `cell/vars`."""

from .. import activations, constraints, initializers, regularizers
from .args import _filters, _padding, _seed, _sizes
from .conv import Conv1D, Conv2D, Conv3D
from .core import Activation, Identity
from .emath import Binary, Unary
from .eager import call_eagerly, is_array_call
from .layer import Layer, keras_config
from .merge import Concatenate
from .node import KerasTensor, trace_layer
from .reshaping import Reshape, Slice

MAX_STEPS = 512      # ~18 nodes a step: the graph stays well under the engine's layer limit
_MAX_CONCAT = 256    # the engine's inputs per node (BF_MAX_NODE_IN)


class _ForgetBias(initializers.Initializer):
    """unit_forget_bias: the bias drawn by `base` over its 4F entries, its forget gate's F set to 1 once the
    engine has drawn it (models/building.py _array_initializers calls _fill)."""

    def __init__(self, base, filters):
        self.base, self.filters = base, filters

    def _engine(self):
        return self.base._engine()

    def _fill(self, w):
        w = w.copy()
        w[self.filters:2 * self.filters] = 1.0
        return w

    def get_config(self):
        return self.base.get_config()


class _ConvLSTM(Layer):
    """ConvLSTM over (batch, T, *spatial, C) sequences with `rank` spatial axes."""
    _rank, _conv = None, None

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, seed=None, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, zero_output_for_mask=False, **kwargs):
        super().__init__(**kwargs)
        cls, n = type(self).__name__, self._rank
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{cls}: data_format must be 'channels_last' (boundfit's layout), got {data_format!r}; "
                             "transpose the channels to the last axis (layers.Permute) first")
        self.filters = _filters(cls, filters)
        self.kernel_size = _sizes(cls, "kernel_size", kernel_size, n)
        self.strides = _sizes(cls, "strides", strides, n)
        self.padding = _padding(padding)
        self.dilation_rate = _sizes(cls, "dilation_rate", dilation_rate, n)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{cls}: strides > 1 is not compatible with dilation_rate > 1 (as in Keras), got "
                             f"strides={self.strides} and dilation_rate={self.dilation_rate}")
        if n > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{cls}: dilation_rate must be 1 (boundfit's Conv{n}D has no dilation; ConvLSTM1D "
                             f"takes one), got {dilation_rate!r}")
        self.activation = activations.get_id(activation, "activation")
        self.recurrent_activation = activations.get_id(recurrent_activation, "recurrent_activation")
        for arg, v in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= float(v) < 1.0:
                raise ValueError(f"{cls}: {arg} must be a number in [0, 1), got {v!r}")
            if v:
                raise NotImplementedError(f"{cls}: {arg}={v!r} is not supported by boundfit's {cls} (its masks are "
                                          "not drawn); leave it 0 and put a SpatialDropout / Dropout layer before or "
                                          "after the layer")
        if stateful:
            raise NotImplementedError(f"{cls}: stateful=True is not supported by boundfit (states kept from batch "
                                      "to batch); pass the states with initial_state= and return_state=True")
        if activity_regularizer is not None:
            raise ValueError(f"{cls}: activity_regularizer is not supported by boundfit's {cls}, got "
                             f"{activity_regularizer!r}; add an ActivityRegularization layer after it")
        if zero_output_for_mask:
            raise ValueError(f"{cls}: zero_output_for_mask=True is not supported (boundfit's {cls} takes no mask)")
        self.use_bias, self.unit_forget_bias = bool(use_bias), bool(unit_forget_bias)
        self.kernel_initializer = initializers.get(kernel_initializer, "kernel_initializer")
        self.recurrent_initializer = initializers.get(recurrent_initializer, "recurrent_initializer")
        self.bias_initializer = initializers.get(bias_initializer, "bias_initializer")
        self.kernel_regularizer = regularizers.get(kernel_regularizer, "kernel_regularizer")
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer, "recurrent_regularizer")
        self.bias_regularizer = regularizers.get(bias_regularizer, "bias_regularizer")
        self.kernel_constraint = constraints.get(kernel_constraint, "kernel_constraint")
        self.recurrent_constraint = constraints.get(recurrent_constraint, "recurrent_constraint")
        self.bias_constraint = constraints.get(bias_constraint, "bias_constraint")
        self.dropout, self.recurrent_dropout, self.seed = 0.0, 0.0, _seed(cls, seed)
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.stateful, self.unroll = bool(go_backwards), False, bool(unroll)
        # the weights, in Keras's order: kernel (input conv), then recurrent_kernel and bias (recurrent conv)
        dil = {"dilation_rate": self.dilation_rate} if n == 1 else {}
        self.input_conv = self._conv(4 * self.filters, self.kernel_size, strides=self.strides, padding=self.padding,
                                     use_bias=False, kernel_initializer=self.kernel_initializer,
                                     kernel_regularizer=self.kernel_regularizer,
                                     kernel_constraint=self.kernel_constraint, name=f"{self.name}_kernel", **dil)
        bias_init = _ForgetBias(self.bias_initializer, self.filters) if self.unit_forget_bias else \
            self.bias_initializer
        self.recurrent_conv = self._conv(4 * self.filters, self.kernel_size, padding="same", use_bias=self.use_bias,
                                         kernel_initializer=self.recurrent_initializer, bias_initializer=bias_init,
                                         kernel_regularizer=self.recurrent_regularizer,
                                         bias_regularizer=self.bias_regularizer,
                                         kernel_constraint=self.recurrent_constraint,
                                         bias_constraint=self.bias_constraint, name=f"{self.name}_recurrent")

    def _keras_var_groups(self, n):
        return [("cell/vars", n)]   # Keras keeps them in the layer's ConvLSTMCell

    def __call__(self, sequences, initial_state=None, mask=None, training=None, **kwargs):
        if is_array_call(sequences):   # on arrays: computed now (layers/eager.py)
            return call_eagerly(self, sequences, initial_state=initial_state, mask=mask, training=training, **kwargs)
        if kwargs:
            raise TypeError(f"{self.name}: unknown call arguments {sorted(kwargs)}")
        if mask is not None:
            raise NotImplementedError(f"{type(self).__name__} {self.name!r}: mask= is not supported by boundfit's "
                                      f"{type(self).__name__}; give it sequences of full length")
        states = [] if initial_state is None else list(initial_state) if isinstance(initial_state, (list, tuple)) \
            else [initial_state]
        if states and (len(states) != 2 or not all(isinstance(s, KerasTensor) for s in states)):
            raise ValueError(f"{self.name}: initial_state must be a list of 2 tensors [h, c], got {initial_state!r}")
        return trace_layer(self, [sequences] + states if states else sequences, (), {}, self.build)

    def _keras_call(self, ts):
        """Keras's call: the sequences, initial_state by keyword"""
        return {"args": ts[:1], "kwargs": {"initial_state": ts[1:]} if len(ts) > 1 else {}}

    def _call_from_keras(self, args, kwargs, tensor):
        given = dict(zip(("sequences", "initial_state", "mask", "training"), args))
        for k, v in kwargs.items():
            if k not in ("sequences", "initial_state", "mask", "training") or k in given:
                raise ValueError(f"layer {self.name!r}: the call argument {k}={v!r} is not supported by boundfit")
            given[k] = v
        if given.get("mask") is not None:
            raise NotImplementedError(f"layer {self.name!r}: a mask is not supported by boundfit's "
                                      f"{type(self).__name__}")
        st = given.get("initial_state")
        st = [tensor(t) for t in st] if st else None
        out = self(tensor(given["sequences"]), initial_state=st)
        return out if isinstance(out, list) else [out]

    def call(self, inputs):
        x, states = (inputs[0], list(inputs[1:])) if isinstance(inputs, list) else (inputs, [])
        cls, ps = type(self).__name__, x._ps
        if len(ps) != self._rank + 2:
            raise ValueError(f"{cls} {self.name!r}: inputs of shape (batch, time, {self._axes()}, channels) are "
                             f"needed, got {x.shape}")
        if None in ps[1:]:
            raise ValueError(f"{cls} {self.name!r}: the spatial and channel axes need known sizes (as in Keras), "
                             f"got {x.shape}")
        T = ps[0]
        if T is None or T > MAX_STEPS:
            raise NotImplementedError(f"{cls} {self.name!r}: boundfit unrolls the steps into the graph, at most "
                                      f"{MAX_STEPS} known steps, got T={T}; cut the sequences into windows of at "
                                      f"most {MAX_STEPS} steps (carrying the states with initial_state= and "
                                      "return_state=True)")
        h = c = None
        if states:
            h, c = states
        outs = []
        for t in (reversed(range(T)) if self.go_backwards else range(T)):
            xt = Reshape(ps[1:])(Slice((t,) + (0,) * (len(ps) - 1), (1,) * len(ps), (1,) + (-1,) * (len(ps) - 1))(x))
            h, c = self._step(xt, h, c)
            if self.return_sequences:
                outs.append(Reshape((1,) + tuple(h._ps))(h))
        if not self.return_state:
            return _stack(outs) if self.return_sequences else h
        return [_stack(outs) if self.return_sequences else Identity()(h), h, c]   # (three distinct tensors)

    def _axes(self):
        return ", ".join(("steps",) if self._rank == 1 else ("rows", "cols") if self._rank == 2 else
                         ("depth", "rows", "cols"))

    def _step(self, xt, h, c):
        """one step: (h, c) of the next step from x[:, t] (S, C); h = c = None: zero states"""
        F, rank = self.filters, self._rank
        zx = self.input_conv(xt)                                     # (S', 4F)
        if h is not None:
            z = Binary("add")([zx, self.recurrent_conv(h)])
        elif self.use_bias:                                          # conv of zeros: the bias
            zero = Unary("full_like", 0.0)(_gate(zx, 0, F, rank))
            z = Binary("add")([zx, self.recurrent_conv(zero)])
        else:
            z = zx
        act, ract = self.activation, self.recurrent_activation
        ig = Binary("multiply")([Activation(ract)(_gate(z, 0, F, rank)), Activation(act)(_gate(z, 2, F, rank))])
        if c is not None:
            ig = Binary("add")([Binary("multiply")([Activation(ract)(_gate(z, 1, F, rank)), c]), ig])
        h = Binary("multiply")([Activation(ract)(_gate(z, 3, F, rank)), Activation(act)(ig)])
        return h, ig


def _gate(z, k, F, rank):
    """gate k (i, f, c, o) of z (S', 4F): z[..., kF:(k+1)F]"""
    return Slice((0,) * rank + (k * F,), (1,) * (rank + 1), (-1,) * rank + (F,))(z)


def _stack(steps):
    """the steps (1, S', F) each, stacked on the time axis; chunks of the engine's most inputs per node"""
    while len(steps) > 1:
        steps = [Concatenate(axis=1)(steps[k:k + _MAX_CONCAT]) if len(steps[k:k + _MAX_CONCAT]) > 1 else steps[k]
                 for k in range(0, len(steps), _MAX_CONCAT)]
    return steps[0]


class ConvLSTM1D(_ConvLSTM):
    """Keras 3's `ConvLSTM1D(filters, kernel_size, strides=1, padding='valid', ...)`: an LSTM whose input and
    recurrent transforms are 1-D convolutions, over (batch, time, steps, channels) sequences."""
    _base, _rank, _conv = "conv_lstm1d", 1, Conv1D


class ConvLSTM2D(_ConvLSTM):
    """Keras 3's `ConvLSTM2D(filters, kernel_size, strides=1, padding='valid', ...)`: an LSTM whose input and
    recurrent transforms are 2-D convolutions, over (batch, time, rows, cols, channels) sequences."""
    _base, _rank, _conv = "conv_lstm2d", 2, Conv2D


class ConvLSTM3D(_ConvLSTM):
    """Keras 3's `ConvLSTM3D(filters, kernel_size, strides=1, padding='valid', ...)`: an LSTM whose input and
    recurrent transforms are 3-D convolutions, over (batch, time, depth, rows, cols, channels) sequences (on
    the CPU: the engine's Conv3D)."""
    _base, _rank, _conv = "conv_lstm3d", 3, Conv3D


# ---- Keras 3 config (layer.keras_config) ----

@keras_config(ConvLSTM1D, ConvLSTM2D, ConvLSTM3D)
def _conv_lstm_config(l):
    return dict(return_sequences=l.return_sequences, return_state=l.return_state, go_backwards=l.go_backwards,
                stateful=False, unroll=l.unroll, zero_output_for_mask=False, filters=l.filters,
                kernel_size=list(l.kernel_size), strides=list(l.strides), padding=l.padding,
                data_format="channels_last", dilation_rate=list(l.dilation_rate),
                activation=activations.name_of(l.activation),
                recurrent_activation=activations.name_of(l.recurrent_activation), use_bias=l.use_bias,
                kernel_initializer=initializers.serialize(l.kernel_initializer),
                recurrent_initializer=initializers.serialize(l.recurrent_initializer),
                bias_initializer=initializers.serialize(l.bias_initializer), unit_forget_bias=l.unit_forget_bias,
                kernel_regularizer=regularizers.serialize(l.kernel_regularizer),
                recurrent_regularizer=regularizers.serialize(l.recurrent_regularizer),
                bias_regularizer=regularizers.serialize(l.bias_regularizer), activity_regularizer=None,
                kernel_constraint=constraints.serialize(l.kernel_constraint),
                recurrent_constraint=constraints.serialize(l.recurrent_constraint),
                bias_constraint=constraints.serialize(l.bias_constraint), dropout=0.0, recurrent_dropout=0.0,
                seed=l.seed)
