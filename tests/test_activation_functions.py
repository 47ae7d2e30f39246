"""Activations the engine has no kernel for (Keras's mish, celu, glu,
sparsemax, ... and a user's function of keras.ops) applied as functions on a
layer's symbolic output (activations.layer_activation: the layer becomes a
Keras composite traced like a custom layer's call()): their values against
Keras 3, float64 central differences through them, Dense(activation=...)
training two SGD steps as Keras's, the plan against the arenas, .keras files
holding the activation's name both ways, and recurrent layers refusing them
by name. Keras's results are recorded (helpers/keras_recorded.py)."""

import os
import tempfile

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from conftest import assert_plan_equals_arenas, directional_check_per_array
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: files keyed by their names
from helpers.keras_compare import close
from helpers.keras_recorded import case, recorded

NEW = ["celu", "glu", "hard_shrink", "hard_silu", "hard_tanh", "log_sigmoid", "log_softmax", "mish", "soft_shrink",
       "sparse_plus", "sparse_sigmoid", "sparsemax", "squareplus", "tanh_shrink"]
X = np.linspace(-2.5, 2.5, 24, dtype=np.float32).reshape(4, 6)
XS = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
YS = np.random.default_rng(1).standard_normal((8, 3)).astype(np.float32)


def _keras_values():
    K = keras_ref.load()
    out = {n: np.asarray(getattr(K.activations, n)(X)) for n in NEW}
    out["threshold"] = np.asarray(K.activations.threshold(X, 0.3, -1.0))
    return out


KERAS = recorded("activation_functions_values", __file__, _keras_values)


@pytest.fixture(scope="module")
def by_name_model():
    """one Activation(name) per new activation on the same input, concatenated (symbolic)"""
    inp = bf.Input((6,))
    outs = [bf.layers.Activation(n)(inp) for n in NEW]
    return bf.Model(inp, bf.layers.Concatenate()(outs))


def test_new_activations_on_arrays_equal_keras():
    for n in NEW:
        close(KERAS[n], getattr(bf.activations, n)(X), 1e-6)
    close(KERAS["threshold"], bf.activations.threshold(X, 0.3, -1.0), 1e-6)


def test_new_activations_by_name_in_a_model_equal_keras(by_name_model):
    got = by_name_model.predict(X, batch_size=4, verbose=0)
    close(np.concatenate([KERAS[n] for n in NEW], axis=-1), got, 1e-6)


SMOOTH = ["celu", "glu", "log_sigmoid", "log_softmax", "mish", "squareplus", "tanh_shrink", "sparse_plus"]


def test_gradients_through_new_activations_match_central_differences():
    """Dense(activation=name) branches of one model: float64 central differences per weight array"""
    inp = bf.Input((4,))
    outs = [bf.layers.Dense(4, activation=n)(inp) for n in SMOOTH]
    m = bf.Model(inp, bf.layers.Concatenate()(outs))
    m.compile(optimizer="sgd", loss="mse")
    y = np.random.default_rng(2).standard_normal((8, 30)).astype(np.float32)
    directional_check_per_array(m, XS, y)


def _swishy_keras(K):
    return lambda t: t * K.ops.sigmoid(t)


ACTS = {   # (the boundfit activation, Keras's) for Dense(3, activation=...)
    "mish": lambda: ("mish", lambda K: "mish"),
    "celu": lambda: ("celu", lambda K: "celu"),
    "keras_function": lambda: (bf.activations.sparse_plus, lambda K: K.activations.sparse_plus),
    "user_lambda": lambda: (lambda t: t * bf.ops.sigmoid(t), _swishy_keras),
}


def _keras_two_steps(act, w0):
    K = keras_ref.load()
    m = K.Sequential([K.Input((4,)), K.layers.Dense(3, activation=act(K))])
    m.set_weights(w0)
    m.compile(optimizer=K.optimizers.SGD(learning_rate=0.1), loss="mse")
    h = m.fit(XS, YS, batch_size=4, epochs=1, shuffle=False, verbose=0)
    return {"loss": h.history["loss"], "weights": m.get_weights(), "out": np.asarray(m.predict(XS, verbose=0))}


@pytest.mark.parametrize("which", sorted(ACTS))
def test_dense_with_function_activation_trains_two_steps_as_keras(which):
    act, kact = ACTS[which]()
    m = bf.Sequential([bf.Input((4,)), bf.layers.Dense(3, activation=act)])
    w0 = [np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), np.array([0.1, -0.2, 0.3], np.float32)]
    m.set_weights(w0)
    ref = case(lambda: _keras_two_steps(kact, w0))
    m.compile(optimizer=bf.optimizers.SGD(learning_rate=0.1), loss="mse")
    h = m.fit(XS, YS, batch_size=4, epochs=1, shuffle=False, verbose=0)   # two steps of 4 rows
    close(ref["loss"], h.history["loss"], 1e-5)
    for r, g in zip(ref["weights"], m.get_weights()):
        close(r, g, 1e-5)
    close(ref["out"], m.predict(XS, verbose=0), 1e-5)


def test_plan_equals_arenas_with_function_activations():
    m = bf.Sequential([bf.Input((4,)), bf.layers.Dense(6, activation="mish"),
                       bf.layers.Activation(lambda t: t * bf.ops.sigmoid(t)), bf.layers.Dense(6, activation="glu")])
    m.compile(optimizer="adam", loss="mse")
    assert_plan_equals_arenas(m, XS, YS, batch_size=4)


@bf.saving.register_keras_serializable(package="acts_test")
def swishy(t):
    return t * bf.ops.sigmoid(t)


def _bf_file_model():
    inp = bf.Input((4,))
    x = bf.layers.Dense(5, activation="mish")(inp)
    x = bf.layers.Conv1D(2, 2, activation="log_sigmoid")(bf.layers.Reshape((5, 1))(x))
    x = bf.layers.Activation(swishy)(bf.layers.Flatten()(x))
    return bf.Model(inp, bf.layers.EinsumDense("ab,bc->ac", 3, activation="celu")(x))


def _keras_reads(path):
    K = keras_ref.load()

    @K.saving.register_keras_serializable(package="acts_test")
    def swishy(t):
        return t * K.ops.sigmoid(t)

    m = K.models.load_model(path)
    return {"out": np.asarray(m.predict(XS, verbose=0)),
            "acts": [l.get_config().get("activation") for l in m.layers if "activation" in l.get_config()]}


def test_keras_file_written_by_boundfit_opens_in_keras(tmp_path):
    m = _bf_file_model()
    path = str(tmp_path / "acts.keras")
    m.save(path)
    ref = case(lambda: _keras_reads(path), files=[path])
    close(ref["out"], m.predict(XS, verbose=0), 1e-5)
    assert [a if isinstance(a, str) else a["config"] for a in ref["acts"]] == \
        ["mish", "log_sigmoid", "acts_test>swishy", "celu"]
    back = bf.models.load_model(path)   # and back into boundfit
    close(m.predict(XS, verbose=0), back.predict(XS, verbose=0), 1e-6)


def _keras_writes():
    K = keras_ref.load()
    m = K.Sequential([K.Input((4,)), K.layers.Dense(5, activation="mish"), K.layers.Activation("celu"),
                      K.layers.Dense(4, activation="glu")])
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.keras")
        m.save(path)
        data = np.frombuffer(open(path, "rb").read(), np.uint8)
    return {"file": data, "out": np.asarray(m.predict(XS, verbose=0))}


def test_keras_file_with_mish_loads_into_boundfit_and_equals_keras(tmp_path):
    ref = case(_keras_writes)
    path = tmp_path / "k.keras"
    path.write_bytes(ref["file"].tobytes())
    m = bf.models.load_model(str(path))
    close(ref["out"], m.predict(XS, verbose=0), 1e-5)
    assert [l.get_config()["activation"] for l in m.layers] == ["mish", "celu", "glu"]


@pytest.mark.parametrize("layer", ["SimpleRNN", "LSTM", "GRU"])
def test_recurrent_layers_refuse_function_activations_by_name(layer):
    with pytest.raises(ValueError, match="activation.*Dense, Conv\\*, EinsumDense and Activation"):
        bf.Sequential([bf.Input((3, 2)), getattr(bf.layers, layer)(4, activation="mish")])
    with pytest.raises(ValueError, match="activation"):
        bf.Sequential([bf.Input((3, 2)), getattr(bf.layers, layer)(4, activation=lambda t: t)])


def test_unregistered_user_function_is_refused_when_saving(tmp_path):
    m = bf.Sequential([bf.Input((4,)), bf.layers.Dense(3, activation=lambda t: t * bf.ops.sigmoid(t))])
    with pytest.raises(ValueError, match="register_keras_serializable"):
        m.save(str(tmp_path / "x.keras"))


def test_config_of_a_registered_function_activation_round_trips():
    d = bf.layers.Dense(3, activation=swishy)
    cfg = d.get_config()
    assert cfg["activation"] == {"module": "builtins", "class_name": "function", "config": "acts_test>swishy",
                                 "registered_name": "function"}
    assert bf.layers.Dense.from_config(cfg).get_config()["activation"] == cfg["activation"]
    assert bf.layers.Dense(3, activation="mish").compute_output_shape((None, 4)) == (None, 3)
