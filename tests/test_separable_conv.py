"""SeparableConv2D: a DepthwiseConv2D without bias then a 1x1 Conv2D with the
bias and activation, Keras's weights in Keras's order. Against Keras 3: the
same weights give the same predictions and the same training; its config
round-trips; Keras files hold it as one SeparableConv2D layer both ways
(Sequential and Functional), with its optimizer state."""

import numpy as np
import pytest

import boundfit as bf

import keras_ref


@pytest.fixture(scope="module")
def keras():
    return keras_ref.load()


def model(M):
    return M.Sequential([M.Input((10, 9, 3)),
                         M.layers.SeparableConv2D(8, 3, strides=2, padding="same", depth_multiplier=2,
                                                  activation="relu"),
                         M.layers.SeparableConv2D(4, (2, 3), use_bias=False),
                         M.layers.GlobalAveragePooling2D(), M.layers.Dense(3)])


def test_separable_conv2d_matches_keras(keras, tmp_path):
    km, bm = model(keras), model(bf)
    assert [w.shape for w in bm.get_weights()] == [w.shape for w in km.get_weights()]
    bm.set_weights(km.get_weights())
    r = np.random.default_rng(7)
    x, y = r.standard_normal((32, 10, 9, 3)).astype(np.float32), r.standard_normal((32, 3)).astype(np.float32)
    np.testing.assert_allclose(bm.predict(x, verbose=0), km.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    km.compile(keras.optimizers.Adam(0.01), "mse")
    bm.compile(bf.optimizers.Adam(0.01), "mse")
    hk = km.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    hb = bm.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(hb.history["loss"], hk.history["loss"], rtol=1e-4)
    for a, b in zip(km.get_weights(), bm.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=1e-5)
    bm.save(tmp_path / "sep.keras")
    theirs = keras.models.load_model(tmp_path / "sep.keras")
    assert [type(l).__name__ for l in theirs.layers] == [type(l).__name__ for l in km.layers]
    np.testing.assert_allclose(theirs.predict(x, verbose=0), bm.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    km.save(tmp_path / "keras_sep.keras")   # Keras's own file, optimizer state included
    ours = bf.models.load_model(tmp_path / "keras_sep.keras")
    assert [type(l).__name__ for l in ours.layers] == [type(l).__name__ for l in km.layers]
    np.testing.assert_allclose(ours.predict(x, verbose=0), km.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    hk = km.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)   # both go on from the same state
    hb = ours.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    np.testing.assert_allclose(hb.history["loss"], hk.history["loss"], rtol=1e-4)


def functional(M):
    """keras.io's image classification from scratch, in small: SeparableConv2D in a residual Functional graph"""
    inp = M.Input((8, 8, 4))
    x = M.layers.Conv2D(6, 3, padding="same")(inp)
    y = M.layers.SeparableConv2D(6, 3, padding="same", activation="relu")(x)
    y = M.layers.SeparableConv2D(6, 3, padding="same")(y)
    x = M.layers.add([x, y])
    x = M.layers.GlobalAveragePooling2D()(x)
    return M.Model(inp, M.layers.Dense(2)(x))


def test_a_functional_keras_file_with_separable_conv2d_loads_and_saves(keras, tmp_path):
    km, bm = functional(keras), functional(bf)
    bm.set_weights(km.get_weights())
    x = np.random.default_rng(8).standard_normal((4, 8, 8, 4)).astype(np.float32)
    km.save(tmp_path / "theirs.keras")
    ours = bf.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(ours.predict(x, verbose=0), km.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    assert [type(l).__name__ for l in ours.layers] == [type(l).__name__ for l in km.layers]
    for k, b in zip(km.layers, ours.layers):
        for wk, wb in zip(k.get_weights(), b.get_weights()):
            np.testing.assert_array_equal(wb, wk)
    bm.save(tmp_path / "ours.keras")
    theirs = keras.models.load_model(tmp_path / "ours.keras")
    assert [type(l).__name__ for l in theirs.layers] == [type(l).__name__ for l in km.layers]
    np.testing.assert_allclose(theirs.predict(x, verbose=0), km.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    bm.save(tmp_path / "ours.npz")   # boundfit's graph file too
    np.testing.assert_allclose(bf.models.load_model(tmp_path / "ours.npz").predict(x, verbose=0),
                               km.predict(x, verbose=0), rtol=1e-5, atol=1e-6)


def test_separable_conv2d_config_round_trips_and_bad_arguments_are_named():
    layer = bf.layers.SeparableConv2D(6, 3, padding="same", depth_multiplier=2, activation="relu", name="sep")
    cfg = layer.get_config()
    assert cfg["filters"] == 6 and cfg["kernel_size"] == [3, 3] and cfg["activation"] == "relu"
    again = bf.layers.SeparableConv2D.from_config(cfg)
    assert again.name == "sep" and again.depthwise.depth_multiplier == 2
    with pytest.raises(ValueError, match="filters"):
        bf.layers.SeparableConv2D(0, 3)
    with pytest.raises(ValueError, match="depth_multiplier"):
        bf.layers.SeparableConv2D(4, 3, depth_multiplier=0)
