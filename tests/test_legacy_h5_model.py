"""Keras's legacy HDF5 model files (`model.save("x.h5")`, `ModelCheckpoint("best_model.h5")`, as keras.io's EEG
example writes its checkpoint) both ways against Keras 3 (recorded): a file boundfit writes opens in Keras with
the same predictions, compiled with the same optimizer and loss; one Keras writes opens in boundfit; a nested
model is refused by name."""

import numpy as np
import pytest

import boundfit as bf

import keras_ref
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: the files keyed by their layer names
from helpers import keras_recorded


def _model(K, sequential=False):
    if sequential:
        m = K.Sequential([K.Input((6,)), K.layers.Dense(4, activation="relu"), K.layers.Dense(3)], name="seq")
    else:
        i = K.Input((6,))
        x = K.layers.Dense(4, kernel_regularizer=K.regularizers.L2())(i)
        x = K.layers.BatchNormalization()(x)
        m = K.Model(i, K.layers.Dense(3, activation="softmax")(x))
    rng = np.random.default_rng(0)
    m.set_weights([rng.uniform(0.5, 1.5, w.shape).astype("float32") for w in m.get_weights()])
    m.compile(optimizer=K.optimizers.Adam(amsgrad=True), loss="categorical_crossentropy",
              metrics=[K.metrics.AUC(name="auc")])   # (named: a file the same after any other test)
    return m


X = np.random.default_rng(1).random((5, 6)).astype("float32")


@pytest.mark.parametrize("sequential", [False, True], ids=["functional", "sequential"])
def test_a_legacy_h5_file_boundfit_writes_opens_in_keras(sequential, tmp_path):
    path = tmp_path / "model.h5"
    b = _model(bf, sequential)
    b.save(path)

    def compute():
        K = keras_ref.load()
        k = K.models.load_model(path)
        return {"pred": k.predict(X, verbose=0), "optimizer": type(k.optimizer).__name__,
                "amsgrad": bool(k.optimizer.amsgrad), "loss": getattr(k.loss, "__name__", str(k.loss))}
    k = keras_recorded.case(compute, files=[path])
    np.testing.assert_allclose(b.predict(X, verbose=0), k["pred"], rtol=1e-5, atol=1e-6)
    assert (k["optimizer"], k["amsgrad"], k["loss"]) == ("Adam", True, "categorical_crossentropy")
    again = bf.models.load_model(path)
    np.testing.assert_array_equal(again.predict(X, verbose=0), b.predict(X, verbose=0))


def test_a_legacy_h5_file_keras_writes_opens_in_boundfit(tmp_path):
    path = tmp_path / "keras.h5"

    def compute(p):
        K = keras_ref.load()
        k = _model(K)
        k.fit(X, np.eye(3)[[0, 1, 2, 0, 1]], verbose=0)
        k.save(p)
        return {"pred": k.predict(X, verbose=0)}
    k = keras_recorded.keras_file(path, compute)
    b = bf.models.load_model(path)
    np.testing.assert_allclose(b.predict(X, verbose=0), k["pred"], rtol=1e-5, atol=1e-6)
    assert type(b.optimizer).__name__ == "Adam" and b.optimizer.amsgrad
    b.fit(X, np.eye(3)[[0, 1, 2, 0, 1]], verbose=0)   # compiled from its training_config


def test_a_nested_model_in_a_legacy_h5_file_is_refused_by_name(tmp_path):
    inner = bf.Sequential([bf.Input((6,)), bf.layers.Dense(3)], name="inner")
    i = bf.Input((6,))
    m = bf.Model(i, bf.layers.Dense(2)(inner(i)))
    with pytest.raises(ValueError, match="nested model 'inner' cannot go into a legacy HDF5"):
        m.save(tmp_path / "m.h5")
    assert not (tmp_path / "m.h5").exists()


def test_model_checkpoint_takes_a_legacy_h5_path(tmp_path):
    m = _model(bf)
    path = tmp_path / "best_model.h5"
    m.fit(X, np.eye(3)[[0, 1, 2, 0, 1]], epochs=2, verbose=0,
          callbacks=[bf.callbacks.ModelCheckpoint(str(path), save_best_only=True, monitor="loss")])
    np.testing.assert_allclose(bf.models.load_model(path).predict(X, verbose=0), m.predict(X, verbose=0), rtol=1e-5)
