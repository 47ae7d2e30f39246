"""GaussianNoise and GaussianDropout (the AUGMENT kind's noise modes): in
training x + stddev z and x (1 + sqrt(rate / (1 - rate)) z) with z ~ N(0, 1)
per element (the distribution against Keras 3's layers: boundfit draws its
own numbers), the identity outside training, on any rank, gradients against
finite differences, an exact plan, Keras files both ways and bad arguments.
The CUDA kernel is checked against the CPU in tests/test_cuda_kernel_files.py."""

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from boundfit import layers
from conftest import engine_gradient
from test_elementwise_layers import fd_check, train_mode_loss


@pytest.fixture(scope="module")
def keras():
    return keras_ref.load()


def train_output(layer, x):
    """layer's training-mode output on x (n, ...): the gradient of a zero Dense with targets -I (see probe in
    test_elementwise_layers)"""
    n = len(x)
    m = bf.Sequential([layers.Input(x.shape[1:]), layer, layers.Flatten(), layers.Dense(n, use_bias=False)])
    m.compile(optimizer="sgd", loss="mse")
    m.set_weights([np.zeros_like(w) for w in m.get_weights()])
    g = engine_gradient(m, x, -np.eye(n, dtype=np.float32))[0]
    return (g.T * (n * n / 2.0)).reshape(x.shape)


def test_gaussian_noise_adds_normal_noise_of_its_stddev_as_keras(keras):
    x = np.random.default_rng(0).standard_normal((16, 4, 5, 6)).astype(np.float32)
    d = train_output(layers.GaussianNoise(0.5, seed=3), x) - x
    k = np.asarray(keras.layers.GaussianNoise(0.5, seed=3)(x, training=True)) - x
    for noise in (d, k):
        assert abs(noise.mean()) < 0.03 and abs(noise.std() - 0.5) < 0.02
        assert abs(np.mean(np.abs(noise) > 1.0) - 0.0455) < 0.01   # two-sigma tails of a normal
    assert np.corrcoef(d[:, :-1].ravel(), d[:, 1:].ravel())[0, 1] < 0.1   # independent per element
    np.testing.assert_array_equal(train_output(layers.GaussianNoise(0.5, seed=3), x) - x, d)


def test_gaussian_dropout_multiplies_by_normal_noise_as_keras(keras):
    x = np.random.default_rng(1).uniform(1.0, 2.0, (32, 60)).astype(np.float32)
    f = train_output(layers.GaussianDropout(0.3, seed=4), x) / x
    k = np.asarray(keras.layers.GaussianDropout(0.3, seed=4)(x, training=True)) / x
    for factor in (f, k):
        assert abs(factor.mean() - 1.0) < 0.03 and abs(factor.std() - np.sqrt(0.3 / 0.7)) < 0.02


def test_the_noise_layers_are_the_identity_outside_training(keras):
    x = np.random.default_rng(2).standard_normal((3, 7)).astype(np.float32)
    m = bf.Sequential([layers.Input((7,)), layers.GaussianNoise(1.0), layers.GaussianDropout(0.5)])
    np.testing.assert_array_equal(m.predict(x, verbose=0), x)
    km = keras.Sequential([keras.Input((7,)), keras.layers.GaussianNoise(1.0), keras.layers.GaussianDropout(0.5)])
    np.testing.assert_array_equal(np.asarray(km(x, training=False)), x)


@pytest.mark.parametrize("make", [lambda: layers.GaussianNoise(0.3, seed=5), lambda: layers.GaussianDropout(0.4, seed=5)])
def test_gradients_pass_through_as_finite_differences_say(make):
    m = bf.Sequential([layers.Input((5,)), layers.Dense(12), layers.Reshape((3, 4)), make(), layers.Flatten(),
                       layers.Dense(2)])
    m.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(6)
    x, y = rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((6, 2)).astype(np.float32)
    fd_check(m, x, y, eps=1e-3, loss=train_mode_loss)


def test_a_model_with_noise_trains_with_an_exact_plan():
    rng = np.random.default_rng(8)
    x, y = rng.standard_normal((32, 6, 6, 2)).astype(np.float32), rng.standard_normal((32, 2)).astype(np.float32)
    m = bf.Sequential([layers.Input((6, 6, 2)), layers.GaussianNoise(0.1), layers.Conv2D(3, 3),
                       layers.GaussianDropout(0.2), layers.Flatten(), layers.Dense(2)])
    m.compile(optimizer="adam", loss="mse")
    plan = m.estimate_memory(batch_size=8)
    h = m.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert np.all(np.isfinite(h.history["loss"]))
    arenas = m._engine.weight_arena_bytes + m._engine.optimizer_arena_bytes + sum(
        s["run_high_water"] for s in m._last_run_stats)
    assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured")) == arenas


def test_keras_files_with_the_noise_layers_go_both_ways(keras, tmp_path):
    def stack(L):
        return [L.Dense(4), L.GaussianNoise(0.2, seed=3), L.GaussianDropout(0.25, seed=4), L.Dense(1)]
    bm = bf.Sequential([layers.Input((3,))] + stack(layers))
    x = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
    bm.save(tmp_path / "m.keras")
    km = keras.saving.load_model(tmp_path / "m.keras")
    assert [(type(l).__name__, l.get_config().get("stddev"), l.get_config().get("rate"), l.get_config()["seed"])
            for l in km.layers[1:3]] == [("GaussianNoise", 0.2, None, 3), ("GaussianDropout", None, 0.25, 4)]
    np.testing.assert_allclose(np.asarray(km(x)), bm.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    km.save(tmp_path / "k.keras")
    back = bf.models.load_model(tmp_path / "k.keras")
    assert (back.layers[1].stddev, back.layers[1].seed, back.layers[2].rate) == (0.2, 3, 0.25)
    np.testing.assert_allclose(back.predict(x, verbose=0), bm.predict(x, verbose=0), rtol=1e-6)


@pytest.mark.parametrize("make,words", [
    (lambda: layers.GaussianNoise(-0.1), "stddev"),
    (lambda: layers.GaussianNoise(float("inf")), "stddev"),
    (lambda: layers.GaussianNoise("a"), "stddev"),
    (lambda: layers.GaussianNoise(0.1, seed=-1), "seed"),
    (lambda: layers.GaussianDropout(1.0), "rate"),
    (lambda: layers.GaussianDropout(-0.2), "rate"),
])
def test_bad_arguments_raise_naming_the_argument(make, words):
    with pytest.raises(ValueError, match=words):
        make()
