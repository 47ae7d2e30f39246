"""A frozen BatchNormalization (trainable=False) between trainable layers:
it runs in inference mode (moving statistics, no updates) and passes the
gradient of its affine map, dx = dy * gamma / sqrt(moving_var + eps), to the
layers before it, as Keras 3 does. Against Keras 3 (JAX, CPU), finite
differences, the emu device and the exact plan."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers

import keras_ref
from conftest import engine_gradient, numeric_loss

rng = np.random.default_rng(5)
X = rng.standard_normal((24, 6, 6, 2)).astype(np.float32)
Y = rng.integers(0, 3, 24)


def conv_bn_dense(lib, center=True, scale=True):
    """Conv2D -> frozen BatchNormalization -> Dense (a fine-tuning head on a base with BN)."""
    L = lib.layers
    inp = lib.Input((6, 6, 2))
    h = L.Conv2D(4, 3, activation="relu", name="conv")(inp)
    h = L.BatchNormalization(name="bn", center=center, scale=scale)(h)
    h = L.Flatten()(h)
    h = L.Dense(5, activation="tanh", name="mid")(h)
    h = L.BatchNormalization(name="bn2")(h)
    return lib.Model(inp, L.Dense(3, activation="softmax", name="out")(h))


def frozen_stats(m):
    """Moving statistics away from (0, 1) and gamma / beta away from (1, 0), so the affine map matters."""
    r = np.random.default_rng(7)
    for name in ("bn", "bn2"):
        ws = m.get_layer(name).get_weights()
        m.get_layer(name).set_weights([(r.uniform(0.5, 1.5, w.shape) if k % 2 == 0 and k < 3 else
                                        r.uniform(-0.5, 0.5, w.shape)) if k < 3 else r.uniform(0.3, 2.0, w.shape)
                                       for k, w in enumerate(ws)])
        m.get_layer(name).trainable = False


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_frozen_batchnorm_between_trainable_layers_matches_keras(opt):
    keras = keras_ref.load()
    m, k = conv_bn_dense(bf), conv_bn_dense(keras)
    frozen_stats(m)
    for name in ("conv", "bn", "mid", "bn2", "out"):
        k.get_layer(name).set_weights(m.get_layer(name).get_weights())
    k.get_layer("bn").trainable = k.get_layer("bn2").trainable = False
    make = {"sgd": lambda lib: lib.optimizers.SGD(0.1, momentum=0.9), "adam": lambda lib: lib.optimizers.Adam(0.01)}
    m.compile(make[opt](bf), "sparse_categorical_crossentropy")
    k.compile(make[opt](keras), "sparse_categorical_crossentropy")
    frozen = [w.copy() for w in m.get_layer("bn").get_weights() + m.get_layer("bn2").get_weights()]
    hb = m.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0).history
    hk = k.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0).history
    np.testing.assert_allclose(hb["loss"], hk["loss"], rtol=1e-5)
    for name in ("conv", "mid", "out"):
        for a, b in zip(m.get_layer(name).get_weights(), k.get_layer(name).get_weights()):
            np.testing.assert_allclose(a, np.asarray(b), rtol=1e-5, atol=1e-6, err_msg=name)
    # frozen: gamma, beta and the moving statistics are untouched, as in Keras
    for a, b in zip(m.get_layer("bn").get_weights() + m.get_layer("bn2").get_weights(), frozen):
        np.testing.assert_array_equal(a, b)


def test_frozen_batchnorm_gradient_matches_finite_differences():
    inp = bf.Input((5,))
    bn = layers.BatchNormalization()
    out = layers.Dense(2)(bn(layers.Dense(4, activation="tanh")(inp)))
    m = bf.Model(inp, out)
    bn.set_weights([np.array([1.5, 0.5, 2.0, 0.8], np.float32), np.array([0.1, -0.2, 0.3, 0.0], np.float32),
                    np.array([0.2, -0.1, 0.05, 0.3], np.float32), np.array([0.5, 2.0, 1.2, 0.1], np.float32)])
    bn.trainable = False
    m.compile("sgd", "mse")
    r = np.random.default_rng(3)
    x, y = r.standard_normal((16, 5)).astype(np.float32), r.standard_normal((16, 2)).astype(np.float32)
    g = engine_gradient(m, x, y)   # weights: dense (2), frozen bn (4), dense (2)
    w0 = m.get_weights()
    for k in range(2, 6):           # the frozen layer's weights: no gradient, no moving-statistics update
        assert not np.any(g[k])
    assert np.any(g[0]) and np.any(g[1])   # the Dense before it gets the gradient through it
    eps = 1e-3                      # float32 loss ~4.7: rounding ~1e-4 of the quotient, curvature ~1e-5
    for _ in range(3):              # directions in the trainable weights only
        d = [np.zeros(w.shape) if 2 <= k < 6 else r.standard_normal(w.shape) for k, w in enumerate(w0)]
        m.set_weights([w + eps * di for w, di in zip(w0, d)])
        lp = numeric_loss(m, x, y)
        m.set_weights([w - eps * di for w, di in zip(w0, d)])
        lm = numeric_loss(m, x, y)
        m.set_weights(w0)
        fd = (lp - lm) / (2 * eps)
        an = sum(float((gi * di).sum()) for gi, di in zip(g, d))
        assert abs(fd - an) <= 3e-2 * max(abs(fd), abs(an), 1e-2), (fd, an)
    # the part through the frozen layer alone: the first Dense's directional derivative
    d = [r.standard_normal(w.shape) if k < 2 else np.zeros(w.shape) for k, w in enumerate(w0)]
    m.set_weights([w + eps * di for w, di in zip(w0, d)])
    lp = numeric_loss(m, x, y)
    m.set_weights([w - eps * di for w, di in zip(w0, d)])
    lm = numeric_loss(m, x, y)
    m.set_weights(w0)
    fd, an = (lp - lm) / (2 * eps), sum(float((gi * di).sum()) for gi, di in zip(g, d))
    assert abs(fd - an) <= 3e-2 * max(abs(fd), abs(an), 1e-2), (fd, an)
    # every element against central differences of the same network in float64 (NumPy)
    w = [a.astype(np.float64) for a in w0]

    def loss(w):
        h = np.tanh(x @ w[0] + w[1])
        h = (h - w[4]) / np.sqrt(w[5] + 1e-3) * w[2] + w[3]
        return np.mean((h @ w[6] + w[7] - y) ** 2)
    for k in (0, 1, 6, 7):
        num = np.zeros_like(w[k])
        for idx in np.ndindex(w[k].shape):
            wp, wm = [a.copy() for a in w], [a.copy() for a in w]
            wp[k][idx] += 1e-6
            wm[k][idx] -= 1e-6
            num[idx] = (loss(wp) - loss(wm)) / 2e-6
        np.testing.assert_allclose(g[k], num, rtol=1e-5, atol=1e-5)


def test_frozen_batchnorm_on_the_emu_device_and_in_micro_batches_gives_the_same_updates():
    m = conv_bn_dense(bf, center=False)
    frozen_stats(m)
    w0 = m.get_weights()
    m.compile("sgd", "sparse_categorical_crossentropy")
    m.fit(X, Y, batch_size=12, shuffle=False, verbose=0)
    ref = m.get_weights()
    for kw in (dict(device="emu"), dict(micro_batch=5)):
        m.set_weights(w0)
        m.compile("sgd", "sparse_categorical_crossentropy")
        m.fit(X, Y, batch_size=12, shuffle=False, verbose=0, **kw)
        for a, b in zip(m.get_weights(), ref):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_plan_with_a_frozen_batchnorm_equals_the_arenas_and_does_not_hold_its_input():
    m = conv_bn_dense(bf)
    frozen_stats(m)
    m.compile("adam", "sparse_categorical_crossentropy")
    plan = m.estimate_memory(batch_size=8)
    m.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    stats = m._last_run_stats
    arenas = m._engine.weight_arena_bytes + m._engine.optimizer_arena_bytes + sum(s["run_high_water"] for s in stats)
    assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured")) == arenas
    # trainable BN keeps its input alive for backward; the frozen one does not
    m2 = conv_bn_dense(bf)
    m2.compile("adam", "sparse_categorical_crossentropy")
    act = lambda p: next(e.bytes for e in p.breakdown if e.category == "activations")
    assert act(plan) <= act(m2.estimate_memory(batch_size=8))


def test_a_keras_file_with_a_frozen_batchnorm_fine_tunes_here_as_in_keras_and_saves_back(tmp_path):
    """Keras 3 writes a base with a frozen BatchNormalization; boundfit opens it,
    fine-tunes the layers around it to Keras's weights, and its own file opens in
    Keras with the layer still frozen."""
    keras = keras_ref.load()
    L = keras.layers
    k = keras.Sequential([keras.Input((5,)), L.Dense(4, activation="tanh", name="d1"), L.BatchNormalization(name="bn"),
                          L.Dense(3, activation="softmax", name="d2")])
    k.get_layer("bn").set_weights([np.array(w, np.float32) for w in
                                   ([1.5, 0.5, 2.0, 0.8], [0.1, -0.2, 0.3, 0.0], [0.2, -0.1, 0.05, 0.3], [0.5, 2.0, 1.2, 0.1])])
    k.get_layer("bn").trainable = False
    k.compile(keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy")
    k.save(tmp_path / "k.keras")
    m = bf.models.load_model(tmp_path / "k.keras")
    assert m.get_layer("bn").trainable is False
    r = np.random.default_rng(9)
    x, y = r.standard_normal((32, 5)).astype(np.float32), r.integers(0, 3, 32)
    k.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    m.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(m.get_weights(), k.get_weights()):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-5, atol=1e-6)
    m.save(tmp_path / "m.keras")
    k2 = keras.saving.load_model(tmp_path / "m.keras")
    assert k2.get_layer("bn").trainable is False
    np.testing.assert_allclose(np.asarray(k2.predict(x, verbose=0)), m.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
