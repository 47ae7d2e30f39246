"""Keras 3 files both ways: `.keras` and `.weights.h5` written here open in
Keras 3 (same predictions, optimizer state in Keras's order), files written by
Keras 3 load here (same predictions, and training goes on from Keras's
optimizer state); unsupported layers and options are named; every save is
atomic (a failure mid-save leaves the previous file loadable)."""

import json
import os
import tempfile
import warnings
import zipfile

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers as L
from boundfit.saving import keras_file as keras_format

from helpers.keras_recorded import case, keras_file
from keras_ref import load
from boundfit.layers.layer import _counters


@pytest.fixture(autouse=True)
def _names_from_zero():
    """layers named from 0 in each test (as after Keras's clear_session): boundfit's files, whose contents key
    Keras's recorded results, do not depend on the tests run before in the process (pytest-xdist)"""
    _counters.clear()


def _data(shape=(8, 8, 1), n=32, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n,) + shape, dtype=np.float32), rng.integers(0, classes, n)


def _model_a():
    return bf.Sequential([
        L.Conv2D(4, 3, activation="relu", padding="same", input_shape=(8, 8, 1)),
        L.BatchNormalization(),
        L.MaxPooling2D(),
        L.AveragePooling2D(pool_size=(2, 2), strides=1),
        L.Flatten(),
        L.Dropout(0.25),
        L.Dense(3, activation="softmax"),
    ])


def _model_b():
    return bf.Sequential([
        L.InputLayer(shape=(8, 8, 1)),
        L.Conv2D(6, (3, 3), strides=(2, 2), use_bias=False),
        L.GlobalAveragePooling2D(),
        L.Reshape((2, 3)),
        L.Flatten(),
        L.Activation("tanh"),
        L.Dense(3),
    ])


def _keras_model(keras):
    return keras.Sequential([
        keras.Input((8, 8, 1)),
        keras.layers.Conv2D(4, 3, activation="relu", padding="same"),
        keras.layers.BatchNormalization(),
        keras.layers.MaxPooling2D(),
        keras.layers.AveragePooling2D(pool_size=2, strides=1),
        keras.layers.Flatten(),
        keras.layers.Dense(5, activation="relu"),
        keras.layers.Dense(3, activation="softmax"),
    ])


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _keras_opens(path, run, out=None):
    """run(keras, the model Keras loads from boundfit's file at path), recorded by the file's contents; out: a
    file run(...) writes (its "__out__" path), recorded too and written there"""
    def compute():
        keras = load()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            k = keras.saving.load_model(path)
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, os.path.basename(str(out)))
            got = dict(run(keras, k, p) if out is not None else run(keras, k),
                       user_warnings=[str(w.message) for w in caught if issubclass(w.category, UserWarning)])
            if out is not None:
                got["__out__"] = np.frombuffer(open(p, "rb").read(), np.uint8)
        return got
    got = case(compute, label=os.path.basename(path), files=[path])
    if out is not None:
        with open(out, "wb") as f:
            f.write(got.pop("__out__").tobytes())
    return got


@pytest.mark.parametrize("make", [_model_a, _model_b], ids=["conv-bn-pool-dropout", "gap-reshape-activation"])
def test_keras_file_saved_here_loads_in_keras_with_same_predictions(tmp_path, make):
    x, y = _data()
    m = make()
    loss = "sparse_categorical_crossentropy" if make is _model_a else \
        bf.losses.SparseCategoricalCrossentropy(from_logits=True)
    m.compile(optimizer="adam", loss=loss, metrics=["accuracy"])
    m.fit(x, y, batch_size=8, epochs=1, verbose=0)
    path = tmp_path / "m.keras"
    m.save(path)
    with zipfile.ZipFile(path) as z:
        assert {"config.json", "metadata.json", "model.weights.h5"} <= set(z.namelist())
    k = _keras_opens(path, lambda keras, k: dict(p=k.predict(x, verbose=0), names=[l.name for l in k.layers],
                                                 iterations=int(k.optimizer.iterations),
                                                 optimizer=type(k.optimizer).__name__))
    _close(k["p"], m.predict(x, verbose=0))
    assert k["names"] == [l.name for l in m.layers]
    assert k["iterations"] == m.optimizer.iterations == 4
    assert k["optimizer"] == "Adam"


def test_optimizer_state_written_here_continues_identically_in_keras(tmp_path):
    """Adam's moments go into optimizer/vars in Keras's order: one more step in
    Keras and here from the saved file gives the same weights."""
    x, y = _data(n=16)
    m = bf.Sequential([L.Conv2D(3, 3, activation="relu", input_shape=(8, 8, 1)), L.Flatten(),
                       L.Dense(3, activation="softmax")])
    m.compile(optimizer=bf.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    m.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    m.save(tmp_path / "m.keras")
    def run(keras, k):
        k.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
        return dict(iterations=int(k.optimizer.iterations), w=k.get_weights())
    k = _keras_opens(tmp_path / "m.keras", run)
    m.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    assert k["iterations"] == 4
    for a, b in zip(k["w"], m.get_weights()):
        _close(a, b)


MORE_OPTIMIZERS = [("Adamax", dict(learning_rate=0.01, weight_decay=0.01)), ("Adadelta", dict(learning_rate=1.0)),
                   ("Ftrl", dict(learning_rate=0.1, l1_regularization_strength=0.01, beta=0.1)),
                   ("Lion", dict(learning_rate=0.01)), ("Lamb", dict(learning_rate=0.01, clipnorm=1.0))]


@pytest.mark.parametrize("cls,kw", MORE_OPTIMIZERS, ids=[c for c, _ in MORE_OPTIMIZERS])
def test_later_optimizers_state_continues_identically_both_ways(tmp_path, cls, kw):
    """Adamax, Adadelta, Ftrl, Lion, Lamb: their config and state (Keras's variable order) written here
    continue in Keras, and Keras's file continues here, to the same weights."""
    x, y = _data(n=16)
    m = bf.Sequential([L.Flatten(input_shape=(8, 8, 1)), L.Dense(4, activation="tanh"),
                       L.Dense(3, activation="softmax")])
    m.compile(optimizer=getattr(bf.optimizers, cls)(**kw), loss="sparse_categorical_crossentropy")
    m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    m.save(tmp_path / "m.keras")
    def run(keras, k, out):
        got = dict(optimizer=type(k.optimizer).__name__, iterations=int(k.optimizer.iterations),
                   config={a: k.optimizer.get_config()[a] for a in kw})
        k.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
        got["w1"] = k.get_weights()
        k.save(out)                                   # and back: Keras's state (no boundfit/ group) here
        k.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
        return dict(got, w2=k.get_weights())
    k = _keras_opens(tmp_path / "m.keras", run, out=tmp_path / "k.keras")
    assert k["optimizer"] == cls and k["iterations"] == 2
    assert all(k["config"][a] == pytest.approx(v) for a, v in kw.items())
    m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(k["w1"], m.get_weights()):
        _close(a, b)
    r = bf.models.load_model(tmp_path / "k.keras")
    assert isinstance(r.optimizer, getattr(bf.optimizers, cls)) and r.optimizer.iterations == 4
    r.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(k["w2"], r.get_weights()):
        _close(a, b)


def test_keras_file_written_by_keras_loads_here_and_trains_on(tmp_path):
    x, y = _data()

    def save(p):
        keras = load()
        k = _keras_model(keras)
        k.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        k.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
        k.save(p)
        got = dict(p=k.predict(x, verbose=0))
        k.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0)
        return dict(got, w=k.get_weights())
    k = keras_file(tmp_path / "k.keras", save)
    m = bf.models.load_model(tmp_path / "k.keras")
    _close(m.predict(x, verbose=0), k["p"])
    assert isinstance(m.optimizer, bf.optimizers.Adam) and m.optimizer.iterations == 2
    assert m.optimizer.learning_rate == pytest.approx(0.01)
    # training goes on from Keras's optimizer state: one more step agrees with Keras
    h = m.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0)
    assert np.isfinite(h.history["loss"][0]) and m.optimizer.iterations == 3
    for a, b in zip(k["w"], m.get_weights()):
        _close(a, b, 1e-4)


def test_weights_h5_both_ways(tmp_path):
    x, _ = _data()

    def save(p):
        k = _keras_model(load())
        k.save_weights(p)
        return dict(p=k.predict(x, verbose=0))
    m = bf.Sequential([L.Conv2D(4, 3, activation="relu", padding="same", input_shape=(8, 8, 1)),
                       L.BatchNormalization(), L.MaxPooling2D(), L.AveragePooling2D(pool_size=2, strides=1),
                       L.Flatten(), L.Dense(5, activation="relu"), L.Dense(3, activation="softmax")])
    want = keras_file(tmp_path / "k.weights.h5", save)["p"]
    m.load_weights(tmp_path / "k.weights.h5")
    _close(m.predict(x, verbose=0), want)
    m.set_weights([w * 0.5 + 0.1 for w in m.get_weights()])
    m.save_weights(tmp_path / "m.weights.h5")

    def load_weights():
        k = _keras_model(load())
        k.load_weights(tmp_path / "m.weights.h5")
        return k.predict(x, verbose=0)
    _close(case(load_weights, files=[tmp_path / "m.weights.h5"]), m.predict(x, verbose=0))


def test_round_trip_here_keeps_optimizer_state_and_continues_exactly(tmp_path):
    x, y = _data()
    m = bf.Sequential([L.Conv2D(3, 3, input_shape=(8, 8, 1)), L.Flatten(), L.Dense(3, activation="softmax")])
    m.compile(optimizer=bf.optimizers.RMSprop(0.01, momentum=0.5), loss="sparse_categorical_crossentropy")
    m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    m.save(tmp_path / "m.keras")
    r = bf.models.load_model(tmp_path / "m.keras")
    assert r.optimizer.iterations == m.optimizer.iterations == 4
    for a, b in zip(r._engine.optimizer_state()[1], m._engine.optimizer_state()[1]):
        np.testing.assert_array_equal(a, b)
    w = bf.Sequential([L.Conv2D(3, 3, input_shape=(8, 8, 1)), L.Flatten(), L.Dense(3, activation="softmax")])
    w.load_weights(tmp_path / "m.keras")             # load_weights also reads a .keras file's weights
    for a, b in zip(w.get_weights(), m.get_weights()):
        np.testing.assert_array_equal(a, b)
    m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    r.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(r.get_weights(), m.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_load_model_names_a_layer_boundfit_lacks(tmp_path):
    def save(p, lacking):
        keras = load()
        class OnlyInKeras(keras.layers.Layer):   # a layer of the Keras side alone (every Keras one is in boundfit)
            def call(self, x):
                return x
        layers = [keras.Input((5, 6, 1)), OnlyInKeras(), keras.layers.Flatten()] if lacking else \
            [keras.Input((8, 8, 1)), keras.layers.Conv2D(2, 3, dilation_rate=2)]
        keras.Sequential(layers).save(p)
        return {}
    keras_file(tmp_path / "c.keras", lambda p: save(p, True))
    with pytest.raises(ValueError, match=r"'only_in_keras'.*no OnlyInKeras layer"):
        bf.models.load_model(tmp_path / "c.keras")
    keras_file(tmp_path / "d.keras", lambda p: save(p, False))
    with pytest.raises(ValueError, match=r"'conv2d.*dilation_rate=\[2, 2\] is not supported"):
        bf.models.load_model(tmp_path / "d.keras")


def test_load_weights_of_another_architecture_raises_and_keeps_weights(tmp_path):
    a = bf.Sequential([L.Dense(4, input_shape=(3,)), L.Dense(2)])
    b = bf.Sequential([L.Dense(5, input_shape=(3,)), L.Dense(2)])
    a.save_weights(tmp_path / "a.weights.h5")
    before = b.get_weights()
    with pytest.raises(ValueError, match=r"layer 'dense.*expects weights \[\(3, 5\), \(5,\)\].*\(3, 4\)"):
        b.load_weights(tmp_path / "a.weights.h5")
    for u, v in zip(before, b.get_weights()):
        np.testing.assert_array_equal(u, v)
    c = bf.Sequential([L.Dense(4, input_shape=(3,)), L.Dense(3)])
    keep = c.get_weights()
    with pytest.warns(UserWarning, match="skipping layer 'dense"):
        c.load_weights(tmp_path / "a.weights.h5", skip_mismatch=True)
    got = c.get_weights()
    for u, v in zip(got[:2], a.get_weights()[:2]):     # the matching layer loaded
        np.testing.assert_array_equal(u, v)
    for u, v in zip(got[2:], keep[2:]):                # the mismatched one kept its weights
        np.testing.assert_array_equal(u, v)


def test_file_names_follow_keras(tmp_path):
    m = bf.Sequential([L.Dense(2, input_shape=(3,))])
    with pytest.raises(ValueError, match=r"\.keras"):
        m.save(tmp_path / "m.txt")   # (.keras, or Keras's legacy .h5: tests/test_legacy_h5_model.py)
    with pytest.raises(ValueError, match=r"\.weights\.h5"):
        m.save_weights(tmp_path / "m.h5")
    with pytest.raises(ValueError, match="File not found"):
        bf.models.load_model(tmp_path / "m.keras")
    (tmp_path / "junk.keras").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a .keras file"):
        bf.models.load_model(tmp_path / "junk.keras")
    m.save(tmp_path / "m.keras")
    with pytest.raises(FileExistsError):
        m.save(tmp_path / "m.keras", overwrite=False)


@pytest.mark.parametrize("what", ["save", "save_weights"])
def test_failure_mid_save_keeps_the_previous_file(tmp_path, monkeypatch, what):
    x, y = _data(shape=(3,), n=8)
    m = bf.Sequential([L.Dense(4, activation="relu", input_shape=(3,)), L.Dense(3, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    path = tmp_path / ("m.keras" if what == "save" else "m.weights.h5")
    getattr(m, what)(path)
    good = path.read_bytes()
    expect = m.predict(x, verbose=0)
    m.fit(x, y, epochs=2, verbose=0)

    # the writer fails after part of the file is on disk
    if what == "save":
        real = zipfile.ZipFile.writestr
        calls = []

        def failing(self, name, data, *a, **k):
            calls.append(name)
            if name == "model.weights.h5":
                raise OSError(28, "No space left on device")
            return real(self, name, data, *a, **k)
        monkeypatch.setattr(zipfile.ZipFile, "writestr", failing)
    else:
        real = keras_format.write_weights

        def failing(h5, model, optimizer=True):
            h5.create_group("layers")
            h5.flush()
            raise OSError(28, "No space left on device")
        monkeypatch.setattr(keras_format, "write_weights", failing)
    with pytest.raises(OSError, match="No space left"):
        getattr(m, what)(path)
    monkeypatch.undo()
    assert path.read_bytes() == good
    assert os.listdir(tmp_path) == [path.name]   # no temporary file left behind
    if what == "save":
        r = bf.models.load_model(path)
    else:
        r = bf.Sequential([L.Dense(4, activation="relu", input_shape=(3,)), L.Dense(3, activation="softmax")])
        r.load_weights(path)
    _close(r.predict(x, verbose=0), expect)


def test_untrained_compiled_model_opens_in_keras_without_optimizer_warnings(tmp_path, recwarn):
    x, y = _data(shape=(5,), n=8)
    m = bf.Sequential([L.Dense(4, activation="relu", input_shape=(5,)), L.Dense(3, activation="softmax")])
    m.compile(optimizer=bf.optimizers.RMSprop(momentum=0.5), loss="sparse_categorical_crossentropy")
    m.save(tmp_path / "u.keras")
    k = _keras_opens(tmp_path / "u.keras", lambda keras, k: dict(iterations=int(k.optimizer.iterations),
                                                                 p=k.predict(x, verbose=0)))
    assert not k["user_warnings"] and not [w for w in recwarn if issubclass(w.category, UserWarning)]
    assert k["iterations"] == 0
    _close(k["p"], m.predict(x, verbose=0))


def test_get_config_is_keras_and_from_config_rebuilds(tmp_path):
    m = _model_b()
    cfg = m.get_config()
    assert [e["class_name"] for e in cfg["layers"]] == ["InputLayer", "Conv2D", "GlobalAveragePooling2D", "Reshape",
                                                      "Flatten", "Activation", "Dense"]
    (tmp_path / "config.json").write_text(json.dumps(cfg))   # Keras's side recorded by the config

    def from_config():
        k = load().Sequential.from_config(cfg)
        return dict(names=[l.name for l in k.layers], shapes=[w.shape for w in k.get_weights()])
    k = case(from_config, files=[tmp_path / "config.json"])
    r = bf.Sequential.from_config(cfg)
    assert k["names"] == [l.name for l in r.layers] == [l.name for l in m.layers]
    assert [tuple(s) for s in k["shapes"]] == [w.shape for w in r.get_weights()]
    assert m.layers[0].get_config()["strides"] == [2, 2]
    unbuilt = bf.Sequential([L.Dense(3)])
    assert [e["class_name"] for e in unbuilt.get_config()["layers"]] == ["Dense"]
    assert not bf.Sequential.from_config(unbuilt.get_config()).built


def test_load_model_custom_objects_pick_the_layer_class(tmp_path):
    MyDense = type("Dense", (L.Dense,), {})    # a user's subclass registered under the file's class name
    m = bf.Sequential([L.Dense(2, input_shape=(3,)), L.Dense(1)])
    m.save(tmp_path / "m.keras")
    r = bf.saving.load_model(tmp_path / "m.keras", custom_objects={"Dense": MyDense}, safe_mode=True)
    assert all(type(l) is MyDense for l in r.layers)
    for a, b in zip(r.get_weights(), m.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_optimizer_state_of_another_configuration_is_skipped_with_a_warning(tmp_path):
    x, y = _data(shape=(3,), n=8)
    a = bf.Sequential([L.Dense(2, input_shape=(3,)), L.Dense(3, activation="softmax")])
    a.compile(optimizer=bf.optimizers.SGD(0.1, momentum=0.9), loss="sparse_categorical_crossentropy")
    a.fit(x, y, verbose=0)
    a.save_weights(tmp_path / "a.weights.h5")
    b = bf.Sequential([L.Dense(2, input_shape=(3,)), L.Dense(3, activation="softmax")])
    b.compile(optimizer=bf.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    b.fit(x, y, verbose=0)
    with pytest.warns(UserWarning, match="Skipping variable loading for optimizer 'SGD'"):
        b.load_weights(tmp_path / "a.weights.h5")
    for u, v in zip(a.get_weights(), b.get_weights()):     # the weights still load
        np.testing.assert_array_equal(u, v)
    assert b.optimizer.iterations == 1
