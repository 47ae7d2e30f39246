"""CSVLogger (one row per epoch, Keras's columns) and TerminateOnNaN."""

import csv
import os

import numpy as np

from .base import Callback


class CSVLogger(Callback):
    """Keras 3's `CSVLogger(filename, separator=',', append=False)`: the epoch logs written to a CSV file."""
    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename, self.sep, self.append = os.fspath(filename), separator, append
        self.writer, self.keys, self.csv_file = None, None, None
        self.append_header = True

    def on_train_begin(self, logs=None):
        if self.append:
            if os.path.exists(self.filename):
                with open(self.filename) as f:
                    self.append_header = not bool(len(f.readline()))
            mode = "a"
        else:
            mode = "w"
        self.writer, self.keys = None, None
        self.csv_file = open(self.filename, mode, newline="")

    @staticmethod
    def _value(k):
        if isinstance(k, str):
            return k
        if isinstance(k, (list, tuple, np.ndarray)) and np.ndim(k) > 0:
            return f'"[{", ".join(map(str, k))}]"'
        return k

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
        if self.writer is None:
            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch"] + self.keys, delimiter=self.sep,
                                         lineterminator="\n")
            if self.append_header:
                self.writer.writeheader()
        row = {"epoch": epoch}
        row.update((k, self._value(logs.get(k, "NA"))) for k in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        if self.csv_file is not None:
            self.csv_file.close()
            self.csv_file, self.writer = None, None


class TerminateOnNaN(Callback):
    """Stops training when the loss becomes NaN or Inf. The engine's guard
    finds a non-finite loss before the update is applied; with this callback
    fit stops there (weights of the last finite step) instead of raising."""
    _chunk_hooks = True

    def __init__(self):
        super().__init__()
        self.terminated_batch = None

    def on_train_begin(self, logs=None):
        self.terminated_batch = None

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not np.isfinite(loss):
            self.terminate(batch)

    def terminate(self, batch):
        print(f"Batch {batch}: Invalid loss, terminating training")
        self.terminated_batch = batch
        self.model.stop_training = True
