"""The training graph of a model whose loss the engine cannot take as one of
its built-in losses: compile(loss=fn) with fn(y_true, y_pred) written in
keras.ops (or a Loss subclass with call()), per output too, and the losses
layers add (activity_regularizer=, add_loss() in a custom layer's call()).

LossGraph describes one graph over the model's own layers (so it trains
them): the model's inputs plus one input per custom-loss output that takes
its targets (y_true), and as outputs
  - an output with a built-in loss: the output itself, as compiled;
  - an output with a custom loss: fn's traced values (loss_trace.trace),
    averaged by the engine's MEAN loss as Keras's sum_over_batch_size, with
    sample weights per sample; when metrics are compiled on it, the output
    itself too, under its own name, with a zero-weight loss, for the metrics;
  - each added loss: its per-sample values (loss_trace.regularizer_values /
    added_values) under the engine's ADDED loss (sum per sample, mean over
    the batch, unweighted), as Keras adds a layer's losses to the batch loss.
Outputs whose loss takes no targets get a zero-stride array of zeros (no
memory). A variable-length model's losses and metrics are traced once per
length (at_shapes: its inputs and outputs take that length's shapes while
fn is traced), each length's training graph built for its own shapes. models/model.py builds a Model of it for fit / evaluate only (the
plan is that model's, exact as any); predict runs the model itself. The
history keeps Keras's names: `log_map` maps the training graph's names to
the model's."""

import numpy as np

from .. import graph, loss_trace, losses, metrics, ops
from ..errors import DataError
from ..layers.input_layer import Input
from . import temporal_weights
from .loss_mask import masked


def _walk_layers(model):
    """(layer, outputs) of every call in the graph, and of each custom layer traced in it (nested ones too);
    first the model itself, whose call() may add losses too (a subclassed model: add_loss in its call())."""
    out, seen = [(model, [])], set()
    for n in model._nodes:
        if isinstance(n.layer, graph.GraphModel):
            if _has_added(n.layer) or any(_has_added(l) for l in n.layer._own_layers()) or any(
                    _has_added(m.traced_in) for m in n.layer._nodes if m.traced_in is not None):
                raise ValueError(f"model {n.layer.name!r} nested in {model.name!r} has layers that add losses "
                                 "(activity_regularizer / add_loss); boundfit adds them for the layers of the "
                                 "model being fit only: call its layers in the outer model directly")
            continue
        out.append((n.layer, list(n.outputs)))
        stack = [n.traced_in] if n.traced_in is not None else []
        while stack:   # the custom layer whose call() made the node, and the custom layers it holds
            c = stack.pop()
            if id(c) in seen or not hasattr(c, "_sublayers"):
                continue
            seen.add(id(c))
            for ins, outs in c.__dict__.get("_traced_calls", []):
                out.append((c, list(outs)))
            stack.extend(c._sublayers())
    return out


def _has_added(layer):
    return layer is not None and (getattr(layer, "activity_regularizer", None) is not None
                                  or bool(layer.__dict__.get("_added_losses")))


def _reaches(t, inputs):
    """Whether tensor t is computed from the graph's inputs only (a loss added in another model's call is not)."""
    stack, seen = [t], set()
    while stack:
        u = stack.pop()
        if id(u) in seen:
            continue
        seen.add(id(u))
        if u._node is None:
            if id(u) not in inputs:
                return False
            continue
        stack.extend(u._node.inputs)
    return True


def _reaches_input(t, x):
    """Whether tensor t is computed from the symbolic input x (among others)."""
    stack, seen = [t], set()
    while stack:
        u = stack.pop()
        if u is x:
            return True
        if id(u) not in seen and u._node is not None:
            seen.add(id(u))
            stack.extend(u._node.inputs)
    return False


def added_losses(model):
    """[(values, weight, name)]: the model's activity regularizers (on each
    call's outputs) and add_loss() values, as per-sample values for ADDED."""
    ins = {id(t) for t in model._inputs}
    found, done = [], set()
    for layer, outs in _walk_layers(model):
        where = f"layer {layer.name!r} ({type(layer).__name__})"
        reg = getattr(layer, "activity_regularizer", None)
        if reg is not None:
            for k, t in enumerate(outs):
                if id(t) in done or not _reaches(t, ins):
                    continue
                done.add(id(t))
                v = loss_trace.regularizer_values(reg, t, where)
                if v is not None:
                    found.append((v, 1.0, f"{layer.name}_activity_regularizer_{len(found)}"))
        inference = layer.__dict__.get("_inference_losses", ())
        for k, v in enumerate(layer.__dict__.get("_added_losses", [])):
            if id(v) in done:
                continue
            done.add(id(v))
            if id(v) in inference or hasattr(getattr(v, "x", v), "_node") and not _reaches(getattr(v, "x", v), ins):
                continue   # a call() traced in both modes: the training pass's value counts; an earlier trace's
            values, w = loss_trace.added_values(v, where)
            if _reaches(values, ins):
                found.append((values, w, f"{layer.name}_added_loss_{len(found)}"))
    for layer in _adding_layers(model):   # a loss no call of the graph made (an identity call()): refused
        for v in layer.__dict__.get("_added_losses", []):
            x = getattr(v, "x", v)
            if id(v) not in done and hasattr(x, "_node") and _reaches(x, ins):
                raise ValueError(f"layer {layer.name!r} ({type(layer).__name__}) adds a loss computed from the "
                                 f"inputs of model {model.name!r}, but no call of it is a node of the model's "
                                 "graph (its call() returns its input unchanged?), so boundfit cannot tell whether "
                                 "the model uses it; return a computed tensor (e.g. x * 1.0) from its call()")
    return found


def traced_metrics(model):
    """Whether a compiled metric is a TracedMetric (its statistics traced into the training graph)."""
    return any(isinstance(obj, metrics.TracedMetric) for _, obj, _, _ in getattr(model, "_metric_given", []))


def needed(model, out_losses):
    """Whether fit / evaluate need the training graph: a custom loss, a layer that adds a loss, or a metric
    traced from (y_true, y_pred) (metrics/traced.py)."""
    if any(isinstance(l, (losses.CustomLoss, losses._NoLoss)) for l in out_losses) or traced_metrics(model):
        return True
    if not model._functional:
        return False
    if any(_has_added(layer) for layer, _ in _walk_layers(model)):
        return True
    ins = {id(t) for t in model._inputs}
    return any(hasattr(getattr(v, "x", v), "_node") and _reaches(getattr(v, "x", v), ins)
               for layer in _adding_layers(model) for v in layer.__dict__.get("_added_losses", []))


def _adding_layers(model):
    """The layers whose traced call() on a tensor of the model's graph gave add_loss() a value."""
    tensors = list(model._inputs) + [t for n in model._nodes for t in n.outputs]
    out = []
    for t in tensors:
        for layer in t.__dict__.get("_loss_layers", []):
            if layer not in out:
                out.append(layer)
    return out


def _reshapes(shape, ps):
    """Whether targets of per-sample shape `shape` read as `ps` by a last axis of 1 added or dropped (_y_true)."""
    shape, ps = tuple(shape), tuple(ps)
    return shape == ps or (int(np.prod(shape, dtype=np.int64)) == int(np.prod(ps, dtype=np.int64)) and
                           abs(len(shape) - len(ps)) == 1 and (ps[-1:] == (1,) or shape[-1:] == (1,)))


def target_shapes(model, out_losses, y):
    """Per output k: the per-sample shape of the targets y gives where a custom loss (a function, a Loss
    subclass, an overridden compute_loss()) takes them as they are and they are class ids (y (batch, T) or
    (batch, T, 1) for an output (batch, T, classes)), else None: its y_true is traced in that shape, as Keras
    passes the targets. None for all when y is no array (a generator's batches: the output's shape)."""
    out = [None] * len(out_losses)
    if y is None or not isinstance(y, (np.ndarray, list, tuple, dict)) or not model._output_names:
        return tuple(out)
    try:
        ys = _by_output(model, y, "y")
    except DataError:
        return tuple(out)
    for k, (loss, a, t) in enumerate(zip(out_losses, ys, model._outputs)):
        shape = np.shape(a)[1:] if np.ndim(a) else None
        if isinstance(loss, losses.CustomLoss) and not getattr(loss.given, "_keras_builtin", False) and \
                shape is not None and None not in t._ps and not _reshapes(shape, loss.y_true_shape(t._ps)) and \
                len(t._ps) and _reshapes(shape, t._ps[:-1]):   # (other shapes: _y_true's error, naming the loss)
            out[k] = tuple(int(d) for d in shape)
    return tuple(out)


def _by_output(model, y, what):
    """The targets y (an array, a list or a dict by output name) per model output."""
    names = model._output_names
    if y is None:
        raise DataError(f"{what} is required: the model's loss takes targets")
    if isinstance(y, dict):
        missing = [n for n in names if n not in y]
        if missing:
            raise DataError(f"{what}: no array for output {missing}; the model's outputs are {names}")
        return [y[n] for n in names]
    if len(names) > 1:
        takes = [k for k, l in enumerate(getattr(model, "_out_losses", None) or []) if not isinstance(l, losses._NoLoss)]
        ys = list(y) if isinstance(y, (list, tuple)) else [y]
        if 0 < len(takes) < len(names) and len(ys) == len(takes):   # as Keras: the targets of the outputs that
            out = [None] * len(names)                               # have a loss (loss=[fn, None]: y for the first)
            for k, a in zip(takes, ys):
                out[k] = a
            return out
        if not isinstance(y, (list, tuple)) or len(y) != len(names):
            raise DataError(f"{what}: the model has {len(names)} outputs {names}; pass a list or a dict of "
                            f"{len(names)} arrays")
        return list(y)
    if isinstance(y, (list, tuple)) and len(y) == 1:
        return [y[0]]
    return [y]


def _sparse_metrics(given):
    """The outputs a sparse metric (class-id targets) is compiled on."""
    return {k for k, o, _ in given if getattr(o, "kind", None) in (metrics.SPARSE_CAT_ACC, metrics.SPARSE_TOPK)}


class LossGraph:
    def __init__(self, model, out_losses, loss_weights, metric_raw, y_shapes=None, at=None, temporal=False):
        """metric_raw: [(output k, metric as given, weighted)] in compile's order; y_shapes: per output, the
        per-sample shape of the targets a custom loss takes (target_shapes), or None: the output's; at: a
        variable-length model's per-sample input shapes (one length), at which the losses are traced; temporal:
        the sample weights are (batch, T), an input of the graph multiplied into the loss's values
        (temporal_weights.py), after the targets' inputs (x_weights: per such input, its output and shape)."""
        self.at = None if at is None else tuple(tuple(s) for s in at)
        self.given_losses, self.temporal, self.x_weights, weights_in = out_losses, bool(temporal), [], []
        with graph.at_shapes(model, self.at):
            self._trace(model, out_losses, loss_weights, metric_raw, y_shapes, weights_in)
            outs = [t._ps for t in model._outputs]
        self.inputs += weights_in
        if self.at is not None:   # the targets' and weights' inputs: variable where the output's shape is
            for y_true, (k, shape) in zip(self.inputs[len(model._inputs):], self.x_targets + self.x_weights):
                var, n = model._outputs[k]._ps, len(shape)
                if n <= len(var) and tuple(shape) == tuple(outs[k][:n]):
                    y_true._ps = tuple(var[:n])

    def _trace(self, model, out_losses, loss_weights, metric_raw, y_shapes, weights_in):
        self.model = model
        names = list(model._output_names)
        given = [(k, metrics.get(m)[0], w) for k, m, w in metric_raw]   # (the objects compile() named)
        objs = [g[1] for g in getattr(model, "_metric_given", [])]
        if len(objs) == len(given):
            given = [(k, o, w) for (k, _, w), o in zip(given, objs)]
        has_metrics = {k for k, o, _ in given if not isinstance(o, metrics.TracedMetric)}
        self.inputs = list(model._inputs)
        self.outputs, self.losses, self.weights = {}, [], []
        self.targets = []      # per output: ("y", k) the model's targets of output k, or ("none", shape)
        self.x_targets = []    # per extra input: (the model's output whose targets it takes, their per-sample shape)
        self.over_batch = {}   # output k -> loss name: its loss is a mean over the batch
        self.metric_out = {}   # model output k -> training output name holding its metrics
        self.loss_out = {}     # model output k -> training output name holding its loss
        self.custom = {}       # model output k -> CustomLoss
        taken = set(names)

        def fresh(base):
            n, j = base, 1
            while n in taken:
                n, j = f"{base}_{j}", j + 1
            taken.add(n)
            return n

        def add(name, tensor, loss, weight, target):
            self.outputs[name] = tensor
            self.losses.append(loss)
            self.weights.append(float(weight))
            self.targets.append(target)

        self.computes = model._computes_loss()   # an overridden compute_loss(): the whole loss
        for k, (t, name, loss, w) in enumerate(zip(model._outputs, names, out_losses, loss_weights)):
            if not isinstance(loss, (losses.CustomLoss, losses._NoLoss)):
                add(name, t, loss, w, ("y", k))
                self.metric_out[k] = self.loss_out[k] = name
                continue
            if isinstance(loss, losses.CustomLoss):
                self.custom[k] = loss
                shape = y_shapes[k] if y_shapes and y_shapes[k] is not None else loss.y_true_shape(t._ps)
                y_true, values, over_batch = loss_trace.trace(loss.fn, t, loss.name, shape)
                if over_batch:
                    self.over_batch[k] = loss.name
                if not self.computes:   # (an overridden compute_loss() is the loss as it returns it, as Keras's)
                    values = masked(values, t, loss, name, over_batch)
                if self.temporal:   # sample weights (batch, T): multiplied into the values, as Keras's
                    weights_in.append(temporal_weights.weights_input(values, loss, name, t))
                    self.x_weights.append((k, tuple(values._ps)))
                    values = ops.multiply(values, weights_in[-1])
                if _reaches_input(values, y_true):   # (compute_loss(x, y, y_pred) may not read y)
                    self.inputs.append(y_true)
                    self.x_targets.append((k, y_true._ps))
                lname = fresh(f"{name}_{loss.name}")
                add(lname, values, losses._TracedMean(), w, ("none", values._ps))
                self.loss_out[k] = lname
            if k in has_metrics:   # the output itself, for its metrics: its loss weighs nothing (class-id
                ids = k in _sparse_metrics(given) or bool(y_shapes) and y_shapes[k] is not None and \
                    _reshapes(y_shapes[k], t._ps[:-1])   # targets, as a custom loss takes them: read as such)
                add(name, t, losses.SparseCategoricalCrossentropy() if ids else losses.MeanSquaredError(), 0.0,
                    ("y", k))
                self.metric_out[k] = name
        for values, w, name in ([] if self.computes else added_losses(model)):   # (an override adds them itself)
            add(fresh(name), values, losses._AddedMean(), w, ("none", values._ps))
        if all(isinstance(l, losses._NoLoss) for l in out_losses) and len(self.outputs) == len(has_metrics):
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`.")
        traced = self._traced_metrics(given, names, fresh)
        self.metrics, self.slots = {}, []   # slots: per metric of the model, (weighted, output here, index)
        for q, ((k, m, weighted), (_, obj, _)) in enumerate(zip(metric_raw, given)):
            out = self.metric_out.get(k)
            if q in traced:   # its columns of its output's statistics
                out, col0, ncols = traced[q]
                m = metrics.SumsOf(obj, obj.name, col0, ncols)
            ms = self.metrics.setdefault(weighted, {}).setdefault(out, [])
            self.slots.append((weighted, out, len(ms)))
            ms.append(m)

    def _traced_metrics(self, given, names, fresh):
        """The statistics of the traced metrics (metrics/traced.py) of each model output k, side by side in one
        training output of their own under a loss of weight 0 (gradients stopped), with one input per shape of
        targets they take. Returns {metric index: (output name, first column, columns)}."""
        found, by_out = {}, {}
        for q, (k, obj, _) in enumerate(given):
            if isinstance(obj, metrics.TracedMetric):
                by_out.setdefault(k, []).append((q, obj))
        for k, objs in by_out.items():
            t, y_trues, cols, at = self.model._outputs[k], {}, [], 0
            name = fresh(f"{names[k]}_metrics")
            for q, obj in objs:
                shape = tuple(obj.y_true_shape(t._ps))
                if shape not in y_trues:
                    y_trues[shape] = Input(shape=shape)
                    self.inputs.append(y_trues[shape])
                    self.x_targets.append((k, shape))
                try:
                    v = obj.traced(y_trues[shape], t)
                except ops.OpNotSupportedError as e:
                    raise ops.OpNotSupportedError(f"metric {obj.name!r}: {e}") from None
                cols.append(v)
                found[q] = (name, at, int(v._ps[0]))
                at += int(v._ps[0])
            values = cols[0] if len(cols) == 1 else ops.concatenate(cols, axis=-1)
            self.outputs[name] = values
            self.losses.append(losses._TracedMean())
            self.weights.append(0.0)
            self.targets.append(("none", values._ps))
        return found

    def log_map(self, trainer, model):
        """{training graph's log name: the model's}: the loss, each output's loss (several outputs), the metrics."""
        out = {"loss": "loss"}
        with_loss = [(k, name) for k, name in enumerate(model._output_names) if k in self.loss_out]
        if len(with_loss) > 1:   # (as Keras: each output's loss where several outputs have one)
            for k, name in with_loss:
                tname = self.loss_out[k]
                out[f"{tname}_loss" if trainer._n_outputs > 1 else "loss"] = f"{name}_loss"
        order = [(w, o, j) for w in (False, True) for o in self.outputs for j in range(len(self.metrics.get(w, {})
                                                                                             .get(o, [])))]
        for slot, b in zip(self.slots, model.compiled_metrics):   # trainer's metrics by output, the model's as given
            out[trainer.compiled_metrics[order.index(slot)]] = b
        return out

    # ---- data: the model's (x, y, sample_weight) as the training graph's ----
    def _targets_by_output(self, y, what):
        return _by_output(self.model, y, what)

    def _y_true(self, a, k, ps, what):
        """Targets of output k as fn's y_true (per-sample shape ps): shaped as the output (for a function Keras
        squeezes or expands a last axis of 1)."""
        a = np.asarray(a)
        ps = tuple(ps)
        custom = self.custom.get(k)
        if a.ndim == 0:
            raise DataError(f"{what} must have a batch axis, got a scalar")
        if custom is not None and tuple(a.shape[1:]) != ps and isinstance(custom.given, losses.Loss) and \
                not getattr(custom.given, "_keras_builtin", False):   # Keras's own squeeze or expand
            raise DataError(f"{what} has per-sample shape {tuple(a.shape[1:])}, the model's output is "
                            f"{self.model._outputs[k].shape}: Keras passes targets to a Loss subclass's call() "
                            f"({type(custom.given).__name__}) as they are, where math with the output "
                            "broadcasts across the batch, which boundfit does not compute; pass targets shaped as "
                            "the output")
        if tuple(a.shape[1:]) != ps:
            if int(np.prod(a.shape[1:], dtype=np.int64)) == int(np.prod(ps, dtype=np.int64)) and \
                    abs(len(a.shape[1:]) - len(ps)) == 1 and (ps[-1:] == (1,) or a.shape[-1:] == (1,)):
                a = a.reshape((a.shape[0],) + ps)
            else:
                who = f"the loss {custom.name!r}" if custom is not None else "a compiled metric"
                raise DataError(f"{what} has per-sample shape {tuple(a.shape[1:])}; {who} takes targets of "
                                f"per-sample shape {ps} (the model's output is {self.model._outputs[k].shape})")
        return a

    def source(self, src):
        """A Sequence / PyDataset / generator of the model's batches as one of the training graph's."""
        return source(self, src)

    def batch(self, item):
        """One batch (x, y) or (x, y, sample_weight) of the model as the training graph's."""
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3) or item[1] is None:
            got = f"{type(item).__name__} of {len(item)}" if isinstance(item, (tuple, list)) else type(item).__name__
            raise DataError(f"expected (x, y) or (x, y, sample_weight) batches: the model's loss takes targets, "
                            f"got a {got}")
        if len(item) == 3 and item[2] is not None:
            self.check_weights(item[2], None)
        if self.temporal:   # the weights are an input of the graph
            return self.arrays(item[0], item[1], sample_weight=item[2] if len(item) == 3 else None)
        x2, y2 = self.arrays(item[0], item[1])
        return (x2, y2) + tuple(item[2:])

    def arrays(self, x, y, what="x", ywhat="y", sample_weight=None, swhat="sample_weight"):
        """(x, y) of the training graph: the model's inputs, the custom losses' targets, then the temporal sample
        weights (x_weights; per-sample ones broadcast over the steps, none as ones); per output its targets."""
        model = self.model
        if isinstance(x, dict):
            missing = [n for n in model._input_names if n not in x]
            if missing:
                raise DataError(f"{what}: no array for input {missing}; the model's inputs are {model._input_names}")
            xs = [x[n] for n in model._input_names]
        elif isinstance(x, (list, tuple)) and len(model._inputs) > 1:
            xs = list(x)
        else:
            xs = [x[0] if isinstance(x, (list, tuple)) and len(x) == 1 else x]
        takes_y = self.x_targets or any(kind == "y" for kind, _ in self.targets)
        ys = self._targets_by_output(y, ywhat) if takes_y else []   # (no loss reads targets: y is not needed)
        labels = [f"{ywhat}[{k}]" if len(ys) > 1 else ywhat for k in range(len(ys))]
        n = np.shape(xs[0])[0]
        xs += [self._y_true(ys[k], k, ps, labels[k]) for k, ps in self.x_targets]
        xs += [temporal_weights.step_weights(sample_weight, n, ps, swhat) for _, ps in self.x_weights]
        out = []
        for kind, v in self.targets:
            if kind == "y":
                out.append(ys[v])
            else:   # a loss that takes no targets: zeros of no memory
                out.append(np.broadcast_to(np.zeros((1,) * (len(v) + 1), np.float32), (n,) + tuple(v)))
        return xs, out if len(out) > 1 else out[0]

    def check_weights(self, sample_weight, class_weight):
        if (sample_weight is not None or class_weight is not None) and self.computes:
            raise ValueError(f"{type(self.model).__name__} overrides compute_loss(), to which Keras passes the "
                             "sample weights; boundfit traces it without them (sample_weight=None): pass no "
                             "sample_weight / class_weight, or compile(loss=...) instead of the override")
        if (sample_weight is not None or class_weight is not None) and self.over_batch:
            name = next(iter(self.over_batch.values()))
            raise ValueError(f"loss {name!r} returns keras.ops.mean over every axis (the batch's too): Keras weighs "
                             "such a loss by the batch's mean sample weight, not per sample, which boundfit does not "
                             "compute; pass no sample_weight / class_weight, or return per-sample values "
                             "(ops.mean(..., axis=-1))")

    def class_weights(self, y, class_weight):
        """Keras's class_weight as per-sample weights (by the class of each sample's target)."""
        if class_weight is None:
            return None
        if self.model._n_outputs > 1:
            raise ValueError("class_weight is only supported for models with a single output")
        a = np.asarray(self._targets_by_output(y, "y")[0])
        ids = np.argmax(a, axis=-1) if a.ndim > 1 and a.shape[-1] > 1 else np.round(a.reshape(a.shape[0], -1)[:, 0])
        ids = ids.astype(np.int64)
        table = {int(k): float(v) for k, v in class_weight.items()}
        return np.array([table.get(int(i), 1.0) for i in ids], np.float32)


def source(reader, src):
    """src's batches read by reader.batch(item): a LossGraph, or loss_lengths.ByLength (each its length's)."""
    return IndexedBatches(reader, src) if hasattr(src, "__getitem__") and hasattr(src, "__len__") else \
        IteratedBatches(reader, src)


class IndexedBatches:
    """A Sequence / PyDataset of the model's batches, read as the training graph's (LossGraph.batch)."""

    def __init__(self, lg, src):
        self._lg, self._src = lg, src

    def __len__(self):
        return len(self._src)

    def __getitem__(self, i):
        return self._lg.batch(self._src[i])

    def on_epoch_end(self):
        if hasattr(self._src, "on_epoch_end"):
            self._src.on_epoch_end()


class IteratedBatches:
    """A generator (or other iterable) of the model's batches, read as the training graph's."""

    def __init__(self, lg, src):
        self._lg, self._src, self._it = lg, src, None

    def __iter__(self):
        return self

    def __next__(self):
        if self._it is None:
            self._it = iter(self._src)
        return self._lg.batch(next(self._it))
