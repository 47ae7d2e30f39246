"""A layer or a model called on arrays computes at once, as in Keras
(`layer(np.ones((2, 4)))`, an augmentation layer applied to a batch outside
any model, a model called on a batch): a one-layer model around the call,
cached per layer by the inputs' per-sample shapes and the training flag, runs
predict on the whole batch, so the call is planned and checked against the
memory budget like any run. The layer's weights are made (or taken over) by
that model as by any model using it; the result is a NumPy array (a list for
several outputs). The call leaves no node on the layer: a model built from
the layer later sees only its symbolic calls."""

import numpy as np

from .node import CONTEXT, TRACING, KerasTensor

# what a one-layer model is made of, registered by models/model.py (models import layers, not the reverse)
MAKERS = {}


def is_array_call(inputs):
    """Whether a call gets arrays (not symbolic tensors) outside any trace: an eager call"""
    if TRACING or isinstance(inputs, dict):   # (a dict of arrays by input name: not taken yet)
        return False
    xs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    return bool(xs) and all(not isinstance(x, KerasTensor) and (isinstance(x, np.ndarray) or hasattr(x, "__array__"))
                            for x in xs)


def call_eagerly(layer, inputs, training=None, **kwargs):
    """layer(inputs) on arrays (batch axis first): the outputs as NumPy arrays"""
    extra = {k: v for k, v in kwargs.items() if v is not None}
    if extra:
        raise TypeError(f"{layer.name}: called on arrays, it takes only training=; got {sorted(extra)} (build a "
                        "Model with those inputs and call predict)")
    many = isinstance(inputs, (list, tuple))
    xs = [np.asarray(x) for x in (inputs if many else [inputs])]
    for k, x in enumerate(xs):
        if x.ndim < 1 or (k and len(x) != len(xs[0])):
            raise ValueError(f"{layer.name}: called on arrays, each needs the batch axis first with one batch size, "
                             f"got shapes {[a.shape for a in xs]}")
    mode = None if training is None else bool(training)
    model = eager_model(layer, [x.shape[1:] for x in xs], [x.dtype.kind in "UO" for x in xs], mode, many)
    return model.predict(xs if many else xs[0], batch_size=max(len(xs[0]), 1), verbose=0)


def build_alone(layer, input_shape):
    """Keras's layer.build(input_shape) outside any model (a custom layer's build() building its sublayers): the
    weights are made by the model an eager call on those shapes would run (the batch axis first, ignored)"""
    many = isinstance(input_shape, list) and input_shape and isinstance(input_shape[0], (list, tuple))
    shapes = [tuple(s)[1:] for s in (input_shape if many else [input_shape])]
    eager_model(layer, shapes, [False] * len(shapes), None, many).build()


def eager_model(layer, shapes, strings, mode, many):
    """The one-layer model of a call on inputs of these per-sample shapes in this mode, cached on the layer"""
    Model, Input = MAKERS["model"], MAKERS["input"]
    key = (tuple(tuple(s) for s in shapes), tuple(strings), mode)
    cache = layer.__dict__.setdefault("_eager_models", {})
    model = cache.get(key)
    if model is None:
        ins = [Input(shape=s, dtype="string" if t else "float32") for s, t in zip(shapes, strings)]
        before = len(layer._inbound)
        if mode is not None:   # a fixed mode, as a call inside a traced call() (node.train_mode)
            CONTEXT.append((mode, True))
        try:
            out = layer(ins if many else ins[0])
        finally:
            if mode is not None:
                CONTEXT.pop()
        del layer._inbound[before:]   # the call is this model's alone (saving counts the layer's own calls)
        model = Model(ins if many else ins[0], out, name=f"{layer.name}_eager")
        cache[key] = model
    return model
