"""SwapEMAWeights (Keras 3): the model's trainable weights and the optimizer's moving average (use_ema=True)
exchanged in place for evaluation and prediction, and, with swap_on_epoch, between epochs (so that other
callbacks, ModelCheckpoint say, see the averaged weights). The engine swaps them (csrc/core/model.c bf_model_ema)."""

from ..optimizers.base import EMA_FROM_WEIGHTS, EMA_SWAP
from .base import Callback


class SwapEMAWeights(Callback):
    """Keras 3's `SwapEMAWeights(swap_on_epoch=False)`, with its hooks as Keras has them (note: Keras's
    on_predict_end does not swap back, and neither does this one)."""

    def __init__(self, swap_on_epoch=False):
        super().__init__()
        self.swap_on_epoch = swap_on_epoch
        self._ema_weights_in_model = False

    def _engine(self):
        opt = getattr(self.model.optimizer, "inner_optimizer", self.model.optimizer)
        if not getattr(opt, "use_ema", False):
            raise ValueError("SwapEMAWeights must be used when `use_ema=True` is set on the optimizer. "
                             f"Received: use_ema={getattr(opt, 'use_ema', False)}")
        trainer = getattr(self.model, "_loss_trainer", None)   # a custom loss: its training graph holds the state
        return (trainer[1] if trainer is not None else self.model)._engine

    def _swap_variables(self):
        self._engine().ema(EMA_SWAP)

    def _finalize_ema_values(self):
        self._engine().ema(EMA_FROM_WEIGHTS)

    def on_epoch_begin(self, epoch, logs=None):
        if self.swap_on_epoch and self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = False

    def on_epoch_end(self, epoch, logs=None):
        if self.swap_on_epoch and not self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = True
            # as Keras: fit ends by copying the average into the weights, so after the last epoch the average
            # takes the (swapped-in) average back
            if epoch == self.params["epochs"] - 1:
                self._finalize_ema_values()

    def on_test_begin(self, logs=None):
        if not self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = True

    def on_test_end(self, logs=None):
        if self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = False

    def on_predict_begin(self, logs=None):
        if not self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = True

    def on_predict_end(self, logs=None):
        if not self._ema_weights_in_model:   # Keras's condition, as it is
            self._swap_variables()
            self._ema_weights_in_model = False
