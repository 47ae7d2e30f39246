"""An everyday Keras program (the guides' patterns: a Sequential model,
training with built-in methods, callbacks, schedules, saving and loading) run
unchanged with `keras` bound to Keras 3 and to boundfit; the files each writes
open in the other."""

import os

import numpy as np
import pytest

import boundfit

import keras_ref

PROGRAM = '''
import numpy as np

rng = np.random.default_rng(0)
x_train = rng.random((96, 8, 8, 1), dtype=np.float32)
y_train = (x_train.mean(axis=(1, 2, 3)) > 0.5).astype("int64") + (x_train[:, 0, 0, 0] > 0.5)
x_test, y_test = x_train[:32], y_train[:32]

model = keras.Sequential([
    keras.layers.Input(shape=(8, 8, 1)),
    keras.layers.Conv2D(4, (3, 3), activation="relu", padding="same"),
    keras.layers.MaxPooling2D((2, 2)),
    keras.layers.BatchNormalization(),
    keras.layers.Flatten(),
    keras.layers.Dropout(0.1),
    keras.layers.Dense(16, activation="relu"),
    keras.layers.Dense(3, activation="softmax"),
])
lr = keras.optimizers.schedules.ExponentialDecay(1e-2, decay_steps=10, decay_rate=0.9, staircase=True)
model.compile(optimizer=keras.optimizers.Adam(learning_rate=lr), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
seen = []
callbacks = [
    keras.callbacks.ModelCheckpoint(f"{out}/ckpt-{{epoch:02d}}.keras", monitor="val_loss", save_best_only=False),
    keras.callbacks.ModelCheckpoint(f"{out}/best.weights.h5", monitor="val_accuracy", save_best_only=True,
                                    save_weights_only=True),
    keras.callbacks.EarlyStopping(monitor="val_loss", patience=5, restore_best_weights=True),
    keras.callbacks.CSVLogger(f"{out}/log.csv"),
    keras.callbacks.BackupAndRestore(f"{out}/backup"),
    keras.callbacks.TerminateOnNaN(),
    keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: seen.append(batch)),
]
history = model.fit(x_train, y_train, batch_size=16, epochs=3, validation_split=0.25, callbacks=callbacks,
                    verbose=0)
loss, acc = model.evaluate(x_test, y_test, verbose=0)
probs = model.predict(x_test, verbose=0)
model.save(f"{out}/final.keras")
model.save_weights(f"{out}/final.weights.h5")
restored = keras.models.load_model(f"{out}/final.keras")
restored2 = keras.saving.load_model(f"{out}/final.keras")
restored.load_weights(f"{out}/final.weights.h5")
result = dict(history=history.history, loss=loss, acc=acc, probs=probs, seen=seen,
              restored=restored.predict(x_test, verbose=0), iterations=int(model.optimizer.iterations))
'''


def _run(keras, out):
    scope = {"keras": keras, "out": str(out)}
    exec(PROGRAM, scope)
    return scope["result"]


def test_the_same_program_runs_with_keras_and_with_boundfit(tmp_path):
    keras = keras_ref.load()
    results = {}
    for name, mod in (("keras", keras), ("boundfit", boundfit)):
        out = tmp_path / name
        out.mkdir()
        r = results[name] = _run(mod, out)
        assert sorted(os.listdir(out)) == ["best.weights.h5", "ckpt-01.keras", "ckpt-02.keras", "ckpt-03.keras",
                                           "final.keras", "final.weights.h5", "log.csv"], name
        assert sorted(r["history"]) == ["accuracy", "loss", "val_accuracy", "val_loss"], name
        assert r["seen"] == list(range(5)) * 3 and r["iterations"] == 15, name
        np.testing.assert_allclose(r["restored"], r["probs"], rtol=1e-5, atol=1e-6)
        with open(out / "log.csv") as f:
            assert f.readline().strip() == "epoch,accuracy,loss,val_accuracy,val_loss"
    # each side's final file opens in the other with the same predictions
    x = np.random.default_rng(1).random((8, 8, 8, 1), dtype=np.float32)
    ours = boundfit.models.load_model(tmp_path / "keras" / "final.keras")
    theirs = keras.models.load_model(tmp_path / "keras" / "final.keras")
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    ours = boundfit.models.load_model(tmp_path / "boundfit" / "final.keras")
    theirs = keras.models.load_model(tmp_path / "boundfit" / "final.keras")
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    assert int(theirs.optimizer.iterations) == 15
