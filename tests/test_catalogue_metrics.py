"""Keras 3's metrics of issue 34 against Keras 3 itself (JAX): the loss-named metrics, Accuracy, the
correlations, MeanMetricWrapper, Mean / Sum, the F-scores, R2Score and the IoU family (metrics/traced.py: their
per-sample statistics traced into the training graph, summed by the engine's SUMS metric over the epoch). The
same weights and batches give Keras's fit history (train and validation, with and without sample weights) and
evaluate; standalone, update_state / result / reset_state on arrays give Keras's values; configs round-trip;
bad arguments and Mean / Sum in compile() raise naming them."""

import os
import tempfile

import numpy as np
import pytest

import boundfit as bf
from helpers import keras_recorded
from keras_ref import load
from boundfit.layers.layer import _counters
from boundfit.metrics.engine import _UIDS as _metric_names


@pytest.fixture(autouse=True)
def _names_from_zero():
    """layers and metric objects named from 0 in each test (as after Keras's clear_session): boundfit's files,
    whose contents key Keras's recorded results, do not depend on the tests run before in the process (pytest-xdist,
    -k; a OneHotMeanIoU built by an earlier test made the file's 'one_hot_mean_io_u_1')"""
    _counters.clear()
    _metric_names.clear()


rng = np.random.default_rng(3)
X = rng.standard_normal((48, 5)).astype(np.float32)
SW = rng.integers(0, 3, 48).astype(np.float32)      # integer weights: Keras's IoU casts weights to int
Y_POS = (rng.random((48, 3)) * 2 + 0.1).astype(np.float32)
IDS = rng.integers(0, 3, (48, 1)).astype(np.float32)
Y_ONE = np.eye(3, dtype=np.float32)[IDS[:, 0].astype(int)]
Y_BIN = (rng.random((48, 1)) < 0.5).astype(np.float32)


def twice_abs_error(M):
    def twice_abs_error(y_true, y_pred):
        return M.ops.mean(M.ops.abs(y_true - y_pred) * 2.0, axis=-1)
    return twice_abs_error


GROUPS = {   # output activation, units, loss, targets, metrics, weighted metrics
    "regression": ("softplus", 3, "mse", Y_POS, lambda M: [
        M.metrics.MeanAbsolutePercentageError(), M.metrics.MeanSquaredLogarithmicError(), M.metrics.LogCoshError(),
        M.metrics.Poisson(), M.metrics.KLDivergence(), M.metrics.CosineSimilarity(),
        M.metrics.PearsonCorrelation(), M.metrics.ConcordanceCorrelation(), M.metrics.R2Score(),
        M.metrics.MeanMetricWrapper(twice_abs_error(M)), "msle", "mae"],
        lambda M: [M.metrics.R2Score(class_aggregation="variance_weighted_average", name="r2w"),
                   M.metrics.Poisson(name="pw"), M.metrics.CosineSimilarity(name="cw")]),
    "classes": ("softmax", 3, "categorical_crossentropy", Y_ONE, lambda M: [
        M.metrics.CategoricalCrossentropy(), M.metrics.BinaryCrossentropy(), M.metrics.CategoricalHinge(),
        M.metrics.Hinge(), M.metrics.SquaredHinge(), M.metrics.F1Score(average="macro"),
        M.metrics.FBetaScore(average="weighted", beta=2.0, threshold=0.4), M.metrics.F1Score(average="micro",
                                                                                          name="f1mi"),
        M.metrics.OneHotMeanIoU(3), M.metrics.OneHotIoU(3, [0, 2]), "accuracy"],
        lambda M: [M.metrics.F1Score(average="macro", name="f1w"), M.metrics.OneHotMeanIoU(3, name="miouw"),
                   M.metrics.CategoricalCrossentropy(label_smoothing=0.1, name="ccew")]),
    "sparse": ("softmax", 3, "sparse_categorical_crossentropy", IDS, lambda M: [
        M.metrics.SparseCategoricalCrossentropy(), M.metrics.MeanIoU(3, sparse_y_pred=False),
        M.metrics.IoU(3, [1], sparse_y_pred=False), "accuracy"],
        lambda M: [M.metrics.SparseCategoricalCrossentropy(name="sccew"),
                   M.metrics.MeanIoU(3, sparse_y_pred=False, name="miouw")]),
    "binary": ("sigmoid", 1, "binary_crossentropy", Y_BIN, lambda M: [
        M.metrics.BinaryIoU(), M.metrics.BinaryIoU(target_class_ids=[1], threshold=0.3, name="biou1"),
        M.metrics.BinaryCrossentropy(label_smoothing=0.1), M.metrics.F1Score(threshold=0.5, average="micro")],
        lambda M: [M.metrics.BinaryIoU(name="biouw")]),
}


def _model(M, act, units):
    i = M.Input(shape=(5,))
    h = M.layers.Dense(8, activation="relu", name="h")(i)
    return M.Model(i, M.layers.Dense(units, activation=act, name="o")(h))


def _close(got, want, what):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=2e-4, atol=2e-5,
                               err_msg=what)


@pytest.mark.parametrize("group", list(GROUPS))
def test_fit_history_and_evaluate_match_keras_with_and_without_sample_weights(group):
    act, units, loss, y, ms, wms = GROUPS[group]
    kw = dict(batch_size=16, epochs=2, shuffle=False, verbose=0, sample_weight=SW,
              validation_data=(X[:16], y[:16], SW[:16]))

    def compute():
        keras = load()
        km = _model(keras, act, units)
        w = km.get_weights()
        km.compile(keras.optimizers.SGD(0.05), loss, metrics=ms(keras), weighted_metrics=wms(keras),
                   run_eagerly=True)
        return dict(w=w, history=km.fit(X, y, **kw).history,
                    evaluate=km.evaluate(X, y, batch_size=16, verbose=0, return_dict=True))
    k = keras_recorded.case(compute)
    bm = _model(bf, act, units)
    bm.set_weights(k["w"])
    bm.compile(bf.optimizers.SGD(0.05), loss, metrics=ms(bf), weighted_metrics=wms(bf))
    hk, hb = k["history"], bm.fit(X, y, **kw).history
    assert sorted(hb) == sorted(hk)
    for k_ in hk:
        _close(hb[k_], hk[k_], f"{group}: history {k_}")
    ek = k["evaluate"]
    eb = bm.evaluate(X, y, batch_size=16, verbose=0, return_dict=True)
    assert sorted(eb) == sorted(ek)
    for k in ek:
        _close(eb[k], ek[k], f"{group}: evaluate {k}")


P3 = rng.random((10, 3)).astype(np.float32) + 0.05
T3 = (rng.random((10, 3)) * 2).astype(np.float32)
ONE3 = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 10)]
ID3 = rng.integers(0, 3, (10, 1)).astype(np.float32)
B1 = (rng.random((10, 1)) < 0.5).astype(np.float32)
W10 = rng.random(10).astype(np.float32) + 0.5

STANDALONE = [   # (metric from the module M, y_true, y_pred)
    (lambda M: M.metrics.MeanAbsolutePercentageError(), T3, P3),
    (lambda M: M.metrics.MeanSquaredLogarithmicError(), T3, P3),
    (lambda M: M.metrics.LogCoshError(), T3, P3),
    (lambda M: M.metrics.Poisson(), T3, P3),
    (lambda M: M.metrics.KLDivergence(), ONE3, P3),
    (lambda M: M.metrics.Hinge(), B1, P3[:, :1]),
    (lambda M: M.metrics.SquaredHinge(), 2 * ONE3 - 1, P3),
    (lambda M: M.metrics.CategoricalHinge(), ONE3, P3),
    (lambda M: M.metrics.BinaryCrossentropy(from_logits=True), ONE3, P3 * 4 - 2),
    (lambda M: M.metrics.CategoricalCrossentropy(), ONE3, P3),
    (lambda M: M.metrics.CategoricalCrossentropy(from_logits=True, label_smoothing=0.2), ONE3, P3 * 3),
    (lambda M: M.metrics.SparseCategoricalCrossentropy(), ID3, P3),
    (lambda M: M.metrics.CosineSimilarity(), T3, P3 - 0.5),
    (lambda M: M.metrics.Accuracy(), ID3, np.where(P3[:, :1] > 0.5, ID3, 0.0)),
    (lambda M: M.metrics.PearsonCorrelation(), T3, P3),
    (lambda M: M.metrics.ConcordanceCorrelation(), T3, P3),
    (lambda M: M.metrics.MeanMetricWrapper(twice_abs_error(M)), T3, P3),
    (lambda M: M.metrics.R2Score(), T3, P3),
    (lambda M: M.metrics.R2Score(class_aggregation=None, num_regressors=2), T3, P3),
    (lambda M: M.metrics.F1Score(), ONE3, P3),
    (lambda M: M.metrics.FBetaScore(average="micro", beta=0.5, threshold=0.5), ONE3, P3),
    (lambda M: M.metrics.FBetaScore(average="weighted", beta=2.0), ONE3, P3),
    (lambda M: M.metrics.IoU(3, [0, 2]), ID3, np.floor(P3[:, :1] * 3)),
    (lambda M: M.metrics.MeanIoU(3, ignore_class=1, sparse_y_pred=False), ID3, P3),
    (lambda M: M.metrics.BinaryIoU(threshold=0.4), B1, P3[:, :1]),
    (lambda M: M.metrics.OneHotIoU(3, [1]), ONE3, P3),
    (lambda M: M.metrics.OneHotMeanIoU(3), ONE3, P3),
]


@pytest.mark.parametrize("case", range(len(STANDALONE)))
def test_standalone_update_state_result_and_reset_match_keras(case):
    make, yt, yp = STANDALONE[case]
    bm = make(bf)
    w = np.round(W10 * 2) if isinstance(bm, bf.metrics.IoU) else W10   # Keras's IoU casts weights to int

    def compute():
        km = make(load())
        km.update_state(yt[:6], yp[:6])
        km.update_state(yt[6:], yp[6:], sample_weight=w[6:])
        first = np.asarray(km.result())
        km.reset_state()
        km.update_state(yt, yp, sample_weight=w)
        return first, np.asarray(km.result())
    first, again = keras_recorded.case(compute)
    bm.update_state(yt[:6], yp[:6])
    bm.update_state(yt[6:], yp[6:], sample_weight=w[6:])
    _close(bm.result(), first, type(bm).__name__)
    bm.reset_state()
    bm.update_state(yt, yp, sample_weight=w)
    _close(bm.result(), again, f"{type(bm).__name__} after reset_state")
    if type(bm) is bf.metrics.MeanMetricWrapper:   # a function of the user's: not in Keras's names either
        with pytest.raises(ValueError, match="MeanMetricWrapper of an unknown function 'twice_abs_error'"):
            bf.metrics.deserialize(bf.metrics.serialize(bm))
    else:
        assert bf.metrics.deserialize(bf.metrics.serialize(bm)).get_config() == bm.get_config()


@pytest.mark.parametrize("cls", ["Mean", "Sum"])
def test_mean_and_sum_match_keras_and_are_refused_by_compile(cls):
    def update(m):
        m.update_state([1.0, 3.0, 4.0])
        m.update_state(np.array([[1.0, 2.0], [5.0, 7.0]]), sample_weight=[0.5, 2.0])
        return np.asarray(m.result())
    bm = getattr(bf.metrics, cls)()
    _close(update(bm), keras_recorded.case(lambda: update(getattr(load().metrics, cls)())), cls)
    model = _model(bf, "linear", 1)
    with pytest.raises(ValueError, match=f"is a {cls}, which takes values"):
        model.compile("sgd", "mse", metrics=[bm])


def test_function_names_and_strings_resolve_as_keras():
    names = ("binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy", "hinge",
             "squared_hinge", "categorical_hinge", "kl_divergence", "poisson", "log_cosh", "huber",
             "mean_absolute_percentage_error", "mean_squared_logarithmic_error", "pearson_correlation",
             "concordance_correlation", "binary_focal_crossentropy", "categorical_focal_crossentropy")
    p = P3 / P3.sum(-1, keepdims=True)
    theirs = keras_recorded.case(lambda: {name: np.asarray(getattr(load().metrics, name)(
        ID3 if "sparse" in name else ONE3, p)) for name in names})
    for name in names:
        y = ID3 if "sparse" in name else ONE3
        _close(getattr(bf.metrics, name)(y, p), theirs[name], name)
    for s, cls in (("mape", "MeanAbsolutePercentageError"), ("kl_divergence", "KLDivergence"),
                   ("f1_score", "F1Score"), ("r2_score", "R2Score"), ("logcosh", "LogCoshError")):
        obj, name = bf.metrics.get(s)
        assert type(obj).__name__ == cls and name == s


def test_bad_arguments_raise_naming_them():
    with pytest.raises(ValueError, match="average must be one of"):
        bf.metrics.F1Score(average="mean")
    with pytest.raises(ValueError, match="beta must be a Python float"):
        bf.metrics.FBetaScore(beta=2)
    with pytest.raises(ValueError, match="threshold must be None or a Python float"):
        bf.metrics.F1Score(threshold=1.5)
    with pytest.raises(ValueError, match="class_aggregation must be one of"):
        bf.metrics.R2Score(class_aggregation="mean")
    with pytest.raises(ValueError, match="num_regressors must be an int"):
        bf.metrics.R2Score(num_regressors=-1)
    with pytest.raises(ValueError, match=r"target_class_ids \[3\] must be in \[0, 3\)"):
        bf.metrics.IoU(3, [3])
    with pytest.raises(TypeError, match="Hinge: unknown arguments"):
        bf.metrics.Hinge(axis=0)
    with pytest.raises(ValueError, match="sample_weight must hold one weight per sample"):
        bf.metrics.Poisson().update_state(T3, P3, sample_weight=np.ones(4))
    m = _model(bf, "linear", 1)
    m2 = bf.Model(m.inputs, bf.ops.squeeze(m.outputs[0], axis=-1))
    with pytest.raises(ValueError, match="one number per sample"):
        m2.compile("sgd", "mse", metrics=[bf.metrics.Poisson()])


def test_keras_files_carry_the_metrics_both_ways(tmp_path):
    m = _model(bf, "softmax", 3)
    m.compile("sgd", "categorical_crossentropy", metrics=[bf.metrics.F1Score(average="macro"), "mape",
                                                          bf.metrics.KLDivergence(), bf.metrics.OneHotMeanIoU(3)])
    m.save(tmp_path / "b.keras")

    def opened():   # Keras's side, recorded by the file's contents: its evaluate, and the file it saves
        k = load().models.load_model(tmp_path / "b.keras")
        ek = k.evaluate(X, Y_ONE, batch_size=16, verbose=0, return_dict=True)
        with tempfile.TemporaryDirectory() as d:
            k.save(os.path.join(d, "k.keras"))
            return dict(ek=ek, file=np.frombuffer(open(os.path.join(d, "k.keras"), "rb").read(), np.uint8))
    k = keras_recorded.case(opened, files=[tmp_path / "b.keras"])
    ek = k["ek"]
    (tmp_path / "k.keras").write_bytes(k["file"].tobytes())
    for model in (m, bf.models.load_model(tmp_path / "k.keras")):
        eb = model.evaluate(X, Y_ONE, batch_size=16, verbose=0, return_dict=True)
        assert sorted(eb) == sorted(ek)
        for key in ek:
            _close(eb[key], ek[key], key)
