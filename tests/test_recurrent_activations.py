"""Recurrent cells with Keras 3's other activations (`activation`,
`recurrent_activation` in linear, relu, sigmoid, tanh, hard_sigmoid; the
classic `LSTM(50, activation="relu")` of time-series tutorials) against Keras
3 (outputs, loss, one SGD step's weights), finite differences per weight
array, Keras files both ways, the CUDA kernels against the CPU (skipped
without a GPU), and the activations still refused. Keras's side is recorded
(helpers/keras_recorded.py)."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: files keyed by their names
from helpers.keras_recorded import case, keras_file
from keras_ref import load
from test_recurrent import IDS, X, Y, against_keras, E, T, D, U, V
from conftest import directional_check_per_array as directional_check


def activated(K, Ls):
    """Every cell with non-default activations, masked steps and go_backwards included."""
    i = K.Input((T,))
    h = Ls.Embedding(V, E, mask_zero=True)(i)
    h = Ls.Bidirectional(Ls.LSTM(U, activation="relu", recurrent_activation="hard_sigmoid",
                                 return_sequences=True))(h)
    h = Ls.GRU(U, activation="sigmoid", recurrent_activation="tanh", return_sequences=True, go_backwards=True)(h)
    h = Ls.SimpleRNN(U, activation="hard_sigmoid", return_sequences=True)(h)
    h = Ls.LSTM(U, activation="linear", recurrent_activation="relu", return_sequences=True)(h)
    return K.Model(i, Ls.Dense(2)(Ls.GRU(U, activation="relu", recurrent_activation="hard_sigmoid")(h)))


def relu_lstm(K, Ls):
    """The time-series tutorial's model: LSTM(activation='relu') -> Dense(1)."""
    return K.Sequential([K.Input((T, D)), Ls.LSTM(U, activation="relu"), Ls.Dense(2)])


def test_cells_with_other_activations_match_keras():
    against_keras(activated, IDS)


def test_relu_lstm_matches_keras():
    against_keras(relu_lstm, X)


@pytest.mark.parametrize("cell,act,ract", [("LSTM", "relu", "hard_sigmoid"), ("GRU", "sigmoid", "tanh"),
                                           ("LSTM", "linear", "sigmoid"), ("SimpleRNN", "hard_sigmoid", None)])
def test_other_activations_match_finite_differences(cell, act, ract):
    kw = {"activation": act, **({"recurrent_activation": ract} if ract else {})}
    c = getattr(layers, cell)
    m = bf.Sequential([layers.Input((T, D)), c(U, return_sequences=True, **kw), c(U, go_backwards=True, **kw),
                       layers.Dense(2)])
    m.compile(optimizer="sgd", loss="mse")
    # relu and hard_sigmoid have kinks: a smaller step crosses fewer of them (the Keras test above checks the
    # gradients exactly)
    directional_check(m, X, Y, eps=3e-4 if {act, ract} & {"relu", "hard_sigmoid"} else 3e-3)


def test_keras_files_keep_the_activations_both_ways(tmp_path):
    mb = activated(bf, layers)
    mb.compile(optimizer="adam", loss="mse")
    mb.save(tmp_path / "bf.keras")

    def opened():
        mk = load().saving.load_model(tmp_path / "bf.keras")
        return {"ract": mk.layers[2].forward_layer.recurrent_activation.__name__, "predict": mk.predict(IDS, verbose=0)}
    mk = case(opened, files=[tmp_path / "bf.keras"])
    assert mk["ract"] == "hard_sigmoid"
    np.testing.assert_allclose(mk["predict"], mb.predict(IDS, verbose=0), rtol=1e-5, atol=1e-6)

    def save(p):
        keras = load()
        mk2 = relu_lstm(keras, keras.layers)
        mk2.save(p)
        return {"predict": mk2.predict(X, verbose=0)}
    mk2 = keras_file(tmp_path / "k.keras", save)
    mb2 = bf.models.load_model(tmp_path / "k.keras")
    assert mb2.layers[0].activation == "relu"
    np.testing.assert_allclose(mb2.predict(X, verbose=0), mk2["predict"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make,match", [
    (lambda: layers.LSTM(4, activation="gelu"), "activation 'gelu' is not supported"),
    (lambda: layers.GRU(4, recurrent_activation="softmax"), "recurrent_activation 'softmax' is not supported"),
    (lambda: layers.SimpleRNN(4, activation="elu"), "activation 'elu' is not supported"),
])
def test_other_cell_activations_are_refused_naming_them(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_cuda_cells_with_other_activations_match_the_cpu():
    from test_cuda_backend import _REASON, _assert_weights_close, _train_both
    if _REASON is not None:
        pytest.skip(_REASON)

    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=0.05), loss="mse")

    cpu, gpu, hc, hg = _train_both(lambda: activated(bf, layers), compile_kw, np.tile(IDS, (4, 1)),
                                   np.tile(Y, (4, 1)), batch_size=10, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "other cell activations")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)
