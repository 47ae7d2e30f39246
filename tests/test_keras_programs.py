"""An everyday Keras program (the guides' patterns: a Sequential model,
training with built-in methods, callbacks, schedules, saving and loading) run
unchanged with `keras` bound to Keras 3 and to boundfit; the files each writes
open in the other. Keras's run is recorded (helpers/keras_recorded.py), its
final file too."""

import os

import numpy as np

import boundfit

import keras_ref
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: files keyed by their names
from helpers.keras_recorded import case

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
    """The program run with keras bound to the module given, writing into out: what the test checks of it"""
    scope = {"keras": keras, "out": str(out)}
    exec(PROGRAM, scope)
    r = scope["result"]
    with open(out / "log.csv") as f:
        header = f.readline().strip()
    return {"files": sorted(os.listdir(out)), "history": sorted(r["history"]), "seen": r["seen"],
            "iterations": r["iterations"], "restored": r["restored"], "probs": r["probs"], "log_header": header}


X = np.random.default_rng(1).random((8, 8, 8, 1), dtype=np.float32)


def _keras_run():
    """Keras's side (recorded): the program's results, the final.keras it wrote and its predictions on X"""
    import pathlib
    import tempfile
    keras = keras_ref.load()
    with tempfile.TemporaryDirectory() as d:
        r = _run(keras, pathlib.Path(d))
        final = pathlib.Path(d) / "final.keras"
        r["final"] = np.frombuffer(final.read_bytes(), np.uint8)
        r["predict"] = keras.models.load_model(final).predict(X, verbose=0)
    return r


def test_the_same_program_runs_with_keras_and_with_boundfit(tmp_path):
    results = {"keras": case(_keras_run)}
    out = tmp_path / "boundfit"
    out.mkdir()
    results["boundfit"] = _run(boundfit, out)
    for name, r in results.items():
        assert r["files"] == ["best.weights.h5", "ckpt-01.keras", "ckpt-02.keras", "ckpt-03.keras",
                              "final.keras", "final.weights.h5", "log.csv"], name
        assert r["history"] == ["accuracy", "loss", "val_accuracy", "val_loss"], name
        assert r["seen"] == list(range(5)) * 3 and r["iterations"] == 15, name
        np.testing.assert_allclose(r["restored"], r["probs"], rtol=1e-5, atol=1e-6)
        assert r["log_header"] == "epoch,accuracy,loss,val_accuracy,val_loss"
    # each side's final file opens in the other with the same predictions
    (tmp_path / "keras.keras").write_bytes(results["keras"]["final"].tobytes())
    ours = boundfit.models.load_model(tmp_path / "keras.keras")
    np.testing.assert_allclose(ours.predict(X, verbose=0), results["keras"]["predict"], rtol=1e-5, atol=1e-6)
    ours = boundfit.models.load_model(out / "final.keras")

    def opened():
        theirs = keras_ref.load().models.load_model(out / "final.keras")
        return {"predict": theirs.predict(X, verbose=0), "iterations": int(theirs.optimizer.iterations)}
    theirs = case(opened, files=[out / "final.keras"])
    np.testing.assert_allclose(ours.predict(X, verbose=0), theirs["predict"], rtol=1e-5, atol=1e-6)
    assert theirs["iterations"] == 15
