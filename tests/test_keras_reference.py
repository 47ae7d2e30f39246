"""Losses, metrics and optimizers against Keras 3 itself (JAX backend, CPU):
the same weights and batches give the same loss, metric values and updated
weights after a few steps. Skipped where Keras 3 on JAX is not installed.

Agreement: losses and metrics to relative 1e-5 (float32 vs the engine's
double sums); weights after a few updates to relative 1e-5 with an absolute
floor of 1e-6 for weights near zero (float32 rounding of the same formulas
in a different order). Keras's side is recorded (helpers/keras_recorded.py)."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
import keras_ref
from helpers.keras_recorded import case

RTOL = 1e-5


def two_layers(M, out_units, out_act, in_dim=5, hidden=6):
    return M.Sequential([M.Input((in_dim,)), M.layers.Dense(hidden, activation="tanh"),
                         M.layers.Dense(out_units, activation=out_act)])


def pair(out_units, out_act, seed=0, scale=1.0):
    """The two-layer model in boundfit with random weights (times scale), and what makes Keras's the same
    (fit_both): its output units, activation and the weights."""
    rng = np.random.default_rng(seed)
    bm = two_layers(bf, out_units, out_act)
    w = [rng.normal(0, 0.7, size=a.shape).astype(np.float32) * scale for a in bm.get_weights()]
    bm.set_weights(w)
    return bm, {"units": out_units, "act": out_act, "weights": w}


def data(kind, n=48, k=4, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 5)).astype(np.float32)
    if kind == "sparse":
        y = rng.integers(0, k, n)
    elif kind == "onehot":
        y = np.eye(k, dtype=np.float32)[rng.integers(0, k, n)]
    elif kind == "binary":
        y = (rng.random((n, k)) > 0.5).astype(np.float32)
    else:
        y = rng.standard_normal((n, k)).astype(np.float32)
    return x, y


def test_metric_objects_without_a_name_are_numbered_as_keras():
    def names():
        keras = keras_ref.load()
        return {"auc": [keras.metrics.AUC().name for _ in range(2)], "mae": keras.metrics.MeanAbsoluteError().name}
    k = case(names)
    names_k = k["auc"]
    names_b = [bf.metrics.AUC().name for _ in range(2)]
    def number(name):  # 'auc' is the first, then 'auc_1', 'auc_2', ... in the process
        return 0 if name == "auc" else int(name.rsplit("_", 1)[1])

    assert number(names_b[1]) == number(names_b[0]) + 1 and number(names_k[1]) == number(names_k[0]) + 1
    assert all(n == "auc" or n.startswith("auc_") for n in names_b + names_k)
    assert bf.metrics.MeanAbsoluteError().name == k["mae"] == "mean_absolute_error"


def assert_history_close(hk, hb, rtol=RTOL):
    hk = {k: v for k, v in hk.items() if k != "learning_rate"}
    assert set(hk) == set(hb.history), (sorted(hk), sorted(hb.history))
    for key in hk:
        np.testing.assert_allclose(hb.history[key], hk[key], rtol=rtol, atol=1e-7, err_msg=key)


def assert_weights_close(kw, bm, rtol=RTOL, atol=1e-6):
    for i, (a, b) in enumerate(zip(kw, bm.get_weights(), strict=True)):
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, err_msg=f"weights[{i}]")


def fit_both(bm, w, x, y, opt, loss, metrics=None, weighted=None, epochs=1, evaluate=None, **fit_kw):
    """boundfit's model and Keras's (recorded, made from pair's w) compiled with opt, loss, metrics and weighted
    metrics (each the same value for both, or a function of the module: M.optimizers.SGD(0.1) ...) and fit;
    Keras's history, weights after and evaluate(**evaluate)'s results; boundfit's History"""
    def of(M, v):
        return v(M) if callable(v) else v

    def keras_side():
        K = keras_ref.load()
        km = two_layers(K, w["units"], w["act"])
        km.set_weights(w["weights"])
        km.compile(optimizer=of(K, opt), loss=of(K, loss), metrics=of(K, metrics), weighted_metrics=of(K, weighted))
        h = km.fit(x, y, batch_size=16, epochs=epochs, shuffle=False, verbose=0, **fit_kw)
        return {"history": h.history, "weights": km.get_weights(),
                "evaluate": km.evaluate(x, y, verbose=0, return_dict=True, **evaluate) if evaluate else None}
    k = case(keras_side)
    bm.compile(optimizer=of(bf, opt), loss=of(bf, loss), metrics=of(bf, metrics), weighted_metrics=of(bf, weighted))
    hb = bm.fit(x, y, batch_size=16, epochs=epochs, shuffle=False, verbose=0, **fit_kw)
    return k, hb


# ---- losses: loss values per epoch and the weights after 3 SGD steps ----

LOSSES = [
    ("mse", "linear", "real", lambda K: "mse", lambda B: "mse"),
    ("mae", "linear", "real", lambda K: "mae", lambda B: "mae"),
    ("huber", "linear", "real", lambda K: K.losses.Huber(delta=0.7), lambda B: B.losses.Huber(delta=0.7)),
    ("huber by name", "linear", "real", lambda K: "huber", lambda B: "huber"),
    ("log_cosh", "linear", "real", lambda K: "log_cosh", lambda B: "log_cosh"),
    ("bce", "sigmoid", "binary", lambda K: "binary_crossentropy", lambda B: "binary_crossentropy"),
    ("bce logits smoothing", "linear", "binary",
     lambda K: K.losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.2),
     lambda B: B.losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.2)),
    ("bce probabilities smoothing", "sigmoid", "binary",
     lambda K: K.losses.BinaryCrossentropy(label_smoothing=0.1),
     lambda B: B.losses.BinaryCrossentropy(label_smoothing=0.1)),
    ("cce smoothing", "softmax", "onehot",
     lambda K: K.losses.CategoricalCrossentropy(label_smoothing=0.1),
     lambda B: B.losses.CategoricalCrossentropy(label_smoothing=0.1)),
    ("cce logits", "linear", "onehot", lambda K: K.losses.CategoricalCrossentropy(from_logits=True),
     lambda B: B.losses.CategoricalCrossentropy(from_logits=True)),
    ("cce on sigmoid outputs (renormalized)", "sigmoid", "onehot", lambda K: "categorical_crossentropy",
     lambda B: "categorical_crossentropy"),
    ("scce", "softmax", "sparse", lambda K: "sparse_categorical_crossentropy",
     lambda B: "sparse_categorical_crossentropy"),
    ("scce logits", "linear", "sparse", lambda K: K.losses.SparseCategoricalCrossentropy(from_logits=True),
     lambda B: B.losses.SparseCategoricalCrossentropy(from_logits=True)),
]


@pytest.mark.parametrize("name,act,ykind,kl,bl", LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_and_updated_weights_match_keras(name, act, ykind, kl, bl):
    x, y = data(ykind)
    bm, w = pair(4, act)
    k, hb = fit_both(bm, w, x, y, lambda M: M.optimizers.SGD(0.1), lambda M: (bl if M is bf else kl)(M), epochs=2)
    assert_history_close(k["history"], hb)
    assert_weights_close(k["weights"], bm)


@pytest.mark.parametrize("act,loss,ykind", [("sigmoid", "binary_crossentropy", "binary"),
                                             ("softmax", "categorical_crossentropy", "onehot"),
                                             ("softmax", "sparse_categorical_crossentropy", "sparse")])
def test_saturated_outputs_are_clipped_as_keras_clips_them(act, loss, ykind):
    """Large weights saturate sigmoid / softmax: Keras clips the outputs to
    [1e-7, 1 - 1e-7] (loss capped, no gradient there); so does the engine.
    BCE near saturation computes log(1 - q) of a float32 q within ~1e-4 of 1,
    where one ulp of q (XLA's sigmoid and ours differ in the last bit) moves
    the loss by ~1e-5 relative: compared to 1e-4 there. And a sigmoid output
    one ulp from the clip value 1 - 1e-7 (logits near 16) is clipped by one
    and not the other, so that element's gradient is 0 in one and ~1 in the
    other: weights compared to 1e-3 there."""
    x, y = data(ykind, k=3)
    bm, w = pair(3, act, scale=8)
    p = bm.predict(x, verbose=0)
    assert (p > 1 - 1e-7).any() or (p < 1e-7).any()  # some outputs are clipped
    k, hb = fit_both(bm, w, x, y, lambda M: M.optimizers.SGD(0.01), loss, epochs=2)
    assert_history_close(k["history"], hb, rtol=1e-4 if act == "sigmoid" else RTOL)
    assert_weights_close(k["weights"], bm, atol=1e-3 if act == "sigmoid" else 1e-5)


def test_weighted_loss_matches_keras_sample_weight_and_evaluate():
    x, y = data("real")
    sw = np.random.default_rng(3).random(len(x)).astype(np.float32) * 2
    bm, w = pair(4, "linear")
    k, hb = fit_both(bm, w, x, y, lambda M: M.optimizers.SGD(0.1), "huber", ["mae"], ["mse"],
                     evaluate=dict(sample_weight=sw, batch_size=16), sample_weight=sw)
    assert_history_close(k["history"], hb)
    assert_weights_close(k["weights"], bm)
    ek = k["evaluate"]
    eb = bm.evaluate(x, y, sample_weight=sw, batch_size=16, verbose=0, return_dict=True)
    assert set(ek) == set(eb)
    for k in ek:
        assert eb[k] == pytest.approx(ek[k], rel=RTOL), k


# ---- metrics: values per epoch (train and validation) with Keras's names ----

def test_binary_metrics_match_keras():
    x, y = data("binary", k=1, n=64)
    vx, vy = data("binary", k=1, n=32, seed=7)
    sw = np.random.default_rng(4).random(len(x)).astype(np.float32)
    vsw = np.random.default_rng(5).random(len(vx)).astype(np.float32)
    bm, w = pair(1, "sigmoid")

    def metrics(M):
        return ["accuracy", M.metrics.BinaryAccuracy(threshold=0.3), "AUC", M.metrics.AUC(num_thresholds=50, name="auc"),
                M.metrics.Precision(name="precision"), M.metrics.Recall(name="recall"), "mae", "mse",
                M.metrics.RootMeanSquaredError()]

    k, hb = fit_both(bm, w, x, y, lambda M: M.optimizers.Adam(0.05), "binary_crossentropy", metrics,
                     ["accuracy", "auc", "precision"], epochs=2, sample_weight=sw, validation_data=(vx, vy, vsw))
    assert "weighted_accuracy" in hb.history and "val_root_mean_squared_error" in hb.history
    assert "weighted_auc" in hb.history and "val_AUC" in hb.history
    assert_history_close(k["history"], hb)
    # 8 Adam steps at lr 0.05: m / (sqrt(v) + eps) amplifies float32 rounding of tiny gradients
    assert_weights_close(k["weights"], bm, atol=5e-6)


def test_confusion_count_metrics_match_keras():
    """TruePositives / FalsePositives / TrueNegatives / FalseNegatives: weighted
    counts over the epoch, per column of a multi-label output, train and validation."""
    x, y = data("binary", k=3, n=64)
    vx, vy = data("binary", k=3, n=32, seed=7)
    sw = np.random.default_rng(4).random(len(x)).astype(np.float32)
    bm, w = pair(3, "sigmoid")

    def metrics(M):
        return [M.metrics.TruePositives(name="tp"), M.metrics.FalsePositives(thresholds=0.3, name="fp"),
                M.metrics.TrueNegatives(name="tn"), M.metrics.FalseNegatives(name="fn")]

    k, hb = fit_both(bm, w, x, y, lambda M: M.optimizers.Adam(0.05), "binary_crossentropy", metrics,
                     lambda M: [M.metrics.TrueNegatives(name="wtn")], epochs=2, sample_weight=sw,
                     validation_data=(vx, vy))
    assert {"tp", "fp", "tn", "fn", "val_fn", "wtn"} <= set(hb.history)
    assert_history_close(k["history"], hb)
    # unweighted validation counts at one threshold: tp + fn + tn + (fp at 0.5) = samples * columns
    b = hb.history
    assert b["val_tp"][-1] + b["val_fn"][-1] + b["val_tn"][-1] <= 32 * 3
    assert b["val_tp"][-1] + b["val_fn"][-1] == vy.sum()


def test_at_constraint_metrics_match_keras():
    """PrecisionAtRecall / RecallAtPrecision / SensitivityAtSpecificity /
    SpecificityAtSensitivity: Keras's best statistic over evenly spaced
    thresholds under the constraint, weighted, train and validation."""
    x, y = data("binary", k=2, n=64)
    vx, vy = data("binary", k=2, n=32, seed=7)
    sw = np.random.default_rng(4).random(len(x)).astype(np.float32)
    bm, w = pair(2, "sigmoid")

    def metrics(M):
        return [M.metrics.PrecisionAtRecall(0.5, name="p_at_r"), M.metrics.RecallAtPrecision(precision=0.7, name="r_at_p"),
                M.metrics.SensitivityAtSpecificity(0.6, num_thresholds=50, name="s_at_s"),
                M.metrics.SpecificityAtSensitivity(sensitivity=0.9, num_thresholds=7, name="sp_at_se"),
                M.metrics.RecallAtPrecision(1.0, name="unreachable")]

    k, hb = fit_both(bm, w, x, y, lambda M: M.optimizers.Adam(0.05), "binary_crossentropy", metrics,
                     lambda M: [M.metrics.PrecisionAtRecall(0.3, name="w")], epochs=2, sample_weight=sw,
                     validation_data=(vx, vy))
    assert {"p_at_r", "val_s_at_s", "w", "val_unreachable"} <= set(hb.history)
    assert 0.0 < hb.history["s_at_s"][-1] <= 1.0
    assert_history_close(k["history"], hb)
    cfg = bf.metrics.SpecificityAtSensitivity(0.25, num_thresholds=9, name="q").get_config()
    assert cfg == {"name": "q", "num_thresholds": 9, "sensitivity": 0.25}
    assert bf.metrics.get({"class_name": "SpecificityAtSensitivity", "config": cfg})[0].value == 0.25
    for bad, msg in ((dict(recall=1.5), "recall must be a number in"), (dict(recall=0.5, num_thresholds=1), "num_thresholds"),
                     (dict(recall=0.5, class_id=-1), "class_id must be a non-negative int")):
        with pytest.raises(ValueError, match=msg):
            bf.metrics.PrecisionAtRecall(**bad)
    with pytest.raises(ValueError, match="unknown metric"):
        bf.metrics.get("precision_at_recall")


def test_categorical_metrics_match_keras():
    x, y = data("onehot", k=5, n=64)
    bm, w = pair(5, "softmax")

    def metrics(M):
        return ["accuracy", "categorical_accuracy", M.metrics.TopKCategoricalAccuracy(k=2),
                "top_k_categorical_accuracy", M.metrics.MeanAbsoluteError(), "rmse" if M is bf else
                M.metrics.RootMeanSquaredError(name="rmse"), M.metrics.AUC(name="auc"),
                M.metrics.Precision(thresholds=0.3, name="precision")]

    k, hb = fit_both(bm, w, x, y, lambda M: M.optimizers.RMSprop(0.01), "categorical_crossentropy", metrics,
                     epochs=2, validation_split=0.25)
    assert "mean_absolute_error" in hb.history and "val_top_k_categorical_accuracy" in hb.history
    assert_history_close(k["history"], hb)
    assert_weights_close(k["weights"], bm)


def test_sparse_metrics_and_class_weight_match_keras():
    x, y = data("sparse", k=5, n=64)
    bm, w = pair(5, "softmax")

    def metrics(M):
        return ["accuracy", "sparse_categorical_accuracy", M.metrics.SparseTopKCategoricalAccuracy(k=2),
                "sparse_top_k_categorical_accuracy"]

    cw = {0: 0.5, 2: 3.0, 4: 1.5}
    k, hb = fit_both(bm, w, x, y, lambda M: M.optimizers.SGD(0.1), "sparse_categorical_crossentropy", metrics,
                     ["accuracy"], epochs=2, class_weight=cw)
    assert_history_close(k["history"], hb)
    assert_weights_close(k["weights"], bm)


def test_regression_accuracy_resolves_by_output_shape_as_keras():
    x, y = data("binary", k=3)
    bm, w = pair(3, "sigmoid")
    k, hb = fit_both(bm, w, x, y, lambda M: M.optimizers.SGD(0.1), "mse", ["accuracy", "binary_accuracy"])
    assert_history_close(k["history"], hb)  # 'accuracy' on 3 outputs with full targets: categorical


# ---- optimizers: weights after 6 updates ----

OPTS = [
    ("sgd momentum nesterov", lambda M: M.optimizers.SGD(0.05, momentum=0.9, nesterov=True)),
    ("sgd clipvalue weight_decay", lambda M: M.optimizers.SGD(0.1, clipvalue=0.05, weight_decay=0.1)),
    ("sgd clipnorm", lambda M: M.optimizers.SGD(0.1, momentum=0.5, clipnorm=0.1)),
    ("adam amsgrad", lambda M: M.optimizers.Adam(0.01, amsgrad=True)),
    ("adam global_clipnorm", lambda M: M.optimizers.Adam(0.01, global_clipnorm=0.2)),
    ("adamw", lambda M: M.optimizers.AdamW(0.01)),
    ("adamw by name", lambda M: "adamw"),
    ("rmsprop", lambda M: M.optimizers.RMSprop(0.01)),
    ("rmsprop momentum centered", lambda M: M.optimizers.RMSprop(0.01, momentum=0.5, centered=True)),
    ("adagrad", lambda M: M.optimizers.Adagrad(0.1)),
    ("nadam", lambda M: M.optimizers.Nadam(0.01)),
    ("nadam weight_decay clipnorm", lambda M: M.optimizers.Nadam(0.01, weight_decay=0.05, clipnorm=0.5)),
]


@pytest.mark.parametrize("name,make", OPTS, ids=[o[0] for o in OPTS])
def test_optimizer_updates_match_keras(name, make):
    x, y = data("sparse")
    bm, w = pair(4, "softmax")
    k, hb = fit_both(bm, w, x, y, make, "sparse_categorical_crossentropy", epochs=2)
    assert_history_close(k["history"], hb)
    assert_weights_close(k["weights"], bm)
    assert bm.optimizer.iterations == 6 if not isinstance(bm.optimizer, str) else True
