"""Conv1D (valid / same / causal, strides, dilation), MaxPooling1D,
AveragePooling1D, GlobalAveragePooling1D, GlobalMaxPooling1D / 2D (keepdims)
and Conv2DTranspose (valid / same, strides below and above the kernel):
outputs, losses and updated weights against Keras 3 from the same weights,
gradients against finite differences, plan == arenas on cpu and emu, emu ==
cpu, a Conv1D + GlobalAveragePooling1D model learning a sequence task, .keras
files both ways, and every argument error."""

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from boundfit import layers
from conftest import engine_gradient, numeric_loss

RTOL = 1e-5


def stack(mod, name):
    """The same layers in boundfit (mod = boundfit.layers) or Keras (mod = keras.layers)."""
    L = mod
    if name == "conv1d":  # (17, 3): dilated causal, strided same, dilated valid, strided causal; 1D pools
        body = [L.Conv1D(4, 3, padding="causal", dilation_rate=2, activation="relu"),
                L.Conv1D(5, 4, strides=2, padding="same", activation="tanh"),
                L.Conv1D(4, 2, dilation_rate=3), L.AveragePooling1D(2, strides=1, padding="same"),
                L.Conv1D(4, 3, padding="causal", strides=2, activation="sigmoid"), L.MaxPooling1D(3, 2, "same"),
                L.AveragePooling1D(3, 2, "same"), L.GlobalMaxPooling1D(keepdims=True), L.Flatten()]
    elif name == "conv1d on conv2d kernels":  # (16, 3): undilated valid / same, 1x1; gelu keeps its pre-activation
        body = [L.Conv1D(6, 5, padding="same", use_bias=False), L.MaxPooling1D(2),
                L.Conv1D(4, 1, activation="relu"), L.Conv1D(4, 3, strides=3, activation="gelu"), L.GlobalAveragePooling1D()]
    elif name == "conv2d transpose":  # (3, 3, 2): same / valid, even and odd kernels, strides below and above them
        body = [L.Conv2DTranspose(2, 4, strides=2, padding="same", activation="tanh"),
                L.Conv2DTranspose(3, 1, strides=2),
                L.Conv2DTranspose(4, 3, strides=2, padding="same", activation="relu"),
                L.Conv2DTranspose(3, (2, 3), strides=(3, 1)),
                L.Conv2DTranspose(2, 5, strides=(2, 1), padding="same", use_bias=False),
                L.GlobalMaxPooling2D()]
    return body + [L.Dense(2)]


MODELS = {"conv1d": (17, 3), "conv1d on conv2d kernels": (16, 3), "conv2d transpose": (3, 3, 2)}


def bf_model(name, opt="sgd"):
    shape = MODELS[name]
    m = bf.Sequential([bf.Input(shape)] + stack(layers, name))
    m.compile(optimizer=opt, loss="mse")
    return m


def batch(name, n=16, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n,) + MODELS[name]).astype(np.float32)
    y = rng.standard_normal((n, 2)).astype(np.float32)
    return x, y


@pytest.mark.parametrize("name", list(MODELS))
def test_outputs_losses_and_updated_weights_match_keras(name):
    keras = keras_ref.load()
    bm = bf_model(name)
    km = keras.Sequential([keras.Input(MODELS[name])] + stack(keras.layers, name))
    km.set_weights(bm.get_weights())
    assert [w.shape for w in km.get_weights()] == [w.shape for w in bm.get_weights()]
    assert tuple(bm.layers[-2].output_shape) == tuple(km.layers[-2].output.shape)
    x, y = batch(name)
    np.testing.assert_allclose(bm.predict(x, verbose=0), np.asarray(km.predict(x, verbose=0)), rtol=RTOL, atol=1e-6)
    km.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")  # SGD: the updates compare gradients
    bm.compile(optimizer=bf.optimizers.SGD(0.05), loss="mse")
    hk = km.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    hb = bm.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    np.testing.assert_allclose(hb.history["loss"], hk.history["loss"], rtol=RTOL)
    for i, (a, b) in enumerate(zip(km.get_weights(), bm.get_weights())):
        np.testing.assert_allclose(b, a, rtol=RTOL, atol=1e-6, err_msg=f"weights[{i}]")


# the combinations the models above do not cover
SINGLE_1D = [("valid", 1, 1), ("same", 1, 2), ("causal", 1, 3), ("valid", 1, 2)]
SINGLE_T = [(3, 1, "valid"), (3, 1, "same"), (2, 3, "same"), ((2, 4), (1, 3), "valid")]


def test_every_padding_stride_and_dilation_gives_keras_outputs():
    keras = keras_ref.load()
    rng = np.random.default_rng(5)
    x1 = rng.standard_normal((3, 11, 3)).astype(np.float32)
    x2 = rng.standard_normal((3, 5, 4, 3)).astype(np.float32)
    cases = [((11, 3), x1, lambda L, p=p, s=s, d=d: L.Conv1D(4, 3, strides=s, padding=p, dilation_rate=d))
             for p, s, d in SINGLE_1D]
    cases += [((5, 4, 3), x2, lambda L, k=k, s=s, p=p: L.Conv2DTranspose(4, k, strides=s, padding=p))
              for k, s, p in SINGLE_T]
    cases += [((5, 4, 3), x2, lambda L: L.Conv2DTranspose(4, 2, strides=2, activation="silu"))]
    for shape, x, make in cases:
        bm = bf.Sequential([bf.Input(shape), make(layers)])
        kl = make(keras.layers)
        km = keras.Sequential([keras.Input(shape), kl])
        km.set_weights(bm.get_weights())
        out = bm.predict(x, verbose=0)
        assert out.shape == tuple(kl.compute_output_shape((3,) + shape)), kl.get_config()
        np.testing.assert_allclose(out, np.asarray(kl(x)), rtol=RTOL, atol=1e-6, err_msg=str(kl.get_config()))


@pytest.mark.parametrize("name", list(MODELS))
def test_gradients_match_finite_differences(name):
    """Each weight tensor along a random direction in turn: central differences
    of the engine's loss with small steps (max pooling switches its winner
    under larger ones); absolute slack for float32 loss rounding."""
    m = bf_model(name)
    x, y = batch(name, n=6, seed=3)
    rng = np.random.default_rng(1)
    m.set_weights([w + 0.1 * rng.standard_normal(w.shape).astype(np.float32) for w in m.get_weights()])
    g = engine_gradient(m, x, y)
    w0 = m.get_weights()
    eps = 3e-4
    for j in range(len(w0)):
        d = rng.standard_normal(w0[j].shape)
        loss = []
        for sign in (1, -1):
            w = list(w0)
            w[j] = (w0[j] + sign * eps * d).astype(np.float32)
            m.set_weights(w)
            loss.append(numeric_loss(m, x, y))
        m.set_weights(w0)
        fd, an = (loss[0] - loss[1]) / (2 * eps), float((g[j] * d).sum())
        assert abs(fd - an) <= 2e-2 * max(abs(fd), abs(an)) + 2e-3, (j, w0[j].shape, fd, an)


def arenas(m):
    stats = m._last_run_stats
    assert all(s["run_high_water"] == s["run_reserved"] for s in stats)
    return m._engine.weight_arena_bytes + m._engine.optimizer_arena_bytes + sum(s["run_high_water"] for s in stats)


@pytest.mark.parametrize("name", list(MODELS))
def test_plan_equals_arenas_and_emu_equals_cpu(name):
    x, y = batch(name, n=20)
    ms = []
    for dev in ("cpu", "emu"):
        m = bf_model(name, opt="adam")
        if ms:
            m.set_weights(w0)
        else:
            w0 = m.get_weights()
        plan = m.estimate_memory(batch_size=8, device=dev)
        m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0, device=dev)
        if dev == "cpu":
            engine = sum(e.bytes for e in m._last_plan.breakdown if e.category not in ("runtime", "measured"))
            assert engine == arenas(m)
        else:
            stats = m._last_run_stats
            assert all(s["run_high_water"] == s["run_reserved"] for s in stats)
            assert plan.device_bytes == sum(s["run_reserved"] for s in stats) > 0
        ms.append(m)
    for a, b in zip(ms[0].get_weights(), ms[1].get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ms[1].predict(x, verbose=0, device="emu"), ms[0].predict(x, verbose=0))


def test_conv1d_and_global_average_pooling_learn_a_sequence_task():
    # class = which of two frequencies a noisy, randomly shifted sine wave has
    rng = np.random.default_rng(0)
    n, T = 512, 32
    y = rng.integers(0, 2, n)
    t = np.arange(T)
    freq = np.where(y == 1, 0.8, 0.25)[:, None]
    x = np.sin(freq * t + rng.uniform(0, 2 * np.pi, (n, 1))) + 0.3 * rng.standard_normal((n, T))
    x = x[..., None].astype(np.float32)
    m = bf.Sequential([bf.Input((T, 1)), layers.Conv1D(8, 5, activation="relu", padding="causal"),
                       layers.Conv1D(8, 3, activation="relu", dilation_rate=2),
                       layers.GlobalAveragePooling1D(), layers.Dense(2, activation="softmax")])
    m.compile(optimizer=bf.optimizers.Adam(1e-2), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    h = m.fit(x[:384], y[:384], batch_size=32, epochs=15, verbose=0, validation_data=(x[384:], y[384:]))
    assert h.history["val_accuracy"][-1] >= 0.9, h.history
    engine = sum(e.bytes for e in m._last_plan.breakdown if e.category not in ("runtime", "measured"))
    assert engine == arenas(m)


def test_keras_files_both_ways(tmp_path):
    keras = keras_ref.load()
    # boundfit -> Keras
    for name in ("conv1d", "conv2d transpose"):
        bm = bf_model(name)
        x = batch(name, n=4)[0]
        p = str(tmp_path / "b.keras")
        bm.save(p)
        km = keras.saving.load_model(p)
        np.testing.assert_allclose(np.asarray(km.predict(x, verbose=0)), bm.predict(x, verbose=0), rtol=RTOL, atol=1e-6)
    # Keras -> boundfit
    x1 = np.random.default_rng(2).standard_normal((4, 16, 3)).astype(np.float32)
    x2 = np.random.default_rng(3).standard_normal((4, 5, 4, 3)).astype(np.float32)
    K = keras.layers
    for shape, x, body in (((16, 3), x1, [K.Conv1D(4, 3, padding="causal", dilation_rate=2, activation="relu"),
                                          K.MaxPooling1D(3, 2, "same"), K.AveragePooling1D(2),
                                          K.Conv1D(3, 2, strides=2, padding="same"),
                                          K.GlobalAveragePooling1D(keepdims=True), K.Flatten(), K.Dense(2)]),
                           ((5, 4, 3), x2, [K.Conv2DTranspose(3, 3, strides=2, padding="same"),
                                            K.Conv2DTranspose(2, 2, strides=3, activation="relu"),
                                            K.GlobalMaxPooling2D(keepdims=True), K.Flatten(), K.Dense(2)])):
        km = keras.Sequential([keras.Input(shape)] + body)
        km.compile(optimizer="adam", loss="mse")
        p = str(tmp_path / "k.keras")
        km.save(p)
        bm = bf.models.load_model(p)
        np.testing.assert_allclose(bm.predict(x, verbose=0), np.asarray(km.predict(x, verbose=0)), rtol=RTOL, atol=1e-6)
        assert [type(l).__name__ for l in bm.layers] == [type(l).__name__ for l in km.layers]


def test_keras_file_with_an_unsupported_conv1d_argument_is_refused(tmp_path):
    keras = keras_ref.load()
    km = keras.Sequential([keras.Input((8, 4)), keras.layers.Conv1D(4, 3, groups=2)])
    p = str(tmp_path / "g.keras")
    km.save(p)
    with pytest.raises(ValueError, match="groups"):
        bf.models.load_model(p)


@pytest.mark.parametrize("make,exc,match", [
    (lambda: layers.Conv1D(0, 3), ValueError, "filters"),
    (lambda: layers.Conv1D(4.0, 3), ValueError, "filters"),
    (lambda: layers.Conv1D(4, 0), ValueError, "kernel_size"),
    (lambda: layers.Conv1D(4, (3, 3)), ValueError, "kernel_size"),
    (lambda: layers.Conv1D(4, 3, strides=0), ValueError, "strides"),
    (lambda: layers.Conv1D(4, 3, dilation_rate=-1), ValueError, "dilation_rate"),
    (lambda: layers.Conv1D(4, 3, strides=2, dilation_rate=2), ValueError, "dilation_rate"),
    (lambda: layers.Conv1D(4, 3, padding="full"), ValueError, "padding"),
    (lambda: layers.Conv1D(4, 3, groups=2), ValueError, "groups"),
    (lambda: layers.Conv1D(4, 3, data_format="channels_first"), ValueError, "data_format"),
    (lambda: layers.Conv1D(4, 3, activation="nope"), ValueError, "nope"),
    (lambda: layers.Conv1D(4, 3, bogus=1), TypeError, "bogus"),
    (lambda: layers.Conv2DTranspose(0, 3), ValueError, "filters"),
    (lambda: layers.Conv2DTranspose(4, (3, 0)), ValueError, "kernel_size"),
    (lambda: layers.Conv2DTranspose(4, 3, padding="causal"), ValueError, "padding"),
    (lambda: layers.Conv2DTranspose(4, 3, output_padding=1), ValueError, "output_padding"),
    (lambda: layers.Conv2DTranspose(4, 3, dilation_rate=2), ValueError, "dilation_rate"),
    (lambda: layers.Conv2DTranspose(4, 3, data_format="channels_first"), ValueError, "data_format"),
    (lambda: layers.MaxPooling1D(0), ValueError, "pool_size"),
    (lambda: layers.AveragePooling1D(2, strides=(1, 1)), ValueError, "strides"),
    (lambda: layers.MaxPooling1D(2, padding="causal"), ValueError, "padding"),
    (lambda: layers.GlobalMaxPooling1D(keepdims=1), ValueError, "keepdims"),
    (lambda: layers.GlobalAveragePooling1D(data_format="channels_middle"), ValueError, "data_format"),
])
def test_bad_arguments_raise_naming_the_argument(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


@pytest.mark.parametrize("shape,layer,match", [
    ((8, 8, 3), lambda: layers.Conv1D(4, 3), "rank 2"),
    ((8,), lambda: layers.Conv1D(4, 3), "rank 2"),
    ((4, 3), lambda: layers.Conv1D(4, 3, dilation_rate=2), "does not fit"),
    ((8, 3), lambda: layers.Conv2DTranspose(4, 3), "rank 3"),
    ((8, 8, 3), lambda: layers.MaxPooling1D(2), "rank 2"),
    ((3, 2), lambda: layers.AveragePooling1D(4), "does not fit"),
    ((8, 3), lambda: layers.GlobalMaxPooling2D(), "rank 3"),
    ((8, 8, 3), lambda: layers.GlobalAveragePooling1D(), "rank 2"),
])
def test_wrong_input_shapes_raise_before_a_model_exists(shape, layer, match):
    with pytest.raises(ValueError, match=match):
        bf.Sequential([bf.Input(shape), layer()])
    with pytest.raises(ValueError, match=match):
        layer()(bf.Input(shape))
