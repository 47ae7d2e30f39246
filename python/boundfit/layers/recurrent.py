"""Sequence layers (Keras 3 names, arguments, defaults and weight layouts):
SimpleRNN, LSTM, GRU and Bidirectional.
The engine computes them (csrc/core/seq_*.c, csrc/cpu/rnn.c); this module
only describes them. Re-exported from `boundfit.layers`.

Several outputs, as Keras: return_state=True gives [output, *states] (LSTM
h, c; GRU / SimpleRNN h; Bidirectional the forward then the backward
states), Bidirectional(merge_mode=None) [forward, backward outputs] (then
the states); `initial_state=` takes graph tensors in the same order. In the
engine the extra outputs are RNN_PART nodes (csrc/core/seq_layers.h).

dropout / recurrent_dropout act in training only, as in Keras 3's cells: a
mask per sample on the inputs and one on the previous state, the same at
every step (one per gate once recurrent_dropout > 0, Keras's implementation
1), drawn by the engine from the run's seed (csrc/cpu/rnn_dropout.c); `seed`
is kept for Keras files. Bidirectional: each direction its own masks."""

from .. import activations, constraints, initializers, regularizers
from .args import _size, engine_kinds
from .eager import call_eagerly, is_array_call
from .layer import _DTYPE, Layer, keras_config, keras_object
from .masking import with_mask
from .node import KerasTensor, MaskTensor, Node, call_layer, keras_masks, output_shape, train_mode
from .variable import VariableView

SIMPLE_RNN, LSTM_KIND, GRU_KIND, BIDIR = engine_kinds("SIMPLE_RNN LSTM GRU BIDIR")


_MERGE_MODES = {"concat": 0, "sum": 1, "mul": 2, "ave": 3, None: 0}  # None: concat, then split (parts -1, -2)


_CELL_ACTS = ("linear", "relu", "sigmoid", "tanh", "hard_sigmoid")  # the cells' activations (core/act_math.h)


def _act_name(activation, argument):
    return activations.name_of(activations.get_id(activation, argument))


class _RNN(Layer):
    _mode_dependent = True   # dropout / recurrent_dropout
    """SimpleRNN / LSTM / GRU: (T, D) -> (T, units) with return_sequences, else (units,)."""
    kind = None
    _gates = 1

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, seed=None, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, reset_after=True, use_cudnn="auto", **kwargs):
        super().__init__(**kwargs)
        cls = type(self).__name__
        self.units, self.use_bias = _size(cls, "units", units), bool(use_bias)
        self.activation = _act_name(activation, "activation")
        self.recurrent_activation = _act_name(recurrent_activation, "recurrent_activation")
        for arg, name, given in (("activation", self.activation, activation),
                                 ("recurrent_activation", self.recurrent_activation, recurrent_activation)):
            if name not in _CELL_ACTS and (arg == "activation" or self.kind != SIMPLE_RNN):
                raise ValueError(f"{cls}: {arg} {given!r} is not supported by boundfit's {cls} "
                                 f"(it has {', '.join(_CELL_ACTS)})")
        for arg, v in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= float(v) < 1.0:
                raise ValueError(f"{cls}: {arg} must be a number in [0, 1), got {v!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError(f"{cls}: seed must be an int or None, got {seed!r}")
        if stateful:
            raise ValueError(f"{cls}: stateful=True is not supported by boundfit")
        if not reset_after:
            raise ValueError(f"{cls}: reset_after=False is not supported by boundfit (Keras 3's default is True)")
        if activity_regularizer is not None:
            raise ValueError(f"{cls}: activity_regularizer is not supported by boundfit")
        self.kernel_initializer = initializers.get(kernel_initializer, "kernel_initializer")
        self.recurrent_initializer = initializers.get(recurrent_initializer, "recurrent_initializer")
        self.bias_initializer = initializers.get(bias_initializer, "bias_initializer")
        self.unit_forget_bias = bool(unit_forget_bias)
        self.kernel_regularizer = regularizers.get(kernel_regularizer, "kernel_regularizer")
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer, "recurrent_regularizer")
        self.bias_regularizer = regularizers.get(bias_regularizer, "bias_regularizer")
        self.activity_regularizer = None
        self.kernel_constraint = constraints.get(kernel_constraint, "kernel_constraint")
        self.recurrent_constraint = constraints.get(recurrent_constraint, "recurrent_constraint")
        self.bias_constraint = constraints.get(bias_constraint, "bias_constraint")
        self.dropout, self.recurrent_dropout, self.seed = float(dropout), float(recurrent_dropout), seed
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.stateful, self.unroll = bool(go_backwards), False, bool(unroll)
        self.reset_after = True
        self.use_cudnn = use_cudnn

    _has_weights = True
    # set by keras.layers.RNN (layers/rnn.py) on the layers it runs its cells with: masked steps output zeros
    # (zero_output_for_mask); a go_backwards sequence written in input order (a stacked RNN's inner cells)
    _zero_output = _in_order = False

    def _keras_var_groups(self, n):
        return [("cell/vars", n)]  # Keras keeps them in the layer's cell

    @property
    def _n_states(self):
        return 2 if self.kind == LSTM_KIND else 1

    def _parts(self):
        """per output: None for the node's own output, else its RNN_PART number"""
        return [None] + (list(range(self._n_states)) if self.return_state else [])

    def __call__(self, inputs, initial_state=None, mask=None, training=None, **kwargs):
        if is_array_call(inputs):   # on arrays: computed now (layers/eager.py)
            return call_eagerly(self, inputs, training=training, initial_state=initial_state, mask=mask, **kwargs)
        return _call(self, inputs, initial_state, mask, kwargs, training=training)

    def _keras_call(self, ts):
        return _keras_call(ts, {})

    def _call_from_keras(self, args, kwargs, tensor):
        return _call_from_keras(self, args, kwargs, tensor)

    def _roles(self):
        """initializers, regularizers and constraints by role: kernel, recurrent_kernel, bias"""
        bias_rank = 2 if self.kind == GRU_KIND else 1
        return (initializers._engine_specs(self.kernel_initializer, self.recurrent_initializer, self.bias_initializer),
                regularizers._engine_specs(self.kernel_regularizer, self.recurrent_regularizer, self.bias_regularizer),
                constraints._engine_specs([(self.kernel_constraint, 2, "kernel_constraint"),
                                           (self.recurrent_constraint, 2, "recurrent_constraint"),
                                           (self.bias_constraint, bias_rank, "bias_constraint")]))

    # ---- Keras's variables: its cell's (lstm/lstm_cell/kernel); a Bidirectional's halves' in the Bidirectional ----
    @property
    def _cell_name(self):
        return {SIMPLE_RNN: "simple_rnn_cell", LSTM_KIND: "lstm_cell"}.get(self.kind, "gru_cell")

    def _keras_var_scope(self, pname):
        return f"{self._cell_name}/{pname}"

    @property
    def cell(self):
        """Keras's cell: its kernel, recurrent_kernel and bias"""
        bidi = self.__dict__.get("_bidi")
        if bidi is not None:
            return VariableView(bidi[0], f"{bidi[1]}/{self._cell_name}", self._cell_name)
        return VariableView(self, self._cell_name)

    @property
    def weights(self):
        bidi = self.__dict__.get("_bidi")
        return VariableView(*bidi).weights if bidi is not None else super().weights

    variables = weights

    def spec(self):
        inits, regs, cons = self._roles()
        return dict(kind=self.kind, name=self.name, units=self.units, use_bias=int(self.use_bias),
                    act=activations.get_id(self.activation), ract=activations.get_id(self.recurrent_activation),
                    return_sequences=int(self.return_sequences), go_backwards=int(self.go_backwards),
                    unit_forget_bias=int(self.kind == LSTM_KIND and self.unit_forget_bias),
                    rate=self.dropout, rec_rate=self.recurrent_dropout, inits=inits, regs=regs, cons=cons,
                    zero_output=int(self._zero_output), in_order=int(self._in_order))


class SimpleRNN(_RNN):
    """Keras 3's `SimpleRNN(units, activation='tanh', ...)`: a fully connected recurrent layer over (T, F) inputs."""
    _base, kind = "simple_rnn", SIMPLE_RNN

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0, recurrent_dropout=0.0,
                 return_sequences=False, return_state=False, go_backwards=False, stateful=False, unroll=False,
                 seed=None, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, recurrent_regularizer=recurrent_regularizer,
                         bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, recurrent_constraint=recurrent_constraint,
                         bias_constraint=bias_constraint, dropout=dropout, recurrent_dropout=recurrent_dropout,
                         return_sequences=return_sequences, return_state=return_state, go_backwards=go_backwards,
                         stateful=stateful, unroll=unroll, seed=seed, **kwargs)


class LSTM(_RNN):
    """Keras 3's `LSTM(units, activation='tanh', recurrent_activation='sigmoid', ...)`: gates i, f, c, o with Keras's
    weight layout; return_sequences, return_state, initial_state, dropout."""
    _base, kind = "lstm", LSTM_KIND

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, seed=None, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, use_cudnn="auto", **kwargs):
        super().__init__(units, activation, recurrent_activation, use_bias, kernel_initializer, recurrent_initializer,
                         bias_initializer, unit_forget_bias, kernel_regularizer, recurrent_regularizer,
                         bias_regularizer, activity_regularizer, kernel_constraint, recurrent_constraint,
                         bias_constraint, dropout, recurrent_dropout, seed, return_sequences, return_state,
                         go_backwards, stateful, unroll, True, use_cudnn, **kwargs)


class GRU(_RNN):
    """Keras 3's `GRU(units, ..., reset_after=True)`: gates z, r, h with Keras's (2, 3 * units) bias."""
    _base, kind = "gru", GRU_KIND

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, seed=None, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, reset_after=True, use_cudnn="auto", **kwargs):
        super().__init__(units, activation, recurrent_activation, use_bias, kernel_initializer, recurrent_initializer,
                         bias_initializer, False, kernel_regularizer, recurrent_regularizer, bias_regularizer,
                         activity_regularizer, kernel_constraint, recurrent_constraint, bias_constraint, dropout,
                         recurrent_dropout, seed, return_sequences, return_state, go_backwards, stateful, unroll,
                         reset_after, use_cudnn, **kwargs)


class Bidirectional(Layer):
    """Keras 3's `Bidirectional(layer, merge_mode='concat')`: the layer run forward and backward over the steps, the
    outputs merged."""
    _mode_dependent = True
    """Runs `layer` forward and a copy of it backward over the sequence and
    merges the two (merge_mode "concat", "sum", "mul" or "ave"); the weights
    are the forward layer's, then the backward layer's, as in Keras."""
    _base = "bidirectional"

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(layer, _RNN):
            raise ValueError(f"Bidirectional: layer must be a SimpleRNN, LSTM or GRU, got {type(layer).__name__}")
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"Bidirectional: merge_mode must be one of {sorted(k for k in _MERGE_MODES if k)} or "
                             f"None, got {merge_mode!r}")
        if weights is not None:
            raise ValueError("Bidirectional: weights= is not supported; call set_weights() once the model is built")
        if backward_layer is not None:
            same = (type(backward_layer) is type(layer) and backward_layer.units == layer.units and
                    backward_layer.return_sequences == layer.return_sequences and
                    backward_layer.return_state == layer.return_state and
                    backward_layer.go_backwards != layer.go_backwards and
                    backward_layer.activation == layer.activation and
                    backward_layer.recurrent_activation == layer.recurrent_activation and
                    backward_layer.use_bias == layer.use_bias and
                    backward_layer.dropout == layer.dropout and
                    backward_layer.recurrent_dropout == layer.recurrent_dropout)
            if not same:
                raise ValueError("Bidirectional: backward_layer must be the same kind of layer with the same units, "
                                 "activations, use_bias, dropout, recurrent_dropout and return_sequences and the "
                                 "opposite go_backwards")
        self.forward_layer = layer
        self._backward_given = backward_layer
        layer.__dict__["_bidi"] = (self, f"forward_{layer.name.removeprefix('forward_')}")
        if backward_layer is not None:
            backward_layer.__dict__["_bidi"] = (self, backward_layer.name)
        self.layer = layer
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state

    _has_weights = True

    def _keras_var_groups(self, n):
        return [("forward_layer/cell/vars", n // 2), ("backward_layer/cell/vars", n // 2)]

    @property
    def backward_layer(self):
        """Keras's backward layer: the one given, else (Keras's copy of the layer) a view of its variables"""
        if self._backward_given is not None:
            return self._backward_given
        name = f"backward_{self.forward_layer.name.removeprefix('forward_')}"
        return VariableView(self, name, cell=self.forward_layer._cell_name)

    def _keras_var_scope(self, pname):
        """the engine's forward_kernel: Keras's forward_<layer>/<cell>/kernel"""
        half, name = pname.split("_", 1)
        f = self.forward_layer
        inner = self._backward_given.name if half == "backward" and self._backward_given is not None else \
            f"{half}_{f.name.removeprefix('forward_')}"
        return f"{inner}/{f._cell_name}/{name}"

    @property
    def _n_states(self):
        return 2 * self.forward_layer._n_states

    def _parts(self):
        outs = [-1, -2] if self.merge_mode is None else [None]
        return outs + (list(range(self._n_states)) if self.return_state else [])

    def __call__(self, inputs, initial_state=None, mask=None, training=None, **kwargs):
        if is_array_call(inputs):   # on arrays: computed now (layers/eager.py)
            return call_eagerly(self, inputs, training=training, initial_state=initial_state, mask=mask, **kwargs)
        return _call(self, inputs, initial_state, mask, kwargs, training=training)

    def _keras_call(self, ts):
        return _keras_call(ts, {"mask": None})

    def _call_from_keras(self, args, kwargs, tensor):
        return _call_from_keras(self, args, kwargs, tensor)

    def spec(self):
        f = self.forward_layer
        b = self._backward_given or f
        fi, fr, fc = f._roles()
        bi, br, bc = b._roles()
        return dict(kind=BIDIR, name=self.name, cell=f.kind, units=f.units, use_bias=int(f.use_bias),
                    act=activations.get_id(f.activation), ract=activations.get_id(f.recurrent_activation),
                    return_sequences=int(f.return_sequences),
                    go_backwards=int(f.go_backwards), unit_forget_bias=int(f.kind == LSTM_KIND and f.unit_forget_bias),
                    merge_mode=_MERGE_MODES[self.merge_mode], rate=f.dropout, rec_rate=f.recurrent_dropout,
                    inits=fi + bi, regs=fr + br, cons=fc + bc)


def _call(layer, inputs, initial_state, mask, kwargs, keep_mask=False, training=None):
    """A recurrent layer called on a graph tensor, with initial states and several outputs (see the top).

    As in Keras 3, a call with initial states does not read its input's mask (Keras fills `mask` only for a
    call with one tensor argument): the states run through masked steps unmasked. keep_mask: the mask was given
    explicitly (mask=: a (batch, T) tensor of the graph, or the Keras file's), so it is read."""
    if kwargs:
        raise TypeError(f"{layer.name}: unknown call arguments {sorted(kwargs)}")
    if mask is not None:   # a mask computed in the graph: the sequence carries it from here (layers/masking.py)
        if isinstance(mask, (list, tuple)) and len(mask) == 1:
            mask = mask[0]
        if not isinstance(inputs, KerasTensor):
            raise TypeError(f"{layer.name}: mask= is given with a symbolic sequence, got {type(inputs).__name__}")
        inputs, keep_mask = with_mask(inputs, mask, layer.name), True
    if initial_state is None and layer._parts() == [None]:
        return call_layer(layer, inputs, training=training)
    if not isinstance(inputs, KerasTensor):
        raise TypeError(f"{layer.name}: layers are called on symbolic tensors (from boundfit.Input, or other "
                        f"layers' outputs), got {type(inputs).__name__}")
    states = [] if initial_state is None else \
        [initial_state] if not isinstance(initial_state, (list, tuple)) else list(initial_state)
    for k, t in enumerate(states):
        if not isinstance(t, KerasTensor):
            raise TypeError(f"{layer.name}: initial_state[{k}] must be a symbolic tensor (from boundfit.Input or a "
                            f"layer's output), got {type(t).__name__}")
    if states and len(states) != layer._n_states:
        raise ValueError(f"{layer.name}: initial_state must be a list of {layer._n_states} tensors "
                         f"({_state_names(layer)}), got {len(states)}")
    units = layer.forward_layer.units if isinstance(layer, Bidirectional) else layer.units
    for k, t in enumerate(states):
        if t._ps != (units,):
            raise ValueError(f"{layer.name}: initial_state[{k}] must have shape (None, {units}), got {t.shape}")
    layer._check_call_shape(inputs._ps)
    shape = output_shape(layer, inputs._ps)
    half = shape[:-1] + (units,)
    shapes = [half if p is not None and p < 0 else (units,) if p is not None else shape for p in layer._parts()]
    outs = [KerasTensor(s, name=f"{layer.name}_output_{k}") for k, s in enumerate(shapes)]
    inputs, = keras_masks(layer, [inputs])
    node = Node(layer, [inputs] + states, outs, train_mode(training, layer._mode_dependent))
    node.mask_off = bool(states) and not keep_mask
    return outs[0] if len(outs) == 1 else outs


def _state_names(layer):
    one = "h, c" if (layer.forward_layer if isinstance(layer, Bidirectional) else layer).kind == LSTM_KIND else "h"
    return f"forward {one}, then backward {one}" if isinstance(layer, Bidirectional) else one


def _keras_call(ts, kwargs):
    """A node as Keras 3 writes it in a Functional config: the sequence, then initial_state by keyword."""
    if len(ts) > 1:
        kwargs = dict(kwargs, initial_state=ts[1:])
    return {"args": ts[:1], "kwargs": kwargs}


def _call_from_keras(layer, args, kwargs, tensor):
    """Replay a Keras node: (sequences[, initial_state]) and keyword arguments, tensors read by `tensor`."""
    names = ("sequences", "initial_state", "mask", "training")
    given = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names or k in given:
            raise ValueError(f"layer {layer.name!r}: the call argument {k}={v!r} is not supported by boundfit")
        given[k] = v
    if len(args) > len(names) or "sequences" not in given:
        raise ValueError(f"layer {layer.name!r}: a call with {len(args)} positional arguments is not one boundfit "
                         "can rebuild")
    m = given.get("mask")
    if isinstance(m, list) and len(m) == 1:
        m = m[0]
    if m is not None and not isinstance(m, dict):
        raise ValueError(f"layer {layer.name!r}: the call argument mask={m!r} is not a tensor boundfit can read")
    if m is not None:   # Keras writes the mask it gave the call (its own, or the one an Embedding / Masking carried)
        m = tensor(m)
        m = m.materialize() if isinstance(m, MaskTensor) else m
    if given.get("training") not in (None, False):
        raise ValueError(f"layer {layer.name!r}: the call argument training={given['training']!r} is not supported")
    x = tensor(given["sequences"])
    if isinstance(x, MaskTensor):
        raise ValueError(f"layer {layer.name!r}: its input is the Keras op {x.name!r}, which boundfit reads only as "
                         "a mask (from Embedding(mask_zero=True)), not as data")
    st = given.get("initial_state")
    if st is not None:
        st = [tensor(t) for t in (st if isinstance(st, list) else [st])]
    return _call(layer, x, st, m, {}, keep_mask=m is not None)


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(SimpleRNN, LSTM, GRU)
def _rnn_config(l, zero_output_for_mask=False):
    cfg = dict(return_sequences=l.return_sequences, return_state=l.return_state, go_backwards=l.go_backwards, stateful=False,
               unroll=l.unroll, zero_output_for_mask=zero_output_for_mask, units=l.units, activation=l.activation)
    if not isinstance(l, SimpleRNN):
        cfg["recurrent_activation"] = l.recurrent_activation
    cfg.update(use_bias=l.use_bias, kernel_initializer=initializers.serialize(l.kernel_initializer),
               recurrent_initializer=initializers.serialize(l.recurrent_initializer),
               bias_initializer=initializers.serialize(l.bias_initializer))
    if isinstance(l, LSTM):
        cfg["unit_forget_bias"] = l.unit_forget_bias
    cfg.update(kernel_regularizer=regularizers.serialize(l.kernel_regularizer),
               recurrent_regularizer=regularizers.serialize(l.recurrent_regularizer),
               bias_regularizer=regularizers.serialize(l.bias_regularizer), activity_regularizer=None,
               kernel_constraint=constraints.serialize(l.kernel_constraint),
               recurrent_constraint=constraints.serialize(l.recurrent_constraint),
               bias_constraint=constraints.serialize(l.bias_constraint), dropout=l.dropout,
               recurrent_dropout=l.recurrent_dropout)
    if isinstance(l, GRU):
        cfg["reset_after"] = True
    cfg["seed"] = l.seed
    return cfg


def _sublayer_config(l, name, go_backwards, zero_output_for_mask):
    cfg = dict(name=name, trainable=bool(l.trainable), dtype=dict(_DTYPE), **_rnn_config(l, zero_output_for_mask))
    cfg["go_backwards"] = go_backwards
    return keras_object("keras.layers", type(l).__name__, cfg)


@keras_config(Bidirectional)
def _bidirectional_config(l):
    f, b = l.forward_layer, l._backward_given or l.forward_layer
    z = l.return_sequences
    fname = "forward_" + f.name.removeprefix("forward_")
    bname = "backward_" + (b.name.removeprefix("backward_") if l._backward_given else f.name.removeprefix("forward_"))
    return dict(merge_mode=l.merge_mode, layer=_sublayer_config(f, fname, f.go_backwards, z),
                backward_layer=_sublayer_config(b, bname, not f.go_backwards, z))
