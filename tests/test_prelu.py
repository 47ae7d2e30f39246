"""PReLU (Keras 3's keras.layers.PReLU) added through the layer registry
(CONTRIBUTING.md): csrc/core/layers/prelu.c, the prelu_forward /
prelu_backward ops (csrc/core/backend_ops.h) with csrc/cpu/prelu.c and
csrc/cuda/prelu.cu, its class in python/boundfit/layers/activation.py.
Pinned: alpha's shape for shared_axes None / [1] / [1, 2] / [2] / [1, 3] on
inputs of rank 2, 3 and 4; the forward against NumPy and Keras 3; the
gradients of alpha and of the input (through a Dense in front) against
float64 central differences and against Keras (relu's gradient at 0 is 0);
two epochs of training, with a regularizer and a constraint on alpha, equal
to Keras's; .keras files both ways; the plan against the arenas; the emu
device and any thread count give the same bits; bad shared_axes raise
naming the argument."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import _core, layers
from conftest import assert_plan_equals_arenas, engine_gradient
from helpers.keras_compare import close
from helpers.keras_recorded import case, keras_file
from keras_ref import load
from boundfit.layers.layer import _counters


@pytest.fixture(autouse=True)
def _names_from_zero():
    """layers named from 0 in each test (as after Keras's clear_session): boundfit's files, whose contents key
    Keras's recorded results, do not depend on the tests run before in the process (pytest-xdist)"""
    _counters.clear()


# per-sample input shape, shared_axes (inputs of rank 2, 3 and 4 with the batch axis)
CASES = [((6,), None), ((6,), [1]), ((5, 4), None), ((5, 4), [1]), ((5, 4), [1, 2]), ((5, 4), [2]),
         ((3, 4, 2), None), ((3, 4, 2), [1]), ((3, 4, 2), [1, 2]), ((3, 4, 2), [2]), ((3, 4, 2), [1, 3])]
IDS = [f"{'x'.join(map(str, s))}-{a}" for s, a in CASES]


def alpha_shape(shape, shared):
    return tuple(1 if d + 1 in (shared or ()) else n for d, n in enumerate(shape))


def prelu(x, alpha):
    """NumPy PReLU as Keras writes it: relu(x) - alpha * relu(-x), alpha broadcast over the batch"""
    return np.maximum(x, 0) - alpha * np.maximum(-x, 0)


def data(shape, n=6, seed=0, zeros=True):
    """x (n,) + shape with some exact zeros (relu's kink), alpha-sized random weights"""
    r = np.random.default_rng(seed)
    x = r.standard_normal((n,) + shape).astype(np.float32)
    if zeros:
        x.reshape(-1)[::7] = 0.0
    return x


@pytest.mark.parametrize("shape,shared", CASES, ids=IDS)
def test_prelu_alpha_has_keras_shape_and_the_forward_is_numpy(shape, shared):
    m = bf.Sequential([bf.Input(shape), layers.PReLU(shared_axes=shared)])
    (alpha,) = m.get_weights()
    assert alpha.shape == alpha_shape(shape, shared) and not alpha.any()   # Keras's default: Zeros
    alpha = np.random.default_rng(1).uniform(-0.5, 1.5, alpha.shape).astype(np.float32)
    m.set_weights([alpha])
    x = data(shape, n=9)
    np.testing.assert_array_equal(m.predict(x, verbose=0), prelu(x, alpha))


def _dense_prelu(M, shape, shared, **kw):
    """a bias-carrying Dense over the last axis, then PReLU: the Dense's kernel and bias gradients are the
    input gradient of PReLU summed (the bias's exactly where the Dense output is 0)"""
    return M.Sequential([M.Input(shape), M.layers.Dense(shape[-1]), M.layers.PReLU(shared_axes=shared, **kw)])


def _weights(shape, shared, seed=2):
    r = np.random.default_rng(seed)
    C = shape[-1]
    return [(r.standard_normal((C, C)) * 0.7).astype(np.float32), np.zeros(C, np.float32),
            r.uniform(-0.5, 1.5, alpha_shape(shape, shared)).astype(np.float32)]


@pytest.mark.parametrize("shape,shared", CASES, ids=IDS)
def test_prelu_forward_and_gradients_match_keras(shape, shared):
    """rows of x that are all zero make the Dense's output exactly 0 there (its bias is 0): Keras's relu has
    gradient 0 at 0, so the bias's gradient holds nothing from them"""
    w0 = _weights(shape, shared)
    x = data(shape, zeros=False)
    x.reshape(-1, shape[-1])[::3] = 0.0
    y = data(shape, seed=3, zeros=False)
    bm = _dense_prelu(bf, shape, shared)
    bm.set_weights(w0)

    def compute():   # Keras's loss, outputs and gradients in one jitted JAX call
        keras = load()
        import jax
        import jax.numpy as jnp
        km = _dense_prelu(keras, shape, shared)
        km.set_weights(w0)

        def loss(tv):
            out, _ = km.stateless_call(tv, [], jnp.asarray(x))
            return jnp.mean((out - y) ** 2), out
        (lk, out), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))([v.value for v in km.trainable_variables])
        return float(lk), np.asarray(out), [np.asarray(g) for g in grads]
    lk, out, grads = case(compute)
    close(np.asarray(out), bm.predict(x, verbose=0), 1e-6)   # the Dense's sums in another order than XLA's
    bm.compile(optimizer="sgd", loss="mse")
    got = engine_gradient(bm, x, y)
    top = max(float(np.abs(np.asarray(g)).max()) for g in grads)
    for g, b in zip(grads, got):
        close(np.asarray(g), b, 1e-5, scale=top)
    assert abs(float(lk) - bm.evaluate(x, y, batch_size=len(x), verbose=0)) <= 1e-6 * float(lk)


@pytest.mark.parametrize("shape,shared", [CASES[0], CASES[3], CASES[8], CASES[10]], ids=[IDS[0], IDS[3], IDS[8],
                                                                                            IDS[10]])
def test_prelu_gradients_match_finite_differences(shape, shared):
    """alpha's gradient directly, the input's through the Dense's kernel and bias, against central differences
    of the NumPy model in float64 (inputs away from relu's kink)"""
    x = data(shape, zeros=False)
    y = data(shape, seed=3, zeros=False)
    w0 = _weights(shape, shared)
    w0[1] = np.random.default_rng(4).standard_normal(shape[-1]).astype(np.float32) * 0.1
    m = _dense_prelu(bf, shape, shared)
    m.set_weights(w0)
    m.compile(optimizer="sgd", loss="mse")
    got = engine_gradient(m, x, y)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)

    def loss(ws):
        return np.mean((prelu(x64 @ ws[0] + ws[1], ws[2]) - y64) ** 2)

    w64, eps = [w.astype(np.float64) for w in w0], 1e-6
    for k, w in enumerate(w64):
        want = np.zeros_like(w)
        for idx in np.ndindex(w.shape):
            wp, wm = [a.copy() for a in w64], [a.copy() for a in w64]
            wp[k][idx] += eps
            wm[k][idx] -= eps
            want[idx] = (loss(wp) - loss(wm)) / (2 * eps)
        np.testing.assert_allclose(got[k], want, rtol=1e-4, atol=1e-6 * np.abs(want).max())


def _trained_model(M):
    return M.Sequential([M.Input((6, 4)), M.layers.Dense(5),
                         M.layers.PReLU(alpha_initializer=M.initializers.Constant(0.02),
                                        alpha_regularizer=M.regularizers.L2(0.01),
                                        alpha_constraint=M.constraints.MaxNorm(0.1), shared_axes=[1]),
                         M.layers.Flatten(), M.layers.Dense(3), M.layers.PReLU()])


def test_prelu_trains_as_keras_and_its_files_open_in_both(tmp_path):
    """two epochs of SGD with momentum: the same losses and weights (the L2 penalty in the loss, MaxNorm after each update);
    a .keras file of each opens in the other with the same predictions and config"""
    bm = _trained_model(bf)
    r = np.random.default_rng(5)
    w0 = [w if w.ndim == 2 and w.shape[0] == 1 else (r.standard_normal(w.shape) * 0.5).astype(np.float32)
          for w in bm.get_weights()]   # alpha's Constant(0.02) kept: Keras's too (below)
    x, y = r.standard_normal((32, 6, 4)).astype(np.float32), r.standard_normal((32, 3)).astype(np.float32)

    def save(p):   # Keras's side, recorded with the file it saves after training
        keras = load()
        km = _trained_model(keras)
        first = km.get_weights()
        km.set_weights(w0)
        km.compile(keras.optimizers.SGD(0.1, momentum=0.9), "mse")
        hk = km.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
        km.save(p)
        return dict(first=first, loss=hk.history["loss"], w1=km.get_weights(), p=km.predict(x, verbose=0),
                    name=km.layers[1].name, config={k: v for k, v in km.layers[1].get_config().items()
                                                    if k != "dtype"})
    k = keras_file(tmp_path / "theirs.keras", save)
    assert [w.shape for w in bm.get_weights()] == [w.shape for w in k["first"]]
    np.testing.assert_array_equal(bm.get_weights()[2], k["first"][2])   # Constant(0.02), shape (1, 5)
    bm.set_weights(w0)
    bm.compile(bf.optimizers.SGD(0.1, momentum=0.9), "mse")
    hb = bm.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(hb.history["loss"], k["loss"], rtol=1e-5)
    for a, b in zip(k["w1"], bm.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert 0.099 < np.abs(bm.get_weights()[2]).max() <= 0.1   # MaxNorm over axis 0 of (1, 5) held alpha
    bm.save(tmp_path / "ours.keras")

    def opened():   # Keras's side, recorded by the file's contents
        theirs = load().models.load_model(tmp_path / "ours.keras")
        return theirs.predict(x, verbose=0), theirs.layers[1].get_config()["shared_axes"]
    theirs, shared_axes = case(opened, files=[tmp_path / "ours.keras"])
    np.testing.assert_allclose(theirs, bm.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    assert shared_axes == [1]
    ours = bf.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(ours.predict(x, verbose=0), k["p"], rtol=1e-5, atol=1e-6)
    p = ours.layers[1]
    assert isinstance(p, layers.PReLU) and p.shared_axes == [1] and p.name == k["name"]
    assert {k: v for k, v in p.get_config().items() if k != "dtype"} == k["config"]
    again = layers.PReLU.from_config(p.get_config())
    assert again.shared_axes == [1] and isinstance(again.alpha_constraint, bf.constraints.MaxNorm)


def test_prelu_plan_holds_its_fit():
    r = np.random.default_rng(6)
    x, y = r.standard_normal((32, 5, 6, 3)).astype(np.float32), r.integers(0, 3, 32)
    m = bf.Sequential([bf.Input((5, 6, 3)), layers.Conv2D(4, 3, padding="same"), layers.PReLU(shared_axes=[1, 2]),
                       layers.Flatten(), layers.Dense(3, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    plan = assert_plan_equals_arenas(m, x, y, batch_size=16)
    assert plan.fits


def _conv_prelu(shared):
    return bf.Sequential([bf.Input((16, 16, 8)), layers.Conv2D(8, 1), layers.PReLU(shared_axes=shared),
                          layers.GlobalAveragePooling2D(), layers.Dense(2)])


@pytest.mark.parametrize("shared", [None, [1, 2], [2]])
def test_prelu_trains_to_the_same_bits_on_the_emu_device_and_any_thread_count(shared):
    """alpha's gradient summed per element in one fixed order: 2048 elements (split by elements), 8 (3 row blocks
    fixed by the shape), 128; the emu backend runs the CPU's kernels through its own table"""
    r = np.random.default_rng(7)
    x, y = r.standard_normal((32, 16, 16, 8)).astype(np.float32), r.standard_normal((32, 2)).astype(np.float32)
    runs = []
    for device, threads in (("cpu", 1), ("cpu", 64), ("emu", 64)):
        bf.utils.set_random_seed(3)
        _core.set_num_threads(threads)
        try:
            m = _conv_prelu(shared)
            m.compile(optimizer=bf.optimizers.SGD(0.05, momentum=0.9), loss="mse")
            m.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0, device=device)
        finally:
            _core.set_num_threads(64)
        runs.append(m.get_weights())
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(a, b)
    assert np.abs(runs[0][2]).max() > 0   # alpha moved


@pytest.mark.parametrize("shared,match", [(0, "shared_axes"), ([1, -1], "shared_axes"), ([True], "shared_axes"),
                                          ("1", "shared_axes")])
def test_prelu_rejects_bad_shared_axes_naming_the_argument(shared, match):
    with pytest.raises(ValueError, match=match):
        layers.PReLU(shared_axes=shared)


def test_prelu_rejects_axes_its_input_lacks_and_unknown_sizes_alpha_spans():
    with pytest.raises(ValueError, match=r"shared_axes names axis 3.*rank 2"):
        bf.Sequential([bf.Input((5, 4)), layers.PReLU(shared_axes=[1, 3])])
    with pytest.raises(ValueError, match=r"shared_axes\[0\]"):   # beyond the engine's 3 axes per sample
        bf.Sequential([bf.Input((5, 4)), layers.PReLU(shared_axes=4)])
    with pytest.raises(ValueError, match=r"known sizes.*shared_axes=\[2\]"):
        bf.Sequential([bf.Input((None, 4)), layers.PReLU(shared_axes=2)])
    with pytest.raises(ValueError, match="one number per sample"):
        bf.Sequential([bf.Input(()), layers.PReLU()])


def test_prelu_shared_over_a_variable_length_trains():
    """alpha (1, C) over sequences of any length: a variable (None) axis may be shared"""
    m = bf.Sequential([bf.Input((None, 3)), layers.PReLU(shared_axes=[1]), layers.GlobalAveragePooling1D()])
    m.set_weights([np.array([[0.5, -1.0, 2.0]], np.float32)])
    for T in (4, 7):
        x = data((T, 3), n=5)
        np.testing.assert_allclose(m.predict(x, verbose=0), prelu(x, m.get_weights()[0]).mean(axis=1), rtol=1e-6)
