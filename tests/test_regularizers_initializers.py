"""Keras 3 initializers, regularizers and constraints: names, objects and
defaults; initial values checked statistically (exactly for the constant
ones); penalties and constraints against Keras 3 itself; .keras files carry
them both ways."""

import math

import numpy as np
import pytest

import boundfit as bf
from boundfit import initializers as I, layers as L

import keras_ref


def _kernel(init, shape=(400, 300), **kw):
    m = bf.Sequential([L.Dense(shape[1], input_shape=(shape[0],), kernel_initializer=init, **kw)])
    return m.get_weights()


def _check_stats(w, mean, std, lo=None, hi=None):
    n = w.size
    assert abs(w.mean() - mean) < 5 * std / math.sqrt(n) + 1e-7
    assert abs(w.std() - std) < 0.02 * std
    if lo is not None:
        assert w.min() >= lo - 1e-6 and w.max() <= hi + 1e-6
        # the bounds are reached: within 1% of the range of each end
        assert w.min() < lo + 0.01 * (hi - lo) and w.max() > hi - 0.01 * (hi - lo)


@pytest.mark.parametrize("name, scale, fan, dist", [
    ("glorot_uniform", 1.0, "avg", "uniform"), ("glorot_normal", 1.0, "avg", "truncated"),
    ("he_uniform", 2.0, "in", "uniform"), ("he_normal", 2.0, "in", "truncated"),
    ("lecun_uniform", 1.0, "in", "uniform"), ("lecun_normal", 1.0, "in", "truncated"),
])
def test_variance_scaling_family_has_keras_parameters(name, scale, fan, dist):
    fi, fo = 400, 300
    n = {"in": fi, "avg": (fi + fo) / 2}[fan]
    for init in (name, I.get(name), type(I.get(name))()):
        k, b = _kernel(init)
        np.testing.assert_array_equal(b, 0)
        if dist == "uniform":
            limit = math.sqrt(3 * scale / n)
            _check_stats(k, 0, limit / math.sqrt(3), -limit, limit)
        else:
            sd = math.sqrt(scale / n) / 0.87962566103423978   # Keras: stddev of the kept part is sqrt(scale/n)
            _check_stats(k, 0, math.sqrt(scale / n))
            assert np.abs(k).max() <= 2 * sd * (1 + 1e-6) and np.abs(k).max() > 1.9 * sd


def test_conv_kernel_fans_count_the_receptive_field():
    m = bf.Sequential([L.Conv2D(64, 3, input_shape=(8, 8, 32), kernel_initializer="he_uniform")])
    k = m.get_weights()[0]
    limit = math.sqrt(6.0 / (3 * 3 * 32))
    _check_stats(k, 0, limit / math.sqrt(3), -limit, limit)


def test_variance_scaling_modes_and_untruncated_normal():
    k, _ = _kernel(I.VarianceScaling(scale=3.0, mode="fan_out", distribution="untruncated_normal"))
    _check_stats(k, 0, math.sqrt(3.0 / 300))
    assert np.abs(k).max() > 3 * math.sqrt(3.0 / 300)     # not cut at two deviations
    k, _ = _kernel(I.VarianceScaling())                     # Keras default: 1, fan_in, truncated_normal
    _check_stats(k, 0, math.sqrt(1.0 / 400))


def test_random_distributions_have_keras_defaults_and_parameters():
    k, _ = _kernel("random_uniform")
    _check_stats(k, 0, 0.05 * 2 / math.sqrt(12), -0.05, 0.05)
    k, _ = _kernel(I.RandomUniform(minval=1.0, maxval=3.0))
    _check_stats(k, 2.0, 2 / math.sqrt(12), 1.0, 3.0)
    k, _ = _kernel("random_normal")
    _check_stats(k, 0, 0.05)
    k, _ = _kernel(I.RandomNormal(mean=1.5, stddev=0.2))
    _check_stats(k, 1.5, 0.2)
    k, _ = _kernel(I.TruncatedNormal(mean=-1.0, stddev=0.5))
    _check_stats(k, -1.0, 0.5 * 0.87962566103423978)
    assert k.min() >= -2.0 - 1e-6 and k.max() <= 1e-6


def test_constant_initializers_are_exact():
    k, b = _kernel("zeros", bias_initializer="ones")
    np.testing.assert_array_equal(k, 0)
    np.testing.assert_array_equal(b, 1)
    k, b = _kernel(I.Constant(0.25), bias_initializer=I.Constant(value=-3.0))
    np.testing.assert_array_equal(k, np.float32(0.25))
    np.testing.assert_array_equal(b, -3.0)
    assert I.Constant().value == 0.0


@pytest.mark.parametrize("shape", [(40, 30), (30, 40), (3, 3, 4, 8)])
def test_orthogonal_gives_orthonormal_rows_or_columns_times_gain(shape):
    if len(shape) == 2:
        m = bf.Sequential([L.Dense(shape[1], input_shape=(shape[0],), kernel_initializer=I.Orthogonal(gain=2.0))])
    else:
        m = bf.Sequential([L.Conv2D(shape[3], shape[:2], input_shape=(5, 5, shape[2]),
                                    kernel_initializer=I.Orthogonal(gain=2.0))])
    w = m.get_weights()[0].reshape(-1, shape[-1]).astype(np.float64)
    g = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
    np.testing.assert_allclose(g, 4.0 * np.eye(g.shape[0]), atol=1e-5)


def test_batchnorm_initializers_and_default_unchanged():
    m = bf.Sequential([L.BatchNormalization(input_shape=(6,), gamma_initializer=I.Constant(2.0),
                                            beta_initializer="ones", moving_mean_initializer=I.Constant(0.5),
                                            moving_variance_initializer=I.Constant(3.0))])
    g, b, mm, mv = m.get_weights()
    np.testing.assert_array_equal(g, 2.0)
    np.testing.assert_array_equal(b, 1.0)
    np.testing.assert_array_equal(mm, 0.5)
    np.testing.assert_array_equal(mv, 3.0)
    # the default kernel stream is the one before initializers existed: glorot_uniform by name or object equals it
    bf.utils.set_random_seed(5)
    bf_default = bf.Sequential([L.Dense(7, input_shape=(5,))]).get_weights()
    for init in ("glorot_uniform", I.GlorotUniform(), I.VarianceScaling(1.0, "fan_avg", "uniform")):
        bf.utils.set_random_seed(5)
        for a, b_ in zip(bf_default, bf.Sequential([L.Dense(7, input_shape=(5,), kernel_initializer=init)]).get_weights()):
            np.testing.assert_array_equal(a, b_)


def test_initializer_errors_name_the_argument():
    with pytest.raises(ValueError, match="kernel_initializer: unknown initializer 'he_normall'"):
        L.Dense(3, kernel_initializer="he_normall")
    with pytest.raises(ValueError, match="bias_initializer: expected an initializer"):
        L.Conv2D(3, 3, bias_initializer=3.5)
    with pytest.raises(ValueError, match="gamma_initializer: unknown"):
        L.BatchNormalization(gamma_initializer="twos")
    with pytest.raises(ValueError, match="mode must be one of"):
        I.VarianceScaling(mode="fan_sideways")
    with pytest.raises(ValueError, match="distribution must be one of"):
        I.VarianceScaling(distribution="normal")
    with pytest.raises(ValueError, match="scale must be > 0"):
        I.VarianceScaling(scale=0)
    with pytest.raises(ValueError, match="maxval"):
        I.RandomUniform(minval=1, maxval=0)
    with pytest.raises(ValueError, match="stddev must be >= 0"):
        I.RandomNormal(stddev=-1)
    with pytest.raises(ValueError, match="value must be a finite number"):
        I.Constant(float("nan"))


def test_initializer_objects_match_keras_configs():
    keras = keras_ref.load()
    for name in ("glorot_uniform", "glorot_normal", "he_uniform", "he_normal", "lecun_uniform", "lecun_normal",
                 "random_uniform", "random_normal", "truncated_normal", "zeros", "ones", "orthogonal",
                 "variance_scaling", "constant"):
        # (Keras's get("constant") fails on its own missing value; its object with the default is used)
        ours = I.get(name)
        theirs = keras.initializers.Constant() if name == "constant" else keras.initializers.get(name)
        assert type(ours).__name__ == type(theirs).__name__, name
        theirs_cfg = {k: v for k, v in theirs.get_config().items() if not (k.endswith("_axes") and v is None)}
        assert ours.get_config() == theirs_cfg, name
        assert I.deserialize(keras.initializers.serialize(theirs)) == ours


def test_keras_files_carry_initializers_both_ways(tmp_path):
    keras = keras_ref.load()
    m = bf.Sequential([L.Dense(4, input_shape=(3,), kernel_initializer="he_normal",
                               bias_initializer=I.Constant(0.5)),
                       L.BatchNormalization(gamma_initializer=I.RandomUniform(0.5, 1.5))])
    m.save(tmp_path / "m.keras")
    k = keras.saving.load_model(tmp_path / "m.keras")
    assert type(k.layers[0].kernel_initializer).__name__ == "HeNormal"
    assert k.layers[0].bias_initializer.get_config() == {"value": 0.5}
    assert k.layers[1].gamma_initializer.get_config()["maxval"] == 1.5
    for a, b in zip(k.get_weights(), m.get_weights()):
        np.testing.assert_array_equal(a, b)
    k2 = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, kernel_initializer="lecun_uniform",
                                                                 bias_initializer=keras.initializers.Constant(2.0))])
    k2.save(tmp_path / "k.keras")
    r = bf.models.load_model(tmp_path / "k.keras")
    assert r.layers[0].kernel_initializer == I.LecunUniform()
    assert r.layers[0].bias_initializer == I.Constant(2.0)
    r.save(tmp_path / "r.keras")
    assert bf.models.load_model(tmp_path / "r.keras").layers[0].kernel_initializer == I.LecunUniform()
