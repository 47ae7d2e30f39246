"""Losses with Keras 3 names, arguments and defaults; the engine computes them
(csrc/cpu/loss.c, csrc/cuda/loss.cu). Kinds match csrc bf_loss_kind."""

from .utils import snake_case

MSE, BCE, CCE, SCCE, MAE, HUBER, LOGCOSH, MEAN, ADDED = 0, 1, 2, 3, 4, 5, 6, 7, 8


class Loss:
    """Base class of losses; a subclass with `call(y_true, y_pred)` in keras.ops trains as a custom loss."""
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
    """Keras 3's `MeanSquaredError`: mean of (y_true - y_pred) ** 2 over the last axis, computed in the engine."""
    kind, name = MSE, "mean_squared_error"


class MeanAbsoluteError(Loss):
    """Keras 3's `MeanAbsoluteError`: mean of |y_true - y_pred| over the last axis, computed in the engine."""
    kind, name = MAE, "mean_absolute_error"


class Huber(Loss):
    """Keras 3's `Huber(delta=1.0)`, computed in the engine."""
    kind, name = HUBER, "huber_loss"

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss", dtype=None):
        super().__init__(name, reduction, dtype)
        if not float(delta) > 0:
            raise ValueError(f"delta must be > 0, got {delta!r}")
        self.delta = float(delta)

    def get_config(self):
        return {**super().get_config(), "delta": self.delta}


class LogCosh(Loss):
    """Keras 3's `LogCosh`, computed in the engine."""
    kind, name = LOGCOSH, "log_cosh"


class _TracedMean(Loss):
    """The mean of the output itself, its targets unused (csrc BF_LOSS_MEAN):
    trains a model whose output is a custom loss function's traced per-sample
    values (loss_trace.py) as Keras's sum_over_batch_size of them."""
    kind, name = MEAN, "traced_mean"


class _AddedMean(Loss):
    """An added loss (add_loss, activity_regularizer): per sample the sum of
    the output's values, averaged over the batch, sample weights not applied
    (csrc BF_LOSS_ADDED), as Keras adds a layer's losses to the batch loss."""
    kind, name = ADDED, "added_loss"


class CustomLoss(Loss):
    """compile(loss=fn): a function fn(y_true, y_pred) written in keras.ops, or
    a Loss subclass defining call(y_true, y_pred). The engine runs it as a loss
    subgraph traced into the training graph (loss_trace.py, models/loss_graph.py)
    whose values it averages (MEAN); `fn` is what was given."""
    kind = MEAN

    def __init__(self, fn, name, given=None):
        super().__init__(name)
        self.fn, self.given = fn, given if given is not None else fn

    def get_config(self):
        return {"name": self.name}

    def keras_config(self):
        """As Keras serializes it: a function by its name, a Loss subclass by its class and config (the
        code itself is not saved: load_model needs it in custom_objects)."""
        g = self.given
        if isinstance(g, Loss):
            cfg = g.get_config() if type(g).get_config is not Loss.get_config else {"name": self.name,
                                                                                     "reduction": g.reduction}
            return {"module": None, "class_name": type(g).__name__, "config": cfg,
                    "registered_name": type(g).__name__}
        return {"module": getattr(g, "__module__", None) or "builtins", "class_name": "function",
                "config": self.name, "registered_name": "function"}


class BinaryCrossentropy(Loss):
    """Keras 3's `BinaryCrossentropy(from_logits=False, label_smoothing=0.0)`, computed in the engine."""
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
    """Keras 3's `CategoricalCrossentropy(from_logits=False, label_smoothing=0.0)` on one-hot targets, computed in the
    engine."""
    kind, name = CCE, "categorical_crossentropy"

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="categorical_crossentropy", dtype=None):
        super().__init__(from_logits, label_smoothing, axis, reduction, name, dtype)


class SparseCategoricalCrossentropy(Loss):
    """Keras 3's `SparseCategoricalCrossentropy(from_logits=False)` on class ids, computed in the engine."""
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


def _custom_call(loss):
    """A Loss subclass's own call(y_true, y_pred), or None (boundfit's built-in losses have none)."""
    call = getattr(type(loss), "call", None)
    return None if call is None else loss.call


def get(loss):
    """A Loss object from a name, a Loss, or one of this module's functions; a
    custom loss (a function of (y_true, y_pred), a Loss subclass with call())
    as a CustomLoss."""
    if isinstance(loss, CustomLoss):
        return loss
    if isinstance(loss, type) and issubclass(loss, Loss) and loss.kind is None:
        loss = loss()
    if isinstance(loss, Loss) and loss.kind is None:
        call = _custom_call(loss)
        if call is None:
            raise ValueError(f"loss: {type(loss).__name__} subclasses Loss but defines no call(self, y_true, y_pred)")
        return CustomLoss(call, loss.name or snake_case(type(loss).__name__), loss)
    if isinstance(loss, Loss):
        return loss
    if isinstance(loss, type) and issubclass(loss, Loss):
        return loss()
    if callable(loss) and hasattr(loss, "_loss_class"):
        return loss._loss_class()
    if isinstance(loss, str) and (loss in _BY_NAME or loss.lower() in _BY_NAME):
        return _BY_NAME.get(loss, _BY_NAME.get(loss.lower()))()
    if callable(loss) and not isinstance(loss, type):
        return CustomLoss(loss, getattr(loss, "__name__", type(loss).__name__))
    raise ValueError(f"loss: unknown loss {loss!r}; choose one of {sorted(k for k in _BY_NAME if k.islower())} "
                     "or a boundfit.losses object")
