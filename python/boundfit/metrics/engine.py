"""The metrics the engine computes from an output and its targets (csrc/cpu/metrics.c, csrc/cuda/metrics.cu),
with Keras 3 names, arguments and defaults, aggregated over an epoch as Keras does; these objects describe them.
Kinds match csrc bf_metric_kind (SUMS: traced.py's metrics)."""

import numbers

(BINARY_ACC, CAT_ACC, SPARSE_CAT_ACC, TOPK, SPARSE_TOPK, MAE, MSE, RMSE, AUC_KIND, PRECISION,
 RECALL, TRUE_POS, FALSE_POS, TRUE_NEG, FALSE_NEG, PREC_AT_REC, REC_AT_PREC, SENS_AT_SPEC, SPEC_AT_SENS,
 SUMS) = range(20)


_UIDS = {}


def _auto_name(base):
    """Keras's names for metric objects built without one: 'auc', then 'auc_1', ... per process."""
    k = _UIDS.get(base, 0)
    _UIDS[base] = k + 1
    return base if k == 0 else f"{base}_{k}"


class Metric:
    """Base class of the metrics; boundfit's metrics are accumulated in the engine per step and aggregated over the
    epoch as Keras does."""
    kind = None
    name = None

    def __init__(self, name=None, dtype=None):
        if name:
            self.name = name

    def _spec(self):
        return {"kind": self.kind}

    def get_config(self):
        """Constructor arguments: type(m)(**m.get_config()) is the same metric."""
        cfg = {"name": self.name}
        for k in ("threshold", "k", "num_thresholds", "from_logits", "thresholds"):
            if k in vars(self):
                cfg[k] = getattr(self, k)
        if getattr(self, "class_id", None) is not None:
            cfg["class_id"] = self.class_id
        return cfg

    def update_state(self, *args, **kwargs):
        raise TypeError(f"boundfit.metrics.{type(self).__name__} is computed by the engine; pass it to compile()")

    def __repr__(self):
        return f"{type(self).__name__}(name={self.name!r})"


class _Accuracy(Metric):
    """'accuracy' / 'acc': resolved by compile() from the shapes of the
    targets and outputs, as Keras does."""
    name = "accuracy"


class BinaryAccuracy(Metric):
    """Keras 3's `BinaryAccuracy(threshold=0.5)`: the share of predictions on the right side of the threshold."""
    kind, name = BINARY_ACC, "binary_accuracy"

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(name, dtype)
        self.threshold = float(threshold)

    def _spec(self):
        return {"kind": self.kind, "threshold": self.threshold}


class CategoricalAccuracy(Metric):
    """Keras 3's `CategoricalAccuracy`: the share of argmax predictions equal to the one-hot target's."""
    kind, name = CAT_ACC, "categorical_accuracy"


class SparseCategoricalAccuracy(Metric):
    """Keras 3's `SparseCategoricalAccuracy`: the share of argmax predictions equal to the class id."""
    kind, name = SPARSE_CAT_ACC, "sparse_categorical_accuracy"


class TopKCategoricalAccuracy(Metric):
    """Keras 3's `TopKCategoricalAccuracy(k=5)`: the share of one-hot targets among the k highest predictions."""
    kind, name = TOPK, "top_k_categorical_accuracy"

    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(name, dtype)
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        self.k = k

    def _spec(self):
        return {"kind": self.kind, "k": self.k}


class SparseTopKCategoricalAccuracy(TopKCategoricalAccuracy):
    """Keras 3's `SparseTopKCategoricalAccuracy(k=5)`: the share of class ids among the k highest predictions."""
    kind, name = SPARSE_TOPK, "sparse_top_k_categorical_accuracy"

    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None, from_sorted_ids=False):
        super().__init__(k, name, dtype)
        if from_sorted_ids:
            raise ValueError("from_sorted_ids is not supported")


class MeanAbsoluteError(Metric):
    """Keras 3's `MeanAbsoluteError`: the mean of |y_true - y_pred|."""
    kind, name = MAE, "mean_absolute_error"


class MeanSquaredError(Metric):
    """Keras 3's `MeanSquaredError`: the mean of (y_true - y_pred) ** 2."""
    kind, name = MSE, "mean_squared_error"


class RootMeanSquaredError(Metric):
    """Keras 3's `RootMeanSquaredError`: the square root of the epoch's mean squared error."""
    kind, name = RMSE, "root_mean_squared_error"


def _threshold(thresholds):
    if thresholds is None:
        return 0.5
    if isinstance(thresholds, (list, tuple)):
        if len(thresholds) != 1:
            raise ValueError(f"thresholds: only one threshold is supported, got {thresholds!r}")
        thresholds = thresholds[0]
    t = float(thresholds)
    if not 0.0 <= t <= 1.0:
        raise ValueError(f"thresholds must be in [0, 1], got {thresholds!r}")
    return t


def _class_id(cls, class_id):
    """Keras's class_id: the metric reads only that column of the output (checked against its size at compile)."""
    if class_id is None:
        return None
    if isinstance(class_id, bool) or not isinstance(class_id, numbers.Integral) or class_id < 0:
        raise ValueError(f"{cls}: class_id must be a non-negative int (a column of the output), got {class_id!r}")
    return int(class_id)


def _class_spec(class_id):
    return {} if class_id is None else {"has_class_id": 1, "class_id": class_id}


class Precision(Metric):
    """Keras 3's `Precision(thresholds=None, class_id=None)`: true positives / predicted positives (top_k is not
    supported)."""
    kind, name = PRECISION, "precision"

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name or _auto_name(type(self).name), dtype)
        if top_k is not None:
            raise ValueError(f"{type(self).__name__}: top_k is not supported (thresholds and class_id are)")
        self.thresholds = _threshold(thresholds)
        self.class_id = _class_id(type(self).__name__, class_id)

    def _spec(self):
        return {"kind": self.kind, "threshold": self.thresholds, **_class_spec(self.class_id)}


class Recall(Precision):
    """Keras 3's `Recall(thresholds=None, class_id=None)`: true positives / actual positives (top_k is not
    supported)."""
    kind, name = RECALL, "recall"


class _ConfusionCount(Metric):
    """Weighted count of one confusion-matrix cell over the epoch, a
    prediction counting as positive when it is above the threshold (Keras's
    _ConfusionMatrixConditionCount; one threshold only)."""

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(name or _auto_name(type(self).name), dtype)
        self.thresholds = _threshold(thresholds)

    def _spec(self):
        return {"kind": self.kind, "threshold": self.thresholds}


class TruePositives(_ConfusionCount):
    """Keras 3's `TruePositives(thresholds=None)`: the count of true positives (one threshold)."""
    kind, name = TRUE_POS, "true_positives"


class FalsePositives(_ConfusionCount):
    """Keras 3's `FalsePositives(thresholds=None)`: the count of false positives (one threshold)."""
    kind, name = FALSE_POS, "false_positives"


class TrueNegatives(_ConfusionCount):
    """Keras 3's `TrueNegatives(thresholds=None)`: the count of true negatives (one threshold)."""
    kind, name = TRUE_NEG, "true_negatives"


class FalseNegatives(_ConfusionCount):
    """Keras 3's `FalseNegatives(thresholds=None)`: the count of false negatives (one threshold)."""
    kind, name = FALSE_NEG, "false_negatives"


class AUC(Metric):
    """Keras 3's `AUC(num_thresholds=200, ...)`: the area under the ROC or PR curve from per-threshold buckets."""
    kind, name = AUC_KIND, "auc"

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation", name=None, dtype=None,
                 thresholds=None, multi_label=False, num_labels=None, label_weights=None, from_logits=False):
        super().__init__(name or _auto_name("auc"), dtype)
        if curve != "ROC" or summation_method != "interpolation":
            raise ValueError(f"AUC: only curve='ROC' with summation_method='interpolation' is supported, "
                             f"got curve={curve!r}, summation_method={summation_method!r}")
        if thresholds is not None or multi_label or label_weights is not None:
            raise ValueError("AUC: thresholds, multi_label and label_weights are not supported")
        if not isinstance(num_thresholds, int) or not 1 < num_thresholds <= 10000:
            raise ValueError(f"num_thresholds must be an integer in (1, 10000], got {num_thresholds!r}")
        self.num_thresholds, self.from_logits = num_thresholds, bool(from_logits)

    def _spec(self):
        return {"kind": self.kind, "num_thresholds": self.num_thresholds, "from_logits": int(self.from_logits)}


class _AtConstraint(Metric):
    """Keras's SensitivitySpecificityBase: the best value of one statistic
    over num_thresholds evenly spaced thresholds where another is >= the
    given value (0 when none is), from AUC's per-bucket counts."""
    constraint = None  # the constructor argument naming the value

    def __init__(self, value, num_thresholds=200, class_id=None, name=None, dtype=None):
        cls = type(self).__name__
        super().__init__(name or _auto_name(type(self).name), dtype)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
            raise ValueError(f"{cls}: {self.constraint} must be a number in [0, 1], got {value!r}")
        if isinstance(num_thresholds, bool) or not isinstance(num_thresholds, int) or not 1 < num_thresholds <= 10000:
            raise ValueError(f"{cls}: num_thresholds must be an integer in (1, 10000], got {num_thresholds!r} "
                             "(Keras's single 0.5 threshold for num_thresholds=1 is not supported)")
        self.value, self.num_thresholds = float(value), num_thresholds
        self.class_id = _class_id(cls, class_id)

    def get_config(self):
        cfg = {"name": self.name, "num_thresholds": self.num_thresholds, self.constraint: self.value}
        return cfg if self.class_id is None else dict(cfg, class_id=self.class_id)

    def _spec(self):
        return {"kind": self.kind, "num_thresholds": self.num_thresholds, "value": self.value,
                **_class_spec(self.class_id)}


class PrecisionAtRecall(_AtConstraint):
    """Keras 3's `PrecisionAtRecall(recall, ...)`: the best precision at a recall of at least `recall`, from AUC's
    buckets."""
    kind, name, constraint = PREC_AT_REC, "precision_at_recall", "recall"

    def __init__(self, recall, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(recall, num_thresholds, class_id, name, dtype)


class RecallAtPrecision(_AtConstraint):
    """Keras 3's `RecallAtPrecision(precision, ...)`: the best recall at a precision of at least `precision`, from
    AUC's buckets."""
    kind, name, constraint = REC_AT_PREC, "recall_at_precision", "precision"

    def __init__(self, precision, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(precision, num_thresholds, class_id, name, dtype)


class SensitivityAtSpecificity(_AtConstraint):
    """Keras 3's `SensitivityAtSpecificity(specificity, ...)`: the best sensitivity at a specificity of at least
    `specificity`."""
    kind, name, constraint = SENS_AT_SPEC, "sensitivity_at_specificity", "specificity"

    def __init__(self, specificity, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(specificity, num_thresholds, class_id, name, dtype)


class SpecificityAtSensitivity(_AtConstraint):
    """Keras 3's `SpecificityAtSensitivity(sensitivity, ...)`: the best specificity at a sensitivity of at least
    `sensitivity`."""
    kind, name, constraint = SPEC_AT_SENS, "specificity_at_sensitivity", "sensitivity"

    def __init__(self, sensitivity, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(sensitivity, num_thresholds, class_id, name, dtype)


_CLASSES = (BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy, TopKCategoricalAccuracy,
            SparseTopKCategoricalAccuracy, MeanAbsoluteError, MeanSquaredError, RootMeanSquaredError, AUC,
            Precision, Recall, TruePositives, FalsePositives, TrueNegatives, FalseNegatives,
            PrecisionAtRecall, RecallAtPrecision, SensitivityAtSpecificity, SpecificityAtSensitivity)


def _named(name, cls):
    def f(y_true, y_pred, *args, **kwargs):
        raise TypeError(f"boundfit.metrics.{name} is computed by the engine; pass it to compile()")
    f.__name__ = name
    f._metric_class = cls
    return f


binary_accuracy = _named("binary_accuracy", BinaryAccuracy)
categorical_accuracy = _named("categorical_accuracy", CategoricalAccuracy)
sparse_categorical_accuracy = _named("sparse_categorical_accuracy", SparseCategoricalAccuracy)
top_k_categorical_accuracy = _named("top_k_categorical_accuracy", TopKCategoricalAccuracy)
sparse_top_k_categorical_accuracy = _named("sparse_top_k_categorical_accuracy", SparseTopKCategoricalAccuracy)
mean_absolute_error = mae = _named("mean_absolute_error", MeanAbsoluteError)
mean_squared_error = mse = _named("mean_squared_error", MeanSquaredError)


def resolve_accuracy(name, out_size, sparse_targets):
    """Keras's choice for 'accuracy': binary for one output unit, sparse
    categorical for class-id targets, else categorical."""
    if out_size == 1:
        return BinaryAccuracy(name=name)
    if sparse_targets:
        return SparseCategoricalAccuracy(name=name)
    return CategoricalAccuracy(name=name)
