"""Losses with Keras 3 names, arguments and defaults; the engine computes them
(csrc/cpu/loss.c, csrc/cuda/loss.cu). Kinds match csrc bf_loss_kind."""

MSE, BCE, CCE, SCCE, MAE, HUBER, LOGCOSH, MEAN = 0, 1, 2, 3, 4, 5, 6, 7


class Loss:
    kind = None
    name = None

    def __init__(self, name=None, reduction="sum_over_batch_size", dtype=None):
        if reduction not in ("sum_over_batch_size", "auto", None):
            raise ValueError(f"reduction: only 'sum_over_batch_size' is supported, got {reduction!r}")
        if name:
            self.name = name
        self.reduction = "sum_over_batch_size"
        self.from_logits = False
        self.label_smoothing = 0.0
        self.delta = 1.0

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}

    def _engine_args(self):
        return dict(loss=self.kind, from_logits=self.from_logits, label_smoothing=self.label_smoothing,
                    delta=self.delta)

    def __call__(self, y_true, y_pred, sample_weight=None):
        raise TypeError(f"boundfit.losses.{type(self).__name__} is computed by the engine; pass it to compile()")

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.get_config().items())})"


def _smoothing(label_smoothing):
    v = float(label_smoothing)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing!r}")
    return v


class MeanSquaredError(Loss):
    kind, name = MSE, "mean_squared_error"


class MeanAbsoluteError(Loss):
    kind, name = MAE, "mean_absolute_error"


class Huber(Loss):
    kind, name = HUBER, "huber_loss"

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss", dtype=None):
        super().__init__(name, reduction, dtype)
        if not float(delta) > 0:
            raise ValueError(f"delta must be > 0, got {delta!r}")
        self.delta = float(delta)

    def get_config(self):
        return {**super().get_config(), "delta": self.delta}


class LogCosh(Loss):
    kind, name = LOGCOSH, "log_cosh"


class _TracedMean(Loss):
    """The mean of the output itself, its targets unused (csrc BF_LOSS_MEAN):
    trains a model whose output is a custom loss function's traced per-sample
    values (loss_trace.py) as Keras's sum_over_batch_size of them."""
    kind, name = MEAN, "traced_mean"


class BinaryCrossentropy(Loss):
    kind, name = BCE, "binary_crossentropy"

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="binary_crossentropy", dtype=None):
        super().__init__(name, reduction, dtype)
        if axis != -1:
            raise ValueError(f"axis: only -1 is supported, got {axis!r}")
        self.from_logits, self.label_smoothing = bool(from_logits), _smoothing(label_smoothing)

    def get_config(self):
        return {**super().get_config(), "from_logits": self.from_logits, "label_smoothing": self.label_smoothing}


class CategoricalCrossentropy(BinaryCrossentropy):
    kind, name = CCE, "categorical_crossentropy"

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="categorical_crossentropy", dtype=None):
        super().__init__(from_logits, label_smoothing, axis, reduction, name, dtype)


class SparseCategoricalCrossentropy(Loss):
    kind, name = SCCE, "sparse_categorical_crossentropy"

    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size",
                 name="sparse_categorical_crossentropy", dtype=None):
        super().__init__(name, reduction, dtype)
        if ignore_class is not None:
            raise ValueError("ignore_class is not supported")
        self.from_logits = bool(from_logits)

    def get_config(self):
        return {**super().get_config(), "from_logits": self.from_logits}


_BY_NAME = {
    "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError, "MSE": MeanSquaredError,
    "mean_absolute_error": MeanAbsoluteError, "mae": MeanAbsoluteError, "MAE": MeanAbsoluteError,
    "huber": Huber, "huber_loss": Huber, "log_cosh": LogCosh, "logcosh": LogCosh,
    "binary_crossentropy": BinaryCrossentropy, "bce": BinaryCrossentropy, "BCE": BinaryCrossentropy,
    "categorical_crossentropy": CategoricalCrossentropy,
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
}
for _c in (MeanSquaredError, MeanAbsoluteError, Huber, LogCosh, BinaryCrossentropy, CategoricalCrossentropy,
           SparseCategoricalCrossentropy):
    _BY_NAME[_c.__name__] = _c


def _named(name, cls):
    def f(y_true, y_pred, *args, **kwargs):
        raise TypeError(f"boundfit.losses.{name} is computed by the engine; pass it to compile()")
    f.__name__ = name
    f._loss_class = cls
    return f


mean_squared_error = mse = _named("mean_squared_error", MeanSquaredError)
mean_absolute_error = mae = _named("mean_absolute_error", MeanAbsoluteError)
huber = _named("huber", Huber)
log_cosh = _named("log_cosh", LogCosh)
binary_crossentropy = _named("binary_crossentropy", BinaryCrossentropy)
categorical_crossentropy = _named("categorical_crossentropy", CategoricalCrossentropy)
sparse_categorical_crossentropy = _named("sparse_categorical_crossentropy", SparseCategoricalCrossentropy)


def get(loss):
    """A Loss object from a name, a Loss, or one of this module's functions."""
    if isinstance(loss, Loss):
        return loss
    if isinstance(loss, type) and issubclass(loss, Loss):
        return loss()
    if callable(loss) and hasattr(loss, "_loss_class"):
        return loss._loss_class()
    if isinstance(loss, str) and (loss in _BY_NAME or loss.lower() in _BY_NAME):
        return _BY_NAME.get(loss, _BY_NAME.get(loss.lower()))()
    if callable(loss):
        raise ValueError(f"loss: custom loss functions ({getattr(loss, '__name__', type(loss).__name__)}) are not "
                         "supported yet: boundfit computes its losses in the engine, planned with the step; choose "
                         f"one of {sorted(k for k in _BY_NAME if k.islower())} or a boundfit.losses object")
    raise ValueError(f"loss: unknown loss {loss!r}; choose one of {sorted(k for k in _BY_NAME if k.islower())} "
                     "or a boundfit.losses object")
