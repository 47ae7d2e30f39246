"""EarlyStopping: stop when a monitored quantity stops improving (Keras 3 arguments)."""

import warnings

from .base import Callback


def resolve_mode(mode, monitor, who):
    """'min' or 'max' for a monitored log key under mode 'auto', 'min' or 'max' (as Keras decides 'auto')."""
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"{who}: mode must be 'auto', 'min' or 'max', got {mode!r}")
    if mode == "auto":
        return "max" if ("acc" in monitor or monitor.startswith("fmeasure") or monitor.endswith("auc")) else "min"
    return mode


class EarlyStopping(Callback):
    """Keras 3's `EarlyStopping(monitor='val_loss', patience=0, restore_best_weights=False, ...)`: stops fit when the
    monitored value stops improving."""
    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto", baseline=None,
                 restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        self.monitor, self.min_delta, self.patience = monitor, abs(min_delta), patience
        self.verbose, self.baseline = verbose, baseline
        self.restore_best_weights, self.start_from_epoch = restore_best_weights, start_from_epoch
        self.mode = resolve_mode(mode, monitor, "EarlyStopping")
        self.stopped_epoch = 0

    def on_train_begin(self, logs=None):
        self.wait, self.best, self.best_weights, self.stopped_epoch, self.best_epoch = 0, None, None, 0, 0

    def _better(self, cur, ref):
        if ref is None:
            return True
        return cur < ref - self.min_delta if self.mode == "min" else cur > ref + self.min_delta

    def on_epoch_end(self, epoch, logs=None):
        cur = (logs or {}).get(self.monitor)
        if cur is None:
            warnings.warn(f"Early stopping conditioned on metric `{self.monitor}` which is not available. "
                          f"Available metrics are: {','.join(logs or {})}", stacklevel=2)
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights, self.best_epoch = self.model.get_weights(), epoch
        self.wait += 1
        if self._better(cur, self.best):
            self.best, self.best_epoch = cur, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._better(cur, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        """As Keras 3: the best weights come back when training ends, stopped early or not."""
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print(f"Restoring model weights from the end of the best epoch: {self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)
