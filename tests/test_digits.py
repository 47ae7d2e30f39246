"""A real data set no one here made: the 8x8 handwritten digits shipped in the
package (boundfit.datasets.digits, scikit-learn's load_digits split 80 / 20)."""

import numpy as np

import boundfit as bf
from boundfit import layers
from boundfit.datasets import digits


def split():
    (xtr, ytr), (xte, yte) = digits.load_data()
    flat = [(x.reshape(len(x), 64) / 16.0).astype(np.float32) for x in (xtr, xte)]
    return flat[0], ytr, flat[1], yte


def test_mlp_reaches_95_percent_on_digits():
    xtr, ytr, xte, yte = split()
    m = bf.Sequential([layers.Dense(64, activation="relu", input_shape=(64,)), layers.Dense(10, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    hist = m.fit(xtr, ytr, batch_size=32, epochs=40, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    loss, acc = m.evaluate(xte, yte, verbose=0)
    assert acc >= 0.95
    pred = m.predict(xte, verbose=0)
    assert pred.shape == (len(xte), 10)
    np.testing.assert_allclose(pred.sum(1), 1, rtol=1e-5)
    assert abs((pred.argmax(1) == yte).mean() - acc) < 1e-9


def test_keras_code_runs_as_written():
    import boundfit as keras
    xtr, ytr, xte, yte = split()
    model = keras.models.Sequential([keras.layers.Input(shape=(64,)), keras.layers.Dense(32, activation="relu"),
                                     keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    h = model.fit(xtr, ytr, epochs=5, batch_size=64, validation_data=(xte, yte), verbose=0)
    assert set(h.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert h.history["val_accuracy"][-1] > 0.85
