"""Keras 3's generic recurrent layer and its cells: RNN(cell), SimpleRNNCell,
LSTMCell, GRUCell and StackedRNNCells (a list of cells too).

A built-in cell holds the engine's fused recurrent layer of its kind
(layers/recurrent.py: SimpleRNN / LSTM / GRU, with the cell's arguments), so
RNN(LSTMCell(u)) runs as LSTM(u) does, and a stack of cells runs as one such
layer per cell, each over the whole sequence: the same numbers as Keras's
step-by-step stack (a masked step keeps every cell's state; with go_backwards
the inner cells write their sequences in input order and step backwards
again). A cell called on its own, cell(x, states), is that layer over one
step. A custom cell (a Layer with state_size and call(inputs, states)) is
unrolled: its call() traced once per step on x[:, t] (its weights shared),
a masked step keeping the previous states (where(mask, new, old)), so T must
be known and at most MAX_STEPS.

Weights (Keras's layout): a cell's kernel, recurrent_kernel, bias; a stack's
cell by cell; Keras files keep them under `cell/vars` or
`cell/cells/<cell name>/vars`. stateful=True is refused by name."""

import numpy as np

from .eager import MAKERS, call_eagerly, is_array_call
from ..session import snake_case
from .embedding import Embedding
from .emath import Binary, Unary
from .layer import Layer, keras_config, keras_object, layer_config
from .masking import SeqMask, with_mask
from .merge import Concatenate
from .node import KerasTensor, MaskTensor, trace_layer
from .recurrent import GRU, LSTM, SimpleRNN, _call, _rnn_config
from .reshaping import RepeatVector, Reshape, Slice

MAX_STEPS = 64   # a custom cell is traced once per step
_LAYER_ONLY = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll", "zero_output_for_mask",
               "use_cudnn")


class _Cell(Layer):
    """A built-in cell: its arguments as Keras's cell's, its weights its engine layer's (`layer`)."""
    _seq = None
    _mode_dependent = True

    def __init__(self, units, **kwargs):
        base = {k: kwargs.pop(k) for k in ("name", "trainable", "dtype") if k in kwargs}
        bad = sorted(set(kwargs) & set(_LAYER_ONLY))
        if bad:
            raise TypeError(f"{type(self).__name__}: {bad} are arguments of the layer (keras.layers.RNN), not of "
                            "a cell")
        super().__init__(**base)
        self.layer = self._seq(units, name=self.name, **kwargs)
        self.units = self.layer.units
        self._bound = None

    @property
    def state_size(self):
        return [self.units, self.units] if isinstance(self.layer, LSTM) else self.units

    @property
    def output_size(self):
        return self.units

    @property
    def _n_states(self):
        return self.layer._n_states

    def _bind(self, return_sequences, return_state, go_backwards, in_order, zero_output):
        """the engine layer set to run as one use of the cell; a cell runs in one way only"""
        flags = (return_sequences, return_state, go_backwards, in_order, zero_output)
        if self._bound is not None and self._bound != flags:
            raise NotImplementedError(f"cell {self.name!r} is already used in another way (in another RNN, or "
                                      "called on its own); boundfit runs a cell one way: give each use its own cell")
        self._bound = flags
        l = self.layer
        l.return_sequences, l.return_state, l.go_backwards, l._in_order, l._zero_output = flags
        return l

    def __call__(self, inputs, states=None, training=None, **kwargs):
        if kwargs:
            raise TypeError(f"{self.name}: unknown call arguments {sorted(kwargs)}")
        one = not isinstance(states, (list, tuple))
        sts = [states] if one else list(states)
        if is_array_call(inputs):
            return _cell_eagerly(self, inputs, sts, one, training)
        if len(sts) != self._n_states or not all(isinstance(s, KerasTensor) for s in [inputs] + sts):
            raise ValueError(f"{self.name}: a cell is called as cell(inputs, states) with {self._n_states} state "
                             f"tensor(s) of shape (batch, {self.units}), got {states!r}")
        out = trace_layer(self, [inputs] + sts, (), {} if training is None else {"training": training}, self.build)
        return out[0], (out[1] if one else list(out[1:]))

    def call(self, inputs, states=None, training=None):
        """One step (the engine layer over a sequence of one): (inputs, [states]) -> output, the new states"""
        x, sts = (inputs[0], list(inputs[1:])) if states is None else (inputs, list(states))
        if len(x._ps) != 1:
            raise ValueError(f"{self.name}: a cell takes inputs of shape (batch, features), got {x.shape}")
        l = self._bind(False, True, False, False, False)
        return _call(l, Reshape((1, x._ps[0]))(x), sts, None, {}, training=training)

    def _keras_call(self, ts):
        return {"args": [ts[0], ts[1:]], "kwargs": {}}

    def _call_from_keras(self, args, kwargs, tensor):
        if len(args) != 2 or set(kwargs) - {"training"}:
            raise ValueError(f"cell {self.name!r}: the call {args!r} is not one boundfit can rebuild")
        st = args[1] if isinstance(args[1], list) else [args[1]]
        out, new = self(tensor(args[0]), [tensor(t) for t in st])
        return [out] + (new if isinstance(new, list) else [new])


class SimpleRNNCell(_Cell):
    """Keras 3's `SimpleRNNCell(units, activation='tanh', ...)`: one step of SimpleRNN."""
    _base, _seq = "simple_rnn_cell", SimpleRNN

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, seed=None, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, recurrent_regularizer=recurrent_regularizer,
                         bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
                         recurrent_constraint=recurrent_constraint, bias_constraint=bias_constraint, dropout=dropout,
                         recurrent_dropout=recurrent_dropout, seed=seed, **kwargs)


class LSTMCell(_Cell):
    """Keras 3's `LSTMCell(units, ...)`: one step of LSTM; states [h, c]."""
    _base, _seq = "lstm_cell", LSTM

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, **kwargs):
        super().__init__(units, activation=activation, recurrent_activation=recurrent_activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, unit_forget_bias=unit_forget_bias,
                         kernel_regularizer=kernel_regularizer, recurrent_regularizer=recurrent_regularizer,
                         bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
                         recurrent_constraint=recurrent_constraint, bias_constraint=bias_constraint, dropout=dropout,
                         recurrent_dropout=recurrent_dropout, seed=seed, **kwargs)


class GRUCell(_Cell):
    """Keras 3's `GRUCell(units, ..., reset_after=True)`: one step of GRU."""
    _base, _seq = "gru_cell", GRU

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0, recurrent_dropout=0.0,
                 reset_after=True, seed=None, **kwargs):
        super().__init__(units, activation=activation, recurrent_activation=recurrent_activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                         recurrent_regularizer=recurrent_regularizer, bias_regularizer=bias_regularizer,
                         kernel_constraint=kernel_constraint, recurrent_constraint=recurrent_constraint,
                         bias_constraint=bias_constraint, dropout=dropout, recurrent_dropout=recurrent_dropout,
                         reset_after=reset_after, seed=seed, **kwargs)


def _cell_eagerly(cell, x, states, one, training):
    """cell(x, states) on arrays: a small model around the call, cached by shapes (layers/eager.py's way)"""
    xs = [np.asarray(x, np.float32)] + [np.asarray(s, np.float32) for s in states]
    key = (tuple(a.shape[1:] for a in xs), one, training)
    cache = cell.__dict__.setdefault("_eager_cells", {})
    if key not in cache:
        Model, Input = MAKERS["model"], MAKERS["input"]
        ins = [Input(shape=a.shape[1:]) for a in xs]
        traced = len(cell.__dict__.get("_traced_calls", []))
        out, new = cell(ins[0], ins[1] if one else ins[1:], training=training)
        del cell.__dict__["_traced_calls"][traced:]   # the call is this model's alone
        cache[key] = Model(ins, [out] + ([new] if one else new), name=f"{cell.name}_eager")
    ys = cache[key].predict(xs, batch_size=max(len(xs[0]), 1), verbose=0)
    return ys[0], (ys[1] if one else list(ys[1:]))


class StackedRNNCells(Layer):
    """Keras 3's `StackedRNNCells(cells)`: cells run one after another on each step, as one cell."""
    _base = "stacked_rnn_cells"
    _config_cells = True   # saving/config.py: its `cells` configs become cells first

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        for c in cells:
            if not hasattr(c, "call") or not hasattr(c, "state_size"):
                raise ValueError(f"StackedRNNCells: every cell needs a call method and a state_size, got {c!r}")
        self.cells = list(cells)

    @property
    def state_size(self):
        return [c.state_size for c in self.cells]

    @property
    def output_size(self):
        return _output_size(self.cells[-1])

    def call(self, inputs, states, training=None):
        new = []
        for c, s in zip(self.cells, states):
            inputs, s = c(inputs, s)
            new.append(s)
        return inputs, new


def _output_size(cell):
    size = getattr(cell, "output_size", None)
    if size is None:
        size = cell.state_size[0] if isinstance(cell.state_size, (list, tuple)) else cell.state_size
    return size


def _sizes(cell):
    return list(cell.state_size) if isinstance(cell.state_size, (list, tuple)) else [cell.state_size]


class RNN(Layer):
    """Keras 3's `RNN(cell, return_sequences=False, return_state=False, go_backwards=False, stateful=False,
    unroll=False, zero_output_for_mask=False)`: a cell (or a list of cells, a StackedRNNCells) over the steps of
    (batch, T, features) sequences; called with initial_state= and mask= as Keras's."""
    _base = "rnn"
    _mode_dependent = True
    _config_cells = True   # saving/config.py: its `cell` config becomes a cell first

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False, stateful=False,
                 unroll=False, zero_output_for_mask=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(list(cell))
        if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
            raise ValueError(f"RNN: cell must have a call method and a state_size attribute, got cell={cell!r}")
        if stateful:
            raise NotImplementedError("RNN: stateful=True is not supported by boundfit (states kept from batch to "
                                      "batch); pass the states yourself with initial_state= and return_state=True")
        self.cell = cell
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.stateful, self.unroll = bool(go_backwards), False, bool(unroll)
        self.zero_output_for_mask = bool(zero_output_for_mask)

    def _cells(self):
        return self.cell.cells if isinstance(self.cell, StackedRNNCells) else [self.cell]

    def _keras_var_groups(self, n):
        if not isinstance(self.cell, StackedRNNCells):
            return [("cell/vars", n)]
        out, seen = [], {}
        for c in self.cell.cells:   # Keras's saving names a list's layers by class, numbered from the second
            base = snake_case(type(c).__name__)
            k = seen[base] = seen.get(base, -1) + 1
            out.append((f"cell/cells/{base}{f'_{k}' if k else ''}/vars", 3 if c.layer.use_bias else 2))
        return out

    def __call__(self, sequences, initial_state=None, mask=None, training=None, **kwargs):
        if is_array_call(sequences):   # on arrays: computed now (layers/eager.py)
            return call_eagerly(self, sequences, training=training, initial_state=initial_state, mask=mask, **kwargs)
        if kwargs:
            raise TypeError(f"{self.name}: unknown call arguments {sorted(kwargs)}")
        if not isinstance(sequences, KerasTensor):
            raise TypeError(f"{self.name}: layers are called on symbolic tensors, got {type(sequences).__name__}")
        if mask is not None:
            sequences = with_mask(sequences, mask[0] if isinstance(mask, (list, tuple)) else mask, self.name)
        states = _flatten(initial_state)
        want = sum(len(_sizes(c)) for c in self._cells())
        if states and len(states) != want:
            raise ValueError(f"{self.name}: initial_state must hold {want} tensors (the cells' states in order), "
                             f"got {len(states)}")
        kw = {} if training is None else {"training": training}
        return trace_layer(self, [sequences] + states if states else sequences, (), kw, self.build)

    def _keras_call(self, ts):
        """Keras's call: the sequence, initial_state by keyword (a stack's per cell)"""
        if len(ts) == 1:
            return {"args": ts, "kwargs": {}}
        if not isinstance(self.cell, StackedRNNCells):
            return {"args": ts[:1], "kwargs": {"initial_state": ts[1:]}}
        nested, k = [], 1
        for c in self.cell.cells:
            n = len(_sizes(c))
            nested.append(ts[k:k + n] if isinstance(c.state_size, (list, tuple)) else ts[k])
            k += n
        return {"args": ts[:1], "kwargs": {"initial_state": nested}}

    def _call_from_keras(self, args, kwargs, tensor):
        given = dict(zip(("sequences", "initial_state", "mask", "training"), args))
        for k, v in kwargs.items():
            if k not in ("sequences", "initial_state", "mask", "training") or k in given:
                raise ValueError(f"layer {self.name!r}: the call argument {k}={v!r} is not supported by boundfit")
            given[k] = v
        m = given.get("mask")
        m = m[0] if isinstance(m, list) and len(m) == 1 else m
        if m is not None:
            m = tensor(m)
            m = m.materialize() if isinstance(m, MaskTensor) else m
        st = [tensor(t) for t in _flatten_refs(given.get("initial_state"))]
        return _flatten(self(tensor(given["sequences"]), initial_state=st or None, mask=m))   # Keras's outputs, flat

    def call(self, inputs, training=None):
        x, states = (inputs[0], list(inputs[1:])) if isinstance(inputs, list) else (inputs, [])
        if len(x._ps) != 2:
            raise ValueError(f"{self.name}: inputs of shape (batch, timesteps, features) are needed, got {x.shape}")
        explicit = x._node is not None and getattr(x._node, "keras_mask_of", None) is not None   # mask= given
        cells = self._cells()
        if all(isinstance(c, _Cell) for c in cells):
            outs = self._fused(cells, x, states, explicit, training)
        else:
            outs = self._unrolled(x, states, explicit, training)
        return outs if self.return_state else outs[0]

    def _fused(self, cells, x, states, explicit, training):
        """one engine layer per cell; [output, state structure per cell...]"""
        h, finals, k = x, [], 0
        for j, c in enumerate(cells):
            last = j == len(cells) - 1
            l = c._bind(self.return_sequences or not last, self.return_state, self.go_backwards,
                        self.go_backwards and not last, self.zero_output_for_mask and last)
            n = c._n_states
            got = _call(l, h, states[k:k + n] or None, None, {}, keep_mask=explicit, training=training)
            k += n
            h, st = (got[0], list(got[1:])) if self.return_state else (got, [])
            finals.append(st)
        return [h] + (self._states_out(cells, finals) if self.return_state else [])

    def _states_out(self, cells, finals):
        if not isinstance(self.cell, StackedRNNCells):
            return finals[0]
        return [s if isinstance(c.state_size, (list, tuple)) else s[0] for c, s in zip(cells, finals)]

    def _unrolled(self, x, states, explicit, training):
        """a custom cell traced once per step, masked steps keeping the states"""
        T, D = x._ps
        if T is None or T > MAX_STEPS:
            raise NotImplementedError(f"RNN {self.name!r}: a custom cell is run step by step, on at most "
                                      f"{MAX_STEPS} known steps, got T={T}; use SimpleRNNCell / LSTMCell / GRUCell "
                                      "(or SimpleRNN / LSTM / GRU), which run any length")
        if not explicit and _carries_mask(x):
            raise NotImplementedError(f"RNN {self.name!r}: its input carries a mask (Embedding(mask_zero=True), "
                                      "Masking); a custom cell reads only a mask given as mask=")
        mask = x._node.inputs[0] if explicit else None
        sizes = [_sizes(c) for c in self._cells()]
        flat = states or [_zeros(x, s) for ss in sizes for s in ss]
        stacked = isinstance(self.cell, StackedRNNCells)
        out_prev, outs = None, []
        for t in (reversed(range(T)) if self.go_backwards else range(T)):
            xt = Reshape((D,))(Slice((t, 0), (1, 1), (1, -1))(x))
            nested, k = [], 0
            for ss in sizes:
                nested.append(flat[k:k + len(ss)])
                k += len(ss)
            arg = nested if stacked else nested[0]
            y, new = self.cell(xt, arg) if training is None else self.cell(xt, arg, training=training)
            new_flat = [t2 for s in (new if stacked else [new]) for t2 in _flatten(s)]
            if mask is not None:
                m = Reshape((1,))(Slice((t,), (1,), (1,))(mask))
                new_flat = [_where(m, a, b) for a, b in zip(new_flat, flat)]
                if self.zero_output_for_mask or out_prev is None:   # (before any step: Keras's zeros)
                    y = Binary("multiply")([y, m])
                else:
                    y = _where(m, y, out_prev)
            flat, out_prev = new_flat, y
            outs.append(Reshape((1,) + tuple(y._ps))(y))
        out = (Concatenate(axis=1)(outs) if len(outs) > 1 else outs[0]) if self.return_sequences else out_prev
        return [out] + flat


def _zeros(x, size):
    """zeros (size,) per sample (Keras's initial states), from x's first element by full_like: no weight"""
    one = Unary("full_like", 0.0)(Reshape((1,))(Slice((0, 0), (1, 1), (1, 1))(x)))
    return Reshape((size,))(RepeatVector(size)(one))


def _where(m, a, b):
    """m ? a : b for a mask m (1,) of 0 / 1: b + m * (a - b)"""
    return Binary("add")([b, Binary("multiply")([m, Binary("subtract")([a, b])])])


def _flatten_refs(v):
    """tensor references of a file's (nested) initial_state, in order"""
    if v is None:
        return []
    if isinstance(v, list):
        return [r for x in v for r in _flatten_refs(x)]
    return [v]


def _flatten(v):
    if v is None:
        return []
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _flatten(x)]
    return [v]


def _carries_mask(t, seen=None):
    """whether a tensor may carry a step mask: an Embedding(mask_zero=True) or a SeqMask above it"""
    seen = set() if seen is None else seen
    node = t._node
    if node is None or id(node) in seen:
        return False
    seen.add(id(node))
    if isinstance(node.layer, SeqMask) or isinstance(node.layer, Embedding) and node.layer.mask_zero:
        return True
    return any(_carries_mask(u, seen) for u in node.inputs)


def _cell_entry(c):
    return keras_object("keras.layers", type(c).__name__, layer_config(c))


@keras_config(SimpleRNNCell, LSTMCell, GRUCell)
def _cell_config(c):
    cfg = _rnn_config(c.layer)
    for k in _LAYER_ONLY:
        cfg.pop(k, None)
    return cfg


@keras_config(StackedRNNCells)
def _stacked_config(l):
    return dict(cells=[_cell_entry(c) for c in l.cells])


@keras_config(RNN)
def _rnn_layer_config(l):
    return dict(return_sequences=l.return_sequences, return_state=l.return_state, go_backwards=l.go_backwards,
                stateful=False, unroll=l.unroll, zero_output_for_mask=l.zero_output_for_mask,
                cell=_cell_entry(l.cell))
