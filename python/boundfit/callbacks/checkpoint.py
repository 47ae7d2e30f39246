"""ModelCheckpoint and BackupAndRestore (Keras 3 arguments and file names),
for every kind of model (Sequential, functional, nested, subclassed: Keras's
layouts, keras_graph.py). Every file is written atomically (see saving/atomic_write.py): a failure
mid-save leaves the previous checkpoint intact."""

import json
import os
import shutil
import warnings

from ..runtime import dist_group
from ..saving.atomic_write import atomic_write
from ..saving.keras_file import read_extra_attrs, save_weights
from .base import Callback
from .early_stopping import resolve_mode


def _check_save_freq(save_freq, who):
    if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
        raise ValueError(f"{who}: unrecognized save_freq: {save_freq!r}. Expected 'epoch' or a positive int")


class _BatchCounter:
    """Keras's batch counting for save_freq=<int>: batches since the last save."""

    def __init__(self, save_freq):
        self.save_freq, self.seen_since_save, self.last_batch = save_freq, 0, None

    def due(self, batch):
        if self.save_freq == "epoch":
            return False
        add = batch + 1 if self.last_batch is None or batch <= self.last_batch else batch - self.last_batch
        self.seen_since_save += add
        self.last_batch = batch
        if self.seen_since_save >= self.save_freq:
            self.seen_since_save = 0
            return True
        return False


class ModelCheckpoint(Callback):
    """Keras 3's `ModelCheckpoint(filepath, monitor='val_loss', save_best_only=False, save_weights_only=False, ...)`:
    saves the model (atomically) during fit."""
    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False, save_weights_only=False,
                 mode="auto", save_freq="epoch", initial_value_threshold=None):
        super().__init__()
        self.filepath = os.fspath(filepath)
        self.monitor, self.verbose = monitor, verbose
        self.save_best_only, self.save_weights_only = save_best_only, save_weights_only
        self.mode = resolve_mode(mode, monitor, "ModelCheckpoint")
        _check_save_freq(save_freq, "ModelCheckpoint")
        self.save_freq = save_freq
        self._chunk_hooks = save_freq == "epoch"   # per-batch steps only when saving every N batches
        self.best = initial_value_threshold
        self._counter = _BatchCounter(save_freq)
        self._current_epoch = 0
        if save_weights_only and not self.filepath.endswith(".weights.h5"):
            raise ValueError("When using `save_weights_only=True` in `ModelCheckpoint`, the filepath provided must "
                             f"end in `.weights.h5` (Keras weights format). Received: filepath={self.filepath}")
        if not save_weights_only and not self.filepath.endswith((".keras", ".h5")):
            raise ValueError("The filepath provided must end in `.keras` (Keras model format). "
                             f"Received: filepath={self.filepath}")

    def _improved(self, cur):
        if self.best is None:
            return True
        return cur < self.best if self.mode == "min" else cur > self.best

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self._counter.due(batch):
            self._save(self._current_epoch, batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, None, logs)

    def _path(self, epoch, batch, logs):
        try:
            if batch is None or "batch" in logs:
                return self.filepath.format(epoch=epoch + 1, **logs)
            return self.filepath.format(epoch=epoch + 1, batch=batch + 1, **logs)
        except KeyError as e:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". Reason: {e}') from None

    def _should_save(self, epoch, logs, path):
        if not self.save_best_only:
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: saving model to {path}")
            return True
        cur = logs.get(self.monitor)
        if cur is None:
            warnings.warn(f"Can save best model only with {self.monitor} available.", stacklevel=3)
            return True
        best = "None" if self.best is None else f"{self.best:.5f}"
        if self._improved(cur):
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {best} to {cur:.5f}, saving model to {path}")
            self.best = cur
            return True
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {best}")
        return False

    def _save(self, epoch, batch, logs):
        logs = logs or {}
        path = self._path(epoch, batch, logs)
        if os.path.isdir(path):
            raise IOError(f"Please specify a non-directory filepath for ModelCheckpoint. Filepath used is an existing "
                          f"directory: {path}")
        if not self._should_save(epoch, logs, path):
            return
        d = os.path.dirname(path)
        if d:
            os.makedirs(d, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(path, overwrite=True)
        else:
            self.model.save(path, overwrite=True)


class BackupAndRestore(Callback):
    """Backs up weights, optimizer state and the epoch counter to backup_dir
    (latest.weights.h5, which also holds the epoch, and Keras's
    training_metadata.json); a later fit with the same
    backup_dir (after an exception, or in a restarted kernel) resumes from the
    last completed epoch. The backup is deleted when training ends normally."""

    def __init__(self, backup_dir, save_freq="epoch", double_checkpoint=False, delete_checkpoint=True):
        super().__init__()
        if not backup_dir:
            raise ValueError("Empty `backup_dir` argument passed")
        _check_save_freq(save_freq, "BackupAndRestore")
        self.backup_dir, self.save_freq = os.fspath(backup_dir), save_freq
        self.double_checkpoint, self.delete_checkpoint = double_checkpoint, delete_checkpoint
        self._chunk_hooks = save_freq == "epoch"
        self._weights_path = os.path.join(self.backup_dir, "latest.weights.h5")
        self._metadata_path = os.path.join(self.backup_dir, "training_metadata.json")
        self._counter = _BatchCounter(save_freq)
        self._current_epoch = 0

    def on_train_begin(self, logs=None):
        if not self.model.built:
            raise ValueError("To use the BackupAndRestore callback, your model must be built before you call fit(): "
                             "give the first layer input_shape= or call build()")
        try:
            self._load()
        except OSError:
            prev = self._weights_path + ".bkp"
            if not os.path.exists(prev):
                raise
            shutil.copyfile(prev, self._weights_path)
            if os.path.exists(self._metadata_path + ".bkp"):
                shutil.copyfile(self._metadata_path + ".bkp", self._metadata_path)
            self._load()

    def _load(self):
        epoch = None
        if os.path.exists(self._weights_path):
            self.model.load_weights(self._weights_path)
            epoch = read_extra_attrs(self._weights_path).get("backup_epoch")  # saved with the weights, atomically
        if epoch is None and os.path.exists(self._metadata_path):   # a backup Keras wrote
            with open(self._metadata_path) as f:
                epoch = json.load(f)["epoch"]
        if epoch is not None:
            self.model._initial_epoch = int(epoch)

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self._counter.due(batch):
            self._save()

    def on_epoch_end(self, epoch, logs=None):
        self._current_epoch = epoch + 1
        self._counter.last_batch = None
        if self.save_freq == "epoch":
            self._save()

    def _save(self):
        if not dist_group.is_chief():   # [dist hook] rank 0 writes the backup
            return
        os.makedirs(self.backup_dir, exist_ok=True)
        if self.double_checkpoint:
            for p in (self._weights_path, self._metadata_path):
                if os.path.exists(p):
                    shutil.copyfile(p, p + ".bkp")
        # the epoch goes into the weights file too, so the pair can never disagree after a crash between the two
        save_weights(self.model, self._weights_path, overwrite=True, extra_attrs={"backup_epoch": self._current_epoch})
        meta = json.dumps({"epoch": self._current_epoch, "batch": self._counter.last_batch or 0}).encode()
        atomic_write(self._metadata_path, lambda f: f.write(meta))

    def on_train_end(self, logs=None):
        if self.delete_checkpoint and os.path.exists(self.backup_dir) and dist_group.is_chief():   # [dist hook]
            shutil.rmtree(self.backup_dir)
