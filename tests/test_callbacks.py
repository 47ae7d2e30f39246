"""Callbacks on real fits, with Keras 3's names and behaviour: batch hooks once
per batch, model.stop_training, ModelCheckpoint names and best-only logic,
ReduceLROnPlateau / LearningRateScheduler changing the engine's rate, CSVLogger
contents, TerminateOnNaN, BackupAndRestore resuming an interrupted run to the
same weights as an uninterrupted one."""

import csv
import os

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers as L
from boundfit.callbacks import (BackupAndRestore, Callback, CallbackList, CSVLogger, History, LambdaCallback,
                                LearningRateScheduler, ModelCheckpoint, ReduceLROnPlateau, TerminateOnNaN)


def _data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    return x, (x @ np.array([[1.0], [-2.0], [0.5], [0.0]], np.float32) + 0.3).astype(np.float32)


def _model(opt=None):
    m = bf.Sequential([L.Dense(8, activation="tanh", input_shape=(4,)), L.Dense(1)])
    m.compile(optimizer=opt or bf.optimizers.SGD(0.01), loss="mse")
    return m


class Recorder(Callback):
    def __init__(self):
        super().__init__()
        self.calls, self.outputs = [], []

    def on_train_batch_begin(self, batch, logs=None):
        self.calls.append(("train_begin", batch))

    def on_train_batch_end(self, batch, logs=None):
        self.calls.append(("train_end", batch, sorted(logs)))

    def on_test_batch_end(self, batch, logs=None):
        self.calls.append(("test_end", batch))

    def on_predict_batch_end(self, batch, logs=None):
        self.calls.append(("predict_end", batch))
        self.outputs.append(logs["outputs"])


def test_batch_hooks_run_once_per_batch():
    x, y = _data()
    m, r = _model(), Recorder()
    m.fit(x, y, batch_size=8, epochs=2, validation_data=(x[:20], y[:20]), validation_batch_size=10, verbose=0,
          callbacks=[r])
    train_end = [c[1] for c in r.calls if c[0] == "train_end"]
    assert train_end == list(range(8)) * 2
    assert [c[1] for c in r.calls if c[0] == "train_begin"] == list(range(8)) * 2
    assert [c[1] for c in r.calls if c[0] == "test_end"] == [0, 1] * 2
    assert all(c[2] == ["loss"] for c in r.calls if c[0] == "train_end")
    r.calls.clear()
    m.evaluate(x, y, batch_size=16, verbose=0, callbacks=[r])
    p = m.predict(x, batch_size=32, verbose=0, callbacks=[r])
    assert r.calls == [("test_end", i) for i in range(4)] + [("predict_end", 0), ("predict_end", 1)]
    np.testing.assert_array_equal(np.concatenate(r.outputs), p)    # logs["outputs"]: each batch's predictions


def test_batch_hooks_of_a_python_data_source_run_once_per_batch():
    x, y = _data(32)
    r = Recorder()
    _model().fit(((x[i:i + 8], y[i:i + 8]) for i in range(0, 32, 8)), steps_per_epoch=4, verbose=0, callbacks=[r])
    assert [c for c in r.calls if c[0] == "train_begin"] == [("train_begin", i) for i in range(4)]


def test_steps_run_in_chunks_unless_a_batch_hook_is_overridden():
    m = _model()
    epoch_only = LambdaCallback(on_epoch_end=lambda e, logs: None)
    assert not CallbackList([History(), epoch_only, ModelCheckpoint("x.keras"), BackupAndRestore("d")], m,
                            {}).per_batch("train")
    assert CallbackList([LambdaCallback(on_train_batch_end=lambda b, logs: None)], m, {}).per_batch("train")
    assert CallbackList([ModelCheckpoint("x.keras", save_freq=3)], m, {}).per_batch("train")

    class OldStyle(Callback):
        def on_batch_end(self, batch, logs=None):
            pass
    assert CallbackList([OldStyle()], m, {}).per_batch("train")
    assert not CallbackList([OldStyle()], m, {}).per_batch("test")


def test_stop_training_in_a_batch_hook_stops_after_that_batch():
    x, y = _data()
    m = _model()
    seen = []

    def stop(batch, logs):
        seen.append(batch)
        if batch == 2:
            m.stop_training = True
    h = m.fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=[LambdaCallback(on_train_batch_end=stop)])
    assert seen == [0, 1, 2] and h.epoch == [0] and m.optimizer.iterations == 3


def test_model_checkpoint_names_files_with_epoch_and_logs(tmp_path):
    x, y = _data()
    m = _model()
    pattern = str(tmp_path / "ck-{epoch:02d}-{val_loss:.2f}.keras")
    h = m.fit(x, y, batch_size=16, epochs=3, validation_split=0.25, verbose=0,
              callbacks=[ModelCheckpoint(pattern, monitor="val_loss")])
    names = sorted(os.listdir(tmp_path))
    assert names == [f"ck-{e + 1:02d}-{v:.2f}.keras" for e, v in enumerate(h.history["val_loss"])]
    last = bf.models.load_model(tmp_path / names[-1])
    np.testing.assert_allclose(last.predict(x, verbose=0), m.predict(x, verbose=0), rtol=1e-6)


@pytest.mark.parametrize("mode,threshold,saved", [("min", None, [1, 2, 3]), ("max", None, [1]),
                                                   ("min", 0.0, [])])
def test_model_checkpoint_save_best_only(tmp_path, mode, threshold, saved):
    x, y = _data()
    m = _model()
    h = m.fit(x, y, batch_size=16, epochs=3, verbose=0, callbacks=[ModelCheckpoint(
        str(tmp_path / "w-{epoch}.weights.h5"), monitor="loss", mode=mode, save_best_only=True,
        save_weights_only=True, initial_value_threshold=threshold)])
    assert h.history["loss"][0] > h.history["loss"][1] > h.history["loss"][2]   # the loss keeps falling
    assert sorted(os.listdir(tmp_path)) == [f"w-{e}.weights.h5" for e in saved]


def test_model_checkpoint_best_file_holds_the_best_weights(tmp_path):
    x, y = _data()
    m = _model()
    path = tmp_path / "best.weights.h5"
    losses, weights = [], []
    m.fit(x, y, batch_size=16, epochs=3, verbose=0,
          callbacks=[ModelCheckpoint(str(path), monitor="loss", mode="max", save_best_only=True,
                                     save_weights_only=True),
                     LambdaCallback(on_epoch_end=lambda e, logs: weights.append(m.get_weights()))])
    r = _model()
    r.load_weights(path)
    for a, b in zip(r.get_weights(), weights[0]):   # the highest loss was epoch 1's
        np.testing.assert_array_equal(a, b)


def test_model_checkpoint_every_n_batches(tmp_path):
    x, y = _data()
    _model().fit(x, y, batch_size=8, epochs=1, verbose=0,
                 callbacks=[ModelCheckpoint(str(tmp_path / "b-{epoch}-{batch}.keras"), save_freq=3)])
    assert sorted(os.listdir(tmp_path)) == ["b-1-3.keras", "b-1-6.keras"]


def test_model_checkpoint_arguments_checked():
    with pytest.raises(ValueError, match=r"\.weights\.h5"):
        ModelCheckpoint("m.keras", save_weights_only=True)
    with pytest.raises(ValueError, match=r"\.keras"):
        ModelCheckpoint("m.hdf5")   # (.keras or Keras's legacy .h5, as Keras)
    with pytest.raises(ValueError, match="save_freq"):
        ModelCheckpoint("m.keras", save_freq="batch")


def test_reduce_lr_on_plateau_lowers_the_engine_rate():
    x, y = _data()
    m = _model(bf.optimizers.SGD(0.02))
    rates = []
    cb = LambdaCallback(on_epoch_begin=lambda e, logs: rates.append(m._engine.learning_rate()))
    # mode='max' on a falling loss: never improves after epoch 1, so every epoch past patience reduces
    h = m.fit(x, y, batch_size=16, epochs=5, verbose=0,
              callbacks=[cb, ReduceLROnPlateau(monitor="loss", mode="max", factor=0.5, patience=1, min_lr=0.004)])
    assert rates == pytest.approx([0.02, 0.02, 0.01, 0.005, 0.004])
    assert h.history["learning_rate"] == pytest.approx(rates)   # as Keras: the rate the epoch trained with
    with pytest.raises(ValueError, match="factor"):
        ReduceLROnPlateau(factor=1.0)


def test_changed_rate_is_the_one_the_updates_use():
    """Two epochs at 0.05 then one at 0.01 (LearningRateScheduler) equals the
    same epochs run with the rates set by hand between fits."""
    x, y = _data()
    a, b = _model(bf.optimizers.SGD(0.05)), _model(bf.optimizers.SGD(0.05))
    b.set_weights(a.get_weights())
    h = a.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0,
              callbacks=[LearningRateScheduler(lambda epoch, lr: 0.01 if epoch == 2 else lr)])
    b.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    b.compile(optimizer=bf.optimizers.SGD(0.01), loss="mse")
    b.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(u, v, rtol=1e-6)
    assert h.history["learning_rate"] == pytest.approx([0.05, 0.05, 0.01])


@pytest.mark.parametrize("sep", [",", ";"])
def test_csv_logger_writes_one_row_per_epoch(tmp_path, sep):
    x, y = _data()
    path = tmp_path / "log.csv"
    h = _model().fit(x, y, batch_size=16, epochs=2, validation_split=0.25, verbose=0,
                     callbacks=[CSVLogger(path, separator=sep)])
    with open(path) as f:
        rows = list(csv.reader(f, delimiter=sep))
    assert rows[0] == ["epoch", "loss", "val_loss"]
    assert [int(r[0]) for r in rows[1:]] == [0, 1]
    assert [float(r[1]) for r in rows[1:]] == h.history["loss"]
    assert [float(r[2]) for r in rows[1:]] == h.history["val_loss"]
    _model().fit(x, y, batch_size=16, epochs=1, validation_split=0.25, verbose=0,
                 callbacks=[CSVLogger(path, separator=sep, append=True)])
    with open(path) as f:
        rows = list(csv.reader(f, delimiter=sep))
    assert len(rows) == 4 and rows[3][0] == "0" and rows.count(rows[0]) == 1


def test_terminate_on_nan_stops_instead_of_raising():
    x, y = _data()
    y = y * 1e18
    m = _model(bf.optimizers.SGD(1e3))
    with pytest.raises(bf.NonFiniteError):
        m.fit(x, y, batch_size=8, epochs=2, verbose=0)
    m = _model(bf.optimizers.SGD(1e3))
    t = TerminateOnNaN()
    h = m.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[t])
    assert t.terminated_batch is not None and np.isnan(h.history["loss"][-1]) and h.epoch == [0]
    assert all(np.isfinite(w).all() for w in m.get_weights())


class Interrupt(Callback):
    """Raises from a batch hook in the middle of an epoch: a crash mid-run."""

    def __init__(self, epoch, batch):
        super().__init__()
        self.at, self.epoch = (epoch, batch), None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if (self.epoch, batch) == self.at:
            raise KeyboardInterrupt("simulated interruption")


@pytest.mark.parametrize("device", ["cpu", "emu"])
def test_backup_and_restore_resumes_to_the_same_weights(tmp_path, device):
    x, y = _data()
    w0 = _model().get_weights()

    def fresh():   # a new model object, as after a kernel restart
        m = _model(bf.optimizers.Adam(0.01))
        m.set_weights(w0)
        return m
    ref = fresh()
    ref.fit(x, y, batch_size=16, epochs=4, shuffle=False, verbose=0, device=device)

    backup = tmp_path / "backup"
    m = fresh()
    with pytest.raises(KeyboardInterrupt):
        m.fit(x, y, batch_size=16, epochs=4, shuffle=False, verbose=0, device=device,
              callbacks=[BackupAndRestore(backup), Interrupt(epoch=2, batch=1)])
    assert sorted(os.listdir(backup)) == ["latest.weights.h5", "training_metadata.json"]
    m = fresh()
    h = m.fit(x, y, batch_size=16, epochs=4, shuffle=False, verbose=0, device=device,
              callbacks=[BackupAndRestore(backup)])
    assert h.epoch == [2, 3]                    # resumed after the last completed epoch
    assert m.optimizer.iterations == ref.optimizer.iterations == 16
    for a, b in zip(m.get_weights(), ref.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert not backup.exists()                  # deleted once training ended normally


def test_lambda_callback_and_progbar_logger(capsys):
    x, y = _data(16)
    ends = []
    with pytest.raises(ValueError, match="on_epoch_finish"):
        LambdaCallback(on_epoch_finish=print)
    _model().fit(x, y, batch_size=8, epochs=2, verbose=2,
                 callbacks=[LambdaCallback(on_train_end=lambda logs: ends.append(1))])
    out = capsys.readouterr().out
    assert "Epoch 1/2" in out and "Epoch 2/2" in out and ends == [1]


_KILLED_CHILD = r"""
import os, sys, numpy as np, boundfit as bf
from boundfit import layers as L
d = sys.argv[1]
x, y, = np.load(d + "/x.npy"), np.load(d + "/y.npy")
m = bf.Sequential([L.Dense(8, activation="tanh", input_shape=(4,)), L.Dense(1)])
m.compile(optimizer=bf.optimizers.Adam(0.01), loss="mse")
m.load_weights(d + "/w0.weights.h5")
state = {}
def die(batch, logs):
    if state.get("epoch") == 2 and batch == 1:
        os._exit(17)                      # the kernel dies: no cleanup, no exception
m.fit(x, y, batch_size=16, epochs=4, shuffle=False, verbose=0,
      callbacks=[bf.callbacks.BackupAndRestore(d + "/backup"),
                 bf.callbacks.LambdaCallback(on_epoch_begin=lambda e, logs: state.update(epoch=e),
                                             on_train_batch_end=die)])
"""


def test_backup_and_restore_resumes_after_the_process_died(tmp_path):
    import subprocess
    import sys
    x, y = _data()
    ref = _model(bf.optimizers.Adam(0.01))
    ref.save_weights(tmp_path / "w0.weights.h5")
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    ref.fit(x, y, batch_size=16, epochs=4, shuffle=False, verbose=0)
    p = subprocess.run([sys.executable, "-c", _KILLED_CHILD, str(tmp_path)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 17, p.stderr
    m = _model(bf.optimizers.Adam(0.01))
    h = m.fit(x, y, batch_size=16, epochs=4, shuffle=False, verbose=0,
              callbacks=[BackupAndRestore(tmp_path / "backup")])
    assert h.epoch == [2, 3] and m.optimizer.iterations == 16
    for a, b in zip(m.get_weights(), ref.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_setting_optimizer_learning_rate_reaches_the_engine():
    """Keras code sets model.optimizer.learning_rate between fits or in a callback."""
    x, y = _data()
    a, b = _model(bf.optimizers.SGD(0.05)), _model(bf.optimizers.SGD(0.05))
    b.set_weights(a.get_weights())

    def lower(epoch, logs):
        if epoch == 0:
            a.optimizer.learning_rate = 0.01
    a.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0, callbacks=[LambdaCallback(on_epoch_end=lower)])
    b.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    b.optimizer.learning_rate = 0.01
    assert b._engine.learning_rate() == pytest.approx(0.01)
    b.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(u, v, rtol=1e-6)
    assert b.optimizer.get_config()["learning_rate"] == 0.01
    with pytest.raises(ValueError, match="learning_rate"):
        b.optimizer.learning_rate = -1.0
    assert b._engine.learning_rate() == pytest.approx(0.01)


def test_hooks_get_logs_positionally_as_keras_passes_them():
    x, y = _data(16)
    got = []

    class Named(Callback):
        def on_epoch_end(self, epoch, log_dict):
            got.append((epoch, sorted(log_dict)))

        def on_train_end(self, final):
            got.append(final)
    _model().fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[Named()])
    assert got[0] == (0, ["loss"]) and sorted(got[1]) == ["loss"]   # on_train_end gets the last epoch's logs


def test_early_stopping_restores_best_weights_at_train_end_as_keras():
    """Keras 3 puts the best weights back when training ends, stopped early or not."""
    x, y = _data()
    m = _model(bf.optimizers.SGD(0.01))
    weights = []
    m.fit(x, y, batch_size=16, epochs=3, verbose=0,
          callbacks=[LambdaCallback(on_epoch_end=lambda e, logs: weights.append(m.get_weights())),
                     bf.callbacks.EarlyStopping(monitor="loss", mode="max", patience=5, restore_best_weights=True)])
    for a, b in zip(m.get_weights(), weights[0]):   # a falling loss watched with mode='max': epoch 1 was "best"
        np.testing.assert_array_equal(a, b)
