"""Conv1DTranspose: the engine's Conv2DTranspose on a 1 x T image
(csrc/core/layers/conv.c), with Keras's kernel (k, filters, C). Against Keras
3 itself: output lengths for 'valid' / 'same' and strides, predictions and
training from the same weights, keras.io's time-series anomaly-detection
autoencoder, files both ways; gradients against finite differences."""

import numpy as np
import pytest

import boundfit as bf
from conftest import directional_check_per_array

import keras_ref


@pytest.fixture(scope="module")
def keras():
    return keras_ref.load()


def autoencoder(M, T=48):
    """keras.io's timeseries_anomaly_detection model, smaller."""
    L = M.layers
    return M.Sequential([
        L.Input(shape=(T, 1)),
        L.Conv1D(filters=8, kernel_size=7, padding="same", strides=2, activation="relu"),
        L.Conv1D(filters=4, kernel_size=7, padding="same", strides=2, activation="relu"),
        L.Conv1DTranspose(filters=4, kernel_size=7, padding="same", strides=2, activation="relu"),
        L.Conv1DTranspose(filters=8, kernel_size=7, padding="same", strides=2, activation="relu"),
        L.Conv1DTranspose(filters=1, kernel_size=7, padding="same"),
    ])


@pytest.mark.parametrize("k,s,padding,T", [(3, 1, "valid", 9), (4, 2, "valid", 7), (5, 3, "same", 8),
                                           (2, 3, "valid", 5), (7, 2, "same", 11)])
def test_conv1d_transpose_matches_keras(keras, k, s, padding, T):
    def build(M):
        return M.Sequential([M.Input((T, 3)), M.layers.Conv1DTranspose(5, k, strides=s, padding=padding,
                                                                       activation="tanh")])
    km, bm = build(keras), build(bf)
    assert bm.output_shape == km.output_shape
    assert [w.shape for w in bm.get_weights()] == [w.shape for w in km.get_weights()]
    bm.set_weights(km.get_weights())
    x = np.random.default_rng(k).standard_normal((6, T, 3)).astype(np.float32)
    np.testing.assert_allclose(bm.predict(x, verbose=0), km.predict(x, verbose=0), rtol=1e-5, atol=1e-6)


def test_the_anomaly_detection_autoencoder_trains_as_keras_and_files_open_in_both(keras, tmp_path):
    km, bm = autoencoder(keras), autoencoder(bf)
    bm.set_weights(km.get_weights())
    x = np.random.default_rng(0).standard_normal((32, 48, 1)).astype(np.float32)
    km.compile(keras.optimizers.Adam(0.001), "mse")
    bm.compile(bf.optimizers.Adam(0.001), "mse")
    hk = km.fit(x, x, batch_size=16, epochs=2, shuffle=False, verbose=0)
    hb = bm.fit(x, x, batch_size=16, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(hb.history["loss"], hk.history["loss"], rtol=1e-4)
    for a, b in zip(km.get_weights(), bm.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=1e-5)
    bm.save(tmp_path / "ours.keras")
    np.testing.assert_allclose(keras.models.load_model(tmp_path / "ours.keras").predict(x, verbose=0),
                               bm.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    km.save(tmp_path / "theirs.keras")
    np.testing.assert_allclose(bf.models.load_model(tmp_path / "theirs.keras").predict(x, verbose=0),
                               km.predict(x, verbose=0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("s,padding", [(2, "same"), (1, "valid"), (3, "valid")])
def test_conv1d_transpose_gradients_match_finite_differences(s, padding):
    """the kernel, the bias, and the input's gradient (through a Conv1D in front, its kernel's)"""
    m = bf.Sequential([bf.Input((5, 2)), bf.layers.Conv1D(2, 1),
                       bf.layers.Conv1DTranspose(3, 3, strides=s, padding=padding, activation="tanh")])
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 5, 2)).astype(np.float32)
    y = rng.standard_normal(m.predict(x, verbose=0).shape).astype(np.float32)
    m.compile("sgd", "mse")
    directional_check_per_array(m, x, y)


def test_conv1d_transpose_rejects_bad_arguments():
    with pytest.raises(ValueError, match="kernel_size"):
        bf.layers.Conv1DTranspose(3, (2, 2))
    with pytest.raises(ValueError, match="dilation_rate"):
        bf.layers.Conv1DTranspose(3, 2, dilation_rate=2)
    with pytest.raises(ValueError, match="rank 2|\\(T, C\\)"):
        bf.Sequential([bf.Input((4, 4, 2)), bf.layers.Conv1DTranspose(3, 2)])
