"""Losses with Keras names and objects; ids match csrc bf_loss_kind."""

MSE, BCE, CCE, SCCE = 0, 1, 2, 3


class Loss:
    kind = None
    name = None

    def __init__(self, from_logits=False, name=None):
        self.from_logits = bool(from_logits)
        if name:
            self.name = name

    def get_config(self):
        return {"from_logits": self.from_logits}

    def __repr__(self):
        return f"{type(self).__name__}(from_logits={self.from_logits})"


class MeanSquaredError(Loss):
    kind, name = MSE, "mean_squared_error"

    def __init__(self, name=None):
        super().__init__(False, name)


class BinaryCrossentropy(Loss):
    kind, name = BCE, "binary_crossentropy"


class CategoricalCrossentropy(Loss):
    kind, name = CCE, "categorical_crossentropy"


class SparseCategoricalCrossentropy(Loss):
    kind, name = SCCE, "sparse_categorical_crossentropy"


_BY_NAME = {
    "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError,
    "binary_crossentropy": BinaryCrossentropy, "bce": BinaryCrossentropy,
    "categorical_crossentropy": CategoricalCrossentropy,
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
}


def _named(name):
    def f(y_true, y_pred):
        raise TypeError(f"boundfit.losses.{name} is computed by the engine; pass it to compile()")
    f.__name__ = name
    return f


mean_squared_error = _named("mean_squared_error")
binary_crossentropy = _named("binary_crossentropy")
categorical_crossentropy = _named("categorical_crossentropy")
sparse_categorical_crossentropy = _named("sparse_categorical_crossentropy")


def get(loss):
    """A Loss object from a name, a Loss, or one of this module's functions."""
    if isinstance(loss, Loss):
        return loss
    key = loss if isinstance(loss, str) else getattr(loss, "__name__", None)
    if isinstance(key, str) and key.lower() in _BY_NAME:
        return _BY_NAME[key.lower()]()
    raise ValueError(f"loss: unknown loss {loss!r}; choose one of {sorted(_BY_NAME)} "
                     "or a boundfit.losses object")
