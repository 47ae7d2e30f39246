"""Keras 3 initializers, regularizers and constraints: names, objects and
defaults; initial values checked statistically (exactly for the constant
ones); penalties and constraints against Keras 3 itself; .keras files carry
them both ways."""

import math
import os
import tempfile

import numpy as np
import pytest

import boundfit as bf
from boundfit import initializers as I, layers as L
from helpers.keras_recorded import case, keras_file
from keras_ref import load
from boundfit.layers.layer import _counters


@pytest.fixture(autouse=True)
def _names_from_zero():
    """layers named from 0 in each test (as after Keras's clear_session): boundfit's files, whose contents key
    Keras's recorded results, do not depend on the tests run before in the process (pytest-xdist)"""
    _counters.clear()


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
    names = ("glorot_uniform", "glorot_normal", "he_uniform", "he_normal", "lecun_uniform", "lecun_normal",
             "random_uniform", "random_normal", "truncated_normal", "zeros", "ones", "orthogonal",
             "variance_scaling", "constant")

    def compute():
        keras, out = load(), {}
        for name in names:
            # (Keras's get("constant") fails on its own missing value; its object with the default is used)
            theirs = keras.initializers.Constant() if name == "constant" else keras.initializers.get(name)
            out[name] = (type(theirs).__name__, theirs.get_config(), keras.initializers.serialize(theirs))
        return out
    for name, (cls, config, serialized) in case(compute).items():
        ours = I.get(name)
        assert type(ours).__name__ == cls, name
        theirs_cfg = {k: v for k, v in config.items() if not (k.endswith("_axes") and v is None)}
        assert ours.get_config() == theirs_cfg, name
        assert I.deserialize(serialized) == ours


def test_keras_files_carry_initializers_both_ways(tmp_path):
    m = bf.Sequential([L.Dense(4, input_shape=(3,), kernel_initializer="he_normal",
                               bias_initializer=I.Constant(0.5)),
                       L.BatchNormalization(gamma_initializer=I.RandomUniform(0.5, 1.5))])
    m.save(tmp_path / "m.keras")

    def opened():   # Keras's side, recorded by the file's contents
        k = load().saving.load_model(tmp_path / "m.keras")
        return (type(k.layers[0].kernel_initializer).__name__, k.layers[0].bias_initializer.get_config(),
                k.layers[1].gamma_initializer.get_config()["maxval"], k.get_weights())
    kernel, bias, maxval, weights = case(opened, files=[tmp_path / "m.keras"])
    assert kernel == "HeNormal"
    assert bias == {"value": 0.5}
    assert maxval == 1.5
    for a, b in zip(weights, m.get_weights()):
        np.testing.assert_array_equal(a, b)

    def save(p):
        keras = load()
        keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, kernel_initializer="lecun_uniform",
                                                                bias_initializer=keras.initializers.Constant(2.0))]
                         ).save(p)
        return {}
    keras_file(tmp_path / "k.keras", save)
    r = bf.models.load_model(tmp_path / "k.keras")
    assert r.layers[0].kernel_initializer == I.LecunUniform()
    assert r.layers[0].bias_initializer == I.Constant(2.0)
    r.save(tmp_path / "r.keras")
    assert bf.models.load_model(tmp_path / "r.keras").layers[0].kernel_initializer == I.LecunUniform()


# ---- regularizers and constraints: the engine against Keras 3 ----

def _xy(n=32, d=5, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)).astype("float32"), rng.integers(0, classes, n)


def _keras_pair(build, shift, run):
    """build(layers, regularizers, constraints) -> the layers after the Input (a Sequential) of either library;
    Keras's initial weights + shift go into both. Returns Keras's side (recorded: run(keras, k)'s results) and
    boundfit's model"""
    def compute():
        keras = load()
        k = keras.Sequential(build(keras.layers, keras.regularizers, keras.constraints))
        w0 = [w + shift for w in k.get_weights()]
        k.set_weights(w0)
        return dict(run(keras, k), w0=w0)
    got = case(compute)
    m = bf.Sequential(build(L, bf.regularizers, bf.constraints))
    m.set_weights(got["w0"])
    return got, m


def _dense_pair(kernel_reg, bias_reg, out_reg, kernel_con, bias_con, run):
    def build(lay, R, C):
        return [lay.Input((5,)),
                lay.Dense(8, activation="relu", kernel_regularizer=kernel_reg(R), bias_regularizer=bias_reg(R),
                          kernel_constraint=kernel_con(C)),
                lay.Dense(3, activation="softmax", kernel_regularizer=out_reg(R), bias_constraint=bias_con(C))]
    return _keras_pair(build, 0.1, run)


def _close(a, b, rtol=1e-5):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert np.abs(a - b).max() <= rtol * max(np.abs(a).max(), 1e-3), (a, b)


@pytest.mark.parametrize("opt", ["sgd", "adam"])
@pytest.mark.parametrize("device", ["cpu", "emu"])
def test_penalties_and_constraints_match_keras_loss_and_weights(opt, device):
    x, y = _xy()

    def run(keras, k):
        k.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
        hk = k.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
        return dict(loss=hk.history["loss"], w1=k.get_weights(), evaluate=k.evaluate(x, y, verbose=0))
    k, m = _dense_pair(lambda R: R.L2(0.05), lambda R: R.L1(0.02), lambda R: R.L1L2(0.01, 0.03),
                       lambda C: C.MaxNorm(0.8), lambda C: C.NonNeg(), run)
    m.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
    hm = m.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0, device=device)
    _close(k["loss"], hm.history["loss"])
    for a, b in zip(k["w1"], m.get_weights()):
        _close(a, b)
    # the penalty is in evaluate's loss too (Keras 3 compute_loss adds the layers' losses)
    _close(k["evaluate"], m.evaluate(x, y, verbose=0, device=device))
    kernel = m.get_weights()[0]
    assert np.sqrt((kernel.astype(np.float64) ** 2).sum(axis=0)).max() <= 0.8 + 1e-5   # MaxNorm bit
    assert (m.get_weights()[3] >= 0).all()


def test_penalty_raises_the_reported_loss_by_its_value():
    x, y = _xy()
    plain = bf.Sequential([L.Dense(3, input_shape=(5,), activation="softmax")])
    reg = bf.Sequential([L.Dense(3, input_shape=(5,), activation="softmax", kernel_regularizer="l2",
                                 bias_regularizer="l1")])
    w = [np.full((5, 3), 0.2, np.float32), np.array([0.5, -1.0, 0.0], np.float32)]
    plain.set_weights(w)
    reg.set_weights(w)
    for mm in (plain, reg):
        mm.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    penalty = 0.01 * (w[0].astype(np.float64) ** 2).sum() + 0.01 * np.abs(w[1]).sum()
    assert reg.evaluate(x, y, verbose=0) == pytest.approx(plain.evaluate(x, y, verbose=0) + penalty, rel=1e-6)
    assert bf.regularizers.L2()(w[0]) == pytest.approx(0.01 * (w[0].astype(np.float64) ** 2).sum())


def test_conv_and_batchnorm_regularizers_and_unit_norm_match_keras():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(16, 6, 6, 2)).astype("float32"), rng.integers(0, 2, 16)

    def build(lay, R, C):
        return [lay.Input((6, 6, 2)), lay.Conv2D(3, 3, kernel_regularizer=R.L2(0.1), bias_regularizer=R.L1L2(0.05, 0.05),
                           kernel_constraint=C.UnitNorm(axis=[0, 1, 2]), bias_constraint=C.MinMaxNorm(0.1, 0.5, 0.7)),
                lay.BatchNormalization(gamma_regularizer=R.L2(0.2), beta_regularizer=R.L1(0.1),
                                       gamma_constraint=C.MaxNorm(1.5)),
                lay.Flatten(), lay.Dense(2, activation="softmax")]

    def run(keras, k):
        k.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss="sparse_categorical_crossentropy")
        hk = k.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        return dict(loss=hk.history["loss"], w1=k.get_weights())
    k, m = _keras_pair(build, 0.05, run)
    m.compile(optimizer=bf.optimizers.SGD(0.05, momentum=0.9), loss="sparse_categorical_crossentropy")
    hm = m.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    _close(k["loss"], hm.history["loss"])
    for a, b in zip(k["w1"], m.get_weights()):
        _close(a, b)
    kernel = m.get_weights()[0].astype(np.float64)
    np.testing.assert_allclose(np.sqrt((kernel ** 2).sum(axis=(0, 1, 2))), 1.0, rtol=1e-5)


def test_micro_batches_add_the_penalty_once_per_step():
    x, y = _xy(n=16)
    ms = []
    for mb in (None, 4):
        bf.utils.set_random_seed(3)
        mm = bf.Sequential([L.Dense(4, input_shape=(5,), activation="relu", kernel_regularizer=bf.regularizers.L2(0.1),
                                    kernel_constraint="max_norm"), L.Dense(3, activation="softmax")])
        mm.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
        h = mm.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0, micro_batch=mb)
        ms.append((h.history["loss"][0], mm.get_weights()))
    assert ms[0][0] == pytest.approx(ms[1][0], rel=1e-5)
    for a, b in zip(ms[0][1], ms[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_regularizer_and_constraint_errors_name_the_argument():
    with pytest.raises(ValueError, match="kernel_regularizer: unknown regularizer 'l3'"):
        L.Dense(3, kernel_regularizer="l3")
    with pytest.raises(ValueError, match="bias_regularizer: expected a regularizer"):
        L.Dense(3, bias_regularizer=0.1)
    with pytest.raises(ValueError, match="L2: l2 must be a finite number >= 0"):
        bf.regularizers.L2(-1.0)
    with pytest.raises(ValueError, match="activity_regularizer: unknown regularizer 'l3'"):
        L.Dense(3, activity_regularizer="l3")   # supported (tests/test_added_losses.py), a bad one named
    with pytest.raises(ValueError, match="kernel_constraint: unknown constraint 'max_normal'"):
        L.Conv2D(3, 3, kernel_constraint="max_normal")
    with pytest.raises(ValueError, match="gamma_constraint: expected a constraint"):
        L.BatchNormalization(gamma_constraint=3)
    with pytest.raises(ValueError, match="MaxNorm: max_value must be a finite number"):
        bf.constraints.MaxNorm(max_value=float("inf"))
    with pytest.raises(ValueError, match="MinMaxNorm: rate must be in"):
        bf.constraints.MinMaxNorm(rate=2)
    with pytest.raises(ValueError, match="kernel_constraint: MaxNorm: axis=5 must name adjacent axes"):
        bf.Sequential([L.Dense(3, input_shape=(4,), kernel_constraint=bf.constraints.MaxNorm(axis=5))])
    with pytest.raises(ValueError, match="adjacent axes"):
        bf.Sequential([L.Conv2D(3, 3, input_shape=(5, 5, 2), kernel_constraint=bf.constraints.UnitNorm(axis=[0, 2]))])


def test_regularizer_and_constraint_names_follow_keras():
    names = ("max_norm", "non_neg", "unit_norm", "min_max_norm")

    def compute():
        keras = load()
        return keras.regularizers.L1L2().get_config(), {n: keras.constraints.get(n).get_config() for n in names}
    l1l2, constraints = case(compute)
    assert bf.regularizers.get("l1") == bf.regularizers.L1(0.01)
    assert bf.regularizers.get("l2") == bf.regularizers.L2(0.01)
    assert bf.regularizers.get("l1_l2") == bf.regularizers.L1L2(0.01, 0.01)
    assert bf.regularizers.L1L2().get_config() == l1l2
    assert bf.regularizers.l2 is bf.regularizers.L2 and bf.constraints.max_norm is bf.constraints.MaxNorm
    for name in names:
        assert bf.constraints.get(name).get_config() == constraints[name], name


def test_keras_files_carry_regularizer_initializer_and_constraint_both_ways(tmp_path):
    x, y = _xy()
    m = bf.Sequential([L.Dense(6, input_shape=(5,), activation="relu", kernel_regularizer=bf.regularizers.L2(0.02),
                               kernel_initializer="he_normal", kernel_constraint=bf.constraints.MaxNorm(0.9)),
                       L.Dense(3, activation="softmax")])
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    m.save(tmp_path / "m.keras")

    def opened():   # Keras's side, recorded by the file's contents: it trains a step, saves, trains another
        k = load().saving.load_model(tmp_path / "m.keras")
        d = k.layers[0]
        out = dict(configs=(type(d.kernel_initializer).__name__, d.kernel_regularizer.get_config(),
                            d.kernel_constraint.get_config()))
        out["loss1"] = k.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0).history["loss"]
        out["w1"] = k.get_weights()
        with tempfile.TemporaryDirectory() as t:
            k.save(os.path.join(t, "k.keras"))
            out["file"] = np.frombuffer(open(os.path.join(t, "k.keras"), "rb").read(), np.uint8)
        out["loss2"] = k.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0).history["loss"]
        return dict(out, w2=k.get_weights())
    k = case(opened, files=[tmp_path / "m.keras"])
    initializer, regularizer, constraint = k["configs"]
    assert initializer == "HeNormal"
    assert regularizer == {"l2": pytest.approx(0.02)}
    assert constraint == {"max_value": 0.9, "axis": 0}
    # same training step on both sides from the saved file
    hm = m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    _close(k["loss1"], hm.history["loss"])
    for a, b in zip(k["w1"], m.get_weights()):
        _close(a, b)
    # and back: Keras's file loads here with the three of them
    (tmp_path / "k.keras").write_bytes(k["file"].tobytes())
    r = bf.models.load_model(tmp_path / "k.keras")
    rd = r.layers[0]
    assert rd.kernel_initializer == I.HeNormal()
    assert rd.kernel_regularizer == bf.regularizers.L2(0.02)
    assert rd.kernel_constraint == bf.constraints.MaxNorm(0.9)
    hr = r.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    _close(k["loss2"], hr.history["loss"])
    for a, b in zip(k["w2"], r.get_weights()):
        _close(a, b)


# ---- fit's validation arguments against Keras 3 ----

def test_validation_steps_batch_size_and_freq_match_keras():
    x, y = _xy(n=32)
    vx, vy = _xy(n=40, seed=7)
    kw = dict(batch_size=8, epochs=4, shuffle=False, verbose=0, validation_data=(vx, vy), validation_steps=3,
              validation_batch_size=6, validation_freq=[2, 3])

    def run(keras, k):
        k.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        h = k.fit(x, y, **kw).history
        return dict(history={key: h[key] for key in ("val_loss", "val_accuracy")})
    k, m = _dense_pair(lambda R: R.L2(0.05), lambda R: None, lambda R: None, lambda C: None, lambda C: None, run)
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    hk, hm = k["history"], m.fit(x, y, **kw).history
    assert len(hm["val_loss"]) == len(hk["val_loss"]) == 2
    _close(hk["val_loss"], hm["val_loss"])
    _close(hk["val_accuracy"], hm["val_accuracy"])
    # the first 3 batches of 6 rows only: evaluate of those 18 rows gives the same number
    h1 = m.fit(x, y, batch_size=8, epochs=1, verbose=0, validation_data=(vx, vy), validation_steps=3,
               validation_batch_size=6).history
    _close(h1["val_loss"][0], m.evaluate(vx[:18], vy[:18], batch_size=6, verbose=0)[0])
    hm2 = m.fit(x, y, batch_size=8, epochs=2, verbose=0, validation_split=0.25, validation_steps=1,
                validation_freq=2).history
    assert len(hm2["val_loss"]) == 1


def test_validation_arguments_errors_name_the_argument():
    x, y = _xy()
    m = bf.Sequential([L.Dense(3, input_shape=(5,), activation="softmax")])
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="validation_steps must be a positive int"):
        m.fit(x, y, validation_split=0.5, validation_steps=0, verbose=0)
    with pytest.raises(ValueError, match="validation_freq must be"):
        m.fit(x, y, validation_split=0.5, validation_freq=0, verbose=0)
