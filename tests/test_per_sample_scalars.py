"""One number per sample (a per-sample shape (), Keras's (B,) tensors: x[:, 0]
on (B, 2), ops.sum(x, axis=-1), ops.squeeze to (B,), keras.Input(shape=()))
and sums over the whole batch (csrc/core/layers/batch.c: ops.tensordot(a, b, 2)
of two (B, E) tensors, ops.sum(x), one number without a batch axis): the same
weights and batch give Keras 3's predictions, losses and updates, gradients
agree with finite differences, plans are exact, Keras files go both ways,
and what would mix samples otherwise raises naming the op or layer."""

import os

import numpy as np
import pytest

import boundfit as bf
from boundfit.ops import OpNotSupportedError
from conftest import assert_plan_equals_arenas, directional_check
from test_distributed import _launch_tcp

import keras_ref

rng = np.random.default_rng(0)
X = np.concatenate([rng.standard_normal((12, 2)), rng.integers(0, 5, (12, 1))], axis=1).astype(np.float32)
Y = (rng.random(12) < 0.5).astype(np.float32)


@pytest.fixture(scope="module")
def keras():
    return keras_ref.load()


def scalar_model(M):
    """x (B, 3): x[:, 0], ops.sum over the last axis, squeeze of a Dense(1), an Embedding of the ids x[:, 2]
    summed over its last axis: (B,) tensors added, a sigmoid, a (B,) output"""
    o = M.ops
    x = M.Input(shape=(3,))
    s = x[:, 0]
    t = o.sum(x[:, 0:2], axis=-1)
    q = o.squeeze(M.layers.Dense(1, name="d")(x[:, 0:2]), -1)
    e = o.sum(M.layers.Embedding(5, 2, name="e")(x[:, 2]), axis=-1)
    return M.Model(x, o.nn.sigmoid(s * 0.5 + t - q + e))


def batch_model(M):
    """tensordot(a, b, 2) of two (B, 4) tensors: one number for the batch, added to a (B, 1) tensor"""
    x = M.Input(shape=(3,))
    a = M.layers.Dense(4, name="a")(x)
    b = M.layers.Dense(4, activation="tanh", name="b")(x)
    d = M.ops.tensordot(a, b, 2)
    return M.Model(x, M.ops.nn.sigmoid(d * 0.1 + M.layers.Dense(1, name="c")(x)))


def mean_model(M):
    """ops.mean(h) and ops.sum(h) with no axis: one number each for the batch, scaled onto a (B, 1) tensor"""
    x = M.Input(shape=(3,))
    h = M.layers.Dense(3, activation="tanh", name="h")(x)
    z = M.layers.Dense(1, name="z")(x) * (M.ops.mean(h) + 0.05 * M.ops.sum(h * h))
    return M.Model(x, M.ops.nn.sigmoid(z))


def copy_named(km, bm, names):
    for n in names:
        bm.get_layer(n).set_weights(km.get_layer(n).get_weights())


@pytest.mark.parametrize("build,names", [(scalar_model, "de"), (batch_model, "abc"), (mean_model, "hz")])
def test_predict_fit_and_evaluate_as_keras(keras, build, names):
    km, bm = build(keras), build(bf)
    assert bm.output_shape == km.output_shape
    copy_named(km, bm, names)
    np.testing.assert_allclose(bm.predict(X, batch_size=4, verbose=0), km.predict(X, batch_size=4, verbose=0),
                               rtol=1e-5, atol=1e-6)
    assert bm.predict(X, verbose=0).shape == km.predict(X, verbose=0).shape
    km.compile(keras.optimizers.Adam(0.01), keras.losses.BinaryCrossentropy(), metrics=["binary_accuracy"])
    bm.compile(bf.optimizers.Adam(0.01), bf.losses.BinaryCrossentropy(), metrics=["binary_accuracy"])
    hk = km.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0).history
    hb = bm.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0).history
    np.testing.assert_allclose(hb["loss"], hk["loss"], rtol=1e-4)
    np.testing.assert_allclose(hb["binary_accuracy"], hk["binary_accuracy"])
    for n in names:
        for a, b in zip(bm.get_layer(n).get_weights(), km.get_layer(n).get_weights()):
            np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(bm.evaluate(X, Y, batch_size=4, verbose=0), km.evaluate(X, Y, batch_size=4, verbose=0),
                               rtol=1e-4)


def test_input_of_one_number_per_sample_as_keras(keras):
    """keras.Input(shape=()): ids (B,) into an Embedding (B, E), then Dense; y of shape (B, 1)"""
    def build(M):
        i = M.Input(shape=())
        return M.Model(i, M.layers.Dense(1, name="d")(M.layers.Embedding(6, 3, name="e")(i)))
    km, bm = build(keras), build(bf)
    copy_named(km, bm, "de")
    ids = np.array([0, 3, 5, 1, 2, 2], np.float32)
    np.testing.assert_allclose(bm.predict(ids, verbose=0), km.predict(ids, verbose=0), rtol=1e-5, atol=1e-6)
    km.compile(keras.optimizers.SGD(0.1), "mse")
    bm.compile(bf.optimizers.SGD(0.1), "mse")
    yy = np.linspace(-1, 1, 6).astype(np.float32)[:, None]
    np.testing.assert_allclose(bm.fit(ids, yy, batch_size=3, shuffle=False, verbose=0).history["loss"],
                               km.fit(ids, yy, batch_size=3, shuffle=False, verbose=0).history["loss"], rtol=1e-5)


@pytest.mark.parametrize("build", [scalar_model, batch_model, mean_model])
def test_gradients_match_finite_differences(build):
    m = build(bf)
    m.compile(optimizer="sgd", loss="binary_crossentropy")
    x, y = X[:6], Y[:6]
    directional_check(m, x, y, n_dirs=2, rtol=2e-2, seed=3)


def test_batch_sum_and_mean_over_everything_as_numpy():
    """ops.sum(x) / ops.mean(x) with no axis: one number for the batch, the same for every sample"""
    x = bf.Input(shape=(2, 3))
    m = bf.Model(x, bf.ops.sum(x) + bf.layers.Flatten()(x) * bf.ops.mean(x))
    v = rng.standard_normal((5, 2, 3)).astype(np.float32)
    want = v.sum() + v.reshape(5, 6) * v.mean()
    np.testing.assert_allclose(m.predict(v, batch_size=5, verbose=0), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("build", [scalar_model, batch_model])
def test_plan_is_exact(build):
    m = build(bf)
    m.compile(optimizer="adam", loss="binary_crossentropy")
    assert_plan_equals_arenas(m, X, Y, 4)


def test_keras_files_both_ways(keras, tmp_path):
    """x[:, 0] and ops.sum(.., axis=-1) are written as Keras's GetItem and read back from Keras's files"""
    bm = scalar_model(bf)
    bm.save(tmp_path / "b.keras")
    k2 = keras.models.load_model(tmp_path / "b.keras")
    np.testing.assert_allclose(k2.predict(X, verbose=0), bm.predict(X, verbose=0), rtol=1e-5, atol=1e-6)
    x = keras.Input(shape=(3,))
    e = keras.layers.Embedding(5, 2)(x[:, 2])
    km = keras.Model(x, keras.layers.Activation("sigmoid")(x[:, 0] * 0.5 + keras.layers.Dense(1)(e)[:, 0]))
    km.save(tmp_path / "k.keras")
    b2 = bf.models.load_model(tmp_path / "k.keras")
    assert b2.output_shape == (None,)
    np.testing.assert_allclose(b2.predict(X, verbose=0), km.predict(X, verbose=0), rtol=1e-5, atol=1e-6)


def test_broadcasts_that_would_mix_samples_raise_naming_the_op():
    x = bf.Input(shape=(2,))
    s = x[:, 0]
    with pytest.raises(OpNotSupportedError, match=r"keras.ops.add .*\(None,\) and \(None, 1\).*mixing the samples"):
        s + bf.ops.expand_dims(s, -1)
    with pytest.raises(OpNotSupportedError, match="keras.ops.multiply"):
        s * bf.layers.Dense(4)(x)
    with pytest.raises(OpNotSupportedError, match="keras.ops.maximum"):
        bf.ops.maximum(x, s)
    d = bf.ops.tensordot(bf.layers.Dense(2)(x), bf.layers.Dense(2)(x), 2)
    assert d.shape == () and (d + s).shape == (None,) and (d + x).shape == (None, 2)
    with pytest.raises(OpNotSupportedError, match="slicing.*without a batch axis"):
        d[0]
    with pytest.raises(OpNotSupportedError, match="tensordot.*keeps both batch axes"):
        bf.ops.tensordot(x, x, 1)


def test_accuracy_on_one_number_per_sample_is_refused_naming_it():
    """Keras 3 resolves 'accuracy' on a (B,) output to categorical accuracy over the batch axis"""
    m = scalar_model(bf)
    with pytest.raises(ValueError, match="metrics: 'accuracy' on an output of one number per sample.*binary_accuracy"):
        m.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])


def squeezed(M):
    x = M.Input(shape=(3,))
    return M.Model(x, M.ops.nn.sigmoid(M.ops.squeeze(M.layers.Dense(1, name="d")(x), -1)))


def test_mean_metrics_of_one_number_per_sample_are_means_of_batch_means_as_keras(keras):
    """Keras's mae / mse reduce a (B,) output over its last axis, the batch: each batch's mean counts once
    (12 samples in batches of 5: the last batch of 2 counts as much as the others); binary_accuracy, rmse,
    precision and the loss stay per sample"""
    km, bm = squeezed(keras), squeezed(bf)
    copy_named(km, bm, "d")
    ms = ["binary_accuracy", "mae", "mse", "root_mean_squared_error", "precision"]
    km.compile(keras.optimizers.SGD(0.1), "binary_crossentropy", metrics=ms)
    bm.compile(bf.optimizers.SGD(0.1), "binary_crossentropy", metrics=ms)
    hk = km.fit(X, Y, batch_size=5, epochs=2, shuffle=False, verbose=0, validation_data=(X[:7], Y[:7])).history
    hb = bm.fit(X, Y, batch_size=5, epochs=2, shuffle=False, verbose=0, validation_data=(X[:7], Y[:7])).history
    assert sorted(hb) == sorted(hk)
    for k in hk:
        np.testing.assert_allclose(hb[k], hk[k], rtol=1e-5, atol=1e-7, err_msg=k)
    p = bm.predict(X, verbose=0)
    per_batch = np.mean([np.abs(p[i:i + 5] - Y[i:i + 5]).mean() for i in (0, 5, 10)])
    np.testing.assert_allclose(bm.evaluate(X, Y, batch_size=5, verbose=0, return_dict=True)["mae"], per_batch,
                               rtol=1e-5)


def test_weights_and_argmax_metrics_on_one_number_per_sample_raise_naming_them():
    m = squeezed(bf)
    m.compile("sgd", "binary_crossentropy")
    w = m.get_weights()
    with pytest.raises(ValueError, match="sample_weight / class_weight: the output .* one number per sample"):
        m.fit(X, Y, sample_weight=np.ones(12, np.float32), verbose=0)
    with pytest.raises(ValueError, match="sample_weight / class_weight: the output"):
        m.fit(X, Y, class_weight={0: 1.0, 1: 2.0}, verbose=0)
    with pytest.raises(ValueError, match="sample_weight / class_weight: the output"):
        m.evaluate(X, Y, sample_weight=np.ones(12, np.float32), verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(m.get_weights(), w))
    with pytest.raises(ValueError, match="the weighted metric 'mae' on an output of one number per sample"):
        m.compile("sgd", "binary_crossentropy", weighted_metrics=["mae"])
    with pytest.raises(ValueError, match="'categorical_accuracy' on an output of one number per sample"):
        m.compile("sgd", "binary_crossentropy", metrics=["categorical_accuracy"])


def test_layers_that_need_an_axis_refuse_one_number_per_sample():
    x = bf.Input(shape=(2,))
    s = x[:, 0]
    with pytest.raises(ValueError, match=r"layer 'dense_s' \(Dense\) does not take one number per sample"):
        bf.layers.Dense(3, name="dense_s")(s)
    with pytest.raises(ValueError, match="axis"):
        bf.layers.Concatenate()([s, s])
    with pytest.raises(ValueError, match="softmax_s: softmax of one number per sample"):
        bf.Model(x, bf.layers.Activation("softmax", name="softmax_s")(s))


def test_what_mixes_samples_refuses_to_split_a_batch(tmp_path):
    m = batch_model(bf)
    m.compile(optimizer="adam", loss="binary_crossentropy")
    w = m.get_weights()
    with pytest.raises(ValueError, match="layer 'batch_reduce.*' mixes the samples of a batch.*micro_batch=None"):
        m.fit(X, Y, batch_size=4, micro_batch=2, verbose=0)
    with pytest.raises(ValueError, match="mixes the samples of a batch.*micro-batches of 2"):
        m.estimate_memory(batch_size=4, micro_batch=2)
    assert all(np.array_equal(a, b) for a, b in zip(m.get_weights(), w))
    # validation batches larger than the training ones run whole
    h = m.fit(X, Y, batch_size=4, validation_data=(X, Y), validation_batch_size=12, epochs=1, verbose=0).history
    np.testing.assert_allclose(h["val_loss"], m.evaluate(X, Y, batch_size=12, verbose=0), rtol=1e-6)
    x = bf.Input(shape=(2,))
    d = bf.ops.tensordot(bf.layers.Dense(2)(x), bf.layers.Dense(2)(x), 2)
    with pytest.raises(ValueError, match=r"outputs\[0\] has no batch axis"):
        bf.Model(x, d)
    with pytest.raises(ValueError, match="layer 'drop_d' \\(Dropout\\) is called on a tensor without a batch axis"):
        bf.layers.Dropout(0.5, name="drop_d")(d)
    with pytest.raises(ValueError, match="BatchReduce has no Keras serialization"):
        m.save(str(tmp_path / "m.keras"))


def test_data_parallel_runs_refuse_a_sum_over_the_batch(tmp_path):
    """two ranks over TCP (tests/dist_programs/batch_mix.py): fit, evaluate and predict would split or regroup
    the batches, so each raises naming the layer, on every rank"""
    program = os.path.join(os.path.dirname(__file__), "dist_programs", "batch_mix.py")
    recs, _, _, log = _launch_tcp(tmp_path, 2, "mix", program=program)
    assert sorted(recs) == [0, 1], log
    for rec in recs.values():
        assert "layer 'batch_reduce' mixes the samples of a batch" in rec["fit"] and "data-parallel" in rec["fit"]
        assert "distributed evaluate" in rec["evaluate"] and "distributed predict" in rec["predict"]
