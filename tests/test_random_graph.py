"""keras.random inside a custom layer's call() (random.py, layers/draw.py,
the engine's RANDOM kind drawn by the AUGMENT noise kernels): normal,
uniform, truncated_normal and dropout on shapes taken from ops.shape(x)
(the batch axis None: a draw per sample; 1: one draw for the batch), seeds
from an int (the same draw every step, as Keras) or a SeedGenerator (new
draws every step, reproducible). The numbers are not JAX's: the
distributions are checked, and with the randomness taken out (stddev 0,
rate 0) training and predictions are Keras's; a keras.io-style augmentation
layer augments in fit and is the identity in predict; gradients agree with
finite differences, plans are exact, and what cannot be drawn raises naming
the layer and the op."""

import numpy as np
import pytest

import boundfit as bf
from boundfit.ops import OpNotSupportedError
from conftest import assert_plan_equals_arenas, directional_check_per_array

import keras_ref

rng = np.random.default_rng(1)
X = rng.uniform(0.2, 0.8, (12, 4)).astype(np.float32)
Y = rng.standard_normal((12, 1)).astype(np.float32)


@pytest.fixture(scope="module")
def keras():
    return keras_ref.load()


class Draws(bf.layers.Layer):
    def __init__(self, seed=7, **kwargs):
        super().__init__(**kwargs)
        self.sg = bf.random.SeedGenerator(seed)

    def call(self, x):
        b = bf.ops.shape(x)[0]
        return [bf.random.normal((b, 50), mean=1.0, stddev=2.0, seed=self.sg),
                bf.random.uniform((b, 50), minval=-1.0, maxval=3.0, seed=self.sg),
                bf.random.truncated_normal((b, 50), stddev=1.0, seed=self.sg),
                bf.random.uniform((1, 50), seed=self.sg),                   # one draw for the whole batch
                bf.random.normal((b, 5), seed=3)]                           # an int seed: the same every call


def draws(seed=7, calls=1):
    inp = bf.Input(shape=(3,))
    m = bf.Model(inp, Draws(seed)(inp))
    bf.utils.set_random_seed(0)
    return [m.predict(np.zeros((400, 3), np.float32), batch_size=200, verbose=0) for _ in range(calls)]


def test_draws_have_keras_distributions_per_sample_or_shared():
    (n, u, t, s, fixed), again = draws(calls=2)
    assert abs(n.mean() - 1.0) < 0.06 and abs(n.std() - 2.0) < 0.06
    assert u.min() >= -1.0 and u.max() < 3.0 and abs(u.mean() - 1.0) < 0.05 and abs(u.std() - 4 / 12 ** 0.5) < 0.03
    assert np.abs(t).max() <= 2.0 and abs(t.mean()) < 0.03 and abs(t.std() - 0.8796) < 0.03
    assert len({tuple(r) for r in n[:200]}) == 200                         # a draw per sample
    assert (s[:200] == s[0]).all() and (s[200:] == s[200]).all()           # shared by a batch ...
    assert not np.array_equal(s[0], s[200]) and not np.array_equal(n[:200], n[200:])   # ... new for the next
    np.testing.assert_array_equal(fixed[:200], fixed[200:])                # an int seed: the same each call
    assert not np.array_equal(again[0], n)                                  # new draws per call ...
    np.testing.assert_array_equal(again[4], fixed)                         # ... but for an int seed
    for a, b in zip(draws()[0], (n, u, t, s, fixed)):                       # the same seeds: the same numbers
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(draws(seed=8)[0][0], n)


class Drops(bf.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.sg = bf.random.SeedGenerator(11)

    def call(self, x):
        return [bf.random.dropout(x, 0.25, seed=self.sg),
                bf.random.dropout(x, 0.5, noise_shape=(None, 1, 8), seed=self.sg),   # one draw per (sample, channel)
                bf.random.dropout(x, 0.0, seed=self.sg)]


def test_dropout_zeroes_at_its_rate_scales_the_rest_and_broadcasts_its_noise_shape():
    inp = bf.Input(shape=(6, 8))
    x = np.ones((200, 6, 8), np.float32)
    d1, d2, d0 = bf.Model(inp, Drops()(inp)).predict(x, verbose=0)
    assert set(np.unique(d1)) == {0.0, np.float32(1 / 0.75)} and abs((d1 == 0).mean() - 0.25) < 0.02
    assert set(np.unique(d2)) == {0.0, 2.0} and abs((d2 == 0).mean() - 0.5) < 0.04
    assert (d2 == d2[:, :1, :]).all()
    np.testing.assert_array_equal(d0, x)


def noisy(M, seed, scale=1.0):
    class Noisy(M.layers.Layer):
        """noise in fit only (keras.io style): the loss of each step shows its draw"""
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.sg = M.random.SeedGenerator(5) if seed is None else seed

        def call(self, x, training=None):
            if training:
                b = M.ops.shape(x)[0]
                x = x * (1.0 + M.random.normal((b, 1), stddev=scale, seed=self.sg)) + \
                    M.random.truncated_normal((b, 4), stddev=scale, seed=self.sg)
                x = M.random.dropout(x, 0.0 if scale == 0 else 0.2, seed=self.sg)
            return x
    inp = M.Input(shape=(4,))
    return M.Model(inp, M.layers.Dense(1, name="head")(Noisy()(inp)))


def test_new_draws_every_step_with_a_seed_generator_and_the_same_with_an_int_seed():
    losses = {}
    for seed in (None, 3):
        m = noisy(bf, seed)
        m.compile(optimizer=bf.optimizers.SGD(0.0), loss="mse")
        losses[seed] = m.fit(X, Y, batch_size=12, epochs=3, shuffle=False, verbose=0).history["loss"]
        clean = m.evaluate(X, Y, verbose=0)
        assert all(abs(l - clean) > 1e-4 for l in losses[seed])   # fit sees noise, evaluate does not
    assert len(set(losses[None])) == 3
    assert max(losses[3]) - min(losses[3]) < 1e-6


def test_micro_batches_draw_what_the_whole_batch_draws():
    """a step in micro-batches sees the same draws (a per-sample one at its row, a shared one once per step)"""
    def shared(M):
        class Shared(M.layers.Layer):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                self.sg = M.random.SeedGenerator(9)

            def call(self, x, training=None):
                if training:
                    x = x + M.random.uniform((1, 4), -1.0, 1.0, seed=self.sg)
                return x
        inp = M.Input(shape=(4,))
        return M.Model(inp, M.layers.Dense(1)(Shared()(noisy(M, None).layers[1](inp))))
    out = []
    for mb in (None, 3):
        m = shared(bf)
        if out:
            m.set_weights(out[0][0])
        m.compile(optimizer=bf.optimizers.SGD(0.05), loss="mse")
        w0 = m.get_weights()
        h = m.fit(X, Y, batch_size=12, epochs=3, shuffle=False, micro_batch=mb, verbose=0).history["loss"]
        out.append((w0, h, m.get_weights()))
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-5)
    for a, b in zip(out[1][2], out[0][2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_without_randomness_training_and_predictions_are_keras(keras):
    km, bm = noisy(keras, None, scale=0.0), noisy(bf, None, scale=0.0)
    bm.set_weights(km.get_weights())
    km.compile(keras.optimizers.SGD(0.05), "mse")
    bm.compile(bf.optimizers.SGD(0.05), "mse")
    km.fit(X, Y, batch_size=6, epochs=2, shuffle=False, verbose=0)
    bm.fit(X, Y, batch_size=6, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(bm.get_weights(), km.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bm.predict(X, verbose=0), km.predict(X, verbose=0), rtol=1e-5, atol=1e-6)


def brightness(M):
    class RandomBrightness(M.layers.Layer):
        """keras.io's SimCLR RandomColorAffine, its brightness part, as written there"""
        def __init__(self, brightness=0.3, **kwargs):
            super().__init__(**kwargs)
            self.brightness = brightness
            self.seed_generator = M.random.SeedGenerator(1337)

        def call(self, images, training=True):
            if training:
                batch_size = M.ops.shape(images)[0]
                scales = 1 + M.random.uniform((batch_size, 1, 1, 1), minval=-self.brightness,
                                              maxval=self.brightness, seed=self.seed_generator)
                images = M.ops.clip(images * scales, 0, 1)
            return images
    return RandomBrightness


def test_a_keras_io_augmentation_layer_augments_in_fit_and_is_the_identity_in_predict(keras):
    x = np.full((64, 3, 3, 2), 0.5, np.float32)
    for M in (keras, bf):
        inp = M.Input(shape=(3, 3, 2))
        aug = brightness(M)()
        m = M.Model(inp, aug(inp))
        np.testing.assert_array_equal(m.predict(x, verbose=0), x)          # predict: training=False

        class Always(M.layers.Layer):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                self.aug = brightness(M)()

            def call(self, images):
                return self.aug(images, training=True)
        p = M.Model(inp, Always()(inp)).predict(x, verbose=0)
        ratio = p / x
        assert (ratio == ratio[:, :1, :1, :1]).all(), M                      # one factor per image
        assert 0.7 <= ratio.min() and ratio.max() <= 1.3 and ratio.std() > 0.1, M
    m.compile(optimizer=bf.optimizers.SGD(0.0), loss="mse")
    assert m.fit(x, x, epochs=1, verbose=0).history["loss"][0] > 1e-3         # fit: augmented
    assert m.evaluate(x, x, verbose=0) == 0.0


def test_gradients_through_draws_match_finite_differences():
    class Mix(bf.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.inner = bf.layers.Dense(6)

        def call(self, x):   # int seeds: evaluate draws what fit drew
            h = self.inner(x)
            b = bf.ops.shape(h)[0]
            h = h * bf.random.normal((b, 6), mean=1.0, stddev=0.5, seed=1) + bf.random.uniform((1, 6), seed=2)
            return bf.random.dropout(bf.ops.square(h), 0.3, seed=4)
    inp = bf.Input(shape=(4,))
    m = bf.Model(inp, bf.layers.Dense(1)(Mix()(inp)))
    m.compile(optimizer="sgd", loss="mse")
    directional_check_per_array(m, X[:6], Y[:6])


def test_plans_are_exact_with_draws():
    m = noisy(bf, None)
    m.compile(optimizer="sgd", loss="mse")
    assert_plan_equals_arenas(m, X, Y, batch_size=6)
    inp = bf.Input(shape=(6, 8))
    d = bf.Model(inp, bf.layers.Flatten()(Drops()(inp)[1]))
    d.compile(optimizer="sgd", loss="mse")
    assert_plan_equals_arenas(d, np.ones((12, 6, 8), np.float32), np.ones((12, 48), np.float32), batch_size=6)


def test_files_keras_refuses_naming_the_layer_and_the_graph_file_keeps_the_draws(tmp_path):
    inp = bf.Input(shape=(3,))
    m = bf.Model(inp, Draws(name="draws")(inp)[0])
    with pytest.raises(ValueError, match="layer 'draws' \\(Draws\\).*keras.random.normal.*npz"):
        m.save(tmp_path / "d.keras")
    m.save(tmp_path / "d.npz")
    x = np.zeros((400, 3), np.float32)
    back = bf.models.load_model(tmp_path / "d.npz")
    bf.utils.set_random_seed(1)
    back = back.predict(x, batch_size=200, verbose=0)
    bf.utils.set_random_seed(1)
    np.testing.assert_array_equal(back, m.predict(x, batch_size=200, verbose=0))


def test_what_cannot_be_drawn_raises_naming_the_layer_and_the_op():
    def call_with(fn, name):
        class Bad(bf.layers.Layer):
            def call(self, x):
                return fn(x)
        return Bad(name=name)(bf.Input(shape=(4,)))
    with pytest.raises(OpNotSupportedError, match="normal \\(in layer 'nob'.*shape \\(4,\\).*first axis is the batch"):
        call_with(lambda x: x + bf.random.normal((4,)), "nob")
    with pytest.raises(OpNotSupportedError, match="uniform \\(in layer 'b32'.*\\(32, 4\\)"):
        call_with(lambda x: x + bf.random.uniform((32, 4)), "b32")
    with pytest.raises(OpNotSupportedError, match="randint \\(in layer 'ri'"):
        call_with(lambda x: x + bf.random.randint((None, 4), 0, 3), "ri")
    with pytest.raises(OpNotSupportedError, match="normal \\(in layer 'mt'.*mean must be a finite Python number"):
        call_with(lambda x: bf.random.normal(bf.ops.shape(x), mean=x), "mt")
    with pytest.raises(ValueError, match="stddev must be >= 0"):
        call_with(lambda x: bf.random.normal(bf.ops.shape(x), stddev=-1.0), "neg")
    with pytest.raises(ValueError, match="noise_shape \\(None, 3\\) does not broadcast"):
        call_with(lambda x: bf.random.dropout(x, 0.5, noise_shape=(None, 3)), "ns")
    with pytest.raises(OpNotSupportedError, match="inside a custom layer's call"):
        bf.random.normal((None, 3))
    with pytest.raises(OpNotSupportedError, match="shuffle on a symbolic tensor"):
        bf.random.shuffle(bf.Input(shape=(4,)))
