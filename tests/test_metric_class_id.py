"""class_id on the metrics of Keras 3 that take it (Precision, Recall and the
*At* metrics: PrecisionAtRecall, RecallAtPrecision, SensitivityAtSpecificity,
SpecificityAtSensitivity; csrc/cpu/metrics.c, csrc/cuda/metrics.cu read only
that column of the output): the same weights and batches give Keras 3's
histories and evaluate results for multi-label sigmoid and softmax outputs,
with thresholds; a class_id outside the output raises naming it."""

import numpy as np
import pytest

import boundfit as bf

import keras_ref

rng = np.random.default_rng(0)
X = rng.standard_normal((40, 5)).astype(np.float32)
Y_MULTI = (rng.random((40, 3)) < 0.4).astype(np.float32)
Y_ONE = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 40)]


def metrics(M):
    return [M.metrics.Precision(class_id=1, name="p1"), M.metrics.Recall(thresholds=0.3, class_id=2, name="r2"),
            M.metrics.Precision(thresholds=0.6, class_id=0, name="p0"),
            M.metrics.PrecisionAtRecall(0.5, num_thresholds=9, class_id=0, name="par0"),
            M.metrics.RecallAtPrecision(0.3, num_thresholds=9, class_id=2, name="rap2"),
            M.metrics.SensitivityAtSpecificity(0.5, num_thresholds=9, class_id=1, name="sas1"),
            M.metrics.SpecificityAtSensitivity(0.4, num_thresholds=9, class_id=2, name="sps2")]


def model(M, act):
    i = M.Input(shape=(5,))
    return M.Model(i, M.layers.Dense(3, activation=act, name="d")(M.layers.Dense(8, activation="relu", name="h")(i)))


@pytest.mark.parametrize("act,loss,y", [("sigmoid", "binary_crossentropy", Y_MULTI),
                                        ("softmax", "categorical_crossentropy", Y_ONE)])
def test_class_id_metrics_as_keras(act, loss, y):
    keras = keras_ref.load()
    km, bm = model(keras, act), model(bf, act)
    bm.set_weights(km.get_weights())
    km.compile(keras.optimizers.Adam(0.05), loss, metrics=metrics(keras))
    bm.compile(bf.optimizers.Adam(0.05), loss, metrics=metrics(bf))
    hk = km.fit(X, y, batch_size=8, epochs=2, shuffle=False, verbose=0, validation_data=(X[:16], y[:16])).history
    hb = bm.fit(X, y, batch_size=8, epochs=2, shuffle=False, verbose=0, validation_data=(X[:16], y[:16])).history
    assert sorted(hb) == sorted(hk)
    for k in hk:
        np.testing.assert_allclose(hb[k], hk[k], rtol=1e-4, atol=1e-6, err_msg=k)
    ek = km.evaluate(X, y, batch_size=8, verbose=0, return_dict=True)
    eb = bm.evaluate(X, y, batch_size=8, verbose=0, return_dict=True)
    for k in ek:
        np.testing.assert_allclose(eb[k], ek[k], rtol=1e-4, atol=1e-6, err_msg=k)


def test_class_id_config_and_bad_values_raise_naming_them():
    assert bf.metrics.Precision(class_id=2, name="p").get_config()["class_id"] == 2
    cfg = bf.metrics.RecallAtPrecision(0.5, class_id=1, name="r").get_config()
    assert bf.metrics.get({"class_name": "RecallAtPrecision", "config": cfg})[0].class_id == 1
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="Recall: class_id must be a non-negative int"):
            bf.metrics.Recall(class_id=bad)
    with pytest.raises(ValueError, match="Precision: top_k is not supported"):
        bf.metrics.Precision(top_k=2)
    m = model(bf, "sigmoid")
    with pytest.raises(ValueError, match="class_id 3 is out of range for an output of 3 values"):
        m.compile("adam", "binary_crossentropy", metrics=[bf.metrics.Precision(class_id=3)])
    with pytest.raises(TypeError):   # Keras 3's confusion counts take no class_id either
        bf.metrics.TruePositives(class_id=0)
