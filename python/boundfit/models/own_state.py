"""What a subclassed model holds of its own, as a custom layer does: weights
(add_weight: Variables its call() uses through keras.ops, held by the nodes
those ops make) and losses its call() adds (add_loss: added to the training
loss by the training graph, models/loss_graph.py)."""

from .. import initializers
from ..layers.args import _is_size
from ..layers.layer import Variable, record_added_loss


class OwnState:
    """Model.add_weight, add_loss and losses."""

    def add_weight(self, shape=None, initializer=None, dtype=None, trainable=True, regularizer=None,
                   constraint=None, name=None, **kwargs):
        """Keras's add_weight on a Model: a Variable the model's call() uses with keras.ops (elementwise, or
        `ops.matmul(x, w)`), trained with the model; initializer defaults to glorot_uniform as in Keras."""
        if shape is None or not all(_is_size(d) for d in tuple(shape)):
            raise ValueError(f"model {self.name!r}: add_weight shape must be a tuple of positive ints below 2**31, "
                             f"got {shape!r}")
        own = self.__dict__.setdefault("_own_variables", [])
        v = Variable.of_layer(self, tuple(int(d) for d in shape),
                              initializers.get(initializer or "glorot_uniform", "initializer"), regularizer, constraint,
                     trainable, name or f"variable_{len(own)}")
        own.append(v)
        return v

    def add_loss(self, loss):
        """Keras's add_loss(loss) inside a subclassed model's call(): a mean over the batch (`ops.mean` over every
        axis of per-sample math, at most times numbers), added to the training loss unweighted."""
        record_added_loss(self, loss)

    @property
    def losses(self):
        """The values add_loss() was given in the model's traced call()s."""
        return list(self.__dict__.get("_added_losses", []))
