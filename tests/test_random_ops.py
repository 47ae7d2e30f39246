"""boundfit.random (keras.random) on arrays: Keras 3's names, arguments,
shapes and dtypes, the distributions (not Keras's numbers: the generator is
NumPy's), seeds (an int repeats, a SeedGenerator advances, set_random_seed
reproduces seed=None); on a symbolic tensor in a custom layer's call() they
draw in the graph (tests/test_random_graph.py), randint / categorical /
shuffle raising a clear OpNotSupportedError."""

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from boundfit import layers, ops
from boundfit import random as bfr


@pytest.fixture(scope="module")
def keras():
    return keras_ref.load()


def test_the_functions_take_keras_arguments_and_give_its_shapes_and_dtypes(keras):
    kr = keras.random
    cases = [("normal", dict(shape=(3, 4), mean=1.0, stddev=2.0, seed=1)),
             ("uniform", dict(shape=(5,), minval=-1.0, maxval=3.0, seed=1)),
             ("truncated_normal", dict(shape=(2, 3), stddev=0.5, seed=1)),
             ("randint", dict(shape=(4, 2), minval=2, maxval=9, seed=1)),
             ("categorical", dict(logits=np.zeros((3, 4), np.float32), num_samples=6, seed=1)),
             ("shuffle", dict(x=np.arange(12.0).reshape(4, 3), axis=1, seed=1)),
             ("dropout", dict(inputs=np.ones((4, 5), np.float32), rate=0.4, seed=1)),
             ("gamma", dict(shape=(3, 2), alpha=2.0, seed=1)),
             ("beta", dict(shape=(4,), alpha=2.0, beta=3.0, seed=1)),
             ("binomial", dict(shape=(2, 3), counts=5, probabilities=0.3, seed=1))]
    for name, kw in cases:
        a, k = getattr(bfr, name)(**kw), np.asarray(getattr(kr, name)(**kw))
        assert a.shape == k.shape and a.dtype == k.dtype, name


def test_the_distributions_have_their_moments_and_ranges():
    n = 200_000
    z = bfr.normal((n,), mean=1.5, stddev=0.5, seed=3)
    assert abs(z.mean() - 1.5) < 0.01 and abs(z.std() - 0.5) < 0.01
    u = bfr.uniform((n,), minval=-2.0, maxval=4.0, seed=3)
    assert u.min() >= -2.0 and u.max() < 4.0 and abs(u.mean() - 1.0) < 0.02
    t = bfr.truncated_normal((n,), mean=0.0, stddev=2.0, seed=3)
    assert np.abs(t).max() <= 4.0 and abs(t.std() - 2.0 * 0.8796) < 0.02   # std of N(0,1) cut at 2 sigma
    r = bfr.randint((n,), 3, 7, seed=3)
    assert set(np.unique(r)) == {3, 4, 5, 6} and r.dtype == np.int32
    c = bfr.categorical(np.log(np.array([[0.1, 0.2, 0.7]])), 50_000, seed=3)
    np.testing.assert_allclose(np.bincount(c[0], minlength=3) / 50_000, [0.1, 0.2, 0.7], atol=0.01)


def test_gamma_beta_and_binomial_have_their_moments_broadcast_and_refuse_bad_parameters():
    n = 200_000
    g = bfr.gamma((n,), alpha=3.0, seed=2)
    assert abs(g.mean() - 3.0) < 0.03 and abs(g.var() - 3.0) < 0.1 and (g > 0).all()
    b = bfr.beta((n,), alpha=2.0, beta=6.0, seed=2)
    assert abs(b.mean() - 0.25) < 0.005 and abs(b.var() - 2 * 6 / (8 ** 2 * 9)) < 0.002 and ((b > 0) & (b < 1)).all()
    k = bfr.binomial((n,), counts=10, probabilities=0.3, seed=2)
    assert k.dtype == np.float32 and abs(k.mean() - 3.0) < 0.02 and abs(k.var() - 2.1) < 0.05
    assert set(np.unique(k)) <= set(range(11))
    per_column = bfr.gamma((n, 2), alpha=[1.0, 5.0], seed=4)
    np.testing.assert_allclose(per_column.mean(axis=0), [1.0, 5.0], atol=0.05)
    np.testing.assert_array_equal(bfr.beta((5,), 2.0, 2.0, seed=7), bfr.beta((5,), 2.0, 2.0, seed=7))
    for call, words in [(lambda: bfr.gamma((3,), alpha=0.0), "alpha must be > 0"),
                        (lambda: bfr.beta((3,), 1.0, [1.0, 2.0]), "does not broadcast"),
                        (lambda: bfr.binomial((3,), counts=2.5, probabilities=0.5), "counts"),
                        (lambda: bfr.binomial((3,), counts=2, probabilities=1.5), "probabilities")]:
        with pytest.raises(ValueError, match=words):
            call()
    x = layers.Input((3,))
    with pytest.raises(ops.OpNotSupportedError, match="gamma"):
        bfr.gamma((2, 3), alpha=x)


def test_dropout_zeroes_about_rate_and_scales_the_rest():
    x = np.arange(1.0, 40_001.0, dtype=np.float32).reshape(200, 200)
    d = bfr.dropout(x, 0.3, seed=5)
    kept = d != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(d[kept], x[kept] / 0.7, rtol=1e-6)
    col = bfr.dropout(x, 0.5, noise_shape=(1, 200), seed=5)   # one draw per column, broadcast down the rows
    assert np.all((col != 0).all(0) | (col == 0).all(0))


def test_shuffle_permutes_each_slice_along_its_axis_on_its_own_as_keras_on_jax(keras):
    x = np.arange(300).reshape(50, 6)
    s = bfr.shuffle(x, axis=1, seed=2)
    np.testing.assert_array_equal(np.sort(s, 1), x)
    assert len({tuple(r - r.min()) for r in s}) > 10   # the rows' orders differ
    k = np.asarray(keras.random.shuffle(x, axis=1, seed=2))
    assert len({tuple(r - r.min()) for r in k}) > 10   # (as Keras's)
    c = bfr.shuffle(x, axis=0, seed=2)
    np.testing.assert_array_equal(np.sort(c, 0), x)


def test_seeds_repeat_advance_and_reproduce():
    np.testing.assert_array_equal(bfr.normal((4,), seed=7), bfr.normal((4,), seed=7))
    g = bfr.SeedGenerator(11)
    a, b = bfr.uniform((4,), seed=g), bfr.uniform((4,), seed=g)
    assert not np.array_equal(a, b)
    g2 = bfr.SeedGenerator(11)
    np.testing.assert_array_equal(bfr.uniform((4,), seed=g2), a)
    np.testing.assert_array_equal(bfr.uniform((4,), seed=g2), b)
    bf.utils.set_random_seed(5)
    c = bfr.normal((3,))
    bf.utils.set_random_seed(5)
    np.testing.assert_array_equal(bfr.normal((3,)), c)
    assert not np.array_equal(bfr.normal((3,)), c)
    assert bfr.SeedGenerator.from_config(g.get_config())._initial_seed == 11


class Noisy(layers.Layer):
    """Keras's GaussianNoise-like custom layer"""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = bfr.SeedGenerator(1)

    def call(self, x):
        return x + bfr.normal(shape=ops.shape(x), stddev=0.1, seed=self.seed_generator)


class Dropping(layers.Layer):
    def call(self, x):
        return bfr.dropout(x, 0.5)


def test_random_ops_on_symbolic_tensors_draw_in_the_graph():
    """(in every run, as Keras: these calls do not branch on training; tests/test_random_graph.py has the rest)"""
    x = np.ones((50, 40), np.float32)
    noisy = bf.Sequential([layers.Input((40,)), Noisy()]).predict(x, verbose=0)
    assert 0.09 < float((noisy - x).std()) < 0.11
    dropped = bf.Sequential([layers.Input((40,)), Dropping()]).predict(x, verbose=0)
    assert set(np.unique(dropped)) == {0.0, 2.0}
    with pytest.raises(ops.OpNotSupportedError, match="keras.random.randint"):
        bf.Sequential([layers.Input((4,)), layers.Lambda(lambda t: t + bfr.randint(ops.shape(t), 0, 2))])


@pytest.mark.parametrize("call,words", [
    (lambda: bfr.normal((2, -1)), "shape"),
    (lambda: bfr.normal((2,), seed=-3), "seed"),
    (lambda: bfr.normal((2,), dtype="int32"), "dtype"),
    (lambda: bfr.uniform((2,), minval=1.0, maxval=1.0), "minval"),
    (lambda: bfr.randint((2,), 5, 2), "minval"),
    (lambda: bfr.randint((2,), 0, 2, dtype="float32"), "dtype"),
    (lambda: bfr.dropout(np.ones(3), 1.0), "rate"),
    (lambda: bfr.dropout(np.ones((2, 3)), 0.5, noise_shape=(4, 3)), "noise_shape"),
    (lambda: bfr.shuffle(np.ones((2, 3)), axis=2), "axis"),
    (lambda: bfr.categorical(np.ones(3), 2), "rank 2"),
    (lambda: bfr.SeedGenerator("a"), "seed"),
])
def test_bad_arguments_name_the_argument(call, words):
    with pytest.raises(ValueError, match=words):
        call()
