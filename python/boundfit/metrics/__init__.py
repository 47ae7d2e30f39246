"""boundfit.metrics: Keras 3's metrics by their names. engine.py holds the metrics the engine computes from an
output and its targets (accuracies, AUC, precision / recall, ...); traced.py the base of the others, whose
per-sample statistics are written in keras.ops and summed by the engine over the epoch (reduction.py: Mean, Sum,
MeanMetricWrapper and the loss-named metrics; stats.py: the F-scores, R2Score, the IoU family). get() turns a
name, class, object, function or config into (metric, history name) as Keras's compile() names them."""

from ..losses import composed as _composed
from ..session import snake_case as _snake_case
from .engine import (AUC, BINARY_ACC, CAT_ACC, MAE, MSE, SPARSE_CAT_ACC, SPARSE_TOPK, SUMS, TOPK,  # noqa: F401
                     BinaryAccuracy, CategoricalAccuracy, FalseNegatives, FalsePositives, MeanAbsoluteError,
                     MeanSquaredError, Metric, Precision, PrecisionAtRecall, Recall, RecallAtPrecision,
                     RootMeanSquaredError, SensitivityAtSpecificity, SparseCategoricalAccuracy,
                     SparseTopKCategoricalAccuracy, SpecificityAtSensitivity, TopKCategoricalAccuracy,
                     TrueNegatives, TruePositives, _Accuracy, _AtConstraint, _auto_name, binary_accuracy,
                     categorical_accuracy, mae, mean_absolute_error, mean_squared_error, mse, resolve_accuracy,
                     sparse_categorical_accuracy, sparse_top_k_categorical_accuracy, top_k_categorical_accuracy)
from .engine import _CLASSES as _ENGINE
from .functions import (binary_crossentropy, categorical_crossentropy, concordance_correlation,  # noqa: F401
                        huber, log_cosh, pearson_correlation, sparse_categorical_crossentropy)
from .reduction import (WRAPPERS as _WRAPPERS, Accuracy, BinaryCrossentropy, CategoricalCrossentropy,  # noqa: F401
                        CategoricalHinge, ConcordanceCorrelation, CosineSimilarity, Hinge, KLDivergence,
                        LogCoshError, Mean, MeanAbsolutePercentageError, MeanMetricWrapper,
                        MeanSquaredLogarithmicError, PearsonCorrelation, Poisson, SparseCategoricalCrossentropy,
                        SquaredHinge, Sum)
from .stats import (CLASSES as _STATS, BinaryIoU, F1Score, FBetaScore, IoU, MeanIoU, OneHotIoU,  # noqa: F401
                    OneHotMeanIoU, R2Score)
from .traced import SumsOf, TracedMetric  # noqa: F401

# Keras's metric functions that are its loss functions (keras.metrics.hinge is keras.losses.hinge)
binary_focal_crossentropy = _composed.binary_focal_crossentropy
categorical_focal_crossentropy = _composed.categorical_focal_crossentropy
categorical_hinge = _composed.categorical_hinge
hinge = _composed.hinge
squared_hinge = _composed.squared_hinge
kl_divergence = _composed.kl_divergence
poisson = _composed.poisson
mean_absolute_percentage_error = _composed.mean_absolute_percentage_error
mean_squared_logarithmic_error = _composed.mean_squared_logarithmic_error

_CLASSES = _ENGINE + _WRAPPERS + _STATS + (Mean, Sum, MeanMetricWrapper)
_BY_NAME = {c.__name__: c for c in _CLASSES}
# Keras's snake-case names of its classes (those that need an argument excepted), and its aliases
_BY_NAME.update({_snake_case(c.__name__): c for c in _ENGINE + _WRAPPERS + (F1Score, FBetaScore, R2Score, Mean, Sum)
                 if not issubclass(c, _AtConstraint)})
_BY_NAME.update({c.name: c for c in _ENGINE if not issubclass(c, _AtConstraint)})
_BY_NAME.update({"mae": MeanAbsoluteError, "MAE": MeanAbsoluteError, "mse": MeanSquaredError,
                 "MSE": MeanSquaredError, "rmse": RootMeanSquaredError, "accuracy": _Accuracy, "acc": _Accuracy,
                 "mape": MeanAbsolutePercentageError, "MAPE": MeanAbsolutePercentageError,
                 "msle": MeanSquaredLogarithmicError, "MSLE": MeanSquaredLogarithmicError,
                 "bce": BinaryCrossentropy, "BCE": BinaryCrossentropy, "logcosh": LogCoshError})


def serialize(metric):
    """{'class_name', 'config'} of a metric object (Keras's layout); strings stay strings."""
    if isinstance(metric, str):
        return metric
    return {"class_name": type(metric).__name__, "config": metric.get_config()}


def deserialize(config):
    """A metric from its serialized form (a MeanMetricWrapper's fn by the name of one of Keras's functions)."""
    cls = _BY_NAME.get(config.get("class_name")) if isinstance(config, dict) else None
    if cls is None or not isinstance(config.get("config", {}), dict):
        raise ValueError(f"metrics: cannot deserialize {config!r}")
    cfg = dict(config.get("config", {}))
    if cls is MeanMetricWrapper and isinstance(cfg.get("fn"), str):
        name = cfg["fn"]
        if not callable(globals().get(name)):
            raise ValueError(f"metrics: MeanMetricWrapper of an unknown function {name!r}")
        cfg["fn"] = globals()[name]
    return cls(**cfg)


def get(identifier):
    """(metric object, history name) as Keras's compile names them: a string
    keeps its own name ('mae' -> 'mae'), an object its .name, a function its
    __name__ (wrapped in MeanMetricWrapper), a {'class_name', 'config'} dict
    its config's name. 'accuracy' / 'acc' come back unresolved (_Accuracy)."""
    if isinstance(identifier, dict):
        m = deserialize(identifier)
        return m, m.name
    if isinstance(identifier, Metric):
        return identifier, identifier.name
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        m = identifier()
        return m, m.name
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier)
        if cls is None:
            raise ValueError(f"metrics: unknown metric {identifier!r}; choose one of "
                             f"{sorted(k for k in _BY_NAME if k[0].islower())} or a boundfit.metrics object")
        return cls(), identifier
    if callable(identifier) and hasattr(identifier, "_metric_class"):
        return identifier._metric_class(), identifier.__name__
    if callable(identifier):
        m = MeanMetricWrapper(identifier, name=getattr(identifier, "__name__", type(identifier).__name__))
        return m, m.name
    raise ValueError(f"metrics: cannot interpret {identifier!r} as a metric; pass a name or a boundfit.metrics object")
