"""Convolutional layers through the public API: finite-difference gradients,
forward passes against NumPy, a digits CNN, and the 100x100x3 Keras model's
plan, refusal and micro-batched training."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from boundfit.datasets import digits
from test_gradients import directional_check

rng = np.random.default_rng(0)


def conv_ref(x, w, b, stride, same):
    B, H, W, C = x.shape
    KH, KW, _, K = w.shape
    if same:
        OH, OW = -(-H // stride[0]), -(-W // stride[1])
        ph = max((OH - 1) * stride[0] + KH - H, 0)
        pw = max((OW - 1) * stride[1] + KW - W, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    else:
        OH, OW = (H - KH) // stride[0] + 1, (W - KW) // stride[1] + 1
    out = np.zeros((B, OH, OW, K))
    for i in range(OH):
        for j in range(OW):
            patch = x[:, i * stride[0]:i * stride[0] + KH, j * stride[1]:j * stride[1] + KW, :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return out + b


@pytest.mark.parametrize("kernel,strides,padding", [((3, 3), (1, 1), "valid"), ((3, 3), (2, 2), "same"),
                                                    ((2, 3), (2, 1), "same"), ((1, 1), (1, 1), "valid")])
def test_conv2d_forward_matches_numpy(kernel, strides, padding):
    m = bf.Sequential([layers.Conv2D(4, kernel, strides=strides, padding=padding, input_shape=(7, 5, 3))])
    w, b = m.get_weights()
    b = rng.standard_normal(b.shape).astype(np.float32)
    m.set_weights([w, b])
    x = rng.standard_normal((3, 7, 5, 3)).astype(np.float32)
    np.testing.assert_allclose(m.predict(x, verbose=0), conv_ref(x, w, b, strides, padding == "same"),
                               rtol=1e-4, atol=1e-5)


def test_pooling_forward_matches_numpy():
    x = rng.standard_normal((2, 6, 6, 3)).astype(np.float32)
    for cls, f in ((layers.MaxPooling2D, np.max), (layers.AveragePooling2D, np.mean)):
        m = bf.Sequential([cls((2, 2), input_shape=(6, 6, 3))])
        ref = f(x.reshape(2, 3, 2, 3, 2, 3), axis=(2, 4))
        np.testing.assert_allclose(m.predict(x, verbose=0), ref, rtol=1e-6)
    m = bf.Sequential([layers.GlobalAveragePooling2D(input_shape=(6, 6, 3))])
    np.testing.assert_allclose(m.predict(x, verbose=0), x.mean((1, 2)), rtol=1e-5)


@pytest.mark.parametrize("stack", [
    lambda: [layers.Conv2D(3, (3, 3), strides=(2, 2), padding="same", activation="tanh", input_shape=(7, 5, 2))],
    lambda: [layers.Conv2D(3, (2, 3), activation="tanh", use_bias=False, input_shape=(7, 5, 2))],
    lambda: [layers.Conv2D(3, (3, 3), padding="same", activation="tanh", input_shape=(6, 6, 2)),
             layers.MaxPooling2D((2, 2))],
    lambda: [layers.Conv2D(3, (3, 3), activation="tanh", input_shape=(7, 7, 2)),
             layers.AveragePooling2D((2, 2), strides=(1, 1), padding="same")],
    lambda: [layers.Conv2D(3, (3, 3), activation="tanh", input_shape=(6, 6, 2)), layers.GlobalAveragePooling2D()],
    lambda: [layers.Conv2D(3, (3, 3), input_shape=(6, 6, 2)), layers.Reshape((-1, 3))],
])
def test_conv_family_gradients_match_finite_differences(stack):
    m = bf.Sequential(stack() + [layers.Flatten(), layers.Dense(2)])
    m.compile(optimizer="sgd", loss="mse")
    shape = m.input_shape[1:]
    x = rng.standard_normal((5,) + shape).astype(np.float32)
    directional_check(m, x, rng.standard_normal((5, 2)).astype(np.float32), eps=1e-3)


def test_dropout_is_inactive_in_predict_and_seeded_in_fit():
    m = bf.Sequential([layers.Dropout(0.5, input_shape=(1000,)), layers.Dense(1, use_bias=False)])
    m.set_weights([np.ones((1000, 1), np.float32)])
    x = np.ones((4, 1000), np.float32)
    np.testing.assert_allclose(m.predict(x, verbose=0), 1000.0)
    m.compile(optimizer=bf.optimizers.SGD(learning_rate=0.0), loss="mse")
    h = m.fit(x, np.full((4, 1), 1000.0, np.float32), batch_size=4, verbose=0)
    # kept units are scaled by 2: the output stays near 1000 but not exactly
    assert 0 < h.history["loss"][0] < 1000.0 ** 2 * 0.1


def test_batchnorm_moving_statistics_follow_keras():
    m = bf.Sequential([layers.BatchNormalization(momentum=0.9, input_shape=(3,))])
    m.compile(optimizer=bf.optimizers.SGD(learning_rate=0.0), loss="mse")
    x = rng.standard_normal((16, 3)).astype(np.float32) * 2 + 1
    m.fit(x, x, batch_size=16, verbose=0)
    gamma, beta, mean, var = m.get_weights()
    np.testing.assert_allclose(mean, 0.1 * x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(var, 0.9 + 0.1 * x.var(0), rtol=1e-5)
    np.testing.assert_allclose(m.predict(x, verbose=0), (x - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)


def test_small_cnn_reaches_97_percent_on_digits():
    (xtr, ytr), (xte, yte) = digits.load_data()
    xtr, xte = [(x / 16.0).astype(np.float32)[..., None] for x in (xtr, xte)]
    m = bf.Sequential([layers.Conv2D(32, (3, 3), padding="same", activation="relu", input_shape=(8, 8, 1)),
                       layers.MaxPooling2D((2, 2)), layers.Flatten(), layers.Dense(64, activation="relu"),
                       layers.Dense(10, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    m.fit(xtr, ytr, batch_size=32, epochs=20, verbose=0)
    assert m.evaluate(xte, yte, verbose=0)[1] >= 0.97


def test_keras_100x100_model_plan_refusal_and_micro_batches():
    model = bf.Sequential([
        layers.Conv2D(32, (3, 3), activation="relu", input_shape=(100, 100, 3)),
        layers.MaxPooling2D((2, 2)),
        layers.Flatten(),
        layers.Dense(128, activation="relu"),
        layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    plan = model.estimate_memory(batch_size=2048)
    assert plan.host_bytes > 6 << 30 and plan.fits in (True, False)
    limit = (plan.host_bytes - plan.held_bytes) // 8
    x = np.random.default_rng(0).random((256, 100, 100, 3), dtype=np.float32)
    y = np.random.default_rng(1).integers(0, 10, 256)
    before = model.get_weights()
    with pytest.raises(bf.MemoryBudgetError):
        model.fit(x, y, batch_size=2048, memory_limit=limit, verbose=0)
    for a, b in zip(model.get_weights(), before):
        np.testing.assert_array_equal(a, b)
    h = model.fit(x, y, batch_size=2048, micro_batch="auto", memory_limit=limit, epochs=1, verbose=0)
    assert np.isfinite(h.history["loss"][0]) and model._last_plan.rows < 2048
    arenas = (model._engine.weight_arena_bytes + model._engine.optimizer_arena_bytes +
              sum(s["run_high_water"] for s in model._last_run_stats))
    engine = sum(e.bytes for e in model._last_plan.breakdown if e.category not in ("runtime", "measured"))
    assert engine == arenas
