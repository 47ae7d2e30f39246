"""Exceptions raised by boundfit; all derive from BoundfitError."""


class BoundfitError(Exception):
    """Base class of every error boundfit raises on purpose."""


class MemoryBudgetError(BoundfitError, MemoryError):
    """The run's planned peak memory does not fit the budget.

    Raised before anything is allocated (or at a step boundary by the watchdog).
    Attributes: plan, needed_bytes, available_bytes, where, max_batch_size.
    """

    def __init__(self, message, plan=None, needed_bytes=0, available_bytes=0, where="host",
                 max_batch_size=None):
        super().__init__(message)
        self.plan = plan
        self.needed_bytes = int(needed_bytes)
        self.available_bytes = int(available_bytes)
        self.where = where
        self.max_batch_size = max_batch_size


class DeviceError(BoundfitError, RuntimeError):
    """CUDA, driver or cuDNN missing, incompatible or failed; message carries the report."""


class NonFiniteError(BoundfitError, ArithmeticError):
    """Loss or gradients became NaN/Inf; the weights are those of the last finite step."""

    def __init__(self, message, epoch=None, step=None, layer=None):
        super().__init__(message)
        self.epoch = epoch
        self.step = step
        self.layer = layer


class DataError(BoundfitError, ValueError):
    """Bad input data: shapes, dtypes, labels out of range, a failing generator."""

    def __init__(self, message, batch_index=None):
        super().__init__(message)
        self.batch_index = batch_index


class OpNotSupportedError(TypeError):
    """A keras.ops function boundfit cannot put into a graph on symbolic tensors."""
