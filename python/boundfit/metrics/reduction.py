"""Keras 3's reduction metrics: Mean and Sum (of values given to update_state), MeanMetricWrapper (the mean of a
function of (y_true, y_pred)) and the metrics Keras defines as one (the loss-named metrics, Accuracy, the
correlations): each a TracedMetric (traced.py) whose statistic is the function's per-sample mean."""

import numpy as np

from .. import ops
from ..losses import composed
from . import functions as fn
from .traced import TracedMetric, _sample_weights


def _sample_mean(v):
    """Keras's reduce_to_samplewise_values: the mean over every axis but the batch's, as a column (batch, 1)."""
    nd = len(v._ps) + 1 if hasattr(v, "_ps") else np.ndim(v)
    if nd == 0:
        raise ValueError("a metric function returned one number for the whole batch; return one per sample")
    if nd > 1:
        v = ops.mean(v, axis=tuple(range(1, nd)))
    return ops.expand_dims(v, -1)


class MeanMetricWrapper(TracedMetric):
    """Keras 3's `MeanMetricWrapper(fn, name=None, dtype=None, **kwargs)`: the (weighted) mean over the epoch of
    fn(y_true, y_pred, **kwargs) per sample, fn written in keras.ops (traced into the training graph)."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        if not callable(fn):
            raise ValueError(f"MeanMetricWrapper: fn must be a function of (y_true, y_pred), got {fn!r}")
        super().__init__(name, dtype)
        self._fn, self._fn_kwargs = fn, kwargs

    def statistics(self, y_true, y_pred):
        y_true, y_pred = fn.same_rank(y_true, y_pred)
        return _sample_mean(self._fn(y_true, y_pred, **self._fn_kwargs))

    def y_true_shape(self, pred_shape):
        shape = getattr(self._fn, "_y_true_shape", None)
        return tuple(pred_shape) if shape is None else tuple(shape(tuple(pred_shape)))

    def get_config(self):
        cfg = super().get_config()
        if type(self) is MeanMetricWrapper:   # Keras writes the function by its name
            cfg["fn"] = getattr(self._fn, "__name__", type(self._fn).__name__)
        return {**cfg, **self._fn_kwargs}


def _wrapper(cls_name, function, default_name, options=(), doc=""):
    """A MeanMetricWrapper subclass with Keras's name, default name and options (keyword arguments of fn)."""
    def __init__(self, name=default_name, dtype=None, **kwargs):
        unknown = set(kwargs) - {k for k, _ in options}
        if unknown:
            raise TypeError(f"{cls_name}: unknown arguments {sorted(unknown)}; it takes name, dtype"
                            + "".join(f", {k}" for k, _ in options))
        given = {k: kwargs.get(k, d) for k, d in options}
        MeanMetricWrapper.__init__(self, function, name=name, dtype=dtype, **given)
    return type(cls_name, (MeanMetricWrapper,), {"__init__": __init__, "__doc__": doc, "name": default_name})


MeanAbsolutePercentageError = _wrapper(
    "MeanAbsolutePercentageError", composed.mean_absolute_percentage_error, "mean_absolute_percentage_error",
    doc="Keras 3's `MeanAbsolutePercentageError`: the mean of 100 |y_true - y_pred| / |y_true|.")
MeanSquaredLogarithmicError = _wrapper(
    "MeanSquaredLogarithmicError", composed.mean_squared_logarithmic_error, "mean_squared_logarithmic_error",
    doc="Keras 3's `MeanSquaredLogarithmicError`: the mean of (log(y_pred + 1) - log(y_true + 1)) ** 2.")
LogCoshError = _wrapper("LogCoshError", fn.log_cosh, "logcosh",
                        doc="Keras 3's `LogCoshError`: the mean of log(cosh(y_pred - y_true)).")
Hinge = _wrapper("Hinge", composed.hinge, "hinge", doc="Keras 3's `Hinge`: the mean of max(1 - y_true y_pred, 0).")
SquaredHinge = _wrapper("SquaredHinge", composed.squared_hinge, "squared_hinge",
                        doc="Keras 3's `SquaredHinge`: the mean of max(1 - y_true y_pred, 0) ** 2.")
CategoricalHinge = _wrapper("CategoricalHinge", composed.categorical_hinge, "categorical_hinge",
                            doc="Keras 3's `CategoricalHinge`: max(max((1 - y_true) y_pred) - sum(y_true y_pred) "
                                "+ 1, 0), averaged.")
KLDivergence = _wrapper("KLDivergence", composed.kl_divergence, "kl_divergence",
                        doc="Keras 3's `KLDivergence`: the mean of sum(y_true log(y_true / y_pred)).")
Poisson = _wrapper("Poisson", composed.poisson, "poisson",
                   doc="Keras 3's `Poisson`: the mean of y_pred - y_true log(y_pred).")
BinaryCrossentropy = _wrapper(
    "BinaryCrossentropy", fn.binary_crossentropy, "binary_crossentropy",
    (("from_logits", False), ("label_smoothing", 0)),
    doc="Keras 3's `BinaryCrossentropy(from_logits=False, label_smoothing=0)` metric: the mean binary "
        "cross-entropy.")
CategoricalCrossentropy = _wrapper(
    "CategoricalCrossentropy", fn.categorical_crossentropy, "categorical_crossentropy",
    (("from_logits", False), ("label_smoothing", 0), ("axis", -1)),
    doc="Keras 3's `CategoricalCrossentropy(from_logits=False, label_smoothing=0, axis=-1)` metric.")
SparseCategoricalCrossentropy = _wrapper(
    "SparseCategoricalCrossentropy", fn.sparse_categorical_crossentropy, "sparse_categorical_crossentropy",
    (("from_logits", False), ("axis", -1)),
    doc="Keras 3's `SparseCategoricalCrossentropy(from_logits=False, axis=-1)` metric: class-id targets.")
CosineSimilarity = _wrapper("CosineSimilarity", fn.cosine_similarity, "cosine_similarity", (("axis", -1),),
                            doc="Keras 3's `CosineSimilarity(axis=-1)` metric: the mean cosine of y_true and "
                                "y_pred.")
Accuracy = _wrapper("Accuracy", fn.accuracy, "accuracy",
                    doc="Keras 3's `Accuracy`: the share of predictions exactly equal to their targets.")
PearsonCorrelation = _wrapper("PearsonCorrelation", fn.pearson_correlation, "pearson_correlation", (("axis", -1),),
                              doc="Keras 3's `PearsonCorrelation(axis=-1)`: the mean per-sample Pearson "
                                  "coefficient along axis.")
ConcordanceCorrelation = _wrapper(
    "ConcordanceCorrelation", fn.concordance_correlation, "concordance_correlation", (("axis", -1),),
    doc="Keras 3's `ConcordanceCorrelation(axis=-1)`: the mean per-sample concordance coefficient along axis.")

WRAPPERS = (MeanAbsolutePercentageError, MeanSquaredLogarithmicError, LogCoshError, Hinge, SquaredHinge,
            CategoricalHinge, KLDivergence, Poisson, BinaryCrossentropy, CategoricalCrossentropy,
            SparseCategoricalCrossentropy, CosineSimilarity, Accuracy, PearsonCorrelation, ConcordanceCorrelation)


class Mean(TracedMetric):
    """Keras 3's `Mean`: the (weighted) mean of the values given to update_state(values, sample_weight=None).
    It takes values, not (y_true, y_pred), so compile() refuses it (as Keras's compile cannot call it): use
    MeanMetricWrapper(fn) there."""
    _reduce = staticmethod(ops.mean)

    def __init__(self, name=None, dtype=None):
        super().__init__(name or type(self).__name__.lower(), dtype)

    def update_state(self, values, sample_weight=None):
        """Add values: per sample, the mean (Mean) or sum (Sum) of its values, weighted by sample_weight."""
        v = np.asarray(values, np.float64)
        if v.ndim == 0:
            v = v.reshape(1)
        if sample_weight is not None:
            w = np.asarray(sample_weight, np.float64)
            if w.ndim > 1 and w.shape == v.shape[:w.ndim]:   # weights per element of the leading axes
                v = v.reshape(v.shape[:w.ndim] + (-1,))
                v = (self._reduce(v, axis=-1) * w).reshape(-1)
                self._add(v, w.reshape(-1))
                return
            w = _sample_weights(type(self).__name__, w, v.shape[0])
        else:
            w = np.ones(v.shape[0])
        rows = self._reduce(v.reshape(v.shape[0], -1), axis=-1) if v.ndim > 1 else v
        self._add(rows * w, w)

    def _add(self, weighted, w):
        sums = np.array([weighted.sum(), w.sum(), w.size], np.float64)
        self._sums = sums if self._sums is None else self._sums + sums

    def statistics(self, y_true, y_pred):
        raise ValueError(f"{type(self).__name__} takes values (update_state(values, sample_weight)), not "
                         "(y_true, y_pred): Keras's compile() cannot call it either; pass MeanMetricWrapper(fn) "
                         "(or the function itself) to compile()")


class Sum(Mean):
    """Keras 3's `Sum`: the (weighted) sum of the values given to update_state(values, sample_weight=None);
    refused by compile() as Mean is."""
    _reduce = staticmethod(ops.sum)

    def result_from(self, sums):
        return float(sums[0])
