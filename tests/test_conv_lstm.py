"""ConvLSTM1D / ConvLSTM2D / ConvLSTM3D (issue 34), composed of the engine's
convolutions and elementwise kinds (python/boundfit/layers/conv_lstm.py).
Against Keras 3 (recorded): outputs, loss and every gradient for
return_sequences / return_state / go_backwards / initial_state, padding
'valid' / 'same', strides, 1D dilation; ConvLSTM2D's gradients against
float64 central differences of a NumPy ConvLSTM2D; two epochs of Adam; .keras
files both ways; the plan against the arenas; Keras's initial forget-gate
bias; bad arguments and what boundfit refuses raise naming the argument."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from boundfit.layers import conv_lstm
from conftest import assert_plan_equals_arenas, engine_gradient
from fresh_names import fresh_layer_names  # noqa: F401
from helpers.keras_compare import against_keras
from helpers.keras_recorded import case, keras_file
from keras_ref import load

R = np.random.default_rng(0)


def _seq(*make, shape):
    """Input -> Dense over the channels (gradients reach the layer's input) -> the layers"""
    return lambda K, Ls: K.Sequential([K.Input(shape), Ls.Dense(shape[-1])] + [m(Ls) for m in make])


def _states(make, shape):
    """a functional model returning [output, h, c]"""
    def build(K, Ls):
        x = K.Input(shape)
        return K.Model(x, make(Ls)(Ls.Dense(shape[-1])(x)))
    return build


def _initial_state(K, Ls):
    """the states given as two more inputs (each through a Dense: their gradients reach them)"""
    x, h0, c0 = K.Input((3, 4, 5, 2)), K.Input((4, 5, 2)), K.Input((4, 5, 2))
    layer = Ls.ConvLSTM2D(2, (2, 3), padding="same", return_state=True, go_backwards=True)
    return K.Model([x, h0, c0], layer(Ls.Dense(2)(x), initial_state=[Ls.Dense(2)(h0), Ls.Dense(2)(c0)]))


CASES = {
    "1d-sequences-same": (_seq(lambda L: L.ConvLSTM1D(3, 3, padding="same", return_sequences=True), shape=(4, 7, 2)),
                          (4, 7, 2)),
    "1d-dilation-backwards": (_seq(lambda L: L.ConvLSTM1D(2, 2, dilation_rate=2, go_backwards=True,
                                                          return_sequences=True), shape=(3, 8, 2)), (3, 8, 2)),
    "1d-strides-valid": (_seq(lambda L: L.ConvLSTM1D(2, 3, strides=2, activation="relu"), shape=(3, 9, 1)),
                         (3, 9, 1)),
    "2d-sequences-valid": (_seq(lambda L: L.ConvLSTM2D(2, (2, 3), return_sequences=True), shape=(3, 5, 6, 2)),
                           (3, 5, 6, 2)),
    "2d-same-strides-backwards": (_seq(lambda L: L.ConvLSTM2D(3, 3, strides=2, padding="same", go_backwards=True,
                                                              recurrent_activation="hard_sigmoid"),
                                       shape=(3, 5, 6, 2)), (3, 5, 6, 2)),
    "2d-no-bias": (_seq(lambda L: L.ConvLSTM2D(2, 2, use_bias=False, return_sequences=True), shape=(3, 4, 4, 1)),
                   (3, 4, 4, 1)),
    "2d-return-state": (_states(lambda L: L.ConvLSTM2D(2, 3, strides=(1, 2), return_state=True,
                                                       return_sequences=True), (3, 5, 6, 2)), (3, 5, 6, 2)),
    "2d-initial-state": (_initial_state, (3, 4, 5, 2)),
    "3d-sequences-valid": (_seq(lambda L: L.ConvLSTM3D(2, 2, return_sequences=True), shape=(2, 3, 4, 4, 2)),
                           (2, 3, 4, 4, 2)),
    "3d-same-strides-backwards": (_seq(lambda L: L.ConvLSTM3D(2, (2, 3, 2), strides=(1, 2, 1), padding="same",
                                                              go_backwards=True), shape=(3, 3, 4, 3, 1)),
                                  (3, 3, 4, 3, 1)),
}


def _inputs(name, shape):
    x = R.standard_normal((2,) + shape).astype(np.float32)
    if name != "2d-initial-state":
        return x
    return [x] + [R.standard_normal((2, 4, 5, 2)).astype(np.float32) for _ in range(2)]


def _y(m):
    outs = m.outputs if isinstance(m.outputs, list) else [m.outputs]
    ys = [np.random.default_rng(1).standard_normal((2,) + tuple(o.shape[1:])).astype(np.float32) for o in outs]
    return ys if len(ys) > 1 else ys[0]


@pytest.mark.parametrize("name", list(CASES))
def test_conv_lstm_matches_keras_values_loss_and_gradients(name):
    build, shape = CASES[name]
    against_keras(build, _inputs(name, shape), _y, rtol=3e-5)


# ---- ConvLSTM2D in float64 NumPy: values and central differences ----

def _np_conv2d(x, w, strides, same):
    """x (B, H, W, C), w (kh, kw, C, F): Keras's convolution ('same': the smaller half of the padding first)"""
    k = w.shape[:2]
    if same:
        pads = []
        for n, kk, s in zip(x.shape[1:3], k, strides):
            t = max((-(-n // s) - 1) * s + kk - n, 0)
            pads.append((t // 2, t - t // 2))
        x = np.pad(x, [(0, 0)] + pads + [(0, 0)])
    o = [(n - kk) // s + 1 for n, kk, s in zip(x.shape[1:3], k, strides)]
    y = np.zeros((x.shape[0], *o, w.shape[-1]))
    for i, j in np.ndindex(*k):
        y += x[:, i:i + strides[0] * (o[0] - 1) + 1:strides[0], j:j + strides[1] * (o[1] - 1) + 1:strides[1]] @ w[i, j]
    return y


def _np_conv_lstm2d(x, kernel, recurrent, bias, strides, same):
    """Keras's ConvLSTMCell over the steps of x (B, T, H, W, C): the last h"""
    sig = lambda v: 1 / (1 + np.exp(-v))   # noqa: E731
    h = c = None
    for t in range(x.shape[1]):
        z = _np_conv2d(x[:, t], kernel, strides, same) + bias
        if h is None:
            h = c = np.zeros(z.shape[:-1] + (z.shape[-1] // 4,))
        z = z + _np_conv2d(h, recurrent, (1, 1), True)
        i, f, g, o = np.split(z, 4, axis=-1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
    return h


def test_conv_lstm2d_values_and_gradients_match_float64_central_differences():
    x = R.standard_normal((2, 3, 4, 5, 2))
    m = bf.Sequential([bf.Input(x.shape[1:]), layers.ConvLSTM2D(4, (2, 3), strides=(1, 2), padding="same")])
    r = np.random.default_rng(2)
    w0 = [(r.standard_normal(w.shape) * 0.5).astype(np.float32) for w in m.get_weights()]
    m.set_weights(w0)
    y = r.standard_normal((2,) + tuple(m.outputs[0].shape[1:]))
    np.testing.assert_allclose(m.predict(x.astype(np.float32), verbose=0),
                               _np_conv_lstm2d(x, *[w.astype(np.float64) for w in w0], (1, 2), True),
                               rtol=1e-5, atol=1e-6)
    m.compile(optimizer="sgd", loss="mse")
    got = engine_gradient(m, x.astype(np.float32), y.astype(np.float32))
    w64, eps = [w.astype(np.float64) for w in w0], 1e-6

    def loss(ws):
        return np.mean((_np_conv_lstm2d(x, *ws, (1, 2), True) - y) ** 2)

    for k, w in enumerate(w64):   # 16 entries of each weight (every gate's bias), both ways of each
        picks = [np.unravel_index(j, w.shape) for j in r.choice(w.size, 16, replace=False)]
        want = np.zeros(len(picks))
        for n, idx in enumerate(picks):
            wp, wm = [a.copy() for a in w64], [a.copy() for a in w64]
            wp[k][idx] += eps
            wm[k][idx] -= eps
            want[n] = (loss(wp) - loss(wm)) / (2 * eps)
        np.testing.assert_allclose([got[k][idx] for idx in picks], want, rtol=1e-4,
                                   atol=1e-5 * np.abs(want).max())


# ---- training, files, the plan ----

def _trained(M, L):
    return M.Sequential([M.Input((3, 5, 5, 1)), L.ConvLSTM2D(2, 3, padding="same", return_sequences=True),
                         L.ConvLSTM2D(2, 2, strides=2, go_backwards=True), L.Flatten(), L.Dense(2)])


def test_conv_lstm2d_trains_as_keras_and_its_files_open_in_both(tmp_path):
    """two epochs of Adam: the same losses and weights; .keras files of each open in the other with the same
    predictions and layer classes"""
    x, y = R.standard_normal((4, 3, 5, 5, 1)).astype(np.float32), R.standard_normal((4, 2)).astype(np.float32)
    bm = _trained(bf, layers)
    r = np.random.default_rng(5)
    w0 = [(r.standard_normal(w.shape) * 0.5).astype(np.float32) for w in bm.get_weights()]

    def save(p):
        keras = load()
        km = _trained(keras, keras.layers)
        km.set_weights(w0)
        km.compile(keras.optimizers.Adam(0.01), "mse")
        hk = km.fit(x, y, batch_size=2, epochs=2, shuffle=False, verbose=0)
        km.save(p)
        return dict(loss=hk.history["loss"], w1=km.get_weights(), p=km.predict(x, verbose=0),
                    classes=[type(l).__name__ for l in km.layers])
    k = keras_file(tmp_path / "theirs.keras", save)
    bm.set_weights(w0)
    bm.compile(bf.optimizers.Adam(0.01), "mse")
    hb = bm.fit(x, y, batch_size=2, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(hb.history["loss"], k["loss"], rtol=2e-5)
    for a, b in zip(k["w1"], bm.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
    bm.save(tmp_path / "ours.keras")

    def opened():
        theirs = load().models.load_model(tmp_path / "ours.keras")
        return theirs.predict(x, verbose=0), [type(l).__name__ for l in theirs.layers]
    theirs, classes = case(opened, files=[tmp_path / "ours.keras"])
    np.testing.assert_allclose(theirs, bm.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    assert classes == k["classes"] == [type(l).__name__ for l in bm.layers]
    ours = bf.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(ours.predict(x, verbose=0), k["p"], rtol=1e-5, atol=1e-6)
    assert [type(l).__name__ for l in ours.layers] == k["classes"]
    assert_plan_equals_arenas(bm, x, y, batch_size=2)   # the plan holds the arenas of its fit


def _states_model(M, L):
    """ConvLSTM1D's final states starting a second one; a ConvLSTM3D beside them"""
    a, b = M.Input((3, 6, 2)), M.Input((2, 3, 3, 3, 1))
    out, h, c = L.ConvLSTM1D(2, 3, padding="same", return_sequences=True, return_state=True,
                             unit_forget_bias=False, name="first")(a)
    y1 = L.ConvLSTM1D(2, 2, padding="same", dilation_rate=2, name="second")(out, initial_state=[h, c])
    y2 = L.ConvLSTM3D(1, 2, strides=(1, 2, 1), padding="same", name="third")(b)
    return M.Model([a, b], [y1, L.Flatten()(y2)])


def test_conv_lstm1d_3d_and_initial_state_files_open_in_keras_and_back(tmp_path):
    x = [R.standard_normal((2, 3, 6, 2)).astype(np.float32), R.standard_normal((2, 2, 3, 3, 3, 1)).astype(np.float32)]
    bm = _states_model(bf, layers)
    bm.set_weights([np.random.default_rng(7).standard_normal(w.shape).astype(np.float32) * 0.5
                    for w in bm.get_weights()])
    bm.save(tmp_path / "ours.keras")

    def opened():
        theirs = load().models.load_model(tmp_path / "ours.keras")
        return [np.asarray(p) for p in theirs.predict(x, verbose=0)], [w.shape for w in theirs.get_weights()]
    theirs, shapes = case(opened, files=[tmp_path / "ours.keras"])
    for t, o in zip(theirs, bm.predict(x, verbose=0)):
        np.testing.assert_allclose(t, o, rtol=1e-5, atol=1e-6)
    assert [tuple(s) for s in shapes] == [w.shape for w in bm.get_weights()]
    again = bf.models.load_model(tmp_path / "ours.keras")
    for a, b in zip(again.predict(x, verbose=0), bm.predict(x, verbose=0)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kw,want", [({}, [0, 1, 0, 0]), ({"unit_forget_bias": False}, [0, 0, 0, 0]),
                                     ({"bias_initializer": "ones"}, [1, 1, 1, 1])])
def test_conv_lstm_bias_starts_as_keras_unit_forget_bias(kw, want):
    m = bf.Sequential([bf.Input((2, 5, 1)), layers.ConvLSTM1D(3, 2, **kw)])
    kernel, recurrent, bias = m.get_weights()
    assert (kernel.shape, recurrent.shape) == ((2, 1, 12), (2, 3, 12))
    np.testing.assert_array_equal(bias, np.repeat(want, 3))


@pytest.mark.parametrize("make,match", [
    (lambda: layers.ConvLSTM2D(2, 3, data_format="channels_first"), "data_format"),
    (lambda: layers.ConvLSTM2D(2, 3, dropout=0.2), "dropout"),
    (lambda: layers.ConvLSTM2D(2, 3, recurrent_dropout=0.1), "recurrent_dropout"),
    (lambda: layers.ConvLSTM1D(2, 3, dropout=1.5), "dropout"),
    (lambda: layers.ConvLSTM2D(2, 3, stateful=True), "stateful"),
    (lambda: layers.ConvLSTM2D(2, 3, dilation_rate=2), "dilation_rate"),
    (lambda: layers.ConvLSTM1D(2, 3, strides=2, dilation_rate=2), "dilation_rate"),
    (lambda: layers.ConvLSTM3D(2, (1, 2)), "kernel_size"),
    (lambda: layers.ConvLSTM1D(0, 3), "filters"),
    (lambda: layers.ConvLSTM2D(2, 3, padding="causal"), "padding"),
    (lambda: layers.ConvLSTM2D(2, 3, activation="nope"), "activation"),
    (lambda: layers.ConvLSTM2D(2, 3, recurrent_activation="nope"), "recurrent_activation"),
    (lambda: layers.ConvLSTM2D(2, 3, kernel_initializer="nope"), "kernel_initializer"),
    (lambda: layers.ConvLSTM2D(2, 3, activity_regularizer="l2"), "activity_regularizer"),
])
def test_conv_lstm_bad_arguments_raise_naming_them(make, match):
    with pytest.raises((ValueError, NotImplementedError), match=match):
        make()


@pytest.mark.parametrize("call,match", [
    (lambda l: l(bf.Input((4, 5, 5, 1)), mask=bf.Input((4,))), "mask"),
    (lambda l: l(bf.Input((4, 5, 1))), r"\(batch, time, rows, cols, channels\)"),
    (lambda l: l(bf.Input((None, 5, 5, 1))), "MAX_STEPS|at most"),
    (lambda l: l(bf.Input((conv_lstm.MAX_STEPS + 1, 5, 5, 1))), f"at most {conv_lstm.MAX_STEPS} known steps"),
    (lambda l: l(bf.Input((4, 5, 5, 1)), initial_state=[bf.Input((5, 5, 2))]), "initial_state"),
])
def test_conv_lstm_refuses_what_it_cannot_run_by_name(call, match):
    with pytest.raises((ValueError, NotImplementedError), match=match):
        call(layers.ConvLSTM2D(2, 3, padding="same"))
