"""One keras.ops call on symbolic tensors that boundfit builds from engine
layers of other kinds (ops.var: Reduce, Binary and Unary; ops.clip:
two Unary; ops.softmax: an Activation ...), remembered as the one operation
node Keras's graph has for the same call: its class (`Mean`), module,
config (the call's arguments: axis, keepdims ...) and arguments (tensors and
numbers, in Keras's order).

saving/keras_graph.py writes such a group of layers as that one node (so a
`.keras` file holds what Keras writes) and counts it as one node of Keras's
graph depth; reading Keras's node back calls the same keras.ops function,
which records the same group."""

import numbers

import numpy as np

from .node import KerasTensor


class OpNode:
    """Keras's operation node for the layers of one keras.ops call (head: the layer whose output is the op's)."""

    def __init__(self, class_name, module, config, args, inputs, head, outputs=None):
        self.class_name, self.module, self.config = class_name, module, dict(config)
        self.args, self.inputs, self.head = args, inputs, head
        self.outputs = outputs or []   # several outputs (TopK's values, indices): Keras's tensor index is the position


def _plain(v):
    """an argument Keras's node can hold: tensors, numbers, arrays, GetItem's keys (a custom layer's weight is not:
    it has its own nodes in files)"""
    if isinstance(v, (list, tuple)):
        return all(_plain(x) for x in v)
    return v is None or isinstance(v, (KerasTensor, numbers.Number, np.ndarray, np.generic, str, dict))


def _tensors(v):
    if isinstance(v, KerasTensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _tensors(x)]
    return []


def record(y, class_name, module, config, args):
    """Mark the layers between the call's tensor arguments (in `args`) and its output y (a tensor, or a tuple of
    them: Keras's outputs of the node in order, the first one's layer the head) as one Keras operation node; y is
    returned. Nothing is marked where the call made no layer (y is an argument) or where the layers reach past the
    arguments (another graph's tensors: not a group of this call)."""
    inputs = _tensors(args)
    outs = list(y) if isinstance(y, tuple) else [y]
    if not _plain(args) or any(not isinstance(o, KerasTensor) or o._node is None or any(o is t for t in inputs)
                               for o in outs):
        return y
    ins = {id(t) for t in inputs}
    nodes, stack = [], list(outs)
    while stack:
        t = stack.pop()
        if id(t) in ins:
            continue
        n = t._node
        if n is None or len(n.layer._inbound) != 1:
            return y                                   # an Input or a shared layer beyond the call's arguments
        if all(n is not m for m in nodes):
            nodes.append(n)
            stack.extend(n.inputs)
    g = OpNode(class_name, module, config, args, inputs, outs[0]._node.layer, outs if len(outs) > 1 else None)
    for n in nodes:
        n.layer.__dict__["_keras_op_node"] = g        # not an attribute a layer tracks
    return y


def of(layer):
    """The OpNode a layer is part of, or None."""
    return getattr(layer, "__dict__", {}).get("_keras_op_node")
