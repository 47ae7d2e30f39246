"""use_ema (ema_momentum, ema_overwrite_frequency) on the optimizers, SwapEMAWeights and
keras.optimizers.serialize / deserialize against Keras 3 (JAX backend, recorded in tests/keras_refs/):
two epochs from the same weights give Keras's losses, weights and moving averages (the weights after fit are
the averages, as Keras's finalize_variable_values sets them); the average is one more planned state slot
(plan == arenas) and the "emu" device gives the CPU's bits (CUDA: tests/test_cuda_sim.py runs the CUDA test);
.keras files carry the optimizer's config and averages both ways; bad arguments raise naming them."""

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from boundfit import layers
from conftest import assert_plan_equals_arenas
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: files keyed by their names
from helpers.keras_recorded import case, keras_file
from test_cuda_backend import _REASON

RNG = np.random.default_rng(7)
X = RNG.standard_normal((48, 5)).astype(np.float32)
Y = RNG.standard_normal((48, 3)).astype(np.float32)
XV, YV = X[:16] * 0.5, Y[:16]

# (id, class, arguments): each optimizer's state slots (0 to 3) and the average after them
CASES = [
    ("sgd", "SGD", dict(learning_rate=0.1, use_ema=True)),
    ("sgd momentum m0.9", "SGD", dict(learning_rate=0.1, momentum=0.9, use_ema=True, ema_momentum=0.9)),
    ("adam amsgrad overwrite2", "Adam", dict(learning_rate=0.05, amsgrad=True, use_ema=True, ema_momentum=0.8,
                                             ema_overwrite_frequency=2)),
    ("rmsprop centered momentum", "RMSprop", dict(learning_rate=0.01, momentum=0.5, centered=True, use_ema=True,
                                                  ema_momentum=0.7)),
    ("lamb wd", "Lamb", dict(learning_rate=0.05, weight_decay=0.1, use_ema=True, ema_momentum=0.5,
                             ema_overwrite_frequency=4)),
]
IDS = [c[0] for c in CASES]


def _weights():
    rng = np.random.default_rng(0)
    return [rng.normal(0, 0.7, size=s).astype(np.float32) for s in [(5, 6), (6,), (6, 3), (3,)]]


def _model(lib, opt):
    if lib is bf:
        m = bf.Sequential([layers.Dense(6, activation="tanh", input_shape=(5,)), layers.Dense(3)])
    else:
        m = lib.Sequential([lib.Input((5,)), lib.layers.Dense(6, activation="tanh"), lib.layers.Dense(3)])
    m.set_weights(_weights())
    m.compile(optimizer=opt, loss="mse")
    return m


def _keras_fit(cls, kw, swap=None):
    """Keras's two epochs: history, weights after fit, its averages, iterations"""
    k = keras_ref.load()
    km = _model(k, getattr(k.optimizers, cls)(**kw))
    cbs = [] if swap is None else [k.callbacks.SwapEMAWeights(swap_on_epoch=swap)]
    h = km.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0, callbacks=cbs,
               validation_data=None if swap is None else (XV, YV))
    avg = [np.asarray(v) for v in km.optimizer._model_variables_moving_average]
    return dict(history=h.history, weights=km.get_weights(), averages=avg, iterations=int(km.optimizer.iterations))


def _average(m):
    it, slots = m._engine.optimizer_state()
    return it, slots[-1]


@pytest.mark.parametrize("case_", CASES, ids=IDS)
def test_two_epochs_with_ema_give_keras_losses_weights_and_averages(case_):
    _, cls, kw = case_
    ref = case(lambda: _keras_fit(cls, kw))
    bm = _model(bf, getattr(bf.optimizers, cls)(**kw))
    h = bm.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(h.history["loss"], ref["history"]["loss"], rtol=2e-5)
    for i, (a, b) in enumerate(zip(ref["weights"], bm.get_weights())):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=f"weights[{i}]")
    it, avg = _average(bm)
    assert it == ref["iterations"] == 6
    np.testing.assert_allclose(avg, np.concatenate([a.ravel() for a in ref["averages"]]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("swap", [False, True])
def test_swap_ema_weights_evaluates_on_the_averages_as_keras(swap):
    kw = dict(learning_rate=0.1, momentum=0.9, use_ema=True, ema_momentum=0.6)
    ref = case(lambda: _keras_fit("SGD", kw, swap))
    bm = _model(bf, bf.optimizers.SGD(**kw))
    h = bm.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0, validation_data=(XV, YV),
               callbacks=[bf.callbacks.SwapEMAWeights(swap_on_epoch=swap)])
    for key in ("loss", "val_loss"):
        np.testing.assert_allclose(h.history[key], ref["history"][key], rtol=2e-5, err_msg=key)
    for a, b in zip(ref["weights"], bm.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_average(bm)[1], np.concatenate([a.ravel() for a in ref["averages"]]), rtol=1e-5,
                               atol=1e-6)


def test_evaluate_with_swap_ema_weights_uses_the_averages_and_swaps_back():
    m = _model(bf, bf.optimizers.Adam(learning_rate=0.05, use_ema=True, ema_momentum=0.5))
    m.fit(X, Y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    m.fit(X, Y, batch_size=16, epochs=1, shuffle=False, verbose=0)   # weights = average after each fit
    m.optimizer.finalize_variable_values()
    trained = m.get_weights()
    # one more step moves the weights off the average; evaluating with the callback sees the average
    m.fit(X[:16], Y[:16], batch_size=16, epochs=1, shuffle=False, verbose=0)
    w, avg = m.get_weights(), _average(m)[1]
    plain = _model(bf, "sgd")
    plain.set_weights([avg[o:o + a.size].reshape(a.shape) for a, o in
                       zip(w, np.cumsum([0] + [a.size for a in w[:-1]]))])
    want = plain.evaluate(XV, YV, verbose=0)
    m.set_weights(w)
    got = m.evaluate(XV, YV, verbose=0, callbacks=[bf.callbacks.SwapEMAWeights()])
    assert got == pytest.approx(want, rel=1e-6)
    for a, b in zip(w, m.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert not all(np.array_equal(a, b) for a, b in zip(trained, w))


def test_ema_is_one_planned_slot_and_emu_gives_the_cpu_bits():
    kw = dict(learning_rate=0.05, amsgrad=True, use_ema=True, ema_overwrite_frequency=2)
    a, b, c = (_model(bf, bf.optimizers.Adam(**kw)) for _ in range(3))
    plain = _model(bf, bf.optimizers.Adam(learning_rate=0.05, amsgrad=True))
    state = [sum(e.bytes for e in m.estimate_memory(batch_size=16).breakdown if e.category == "optimizer state")
             for m in (a, plain)]
    assert state[1] >= 3 * 4 * a.count_params() and state[0] - state[1] >= 4 * a.count_params() - 64
    assert_plan_equals_arenas(c, X, Y, batch_size=16)
    assert c._engine.optimizer_arena_bytes == state[0]
    a.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    ha = a.fit(X, Y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    b.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0, device="emu")
    hb = b.fit(X, Y, batch_size=16, epochs=1, shuffle=False, verbose=0, device="emu")
    assert ha.history == hb.history
    for x, y in zip(a.get_weights() + a._engine.optimizer_state()[1], b.get_weights() + b._engine.optimizer_state()[1]):
        np.testing.assert_array_equal(x, y)


@pytest.mark.gpu
@pytest.mark.skipif(_REASON is not None, reason=_REASON or "")
def test_ema_trains_on_cuda_as_on_the_cpu():
    kw = dict(learning_rate=0.05, use_ema=True, ema_momentum=0.7, ema_overwrite_frequency=2)
    a, b = (_model(bf, bf.optimizers.Adam(**kw)) for _ in range(2))
    ha = a.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0, validation_data=(XV, YV),
               callbacks=[bf.callbacks.SwapEMAWeights()])
    hb = b.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0, validation_data=(XV, YV),
               callbacks=[bf.callbacks.SwapEMAWeights()], device="cuda")
    for key in ("loss", "val_loss"):
        np.testing.assert_allclose(hb.history[key], ha.history[key], rtol=1e-5)
    for x, y in zip(a.get_weights() + [_average(a)[1]], b.get_weights() + [_average(b)[1]]):
        np.testing.assert_allclose(y, x, rtol=1e-5, atol=1e-6)


def _config_keys(cfg):
    return dict(cfg)


def test_keras_files_carry_the_ema_config_and_averages_both_ways(tmp_path):
    kw = dict(learning_rate=0.05, use_ema=True, ema_momentum=0.8, ema_overwrite_frequency=4)
    bm = _model(bf, bf.optimizers.Adam(**kw))
    bm.fit(X, Y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    path = str(tmp_path / "ours.keras")
    bm.save(path)

    def open_ours():
        km = keras_ref.load().models.load_model(path)
        return dict(config=km.optimizer.get_config(), iterations=int(km.optimizer.iterations),
                    averages=[np.asarray(v) for v in km.optimizer._model_variables_moving_average])
    theirs = case(open_ours, files=[path])
    assert theirs["config"]["use_ema"] is True and theirs["iterations"] == 3
    assert theirs["config"]["ema_momentum"] == pytest.approx(0.8) and theirs["config"]["ema_overwrite_frequency"] == 4
    np.testing.assert_array_equal(np.concatenate([a.ravel() for a in theirs["averages"]]), _average(bm)[1])

    def save(p):   # Keras's trained model with EMA, recorded with its file
        k = keras_ref.load()
        km = _model(k, k.optimizers.Adam(**kw))
        km.fit(X, Y, batch_size=16, epochs=1, shuffle=False, verbose=0)
        km.save(p)
        return dict(config=km.optimizer.get_config(),
                    averages=[np.asarray(v) for v in km.optimizer._model_variables_moving_average])
    k = keras_file(tmp_path / "theirs.keras", save)
    loaded = bf.models.load_model(tmp_path / "theirs.keras")
    cfg = loaded.optimizer.get_config()
    assert cfg == {key: v for key, v in _config_keys(k["config"]).items() if key in cfg}
    assert {"use_ema", "ema_momentum", "ema_overwrite_frequency"} <= set(cfg)
    it, avg = _average(loaded)
    assert it == 3
    np.testing.assert_array_equal(avg, np.concatenate([a.ravel() for a in k["averages"]]))


@pytest.mark.parametrize("make", [
    lambda k: k.optimizers.Adam(learning_rate=0.01, use_ema=True, ema_momentum=0.9, ema_overwrite_frequency=5),
    lambda k: k.optimizers.SGD(learning_rate=k.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5), momentum=0.5),
    lambda k: k.optimizers.Lion(beta_1=0.8, clipnorm=1.0),
], ids=["adam ema", "sgd schedule", "lion clipnorm"])
def test_serialize_and_deserialize_are_keras(make):
    ref = case(lambda: keras_ref.load().optimizers.serialize(make(keras_ref.load())))
    ours = bf.optimizers.serialize(make(bf))
    assert {k: v for k, v in ours.items() if k != "config"} == {k: v for k, v in ref.items() if k != "config"}
    # the same entries (Keras's names are made unique per process, its rates float32)
    theirs = {k: v for k, v in _config_keys(ref["config"]).items() if k in ours["config"] and k != "name"}
    assert set(ours["config"]) - {"name"} == set(theirs)
    for k, v in theirs.items():
        assert ours["config"][k] == (pytest.approx(v) if isinstance(v, float) else v), k
    back = bf.optimizers.deserialize(ref)
    assert type(back).__name__ == ref["class_name"]
    for k, v in theirs.items():
        if k != "learning_rate" or not isinstance(v, dict):
            assert back.get_config()[k] == (pytest.approx(v) if isinstance(v, float) else v), k
    assert bf.optimizers.serialize(back)["config"]["learning_rate"] == ours["config"]["learning_rate"] or \
        back.learning_rate == pytest.approx(ours["config"]["learning_rate"])
    assert bf.optimizers.get(ref).get_config() == back.get_config()


@pytest.mark.parametrize("make,what", [
    (lambda: bf.optimizers.Adam(use_ema=True, ema_momentum=1.5), "ema_momentum"),
    (lambda: bf.optimizers.SGD(use_ema=True, ema_overwrite_frequency=0.5), "ema_overwrite_frequency"),
    (lambda: bf.optimizers.deserialize({"class_name": "Nope", "config": {}}), "Nope"),
    (lambda: bf.optimizers.deserialize("adam"), "config"),
])
def test_bad_ema_and_deserialize_arguments_raise_naming_them(make, what):
    with pytest.raises(ValueError, match=what):
        make()


def test_swap_ema_weights_without_use_ema_raises_naming_it():
    m = _model(bf, "adam")
    with pytest.raises(ValueError, match="use_ema"):
        m.fit(X, Y, batch_size=16, epochs=1, verbose=0, validation_data=(XV, YV),
              callbacks=[bf.callbacks.SwapEMAWeights()])
