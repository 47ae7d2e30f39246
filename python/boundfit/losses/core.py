"""The Loss base class, the losses the engine computes (csrc/cpu/loss.c,
csrc/cuda/loss.cu; kinds match csrc bf_loss_kind) with Keras 3 names,
arguments and defaults, and CustomLoss, a loss traced into the training
graph (loss_trace.py, models/loss_graph.py)."""

from ..session import snake_case

MSE, BCE, CCE, SCCE, MAE, HUBER, LOGCOSH, MEAN, ADDED = 0, 1, 2, 3, 4, 5, 6, 7, 8

CALL = []   # composed.py's loss call (a Loss object called on arrays or symbolic tensors), registered there


class Loss:
    """Base class of losses; a subclass with `call(y_true, y_pred)` in keras.ops trains as a custom loss."""
    kind = None
    name = None

    def __init__(self, name=None, reduction="sum_over_batch_size", dtype=None):
        if reduction not in ("sum_over_batch_size", "auto", None):
            raise ValueError(f"reduction: only 'sum_over_batch_size' is supported, got {reduction!r}")
        if name:
            self.name = name
        self.reduction = None if reduction is None else "sum_over_batch_size"   # None: the values, unreduced
        self.from_logits = False
        self.label_smoothing = 0.0
        self.delta = 1.0

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}

    def _engine_args(self):
        return dict(loss=self.kind, from_logits=self.from_logits, label_smoothing=self.label_smoothing,
                    delta=self.delta)

    def __call__(self, y_true, y_pred, sample_weight=None):
        """Keras's value: the loss's keras.ops formula (composed.py) on arrays, or traced on symbolic tensors (in
        a custom loss or compute_loss()), reduced as self.reduction says; compile() runs the engine's kernels."""
        if not CALL:
            raise TypeError(f"boundfit.losses.{type(self).__name__} is computed by the engine; pass it to compile()")
        return CALL[0](self, y_true, y_pred, sample_weight)

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


class _NoLoss(Loss):
    """An output compile() gave no loss (loss=None, or None for that output): it trains only by the losses the
    model adds (add_loss, activity regularizers) in its training graph (models/loss_graph.py), as Keras's
    compile() without loss=. (Its engine arguments are a placeholder: the model's own engine never trains.)"""
    kind, name = MSE, None

    def get_config(self):
        return {}


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

    def y_true_shape(self, pred_shape):
        """The per-sample shape of the targets fn takes for outputs of per-sample shape pred_shape: the same,
        or what the given loss says (class ids: composed.py's _y_true_shape)."""
        shape = getattr(self.given, "_y_true_shape", None)
        return tuple(pred_shape) if shape is None else tuple(shape(tuple(pred_shape)))

    def keras_config(self):
        """As Keras serializes it: a function by its name, a Loss subclass by its class and config (the
        code itself is not saved: load_model needs it in custom_objects). Keras's own losses that boundfit
        traces (losses/composed.py) as Keras writes them, which both load by name."""
        g = self.given
        if isinstance(g, Loss):
            cfg = g.get_config() if type(g).get_config is not Loss.get_config else {"name": self.name,
                                                                                     "reduction": g.reduction}
            if getattr(type(g), "_keras_builtin", False):
                return {"module": "keras.losses", "class_name": type(g).__name__, "config": cfg,
                        "registered_name": None}
            return {"module": None, "class_name": type(g).__name__, "config": cfg,
                    "registered_name": type(g).__name__}
        module = "builtins" if getattr(g, "_keras_builtin", False) else getattr(g, "__module__", None) or "builtins"
        return {"module": module, "class_name": "function", "config": self.name, "registered_name": "function"}


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
