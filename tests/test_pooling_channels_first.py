"""data_format="channels_first" on MaxPooling1D/2D, AveragePooling1D/2D and
the global poolings against Keras 3 itself: the same weights and batch give
the same predictions and gradients, the plan stays exact, configs go both
ways through Keras files, and a masked sequence is refused."""

import inspect

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from conftest import engine_gradient
from helpers.keras_recorded import case
from keras_ref import load
from test_elementwise_layers import keras_grads
from boundfit.layers.layer import _counters


@pytest.fixture(autouse=True)
def _names_from_zero():
    """layers named from 0 in each test (as after Keras's clear_session): boundfit's files, whose contents key
    Keras's recorded results, do not depend on the tests run before in the process (pytest-xdist)"""
    _counters.clear()


CF = "channels_first"

CASES_2D = {
    "max_valid": lambda L: [L.MaxPooling2D((2, 3), data_format=CF)],
    "max_same_strided": lambda L: [L.MaxPooling2D(3, strides=2, padding="same", data_format=CF)],
    "avg_valid": lambda L: [L.AveragePooling2D((3, 2), strides=(1, 2), data_format=CF)],
    "avg_same": lambda L: [L.AveragePooling2D(2, padding="same", data_format=CF)],
    "gap": lambda L: [L.GlobalAveragePooling2D(data_format=CF)],
    "gap_keepdims": lambda L: [L.GlobalAveragePooling2D(data_format=CF, keepdims=True), L.Flatten()],
    "gmp": lambda L: [L.GlobalMaxPooling2D(data_format=CF)],
    "gmp_keepdims": lambda L: [L.GlobalMaxPooling2D(data_format=CF, keepdims=True), L.Flatten()],
}

CASES_1D = {
    "max": lambda L: [L.MaxPooling1D(2, data_format=CF)],
    "max_same": lambda L: [L.MaxPooling1D(3, strides=2, padding="same", data_format=CF)],
    "avg": lambda L: [L.AveragePooling1D(3, strides=1, data_format=CF)],
    "gap": lambda L: [L.GlobalAveragePooling1D(data_format=CF)],
    "gmp_keepdims": lambda L: [L.GlobalMaxPooling1D(data_format=CF, keepdims=True), L.Flatten()],
}


def assert_same(build, in_shape, tmp_path, n=6, seed=0, rtol=1e-5):
    """test_elementwise_layers.assert_same with Keras's side recorded (keyed by keras_grads' source too): the
    same weights (random, as twin gives them) and batch give Keras's predictions and gradients"""
    bm = bf.Sequential([layers.Input(in_shape)] + build(layers))
    bm.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(seed + 1)
    x = (rng.standard_normal((n,) + tuple(in_shape)) * 1.5).astype(np.float32)
    y = rng.standard_normal((n,) + tuple(bm.output_shape[1:])).astype(np.float32)

    def weights(trainable):
        wr = np.random.default_rng(seed)
        return [[wr.standard_normal(a.shape).astype(np.float32) * 0.5 for a in bl.get_weights()] if t else None
                for bl, t in zip(bm.layers, trainable)]

    def compute():
        keras = load()
        km = keras.Sequential([keras.Input(in_shape)] + build(keras.layers))
        for kl, w in zip(km.layers, weights([bool(kl.trainable_weights) for kl in km.layers])):
            if w is not None:
                kl.set_weights(w)
        return dict(trainable=[bool(kl.trainable_weights) for kl in km.layers],
                    out=np.asarray(km(x, training=False)), grads=keras_grads(km, x, y))
    (tmp_path / "helpers.py").write_text(inspect.getsource(keras_grads))
    k = case(compute, files=[tmp_path / "helpers.py"])
    for bl, w in zip(bm.layers, weights(k["trainable"])):
        if w is not None:
            bl.set_weights(w)
    np.testing.assert_allclose(bm.predict(x, verbose=0), k["out"], rtol=rtol, atol=1e-6)
    g = engine_gradient(bm, x, y)
    gb, i = [], 0  # the trainable weights in boundfit's order (Keras's): each layer's, layer by layer
    for bl, trainable in zip(bm.layers, k["trainable"]):
        if trainable:
            gb += g[i:i + len(bl.get_weights())]
        i += len(bl.get_weights())
    assert len(gb) == len(k["grads"])
    for a, b in zip(k["grads"], gb):
        np.testing.assert_allclose(b, a, rtol=rtol, atol=2e-6)


@pytest.mark.parametrize("case_", sorted(CASES_2D))
def test_2d_pooling_channels_first_matches_keras(case_, tmp_path):
    # a Dense before the pooling makes the gradient flow through it into a weight
    def build(L):
        return [L.Dense(7), L.Permute((3, 1, 2))] + CASES_2D[case_](L) + [L.Flatten(), L.Dense(2)]
    assert_same(build, (5, 6, 3), tmp_path)


@pytest.mark.parametrize("case_", sorted(CASES_1D))
def test_1d_pooling_channels_first_matches_keras(case_, tmp_path):
    def build(L):
        return [L.Dense(7), L.Permute((2, 1))] + CASES_1D[case_](L) + [L.Flatten(), L.Dense(2)]
    assert_same(build, (6, 3), tmp_path)


def test_channels_first_pooling_trains_with_an_exact_plan():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((16, 3, 8, 8)).astype(np.float32), rng.standard_normal((16, 2)).astype(np.float32)
    m = bf.Sequential([layers.Input((3, 8, 8)), layers.MaxPooling2D(2, data_format=CF),
                       layers.AveragePooling2D(2, padding="same", data_format=CF),
                       layers.GlobalMaxPooling2D(data_format=CF), layers.Dense(2)])
    m.compile(optimizer="adam", loss="mse")
    plan = m.estimate_memory(batch_size=8)
    m.fit(x, y, batch_size=8, epochs=1, verbose=0)
    arenas = m._engine.weight_arena_bytes + m._engine.optimizer_arena_bytes + sum(
        s["run_high_water"] for s in m._last_run_stats)
    assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured")) == arenas


def file_stack(L):
    return [L.Permute((3, 1, 2)), L.MaxPooling2D(2, data_format=CF), L.AveragePooling2D(1, data_format=CF),
            L.GlobalAveragePooling2D(data_format=CF, keepdims=True), L.Reshape((3, 1)),
            L.MaxPooling1D(1, data_format=CF), L.AveragePooling1D(1, data_format=CF),
            L.GlobalMaxPooling1D(data_format=CF), L.Dense(2)]


def test_channels_first_configs_go_both_ways_through_keras_files(tmp_path):
    bm = bf.Sequential([layers.Input((4, 4, 3))] + file_stack(layers))
    x = np.random.default_rng(1).standard_normal((2, 4, 4, 3)).astype(np.float32)
    bm.save(tmp_path / "m.keras")

    def opened():   # Keras's side, recorded by the file's contents: what it read, and the file it saves
        km = load().saving.load_model(tmp_path / "m.keras")
        formats = [l.get_config().get("data_format") for l in km.layers[1:-1]]
        km.save(tmp_path / "k.keras")
        return formats, np.asarray(km(x)), np.frombuffer((tmp_path / "k.keras").read_bytes(), np.uint8)
    formats, out, file = case(opened, files=[tmp_path / "m.keras"])
    assert formats == [CF] * 3 + [None] + [CF] * 3
    np.testing.assert_allclose(out, bm.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    (tmp_path / "k.keras").write_bytes(file.tobytes())
    back = bf.models.load_model(tmp_path / "k.keras")
    assert [getattr(l, "data_format", None) for l in back.layers[1:-1]] == [CF] * 3 + [None] + [CF] * 3
    np.testing.assert_allclose(back.predict(x, verbose=0), bm.predict(x, verbose=0), rtol=1e-6)


def test_bad_data_format_and_shapes_are_refused():
    with pytest.raises(ValueError, match="data_format"):
        layers.MaxPooling2D(data_format="nchw")
    with pytest.raises(ValueError, match="data_format"):
        layers.GlobalAveragePooling1D(data_format="channels_middle")
    with pytest.raises(ValueError, match=r"\(C, H, W\)"):
        bf.Sequential([layers.Input((4, 4)), layers.MaxPooling2D(data_format=CF)])
    with pytest.raises(ValueError, match="does not fit"):
        bf.Sequential([layers.Input((8, 1, 8)), layers.MaxPooling2D(2, data_format=CF)])


def test_a_masked_sequence_into_channels_first_average_pooling_is_refused():
    x = np.array([[1, 2, 0, 0], [3, 0, 0, 0]], dtype=np.int32)
    # (the mask is per step of the (T, D) embedding; channels_first would read the steps as channels)
    m = bf.Sequential([layers.Input((4,)), layers.Embedding(5, 3, mask_zero=True),
                       layers.GlobalAveragePooling1D(data_format=CF), layers.Dense(1)])
    with pytest.raises(ValueError, match="channels_first"):
        m.predict(x, verbose=0)
