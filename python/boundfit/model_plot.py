"""keras.utils.model_to_dot / plot_model: a model's layers and connections as a Graphviz graph through pydot (as
Keras: pydot describes it, Graphviz's `dot` draws it), with Keras's labels, options and errors."""

import os
import sys

from . import activations
from .graph import GraphModel
from .layers.input_layer import InputLayer

_OPTIONS = ("show_layer_names", "show_layer_activations", "show_dtype", "show_shapes", "show_trainable")


def _pydot():
    try:
        import pydot
    except ImportError:
        return None
    return pydot


def _graphviz_ok(pydot):
    try:   # Keras's check: draw an empty graph
        pydot.Dot.create(pydot.Dot())
        return True
    except (OSError, pydot.PydotException):
        return False


def _shape(tensors):
    if tensors is None:
        return "?"
    return str([t.shape for t in tensors] if isinstance(tensors, list) else tensors.shape)


def _io(layer):
    """(input, output) symbolic tensors of the layer's first call, or (None, None)"""
    if isinstance(layer, InputLayer):
        return None, layer.output
    try:
        return layer.input, layer.output
    except (ValueError, AttributeError, IndexError, TypeError):
        return None, None


def _activation(layer):
    act = getattr(layer, "activation", None)
    if act is None:
        return None
    fn = layer.__dict__.get("_act_fn")   # a function activation (the engine's is then linear)
    if fn is not None:
        return getattr(fn, "__name__", None) or str(fn)
    if isinstance(act, int):   # the engine's activation code
        return activations.name_of(act)
    return act if isinstance(act, str) else getattr(act, "name", None) or getattr(act, "__name__", None) or str(act)


def _label(layer, show_layer_names, show_layer_activations, show_dtype, show_shapes, show_trainable):
    """Keras's HTML-like table label of a layer's box"""
    cls = type(layer).__name__
    span = max(1, int(show_dtype) + int(show_trainable) + 2 * bool(show_shapes))
    title = f"<b>{layer.name}</b> ({cls})" if show_layer_names else f"<b>{cls}</b>"
    out = ('<<table border="0" cellborder="1" bgcolor="black" cellpadding="10">'
           f'<tr><td colspan="{span}" bgcolor="black"><font point-size="16" color="white">{title}</font></td></tr>')
    act = _activation(layer) if show_layer_activations else None
    if act is not None:
        out += (f'<tr><td bgcolor="white" colspan="{span}"><font point-size="14">Activation: <b>{act}</b>'
                '</font></td></tr>')
    cols = []
    ins, outs = _io(layer) if show_shapes or show_dtype else (None, None)
    if show_shapes:
        if cls != "InputLayer":
            cols.append(f'<td bgcolor="white"><font point-size="14">Input shape: <b>{_shape(ins)}</b></font></td>')
        cols.append(f'<td bgcolor="white"><font point-size="14">Output shape: <b>{_shape(outs)}</b></font></td>')
    if show_dtype:
        dt = outs.dtype if outs is not None and not isinstance(outs, list) else \
            [t.dtype for t in outs] if outs is not None else None
        cols.append(f'<td bgcolor="white"><font point-size="14">Output dtype: <b>{dt or "?"}</b></font></td>')
    if show_trainable and layer.count_params():
        cols.append('<td bgcolor="forestgreen"><font point-size="14" color="white"><b>Trainable</b></font></td>'
                    if layer.trainable else
                    '<td bgcolor="firebrick"><font point-size="14" color="white"><b>Non-trainable</b></font></td>')
    if cols:
        out += f"<tr>{''.join(cols)}</tr>"
    return out + "</table>>"


def _producer(t):
    """the layer whose output t is (a custom layer for a tensor its call() made)"""
    if t._node is None:
        return t._input_layer
    return t._node.traced_in or t._node.layer


def _sequential(model):
    return hasattr(model, "_in_shape")   # a Sequential (graph.call_model tells them so too)


def _edges(model):
    """(source layer, destination layer) of each connection of the model's own graph"""
    if _sequential(model):
        ls = model.layers
        return list(zip(ls, ls[1:]))
    out = []
    for layer in model.layers:
        calls = layer.__dict__.get("_traced_calls")
        if calls and not any(n.layer is layer for n in model._nodes):
            ins = [t for c_in, _ in calls for t in c_in]
        else:
            ins = [t for n in model._nodes if n.layer is layer and n.traced_in is None for t in n.inputs]
        out += [(_producer(t), layer) for t in ins]
    return out


def _inner(layer, side):
    """a nested model's box an edge reaches: the layer making its output (source) or taking its input"""
    while isinstance(layer, GraphModel):
        if side == "source":
            layer = _producer(layer.outputs[0])
        else:
            layer = layer.layers[0]
    return layer


def model_to_dot(model, show_shapes=False, show_dtype=False, show_layer_names=True, rankdir="TB",
                 expand_nested=False, dpi=200, subgraph=False, show_layer_activations=False, show_trainable=False,
                 splines="ortho", **kwargs):
    """keras.utils.model_to_dot: the model as a pydot.Dot (a pydot.Cluster with subgraph=True)."""
    if not getattr(model, "built", False):
        raise ValueError("model_to_dot: this model has not yet been built. Build the model first by calling "
                         "`build()` or by calling the model on a batch of data.")
    pydot = _pydot()
    if pydot is None:
        raise ImportError("You must install pydot (`pip install pydot`) for model_to_dot to work.")
    if kwargs.pop("layer_range", None) is not None:
        raise ValueError("model_to_dot: argument `layer_range` is no longer supported (as in Keras 3).")
    if kwargs:
        raise ValueError(f"model_to_dot: unrecognized keyword arguments: {kwargs}")
    if subgraph:
        dot = pydot.Cluster(style="dashed", graph_name=model.name)
        dot.set("label", model.name)
        dot.set("labeljust", "l")
    else:
        dot = pydot.Dot()
        for k, v in (("rankdir", rankdir), ("concentrate", True), ("dpi", dpi), ("splines", splines)):
            dot.set(k, v)
        dot.set_node_defaults(shape="record")
    opts = dict(zip(_OPTIONS, (show_layer_names, show_layer_activations, show_dtype, show_shapes, show_trainable)))

    def node(layer):
        n = pydot.Node(str(id(layer)), label=_label(layer, **opts))
        for k, v in (("fontname", "Helvetica"), ("border", "0"), ("margin", "0")):
            n.set(k, v)
        dot.add_node(n)

    if not model._functional:   # a subclassed model not traced yet: one box, as Keras draws it
        node(model)
        return dot
    for layer in model.layers:
        if expand_nested and isinstance(layer, GraphModel):
            dot.add_subgraph(model_to_dot(layer, show_shapes, show_dtype, show_layer_names, rankdir, True,
                                          subgraph=True, show_layer_activations=show_layer_activations,
                                          show_trainable=show_trainable))
        else:
            node(layer)
    for src, dst in _edges(model):
        if expand_nested:
            src, dst = _inner(src, "source"), _inner(dst, "destination")
        if not dot.get_edge(str(id(src)), str(id(dst))):
            e = pydot.Edge(str(id(src)), str(id(dst)))
            e.set("penwidth", "2")
            dot.add_edge(e)
    return dot


def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False, show_layer_names=False,
               rankdir="TB", expand_nested=False, dpi=200, show_layer_activations=False, show_trainable=False,
               splines="ortho", **kwargs):
    """keras.utils.plot_model: the model drawn by Graphviz into to_file (its extension is the format: png, svg,
    pdf, dot, ...); in a notebook, the image to show. Without pydot or Graphviz: ImportError saying what to install
    (in IPython, printed instead, as Keras does)."""
    if not getattr(model, "built", False):
        raise ValueError("plot_model: this model has not yet been built. Build the model first by calling "
                         "`build()` or by calling the model on a batch of data.")
    pydot = _pydot()
    missing = "You must install pydot (`pip install pydot`) for `plot_model` to work." if pydot is None else \
        None if _graphviz_ok(pydot) else ("You must install graphviz (see instructions at "
                                          "https://graphviz.gitlab.io/download/) for `plot_model` to work.")
    if missing:
        if "IPython.core.magics.namespace" in sys.modules:
            print(missing)
            return None
        raise ImportError(missing)
    if kwargs.pop("layer_range", None) is not None:
        raise ValueError("plot_model: argument `layer_range` is no longer supported (as in Keras 3).")
    if kwargs:
        raise ValueError(f"plot_model: unrecognized keyword arguments: {kwargs}")
    dot = model_to_dot(model, show_shapes=show_shapes, show_dtype=show_dtype, show_layer_names=show_layer_names,
                       rankdir=rankdir, expand_nested=expand_nested, dpi=dpi,
                       show_layer_activations=show_layer_activations, show_trainable=show_trainable, splines=splines)
    to_file = str(to_file)
    ext = os.path.splitext(to_file)[1][1:] or "png"
    dot.write(to_file, format=ext)
    if ext != "pdf":
        try:
            from IPython import display
        except ImportError:
            return None
        return display.Image(filename=to_file)
    return None
