"""Keras 3's other activations, the layout layers (Permute, RepeatVector,
ZeroPadding2D, UpSampling2D) and the preprocessing layers (Rescaling,
Normalization, RandomFlip, RandomCrop, RandomTranslation) against Keras 3
itself (same weights and batch: outputs and gradients, relative 1e-5), against
central finite differences of the engine's own loss, on the emu device, in
Keras files both ways, with exact plans, and their failure paths. Keras's
side is recorded (helpers/keras_recorded.py)."""

import functools

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from boundfit import layers
from conftest import engine_gradient
from conftest import numeric_loss
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: files keyed by their names
from helpers.keras_recorded import case, keras_file
from test_gradients import directional_check

RTOL = 1e-5
NAMES = ["gelu", "silu", "swish", "elu", "selu", "leaky_relu", "softplus", "softsign", "hard_sigmoid", "exponential",
         "relu6"]


def keras_grads(km, x, y):
    """Gradient of Keras's mean MSE loss w.r.t. its trainable weights (JAX, eager)."""
    import jax
    import jax.numpy as jnp

    tv = [v.value for v in km.trainable_variables]
    ntv = [v.value for v in km.non_trainable_variables]

    def loss(tv):
        out, _ = km.stateless_call(tv, ntv, jnp.asarray(x), training=True)
        return jnp.mean(jnp.mean((out - jnp.asarray(y)) ** 2, axis=-1))
    return [np.asarray(g, np.float64) for g in jax.jit(jax.grad(loss))(tv)]


def twin(build, in_shape, data, seed=0):
    """The same stack in boundfit and Keras, and Keras's record (recorded): each layer's random trainable
    weights (None: it has none), set in both; data(boundfit's model) gives the batch x and targets y (or
    None), and Keras its outputs on x and its gradients for y."""
    bm = bf.Sequential([layers.Input(in_shape)] + build(layers))
    bm.compile(optimizer="sgd", loss="mse")
    x, y = data(bm)

    def keras_side():
        keras = keras_ref.load()
        km = keras.Sequential([keras.Input(in_shape)] + build(keras.layers))
        rng, ws = np.random.default_rng(seed), []
        for kl in km.layers:
            ws.append([rng.standard_normal(a.shape).astype(np.float32) * 0.5 for a in kl.get_weights()]
                      if kl.trainable_weights else None)
            if ws[-1] is not None:
                kl.set_weights(ws[-1])
        return {"weights": ws, "out": np.asarray(km(x, training=False)),
                "grads": keras_grads(km, x, y) if y is not None else None}
    k = case(keras_side)
    assert len(bm.layers) == len(k["weights"])
    for bl, w in zip(bm.layers, k["weights"]):
        if w is not None:
            bl.set_weights(w)
    return bm, k, x, y


def assert_same(build, in_shape, n=6, grads=True, seed=0, rtol=RTOL):
    def data(bm):
        rng = np.random.default_rng(seed + 1)
        x = (rng.standard_normal((n,) + tuple(in_shape)) * 1.5).astype(np.float32)
        return x, rng.standard_normal((n,) + bm.output_shape[1:]).astype(np.float32) if grads else None
    bm, k, x, y = twin(build, in_shape, data, seed)
    out = bm.predict(x, verbose=0)
    np.testing.assert_allclose(out, k["out"], rtol=rtol, atol=1e-6)
    if grads:
        g = engine_gradient(bm, x, y)
        i = 0  # the trainable weights in boundfit's order (Keras's): each layer's, layer by layer
        gb = []
        for bl, w in zip(bm.layers, k["weights"]):
            n = len(bl.get_weights())
            if w is not None:
                gb += g[i:i + n]
            i += n
        gk = k["grads"]
        assert len(gb) == len(gk)
        for a, b in zip(gk, gb):
            np.testing.assert_allclose(b, a, rtol=rtol, atol=2e-6)
    return bm


def train_mode_loss(model, x, y):
    """The training-mode loss (random layers drawing): one step at rate 0, the same draw each time."""
    model.compile(optimizer=bf.optimizers.SGD(learning_rate=0.0), loss="mse")
    return model.fit(x, y, batch_size=len(x), epochs=1, shuffle=False, verbose=0).history["loss"][0]


def fd_check(model, x, y, eps=1e-2, rtol=3e-2, loss=numeric_loss, skip=()):
    """directional_check (test_gradients) leaving the weights in `skip` (non-trainable) where they are"""
    g = engine_gradient(model, x, y)
    w0 = model.get_weights()
    rng = np.random.default_rng(0)
    for _ in range(3):
        d = [np.zeros(w.shape) if k in skip else rng.standard_normal(w.shape) for k, w in enumerate(w0)]
        model.set_weights([w + eps * di for w, di in zip(w0, d)])
        lp = loss(model, x, y)
        model.set_weights([w - eps * di for w, di in zip(w0, d)])
        lm = loss(model, x, y)
        model.set_weights(w0)
        fd = (lp - lm) / (2 * eps)
        an = sum(float((gi * di).sum()) for gi, di in zip(g, d))
        assert abs(fd - an) <= rtol * max(abs(fd), abs(an), 1e-2), (fd, an)


# ---- activations ----

def act_cases(A):
    """The activations of module A (boundfit's or Keras's activations)"""
    return [getattr(A, n) for n in NAMES] + [
        functools.partial(A.gelu, approximate=True), functools.partial(A.leaky_relu, negative_slope=0.1),
        functools.partial(A.elu, alpha=0.5), functools.partial(A.relu, max_value=2.5, negative_slope=0.1, threshold=0.5),
        A.relu, A.sigmoid, A.softmax]


def test_activation_functions_evaluate_numpy_arrays_as_keras():
    x = np.concatenate([np.linspace(-9, 9, 181), [-3, 0, 3, 6]]).astype(np.float32).reshape(5, 37)
    ks = case(lambda: [np.asarray(fk(x)) for fk in act_cases(keras_ref.load().activations)])
    assert len(ks) == len(act_cases(bf.activations))
    for fb, ref in zip(act_cases(bf.activations), ks):
        got = fb(x)
        assert got.dtype == np.float32 and got.shape == x.shape
        # tanh-form gelu: 1 + tanh(u) cancels for u << 0, leaving float32 noise of x * 2^-24 in both libraries
        atol = 1e-6 if "approximate" in str(fb) else 1e-7
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=atol, err_msg=str(fb))


def compare_graph(fn, in_shape, n=6, seed=0, rtol=RTOL, wscale=0.5, xscale=1.5):
    """fn(L, rec, x) builds a graph from layer module L (recording each layer
    with rec) in boundfit and in Keras (recorded); same trainable weights, same
    batch: outputs and each layer's gradients of the mean MSE loss must agree."""
    def build(L, inp, cls):
        made, x = [], inp(in_shape)

        def rec(layer):
            made.append(layer)
            return layer
        return cls(x, fn(L, rec, x)), made

    def keras_side():   # each recorded layer's weights (None: no trainable ones), outputs, gradients
        keras = keras_ref.load()
        km, made = build(keras.layers, keras.Input, keras.Model)
        rng, ws = np.random.default_rng(seed), []
        for kl in made:
            ws.append([(rng.standard_normal(a.shape) * wscale).astype(np.float32) for a in kl.get_weights()]
                      if kl.trainable_weights else None)
            if ws[-1] is not None:
                kl.set_weights(ws[-1])
        x = (rng.standard_normal((n,) + tuple(in_shape)) * xscale).astype(np.float32)
        out = np.asarray(km(x, training=False))
        y = rng.standard_normal(out.shape).astype(np.float32)
        gk = keras_grads(km, x, y)
        where = {id(v): i for i, v in enumerate(km.trainable_variables)}
        return {"weights": ws, "x": x, "y": y, "out": out, "grads": [[gk[where[id(v)]] for v in kl.trainable_variables]
                                                                   for kl in made],
                "paths": [[v.path for v in kl.trainable_variables] for kl in made]}
    k = case(keras_side)
    bm, made = build(layers, layers.Input, bf.Model)
    assert len(made) == len(k["weights"])
    for bl, w in zip(made, k["weights"]):
        if w is not None:
            bl.set_weights(w)
    x, y = k["x"], k["y"]
    out = bm.predict(x, verbose=0)
    np.testing.assert_allclose(out, k["out"], rtol=rtol, atol=1e-6)
    bm.compile(optimizer=bf.optimizers.SGD(learning_rate=1.0), loss="mse")
    before = [bl.get_weights() for bl in made]
    bm.fit(x, y, batch_size=n, epochs=1, shuffle=False, verbose=0)
    for bl, w0, gs, paths in zip(made, before, k["grads"], k["paths"]):
        for g, path, a, b in zip(gs, paths, w0, bl.get_weights()):
            np.testing.assert_allclose(a.astype(np.float64) - b, g, rtol=rtol, atol=2e-6, err_msg=f"{bl.name} {path}")


def test_every_activation_matches_keras_in_dense_and_activation_layers():
    def acts(mod):
        return NAMES + [functools.partial(mod.activations.gelu, approximate=True),
                        functools.partial(mod.activations.leaky_relu, negative_slope=0.1),
                        functools.partial(mod.activations.relu, max_value=1.5, negative_slope=0.05, threshold=-0.2)]

    def fn(L, rec, x):
        mod = bf if L is layers else keras_ref.load()
        h = rec(L.Dense(6))(x)
        outs = [rec(L.Dense(2))(rec(L.Activation(a))(rec(L.Dense(4, activation=a))(h))) for a in acts(mod)]
        h = rec(L.LeakyReLU())(rec(L.ReLU(max_value=1.0, negative_slope=0.1, threshold=0.2))(h))
        h = rec(L.Softmax())(rec(L.Dense(3))(rec(L.ELU(alpha=0.7))(rec(L.Dense(4))(h))))
        outs.append(rec(L.Dense(2))(h))
        return rec(L.Add())(outs)
    compare_graph(fn, (5,), wscale=0.3, xscale=1.0)


def test_dense_on_any_rank_and_layout_layers_match_keras():
    def fn(L, rec, x):  # x (3, 2, 5)
        h = rec(L.Dense(4, activation="gelu"))(x)                      # (3, 2, 4)
        h = rec(L.Permute((3, 1, 2)))(h)                                # (4, 3, 2)
        h = rec(L.Dense(3, activation="silu"))(h)                       # (4, 3, 3)
        h = rec(L.ZeroPadding2D(((1, 2), (0, 3))))(h)                   # (7, 6, 3)
        h = rec(L.Conv2D(2, 2))(h)                                      # (6, 5, 2)
        h = rec(L.UpSampling2D((2, 3)))(h)                              # (12, 15, 2)
        h = rec(L.Conv2D(2, 3, strides=2))(h)                           # (5, 7, 2)
        h = rec(L.ZeroPadding2D(1))(h)                                  # (7, 9, 2)
        h = rec(L.Rescaling(2.5, offset=-0.5))(rec(L.Flatten())(h))
        h = rec(L.RepeatVector(3))(rec(L.Dense(4, activation="tanh"))(h))  # (3, 4)
        h = rec(L.Permute((2, 1)))(rec(L.Dense(2))(h))                  # (2, 3)
        return rec(L.Dense(3))(rec(L.Flatten())(h))
    compare_graph(fn, (3, 2, 5))


@pytest.mark.parametrize("name", NAMES + ["gelu approximate", "relu options"])
def test_activation_gradients_match_finite_differences(name):
    act = {"gelu approximate": functools.partial(bf.activations.gelu, approximate=True),
           "relu options": functools.partial(bf.activations.relu, max_value=2.0, negative_slope=0.1,
                                             threshold=0.3)}.get(name, name)
    m = bf.Sequential([layers.Input((5,)), layers.Dense(7, activation=act), layers.Activation(act), layers.Dense(3)])
    m.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(1)
    # a small step: a random direction moves all 66 weights at once, and exp(exp(z)) is strongly curved; relu
    # with a threshold jumps there (0 to 0.3): a step straddling the jump is no derivative, so a tiny one
    directional_check(m, 0.5 * rng.standard_normal((16, 5)).astype(np.float32),
                      rng.standard_normal((16, 3)).astype(np.float32), eps=1e-4 if name == "relu options" else 2e-3)


def test_conv2d_with_gelu_keeps_its_pre_activation_in_the_plan():
    def plan(act):
        m = bf.Sequential([layers.Input((8, 8, 2)), layers.Conv2D(3, 3, activation=act), layers.Flatten(),
                           layers.Dense(1)])
        m.compile(optimizer="sgd", loss="mse")
        return m, m.estimate_memory(batch_size=4)
    m, p = plan("gelu")
    rng = np.random.default_rng(2)
    directional_check(m, rng.standard_normal((4, 8, 8, 2)).astype(np.float32),
                      rng.standard_normal((4, 1)).astype(np.float32))
    _, p_relu = plan("relu")
    assert p.host_bytes > p_relu.host_bytes


# ---- layout layers ----

LAYOUT = {
    "permute": (lambda L: [L.Dense(4), L.Permute((2, 1)), L.Flatten(), L.Dense(3)], (3, 5)),
    "permute rank 3": (lambda L: [L.Dense(2), L.Permute((3, 1, 2)), L.Flatten(), L.Dense(3)], (2, 3, 4)),
    "repeat_vector": (lambda L: [L.Dense(4, activation="tanh"), L.RepeatVector(3), L.Dense(2), L.Flatten(),
                                 L.Dense(3)], (5,)),
    "zero_padding2d": (lambda L: [L.Conv2D(2, 2), L.ZeroPadding2D(((1, 2), (0, 3))), L.Flatten(), L.Dense(3)],
                       (4, 5, 2)),
    "zero_padding2d int": (lambda L: [L.Conv2D(2, 2), L.ZeroPadding2D(1), L.Flatten(), L.Dense(3)], (4, 4, 1)),
    "up_sampling2d": (lambda L: [L.Conv2D(2, 2), L.UpSampling2D((2, 3)), L.Conv2D(2, 2), L.Flatten(), L.Dense(3)],
                      (4, 5, 2)),
    "rescaling": (lambda L: [L.Rescaling(1 / 255.0, offset=-0.5), L.Dense(4), L.Rescaling(2.5), L.Dense(2)], (5,)),
}


@pytest.mark.parametrize("name", list(LAYOUT))
def test_layout_layer_gradients_match_finite_differences(name):
    build, shape = LAYOUT[name]
    m = bf.Sequential([layers.Input(shape)] + build(layers))
    m.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5,) + shape).astype(np.float32)
    directional_check(m, x, rng.standard_normal((5, 3 if name != "rescaling" else 2)).astype(np.float32))


# ---- Normalization ----

def test_normalization_adapt_matches_keras_from_arrays_and_generators():
    rng = np.random.default_rng(4)
    data = (rng.standard_normal((300, 4)) * [1, 3, 0.1, 10] + [0, 5, -2, 100]).astype(np.float32)

    def adapted():
        kn = keras_ref.load().layers.Normalization()
        kn.adapt(data)
        return {"mean": np.asarray(kn.mean), "variance": np.asarray(kn.variance), "out": np.asarray(kn(data[:10]))}
    kn = case(adapted)
    for source in (data, (data[i:i + 64] for i in range(0, 300, 64)), [(data[:150], None), (data[150:], None)]):
        bn = layers.Normalization()
        bn.adapt(source)
        m = bf.Sequential([layers.Input((4,)), bn])
        mean, var, count = m.get_weights()
        np.testing.assert_allclose(mean, kn["mean"].ravel(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(var, kn["variance"].ravel(), rtol=1e-4)
        np.testing.assert_allclose(m.predict(data[:10], verbose=0), kn["out"], rtol=1e-4, atol=1e-5)


def test_normalization_given_mean_and_variance_matches_keras_and_trains_through():
    build = lambda L: [L.Dense(3), L.Normalization(mean=[0.5, -1.0, 2.0], variance=[4.0, 0.25, 1e-16]), L.Dense(2)]
    assert_same(build, (5,))
    bm = bf.Sequential([layers.Input((5,)), layers.Dense(3), layers.Normalization(mean=[0.5, -1, 2], variance=[4, 0.25, 1]),
                        layers.Dense(2)])
    bm.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(5)
    fd_check(bm, rng.standard_normal((8, 5)).astype(np.float32), rng.standard_normal((8, 2)).astype(np.float32),
             skip=(2, 3, 4))


def test_normalization_adapt_after_build_updates_the_model():
    rng = np.random.default_rng(6)
    norm = layers.Normalization()
    m = bf.Sequential([layers.Input((3,)), norm, layers.Dense(1)])
    x = (rng.standard_normal((50, 3)) * 4 + 7).astype(np.float32)
    norm.adapt(x)
    z = m.get_weights()
    np.testing.assert_allclose(z[0], x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(z[1], x.var(0), rtol=1e-4)


# ---- random image layers ----

def probe(aug, shape, n, seed_data=0):
    """The training-mode output of `aug` for n samples: the model aug -> Flatten
    -> Dense(n, no bias, zero kernel) with targets -I has MSE gradient
    2 / n^2 * aug(x_j) in kernel column j, so one SGD step with rate 1 reveals it."""
    m = bf.Sequential([layers.Input(shape), aug, layers.Flatten(), layers.Dense(n, use_bias=False)])
    m.compile(optimizer="sgd", loss="mse")
    m.set_weights([np.zeros_like(w) for w in m.get_weights()])
    x = np.random.default_rng(seed_data).integers(1, 100, (n,) + shape).astype(np.float32)
    g = engine_gradient(m, x, -np.eye(n, dtype=np.float32))[0]
    out = (g.T * (n * n / 2.0)).reshape(aug.compute_output_shape((n,) + shape))
    return x, out.astype(np.float32)


@pytest.mark.parametrize("mode", ["horizontal", "vertical", "horizontal_and_vertical"])
def test_random_flip_flips_whole_samples_about_half_the_time_reproducibly(mode):
    x, out = probe(layers.RandomFlip(mode, seed=7), (4, 5, 2), 64)
    ax = {"horizontal": (1,), "vertical": (0,), "horizontal_and_vertical": (0, 1)}[mode]
    flipped = np.array([np.array_equal(o, np.flip(a, ax)) for a, o in zip(x, out)])
    kept = np.array([np.array_equal(o, a) for a, o in zip(x, out)])
    assert np.all(flipped ^ kept)
    assert 18 <= flipped.sum() <= 46
    _, again = probe(layers.RandomFlip(mode, seed=7), (4, 5, 2), 64)
    np.testing.assert_array_equal(again, out)
    _, other = probe(layers.RandomFlip(mode, seed=8), (4, 5, 2), 64)
    assert not np.array_equal(other, out)


def test_random_layers_are_the_identity_or_a_centred_crop_outside_training():
    for build in (lambda L: [L.RandomFlip(seed=1), L.RandomTranslation(0.3, 0.2, seed=2), L.Flatten(), L.Dense(2)],
                  lambda L: [L.RandomCrop(5, 5, seed=1), L.Flatten(), L.Dense(2)]):
        bm, k, x, _ = twin(build, (5, 5, 2), lambda bm: (
            np.random.default_rng(0).standard_normal((3, 5, 5, 2)).astype(np.float32), None))
        np.testing.assert_allclose(bm.predict(x, verbose=0), k["out"], rtol=RTOL, atol=1e-6)
    m = bf.Sequential([layers.Input((6, 7, 1)), layers.RandomCrop(3, 4)])
    x = np.arange(2 * 42, dtype=np.float32).reshape(2, 6, 7, 1)
    np.testing.assert_array_equal(m.predict(x, verbose=0), x[:, 1:4, 1:5])


def test_random_crop_in_training_takes_one_window_per_batch_inside_the_image():
    x, out = probe(layers.RandomCrop(3, 4, seed=3), (6, 7, 1), 8)
    wins = [(i, j) for i in range(4) for j in range(4) if np.array_equal(out, x[:, i:i + 3, j:j + 4])]
    assert len(wins) == 1


@pytest.mark.parametrize("fill", ["reflect", "constant", "nearest", "wrap"])
@pytest.mark.parametrize("interp", ["bilinear", "nearest"])
def test_random_translation_samples_as_keras_affine_transform(fill, interp):
    # a degenerate factor range makes the draw exact: shift 0.3 * H down, 0.45 * W left, in Keras and here
    def build(L):
        return L.RandomTranslation((0.3, 0.3), (-0.45, -0.45), fill_mode=fill, interpolation=interp, seed=1,
                                   fill_value=2.5)
    x, out = probe(build(layers), (5, 6, 2), 4)
    ref = case(lambda: np.asarray(build(keras_ref.load().layers)(x, training=True)))
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=1e-4)


def test_random_translation_stays_within_its_factor():
    x, out = probe(layers.RandomTranslation(0.25, 0.25, fill_mode="constant", interpolation="nearest", seed=4),
                   (8, 8, 1), 16)
    for a, o in zip(x, out):
        found = False
        for dy in range(-2, 3):
            for dx in range(-2, 3):
                s = np.zeros_like(a)
                s[max(dy, 0):8 + min(dy, 0), max(dx, 0):8 + min(dx, 0)] = \
                    a[max(-dy, 0):8 + min(-dy, 0), max(-dx, 0):8 + min(-dx, 0)]
                found |= np.array_equal(s, o)
        assert found


@pytest.mark.parametrize("aug", ["flip", "crop", "translation"])
def test_random_layer_gradients_pass_through_as_finite_differences_say(aug):
    make = {"flip": lambda: layers.RandomFlip(seed=5),
            "crop": lambda: layers.RandomCrop(3, 3, seed=5),
            "translation": lambda: layers.RandomTranslation(0.3, 0.3, seed=5)}[aug]
    m = bf.Sequential([layers.Input((5,)), layers.Dense(32), layers.Reshape((4, 4, 2)), make(), layers.Flatten(),
                       layers.Dense(2)])
    m.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(6)
    x, y = rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((6, 2)).astype(np.float32)

    def train_loss(model, x, y):  # the training-mode loss: one step at rate 0 (same draw: iteration 0, seed 5)
        model.compile(optimizer=bf.optimizers.SGD(learning_rate=0.0), loss="mse")
        return model.fit(x, y, batch_size=len(x), epochs=1, shuffle=False, verbose=0).history["loss"][0]
    fd_check(m, x, y, loss=train_loss)


def test_image_model_with_rescaling_and_random_flip_trains_with_an_exact_plan():
    rng = np.random.default_rng(8)
    n = 256
    y = rng.integers(0, 2, n)
    x = rng.integers(0, 80, (n, 8, 8, 1)).astype(np.float32)
    x[y == 1, 3:5, :, :] += 150   # a horizontal bar: learnable, and invariant to the flips
    m = bf.Sequential([layers.Input((8, 8, 1)), layers.Rescaling(1 / 255.0), layers.RandomFlip(seed=1),
                       layers.Conv2D(4, 3, activation="relu"), layers.Flatten(), layers.Dense(2, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    plan = m.estimate_memory(batch_size=32)
    h = m.fit(x, y, batch_size=32, epochs=8, verbose=0)
    stats = m._last_run_stats
    arenas = m._engine.weight_arena_bytes + m._engine.optimizer_arena_bytes + sum(s["run_high_water"] for s in stats)
    assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured")) == arenas
    assert h.history["accuracy"][-1] > 0.9
    assert m.evaluate(x, y, verbose=0, return_dict=True)["accuracy"] > 0.9


def test_new_layers_plan_exactly_and_match_the_cpu_on_the_emu_device():
    def build():
        m = bf.Sequential([layers.Input((4, 4, 2)), layers.Rescaling(0.5, 0.1), layers.RandomTranslation(0.2, 0.2, seed=3),
                           layers.ZeroPadding2D(1), layers.Conv2D(3, 2, activation="gelu"), layers.UpSampling2D(2),
                           layers.Permute((2, 1, 3)), layers.Flatten(), layers.Dense(4, activation="selu"),
                           layers.RepeatVector(2), layers.Normalization(mean=0.5, variance=2.0), layers.Flatten(),
                           layers.Dense(2)])
        m.compile(optimizer="sgd", loss="mse")
        return m
    a, b = build(), build()
    b.set_weights(a.get_weights())
    rng = np.random.default_rng(9)
    x, y = rng.standard_normal((8, 4, 4, 2)).astype(np.float32), rng.standard_normal((8, 2)).astype(np.float32)
    np.testing.assert_allclose(b.predict(x, verbose=0, device="emu"), a.predict(x, verbose=0), rtol=1e-6)
    a.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    b.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0, device="emu")
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(v, u, rtol=1e-5, atol=1e-7)
    plan = a.estimate_memory(batch_size=4)
    a.fit(x, y, batch_size=4, epochs=1, verbose=0)
    arenas = a._engine.weight_arena_bytes + a._engine.optimizer_arena_bytes + sum(
        s["run_high_water"] for s in a._last_run_stats)
    assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured")) == arenas


# ---- Keras files ----

def file_stack(L, kmod):
    return [L.Rescaling(1 / 255.0), L.RandomFlip("horizontal", seed=2), L.RandomTranslation(0.1, (-0.2, 0.1), seed=3),
            L.ZeroPadding2D(((1, 0), (0, 1))), L.Conv2D(3, 3), L.LeakyReLU(0.1),
            L.UpSampling2D(2), L.ELU(0.5), L.Permute((2, 1, 3)), L.Flatten(), L.Dense(4, activation="gelu"),
            L.RepeatVector(2), L.ReLU(max_value=3.0), L.Normalization(), L.Flatten(),
            L.Dense(3, activation="hard_sigmoid"), L.Activation("swish"), L.Softmax()]


def opened_and_saved(folder, results):
    """Keras's side: folder/m.keras opened in Keras, results(km), and the bytes of the file Keras saves of it"""
    km = keras_ref.load().saving.load_model(folder / "m.keras")
    km.save(folder / "k.keras")
    return dict(results(km), file=np.frombuffer(open(folder / "k.keras", "rb").read(), np.uint8))


def write(path, data):
    with open(path, "wb") as f:
        f.write(data.tobytes())


def test_keras_file_with_these_layers_opens_in_keras_and_back(tmp_path):
    bm = bf.Sequential([layers.Input((7, 7, 2))] + file_stack(layers, bf))
    norm = bm.layers[13]
    norm.adapt(np.random.default_rng(1).standard_normal((20, 2, 4)).astype(np.float32) * 3 + 1)
    bm.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(2).integers(0, 255, (3, 7, 7, 2)).astype(np.float32)
    bm.save(tmp_path / "m.keras")
    k = case(lambda: opened_and_saved(tmp_path, lambda km: {"out": np.asarray(km(x, training=False))}),
             files=[tmp_path / "m.keras"])
    np.testing.assert_allclose(k["out"], bm.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    write(tmp_path / "k.keras", k["file"])
    back = bf.models.load_model(tmp_path / "k.keras")
    np.testing.assert_allclose(back.predict(x, verbose=0), bm.predict(x, verbose=0), rtol=1e-6, atol=1e-7)
    assert [type(l).__name__ for l in back.layers] == [type(l).__name__ for l in bm.layers]


def test_keras_built_file_with_these_layers_loads_here(tmp_path):
    x = np.random.default_rng(4).integers(0, 255, (3, 7, 7, 2)).astype(np.float32)

    def save(p):
        keras = keras_ref.load()
        km = keras.Sequential([keras.Input((7, 7, 2))] + file_stack(keras.layers, keras))
        km.layers[13].adapt(np.random.default_rng(3).standard_normal((20, 2, 4)).astype(np.float32))
        km.save(p)
        return {"out": np.asarray(km(x, training=False))}
    k = keras_file(tmp_path / "k.keras", save)
    bm = bf.models.load_model(tmp_path / "k.keras")
    np.testing.assert_allclose(bm.predict(x, verbose=0), k["out"], rtol=1e-5, atol=1e-6)


def test_random_crop_config_goes_both_ways_through_keras_files(tmp_path):
    # (Keras 3's RandomCrop returns its input unchanged outside training, a shape its next layer does not
    # expect, so only the configuration and weights are compared; boundfit centre-crops there)
    bm = bf.Sequential([layers.Input((8, 8, 1)), layers.RandomCrop(6, 5, seed=3), layers.Flatten(), layers.Dense(2)])
    bm.save(tmp_path / "m.keras")
    config = lambda km: {k: km.layers[0].get_config()[k] for k in ("height", "width", "seed")}
    k = case(lambda: opened_and_saved(tmp_path, config), files=[tmp_path / "m.keras"])
    assert (k["height"], k["width"], k["seed"]) == (6, 5, 3)
    write(tmp_path / "k.keras", k["file"])
    back = bf.models.load_model(tmp_path / "k.keras")
    assert (back.layers[0].height, back.layers[0].width, back.layers[0].seed) == (6, 5, 3)
    for a, b in zip(back.get_weights(), bm.get_weights()):
        np.testing.assert_array_equal(a, b)


# ---- failure paths ----

@pytest.mark.parametrize("make,exc,words", [
    (lambda: layers.Dense(2, activation="gelux"), ValueError, "unknown activation"),
    (lambda: layers.Dense(2, activation=3), ValueError, "unknown activation"),
    (lambda: layers.Dense(2, activation=functools.partial(bf.activations.gelu, approx=True)), ValueError, "approx"),
    (lambda: layers.LeakyReLU(negative_slope=-0.1), ValueError, "negative_slope"),
    (lambda: layers.ELU(alpha="big"), ValueError, "alpha"),
    (lambda: layers.ReLU(max_value=-1.0), ValueError, "max_value"),
    (lambda: layers.Softmax(axis=1), ValueError, "axis"),
    (lambda: layers.Permute((1, 1)), ValueError, "dims"),
    (lambda: layers.RepeatVector(0), ValueError, "n must"),
    (lambda: layers.ZeroPadding2D(-1), ValueError, "padding"),
    (lambda: layers.ZeroPadding2D(((1, 2), (3,))), ValueError, "padding"),
    (lambda: layers.UpSampling2D(interpolation="bilinear"), ValueError, "interpolation"),
    (lambda: layers.UpSampling2D(size=0), ValueError, "size"),
    (lambda: layers.Rescaling("x"), ValueError, "scale"),
    (lambda: layers.Normalization(mean=1.0), ValueError, "variance"),
    (lambda: layers.Normalization(axis=1)(bf.Input((4, 3))), ValueError, "axis"),   # not the last axis
    (lambda: layers.Normalization(invert=True), ValueError, "invert"),
    (lambda: layers.Normalization(mean=[1.0], variance=[-1.0]), ValueError, "variance"),
    (lambda: layers.RandomFlip("diagonal"), ValueError, "mode"),
    (lambda: layers.RandomFlip(seed=-1), ValueError, "seed"),
    (lambda: layers.RandomCrop(0, 3), ValueError, "height"),
    (lambda: layers.RandomTranslation(1.5, 0.1), ValueError, "height_factor"),
    (lambda: layers.RandomTranslation(0.1, (0.1, 0.2, 0.3)), ValueError, "width_factor"),
    (lambda: layers.RandomTranslation(0.1, 0.1, fill_mode="mirror"), ValueError, "fill_mode"),
    (lambda: layers.RandomTranslation(0.1, 0.1, interpolation="bicubic"), ValueError, "interpolation"),
    (lambda: bf.activations.elu(np.ones(3), alpha=-1.0), ValueError, "alpha"),
    (lambda: bf.activations.softmax(np.ones((2, 3)), axis=0), ValueError, "axis"),
])
def test_bad_arguments_raise_naming_the_argument(make, exc, words):
    with pytest.raises(exc, match=words):
        make()


@pytest.mark.parametrize("layer,shape,words", [
    (lambda: layers.Permute((2, 1)), (3, 4, 5), "dims"),
    (lambda: layers.RepeatVector(2), (3, 4), "features"),
    (lambda: layers.ZeroPadding2D(1), (3, 4), "rank 3"),
    (lambda: layers.UpSampling2D(), (3,), "rank 3"),
    (lambda: layers.RandomCrop(5, 2), (4, 4, 1), "does not fit"),
    (lambda: layers.RandomFlip(), (4, 4), "rank 3"),
    (lambda: layers.Normalization(mean=[1.0, 2.0], variance=[1.0, 1.0]), (3,), "last axis"),
])
def test_layers_refuse_inputs_of_the_wrong_shape(layer, shape, words):
    with pytest.raises(ValueError, match=words):
        bf.Sequential([layers.Input(shape), layer()])


def test_adapt_refuses_bad_data_before_touching_the_layer():
    norm = layers.Normalization()
    m = bf.Sequential([layers.Input((2,)), norm])
    before = m.get_weights()
    with pytest.raises(bf.DataError, match="NaN"):
        norm.adapt(np.array([[1.0, np.nan]], np.float32))
    with pytest.raises(bf.DataError, match="features"):
        norm.adapt(iter([np.ones((4, 2)), np.ones((4, 3))]))
    with pytest.raises(bf.DataError, match="3 features"):
        norm.adapt(np.ones((5, 3), np.float32))
    with pytest.raises(TypeError, match="data must be"):
        norm.adapt(3.0)
    for a, b in zip(before, m.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_saving_an_activation_keras_cannot_name_is_refused(tmp_path):
    m = bf.Sequential([layers.Input((3,)), layers.Dense(2, activation=functools.partial(bf.activations.gelu,
                                                                                        approximate=True))])
    with pytest.raises(ValueError, match="no Keras name"):
        m.save(tmp_path / "m.keras")
    assert not (tmp_path / "m.keras").exists()
