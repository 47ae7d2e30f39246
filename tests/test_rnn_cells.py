"""keras.layers.RNN with its cells (SimpleRNNCell, LSTMCell, GRUCell,
StackedRNNCells and lists of cells, a custom cell), Masking, and the mask=
argument of recurrent calls, against Keras 3 (recorded: helpers/
keras_recorded.py): outputs, loss and gradients on sequences masked to
varying lengths, return_state / initial_state / go_backwards, a cell called
on its own, finite differences, the plan against the arenas, Keras files
both ways, and the refusals."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from conftest import assert_plan_equals_arenas, directional_check
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: files keyed by their names
from helpers.keras_compare import against_keras, close
from helpers.keras_recorded import case, keras_file
from keras_ref import load

B, T, D = 4, 6, 3
rng = np.random.default_rng(0)
X = rng.standard_normal((B, T, D)).astype(np.float32)
X[0, 4:] = 0.0    # padded at the end
X[1, :2] = 0.0    # at the start
X[2, 3] = 0.0     # a hole
Y2 = rng.standard_normal((B, 2)).astype(np.float32)
S0 = [rng.standard_normal((B, n)).astype(np.float32) for n in (4, 4, 2)]


def _steps(K):
    """the mask of X's padded steps, computed in the graph"""
    i = K.Input((T, D))
    return i, K.ops.not_equal(K.ops.sum(K.ops.abs(i), axis=-1), 0.0)


def lstm_cell(K, Ls):
    i = K.Input((T, D))
    return K.Model(i, Ls.Dense(2)(Ls.RNN(Ls.LSTMCell(5))(Ls.Masking()(i))))


def stacked_backwards(K, Ls):
    """a list of cells, go_backwards, sequences out: the inner cell's output in input order, the last's reversed"""
    i = K.Input((T, D))
    h = Ls.RNN([Ls.SimpleRNNCell(4), Ls.GRUCell(3)], return_sequences=True, go_backwards=True)(Ls.Masking()(i))
    return K.Model(i, Ls.Dense(2)(Ls.Flatten()(h)))   # (Flatten drops the mask: every step's output counts)


def zero_output(K, Ls):
    i = K.Input((T, D))
    h = Ls.RNN(Ls.StackedRNNCells([Ls.GRUCell(3), Ls.LSTMCell(4)]), return_sequences=True,
               zero_output_for_mask=True)(Ls.Masking()(i))
    return K.Model(i, Ls.Dense(2)(Ls.Flatten()(h)))


def mask_argument(K, Ls):
    """mask= on LSTM, Bidirectional and RNN calls; the mask carried on from a return_sequences output"""
    i, m = _steps(K)
    h = Ls.Dense(4)(i)
    a = Ls.Bidirectional(Ls.LSTM(3, return_sequences=True))(h, mask=m)
    a = Ls.GRU(2)(a)
    b = Ls.RNN(Ls.SimpleRNNCell(2))(h, mask=m)
    return K.Model(i, Ls.Add()([a, b]))


def minimal_cell(K):
    class MinimalRNNCell(K.layers.Layer):   # keras.io's custom cell
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units, self.state_size = units, units

        def build(self, input_shape):
            self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="uniform", name="kernel")
            self.recurrent_kernel = self.add_weight(shape=(self.units, self.units), initializer="uniform",
                                                    name="recurrent_kernel")

        def call(self, inputs, states):
            out = K.ops.matmul(inputs, self.kernel) + K.ops.matmul(states[0], self.recurrent_kernel)
            return out, [out]
    return MinimalRNNCell


def custom_cell(K, Ls):
    i, m = _steps(K)
    h = Ls.RNN(minimal_cell(K)(3), return_sequences=True, go_backwards=True)(i, mask=m)
    return K.Model(i, Ls.Dense(2)(Ls.Flatten()(h)))


def states(K, Ls):
    """initial_state and return_state of a stack (Keras's nesting: an LSTM cell's [h, c], a GRU cell's h)"""
    i, s = K.Input((T, D)), [K.Input((4,)), K.Input((4,)), K.Input((2,))]
    o = Ls.RNN([Ls.LSTMCell(4), Ls.GRUCell(2)], return_state=True)(i, initial_state=[[s[0], s[1]], s[2]])
    return K.Model([i] + s, Ls.Concatenate()([o[0], o[1][0], o[1][1], o[2]]))


@pytest.mark.parametrize("build,x,y", [
    (lstm_cell, X, Y2), (stacked_backwards, X, Y2), (zero_output, X, Y2), (mask_argument, X, Y2),
    (custom_cell, X, Y2), (states, [X] + S0, rng.standard_normal((B, 12)).astype(np.float32)),
], ids=["lstm_cell", "stacked_backwards", "zero_output", "mask_argument", "custom_cell", "states"])
def test_rnn_models_match_keras_outputs_loss_and_gradients(build, x, y):
    against_keras(build, x, y)


@pytest.mark.parametrize("build", [stacked_backwards, mask_argument, custom_cell],
                         ids=["stacked_backwards", "mask_argument", "custom_cell"])
def test_gradients_match_finite_differences(build):
    m = build(bf, layers)
    m.compile(optimizer="sgd", loss="mse")
    y = m.predict(X, verbose=0) * 0.5 + 0.1
    directional_check(m, X, y, eps=1e-3, rtol=2e-2)


@pytest.mark.parametrize("cells", [[layers.SimpleRNNCell(3), layers.GRUCell(2)], minimal_cell(bf)(2)],
                         ids=["stacked", "custom"])
def test_values_at_masked_steps_change_nothing(cells):
    i, ids = bf.Input((T, D)), bf.Input((T,))
    out = layers.RNN(cells, go_backwards=True)(layers.Dense(3)(i), mask=bf.ops.not_equal(ids, 0))
    m = bf.Model([i, ids], out)
    keep = (rng.random((B, T)) > 0.4).astype(np.float32)
    x = X.copy()
    x[keep == 0] = 100.0
    np.testing.assert_array_equal(m.predict([X, keep], verbose=0), m.predict([x, keep], verbose=0))


@pytest.mark.parametrize("device", ["cpu", "emu"])
def test_plan_equals_arena_high_water(device):
    m = mask_argument(bf, layers)
    m.compile(optimizer="adam", loss="mse")
    plan = assert_plan_equals_arenas(m, X, Y2, 2, device=device)
    assert (plan.device_bytes > 0) == (device == "emu")


def test_two_training_steps_match_keras():
    """two SGD steps of a stacked RNN over masked sequences: Keras's losses and weights"""
    def compute():
        keras = load()
        mk = stacked_backwards(keras, keras.layers)
        mk.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        w0 = mk.get_weights()
        h = mk.fit(X, Y2, batch_size=2, epochs=1, shuffle=False, verbose=0)
        return {"w0": w0, "w1": mk.get_weights(), "loss": h.history["loss"][0]}
    ref = case(compute)
    mb = stacked_backwards(bf, layers)
    mb.set_weights(ref["w0"])
    mb.compile(optimizer=bf.optimizers.SGD(0.1), loss="mse")
    h = mb.fit(X, Y2, batch_size=2, epochs=1, shuffle=False, verbose=0)
    assert abs(h.history["loss"][0] - ref["loss"]) <= 1e-5 * abs(ref["loss"])
    for r, g in zip(ref["w1"], mb.get_weights()):
        close(r, g, 1e-5)


@pytest.mark.parametrize("build,x", [(states, [X] + S0), (mask_argument, X), (zero_output, X)],
                         ids=["states", "mask_argument", "zero_output"])
def test_keras_files_both_ways(tmp_path, build, x):
    mb = build(bf, layers)
    path = str(tmp_path / "bf.keras")
    mb.save(path)
    ref = case(lambda: np.asarray(load().models.load_model(path).predict(x, verbose=0)), files=[path])
    close(ref, mb.predict(x, verbose=0))

    def keras_side(p):
        keras = load()
        mk = build(keras, keras.layers)
        mk.save(p)
        return {"predict": np.asarray(mk.predict(x, verbose=0))}
    got = keras_file(tmp_path / "k.keras", keras_side)
    close(got["predict"], bf.models.load_model(str(tmp_path / "k.keras")).predict(x, verbose=0))


def test_cells_called_on_their_own_match_keras():
    """cell(x, states) eagerly on arrays: Keras's output and states (LSTMCell [h, c], GRUCell h)"""
    x, h, c = X[:, 0], S0[0][:, :3], S0[1][:, :3]

    def compute():
        keras = load()
        out = {}
        for name, st in (("LSTMCell", [h, c]), ("GRUCell", h)):
            cell = getattr(keras.layers, name)(3)
            cell.build((None, D))
            cell.set_weights([(np.random.default_rng(2).standard_normal(w.shape) * 0.5).astype(np.float32)
                              for w in cell.get_weights()])
            y, s = cell(x, st)
            out[name] = {"w": cell.get_weights(), "y": np.asarray(y),
                         "s": [np.asarray(v) for v in s] if isinstance(s, (list, tuple)) else np.asarray(s)}
        return out
    ref = case(compute)
    for name, st in (("LSTMCell", [h, c]), ("GRUCell", h)):
        cell = getattr(layers, name)(3)
        cell(x, st)   # made on first use
        cell.set_weights(ref[name]["w"])
        y, s = cell(x, st)
        close(ref[name]["y"], y)
        for r, g in zip(ref[name]["s"] if isinstance(s, list) else [ref[name]["s"]], s if isinstance(s, list) else [s]):
            close(r, g)


def test_stateful_is_refused_by_name():
    with pytest.raises(NotImplementedError, match="stateful=True.*initial_state"):
        layers.RNN(layers.LSTMCell(2), stateful=True)


def test_a_custom_cell_over_a_carried_mask_or_many_steps_is_refused_by_name():
    i = bf.Input((T, D))
    with pytest.raises(NotImplementedError, match="carries a mask.*mask="):
        layers.RNN(minimal_cell(bf)(2))(layers.Masking()(i))
    with pytest.raises(NotImplementedError, match="at most 64 known steps.*LSTMCell"):
        layers.RNN(minimal_cell(bf)(2))(bf.Input((65, D)))


def test_bad_masks_and_cell_arguments_raise_naming_them():
    i = bf.Input((T, D))
    with pytest.raises(ValueError, match="mask must have shape \\(batch, 6\\)"):
        layers.LSTM(2)(i, mask=bf.Input((T + 1,)))
    with pytest.raises(TypeError, match="return_sequences.*RNN"):
        layers.LSTMCell(2, return_sequences=True)
    cell = layers.GRUCell(2)
    layers.RNN(cell)(i)
    with pytest.raises(NotImplementedError, match="already used in another way"):
        layers.RNN(cell, return_sequences=True)(i)
