"""Keras 3's metrics whose state is per-class sums over the epoch, accumulated as Keras does and turned into the
value at result(): the F-scores (true / false positives, false negatives and targets per class), R2Score (sums
of y, y^2 and squared errors per output) and the IoU family (a confusion matrix). Each is a TracedMetric
(traced.py): its per-sample statistics in keras.ops, the engine's weighted sums, result_from as Keras's
result() in float32."""

import numbers
import warnings

import numpy as np

from .. import ops
from . import functions as fn
from .traced import TracedMetric

EPS = np.float32(1e-7)


def _f32(x):
    return np.asarray(x, np.float32)


def _columns(cls, pred_shape):
    if len(pred_shape) != 1:
        raise ValueError(f"{cls} expects 2D inputs with shape (batch_size, output_dim); the output has per-sample "
                         f"shape {tuple(pred_shape)}")
    return int(pred_shape[0])


class FBetaScore(TracedMetric):
    """Keras 3's `FBetaScore(average=None, beta=1.0, threshold=None)`: per class (1 + beta^2) P R / (beta^2 P +
    R); average None (one value per class), 'micro', 'macro' or 'weighted'; threshold None takes each row's
    largest prediction as its positive."""
    name = "fbeta_score"

    def __init__(self, average=None, beta=1.0, threshold=None, name="fbeta_score", dtype=None):
        super().__init__(name, dtype)
        cls = type(self).__name__
        if average not in (None, "micro", "macro", "weighted"):
            raise ValueError(f"{cls}: average must be one of None, 'micro', 'macro', 'weighted', got {average!r}")
        if not isinstance(beta, float) or beta <= 0.0:
            raise ValueError(f"{cls}: beta must be a Python float > 0, got {beta!r}")
        if threshold is not None and (not isinstance(threshold, float) or not 0.0 < threshold <= 1.0):
            raise ValueError(f"{cls}: threshold must be None or a Python float in (0, 1], got {threshold!r}")
        self.average, self.beta, self.threshold = average, beta, threshold

    def statistics(self, y_true, y_pred):
        _columns(type(self).__name__, getattr(y_pred, "_ps", np.shape(y_pred)[1:]))
        if self.threshold is None:
            top = ops.max(y_pred, axis=-1, keepdims=True)
            p = fn._float(ops.greater_equal(y_pred, top)) * fn._float(ops.greater(ops.abs(y_pred), 1e-9))
        else:
            p = fn._float(ops.greater(y_pred, self.threshold))
        return ops.concatenate([p * y_true, p * (1.0 - y_true), (1.0 - p) * y_true, y_true + 0.0 * p], axis=-1)

    def result_from(self, sums):
        tp, fp, fn_, iw = _f32(sums[:-2]).reshape(4, -1)
        if self.average == "micro":
            tp, fp, fn_, iw = tp.sum(), fp.sum(), fn_.sum(), iw.sum()
        precision = tp / (tp + fp + EPS)
        recall = tp / (tp + fn_ + EPS)
        b2 = np.float32(self.beta ** 2)
        f = precision * recall / (b2 * precision + recall + EPS) * (np.float32(1) + b2)
        if self.average == "weighted":
            return np.sum(f * (iw / (np.sum(iw) + EPS)))
        return f if self.average is None else np.mean(f)

    def get_config(self):
        return {**super().get_config(), "average": self.average, "beta": self.beta, "threshold": self.threshold}


class F1Score(FBetaScore):
    """Keras 3's `F1Score(average=None, threshold=None)`: FBetaScore with beta 1."""
    name = "f1_score"

    def __init__(self, average=None, threshold=None, name="f1_score", dtype=None):
        super().__init__(average, 1.0, threshold, name, dtype)

    def get_config(self):
        cfg = super().get_config()
        del cfg["beta"]
        return cfg


class R2Score(TracedMetric):
    """Keras 3's `R2Score(class_aggregation='uniform_average', num_regressors=0)`: 1 - SS_res / SS_tot per
    output column over the epoch, averaged uniformly or by variance (None: one value per column), adjusted for
    num_regressors."""
    name = "r2_score"

    def __init__(self, class_aggregation="uniform_average", num_regressors=0, name="r2_score", dtype=None):
        super().__init__(name, dtype)
        if class_aggregation not in (None, "uniform_average", "variance_weighted_average"):
            raise ValueError("R2Score: class_aggregation must be one of None, 'uniform_average', "
                             f"'variance_weighted_average', got {class_aggregation!r}")
        if isinstance(num_regressors, bool) or not isinstance(num_regressors, numbers.Integral) or \
                num_regressors < 0:
            raise ValueError(f"R2Score: num_regressors must be an int >= 0, got {num_regressors!r}")
        self.class_aggregation, self.num_regressors = class_aggregation, int(num_regressors)

    def statistics(self, y_true, y_pred):
        _columns("R2Score", getattr(y_pred, "_ps", np.shape(y_pred)[1:]))
        y_true, y_pred = fn.same_rank(y_true, y_pred)
        return ops.concatenate([y_true, y_true * y_true, ops.square(y_true - y_pred)], axis=-1)

    def result_from(self, sums):
        s, sq, res = _f32(sums[:-2]).reshape(3, -1)
        count = np.float32(sums[-2])
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = s / count
            total = sq - s * mean
            raw = np.float32(1) - res / total
        raw = np.where(np.isinf(raw), np.float32(0), raw)
        if self.class_aggregation == "uniform_average":
            r2 = np.mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            r2 = np.sum(total * raw) / np.sum(total)
        else:
            r2 = raw
        n, p = float(sums[-1]) * s.size, self.num_regressors   # Keras's num_samples: the targets' size
        if p and p > n - 1:
            warnings.warn("More independent predictors than datapoints in adjusted R2 score. Falling back to "
                          "standard R2 score.", stacklevel=2)
        elif p and p == n - 1:
            warnings.warn("Division by zero in Adjusted R2 score. Falling back to standard R2 score.", stacklevel=2)
        elif p:
            r2 = np.float32(1) - (np.float32(1) - r2) * np.float32(n - 1) / np.float32(n - p - 1)
        return r2

    def get_config(self):
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}


class IoU(TracedMetric):
    """Keras 3's `IoU(num_classes, target_class_ids, ignore_class=None, sparse_y_true=True, sparse_y_pred=True,
    axis=-1)`: the mean over target_class_ids of TP / (TP + FP + FN) from the epoch's confusion matrix (ids
    truncated to integers, out-of-range ids and ignore_class left out)."""
    name = "io_u"

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None, sparse_y_true=True,
                 sparse_y_pred=True, axis=-1):
        super().__init__(name, dtype)
        cls = type(self).__name__
        if isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral) or num_classes < 1:
            raise ValueError(f"{cls}: num_classes must be a positive int, got {num_classes!r}")
        ids = list(target_class_ids)
        if not ids or max(ids) >= num_classes or min(ids) < 0:
            raise ValueError(f"{cls}: target_class_ids {ids} must be in [0, {num_classes})")
        if axis != -1:
            raise ValueError(f"{cls}: axis must be -1 (the classes' axis last), got {axis!r}")
        self.num_classes, self.target_class_ids = int(num_classes), ids
        self.ignore_class, self.sparse_y_true, self.sparse_y_pred, self.axis = \
            ignore_class, bool(sparse_y_true), bool(sparse_y_pred), axis

    def y_true_shape(self, pred_shape):
        if self.sparse_y_true and not self.sparse_y_pred:
            return tuple(pred_shape[:-1]) or (1,)
        return tuple(pred_shape)

    def _ids(self, y_true, y_pred):
        t = ops.trunc(y_true) if self.sparse_y_true else _f(ops.argmax(y_true, axis=-1))
        p = ops.trunc(y_pred) if self.sparse_y_pred else _f(ops.argmax(y_pred, axis=-1))
        return t, p

    def statistics(self, y_true, y_pred):
        t, p = fn.same_rank(*self._ids(y_true, y_pred))
        n = self.num_classes
        ok = _f(ops.greater_equal(t, 0.0)) * _f(ops.less(t, float(n))) * _f(ops.greater_equal(p, 0.0)) * \
            _f(ops.less(p, float(n)))
        if self.ignore_class is not None:
            ok = ok * _f(ops.not_equal(t, float(self.ignore_class)))
        t, p = _positions(t * ok), _positions(p * ok)     # (batch, positions)
        ok = _positions(ok)
        oh_t = ops.one_hot(t, n) * ops.expand_dims(ok, -1)   # (batch, positions, n)
        oh_p = ops.one_hot(p, n)
        cm = ops.matmul(ops.transpose(oh_t, (0, 2, 1)), oh_p)   # (batch, n true, n predicted)
        return ops.reshape(cm, (-1, n * n))

    def result_from(self, sums):
        n = self.num_classes
        cm = _f32(sums[:-2]).reshape(n, n)
        rows, cols, tp = cm.sum(axis=0), cm.sum(axis=1), np.diag(cm)
        denom = (rows + cols - tp)[self.target_class_ids]
        tp = tp[self.target_class_ids]
        valid = denom > 1e-9
        iou = np.where(valid, tp / (denom + EPS), np.float32(0))
        return np.sum(iou) / (np.float32(valid.sum()) + EPS)

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes, "target_class_ids": self.target_class_ids,
                "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


def _f(x):
    return fn._float(x)


def _positions(x):
    """(batch, ...) -> (batch, positions): every non-batch axis flattened (at least one position)."""
    nd = len(x._ps) if hasattr(x, "_ps") else np.ndim(x) - 1
    if nd == 0:
        return ops.expand_dims(x, -1)
    return x if nd == 1 else ops.reshape(x, (-1, int(np.prod(x._ps if hasattr(x, "_ps") else np.shape(x)[1:]))))


class MeanIoU(IoU):
    """Keras 3's `MeanIoU(num_classes, ...)`: IoU over every class."""
    name = "mean_io_u"

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_true=True,
                 sparse_y_pred=True, axis=-1):
        super().__init__(num_classes, list(range(num_classes)) if isinstance(num_classes, int) else [0], name,
                         dtype, ignore_class, sparse_y_true, sparse_y_pred, axis)

    def get_config(self):
        cfg = super().get_config()
        del cfg["target_class_ids"]
        return cfg


class BinaryIoU(IoU):
    """Keras 3's `BinaryIoU(target_class_ids=(0, 1), threshold=0.5)`: IoU of two classes, a prediction >=
    threshold counting as class 1."""
    name = "binary_io_u"

    def __init__(self, target_class_ids=(0, 1), threshold=0.5, name=None, dtype=None):
        super().__init__(2, target_class_ids, name, dtype)
        self.threshold = float(threshold)

    def _ids(self, y_true, y_pred):
        return ops.trunc(y_true), _f(ops.greater_equal(y_pred, self.threshold))

    def get_config(self):
        return {"target_class_ids": self.target_class_ids, "threshold": self.threshold, "name": self.name,
                "dtype": self.dtype}


class OneHotIoU(IoU):
    """Keras 3's `OneHotIoU(num_classes, target_class_ids, ...)`: IoU of one-hot targets (their argmax)."""
    name = "one_hot_io_u"

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None, sparse_y_pred=False,
                 axis=-1):
        super().__init__(num_classes, target_class_ids, name, dtype, ignore_class, False, sparse_y_pred, axis)

    def get_config(self):
        cfg = super().get_config()
        del cfg["sparse_y_true"]
        return cfg


class OneHotMeanIoU(MeanIoU):
    """Keras 3's `OneHotMeanIoU(num_classes, ...)`: MeanIoU of one-hot targets (their argmax)."""
    name = "one_hot_mean_io_u"

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, name, dtype, ignore_class, False, sparse_y_pred, axis)

    def get_config(self):
        cfg = super().get_config()
        del cfg["sparse_y_true"]
        return cfg


CLASSES = (FBetaScore, F1Score, R2Score, IoU, MeanIoU, BinaryIoU, OneHotIoU, OneHotMeanIoU)
