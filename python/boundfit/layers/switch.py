"""Switch: where a custom layer's (or a subclassed model's) call() traced
differently with training=True and training=False (node.trace_modes), its
output: the training trace's (input 0) in fit, the inference trace's
(input 1) in evaluate and predict; the engine's SWITCH, a view of that
input (csrc/core/layers/switch.c), and graph.py runs each trace's own nodes
only in its runs. Not a Keras layer: Keras's graphs have no such operation,
so a .keras file cannot hold one (saving/keras_graph.py says which layer)."""

from .args import engine_kinds
from .layer import Layer
from .node import SWITCH as _SWITCH

(SWITCH,) = engine_kinds("SWITCH")


class Switch(Layer):
    _base = "switch"
    _n_inputs = "many"

    def spec(self):
        return dict(kind=SWITCH, name=self.name)


_SWITCH["cls"] = Switch
