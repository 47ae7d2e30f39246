"""Metrics computed from per-sample statistics written in keras.ops: `statistics(y_true, y_pred)` gives each
sample's values (a row of columns), which the engine sums over the epoch, weighted by the sample weights (the
SUMS metric kind: per column sum(w * v), then sum(w) and the rows), and `result_from(sums)` turns those sums into
Keras's result(). In compile() the statistics are traced into the training graph (models/loss_graph.py) like a
custom loss; standalone, update_state(y_true, y_pred, sample_weight) computes the same statistics on arrays
(keras.ops runs eagerly on NumPy) and adds the same sums, so both give the same values."""

import numpy as np

from .. import ops
from ..session import snake_case
from .engine import SUMS, Metric, _auto_name


class TracedMetric(Metric):
    """A metric of (y_true, y_pred) whose per-sample statistics are traced into the training graph; standalone,
    `update_state` / `result` / `reset_state` as Keras's."""
    kind = SUMS

    def __init__(self, name=None, dtype=None):
        super().__init__(name or _auto_name(type(self).name or snake_case(type(self).__name__)), dtype)
        self.dtype = dtype
        self._sums = None

    # ---- what a metric defines ----
    def statistics(self, y_true, y_pred):
        """Each sample's statistics, (batch, columns), from symbolic tensors or arrays."""
        raise NotImplementedError

    def result_from(self, sums):
        """Keras's result() from the epoch's sums: per column sum(w * v), then sum(w), then the rows."""
        return float(sums[0] / sums[-2]) if sums[-2] else 0.0

    def y_true_shape(self, pred_shape):
        """The per-sample shape of the targets statistics() takes for an output of per-sample shape pred_shape."""
        return tuple(pred_shape)

    # ---- standalone use, as Keras's ----
    def update_state(self, y_true, y_pred, sample_weight=None):
        """Add a batch: y_true, y_pred arrays with the batch axis first; sample_weight one per sample (or None)."""
        y_pred = np.asarray(y_pred, np.float32)
        y_true = np.asarray(y_true, np.float32)
        if y_pred.ndim == 0:
            raise ValueError(f"{type(self).__name__}.update_state: y_pred needs a batch axis, got a scalar")
        stats = np.asarray(self.statistics(y_true, y_pred), np.float64).reshape(y_pred.shape[0], -1)
        w = _sample_weights(type(self).__name__, sample_weight, stats.shape[0])
        sums = np.concatenate([(stats * w[:, None]).sum(axis=0), [w.sum(), stats.shape[0]]])
        self._sums = sums if self._sums is None else self._sums + sums

    def result(self):
        """The value over the batches given since the last reset (a NumPy value)."""
        if self._sums is None:
            return np.float32(0.0)
        return np.asarray(self.result_from(self._sums), np.float32)[()]

    def reset_state(self):
        """Forget the batches given so far."""
        self._sums = None

    def __call__(self, y_true, y_pred, sample_weight=None):
        """Keras's metric call: update_state on this batch, then result()."""
        self.update_state(y_true, y_pred, sample_weight)
        return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    def traced(self, y_true, y_pred):
        """The statistics of symbolic tensors as one row per sample (columns flattened), gradients stopped:
        what the training graph's metric output computes."""
        s = self.statistics(y_true, ops.stop_gradient(y_pred))
        if len(s._ps) != 1:
            s = ops.reshape(s, (-1, int(np.prod(s._ps, dtype=np.int64))))
        return s


def _sample_weights(cls, sample_weight, n):
    """Keras's per-sample weights: None (ones), a number, or one per sample (a trailing axis of 1 allowed)."""
    if sample_weight is None:
        return np.ones(n, np.float64)
    w = np.asarray(sample_weight, np.float64)
    if w.ndim == 0:
        return np.full(n, float(w))
    if w.ndim == 2 and w.shape[1] == 1:
        w = w[:, 0]
    if w.shape != (n,):
        raise ValueError(f"{cls}.update_state: sample_weight must hold one weight per sample ({n}), got shape "
                         f"{w.shape}")
    return w


class SumsOf(Metric):
    """The training graph's metric on a TracedMetric's statistics output (models/loss_graph.py): the engine's
    SUMS, its result computed by `source.result_from`."""
    kind = SUMS

    def __init__(self, source, name, col0=0, ncols=0):
        super().__init__(name)
        self.source, self.col0, self.ncols = source, col0, ncols

    def _spec(self):
        return {"kind": self.kind, "col0": self.col0, "ncols": self.ncols}
