"""keras.wrappers: SKLearnClassifier / SKLearnRegressor / SKLearnTransformer as scikit-learn estimators around a
compiled model: Keras's target encoding, classes, shapes and errors; in sklearn's own machinery (clone,
get_params, cross_val_score, Pipeline); with Keras's initial weights, the same predictions as Keras's wrapper."""

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from helpers import keras_recorded

sklearn = pytest.importorskip("sklearn", reason="scikit-learn (a test dependency) runs the estimators")
from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

rng = np.random.default_rng(0)
X = rng.standard_normal((48, 5)).astype(np.float32)
Y3 = np.array(["cat", "dog", "eel"])[(X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)]


def mlp(k, seed=0):
    def build(X, y, hidden=8, loss="categorical_crossentropy"):
        k.utils.set_random_seed(seed)
        m = k.Sequential([k.Input((X.shape[1],)), k.layers.Dense(hidden, activation="relu"),
                          k.layers.Dense(y.shape[1], activation="softmax")])
        m.compile(k.optimizers.SGD(0.1), loss)
        return m
    return build


def test_classifier_encodes_labels_and_predicts_classes_as_keras():
    est = bf.wrappers.SKLearnClassifier(mlp(bf), model_kwargs={"hidden": 6}, fit_kwargs={"verbose": 0})
    assert est.fit(X, Y3, epochs=2, batch_size=16) is est
    assert list(est.classes_) == ["cat", "dog", "eel"] and est.model_.output_shape == (None, 3)
    pred = est.predict(X[:7])
    assert pred.shape == (7,) and set(pred) <= set(est.classes_)
    out = est.decision_function(X[:7])
    np.testing.assert_array_equal(pred, est.classes_[out.argmax(1)])
    assert len(est.history_.history["loss"]) == est.epoch_ == 2 and 0 <= est.score(X, Y3) <= 1

    def keras_side():   # Keras's wrapper on the same data: the same encoding and shapes
        k = keras_ref.load()
        e = k.wrappers.SKLearnClassifier(mlp(k), model_kwargs={"hidden": 6}, fit_kwargs={"verbose": 0})
        e.fit(X, Y3, epochs=2, batch_size=16)
        return dict(classes=list(e.classes_), out=list(e.decision_function(X[:7]).shape),
                    pred=str(e.predict(X[:7]).dtype))
    k = keras_recorded.case(keras_side)
    assert k["classes"] == list(est.classes_) and k["out"] == list(out.shape) and k["pred"] == str(pred.dtype)


def test_given_the_same_weights_predictions_equal_keras():
    def fitted(k):
        e = k.wrappers.SKLearnClassifier(mlp(k), fit_kwargs={"verbose": 0, "epochs": 1, "batch_size": 48})
        e.fit(X, Y3)
        return e
    ours = fitted(bf)
    theirs = keras_recorded.case(lambda: [np.asarray(w) for w in fitted(keras_ref.load()).model_.get_weights()])
    ours.model_.set_weights(theirs)
    probs = keras_recorded.case(lambda: (lambda e: (e.model_.set_weights(theirs), e.decision_function(X))[1])(
        fitted(keras_ref.load())), "probs")
    np.testing.assert_allclose(ours.decision_function(X), probs, rtol=1e-5, atol=1e-6)


def test_regressor_and_transformer():
    def reg(X, y):
        m = bf.Sequential([bf.Input((5,)), bf.layers.Dense(1)])
        m.compile("sgd", "mse")
        return m
    y = X @ np.arange(5, dtype=np.float32)
    r = bf.wrappers.SKLearnRegressor(reg, fit_kwargs={"verbose": 0, "epochs": 30})
    assert r.fit(X, y).predict(X).shape == (48,) and r.score(X, y) > 0.5   # R^2 of a linear target

    def enc(X, y):   # a learned feature: the model's output is what transform() gives
        m = bf.Sequential([bf.Input((5,)), bf.layers.Dense(4, activation="relu"), bf.layers.Dense(1)])
        m.compile("sgd", "mse")
        return m
    t = bf.wrappers.SKLearnTransformer(enc, fit_kwargs={"verbose": 0})
    feats = t.fit(X, y).transform(X)
    np.testing.assert_array_equal(feats, t.model_.predict(X, verbose=0))
    assert feats.shape == (48, 1)


def test_in_sklearn_machinery_clone_pipeline_and_cross_validation():
    est = bf.wrappers.SKLearnClassifier(mlp(bf), fit_kwargs={"verbose": 0, "epochs": 1})
    assert sorted(clone(est).get_params()) == ["fit_kwargs", "model", "model_kwargs", "warm_start"]
    scores = cross_val_score(make_pipeline(StandardScaler(), est), X, Y3, cv=3)
    assert scores.shape == (3,) and np.all((0 <= scores) & (scores <= 1))


def test_a_compiled_model_instance_is_cloned_compiled():
    m = bf.Sequential([bf.Input((5,)), bf.layers.Dense(3, activation="softmax")])
    m.compile("adam", "categorical_crossentropy")
    before = [w.copy() for w in m.get_weights()]
    est = bf.wrappers.SKLearnClassifier(m, fit_kwargs={"verbose": 0}).fit(X, Y3)
    assert est.model_ is not m and est.model_.optimizer is not None
    for a, b in zip(before, m.get_weights()):
        np.testing.assert_array_equal(a, b)   # the given model untouched


def test_errors_as_keras():
    with pytest.raises(RuntimeError, match="needs to be compiled"):
        bf.wrappers.SKLearnRegressor(lambda X, y: bf.Sequential([bf.Input((5,)), bf.layers.Dense(1)])).fit(X, X[:, 0])
    with pytest.raises(ValueError, match="only one class"):
        bf.wrappers.SKLearnClassifier(mlp(bf)).fit(X, np.zeros(48, int))
    with pytest.raises(ValueError, match="Only binary and multiclass"):
        bf.wrappers.SKLearnClassifier(mlp(bf)).fit(X, X[:, 0])
    with pytest.raises(sklearn.exceptions.NotFittedError):
        bf.wrappers.SKLearnClassifier(mlp(bf)).predict(X)
