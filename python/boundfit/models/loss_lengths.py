"""The training graph of a variable-length model (keras.Input((None,))) with
a custom loss, losses its layers add or traced metrics: the losses are traced
once per length, as Keras traces them per shape (loss_graph.LossGraph at the
length's shapes), each length's graph kept by its inputs' shapes and built
into its own engine (the model's engine cache, engine_cache.py: weights and
optimizer state carried between lengths). Every length's engine computes on
the weights of one engine of the model (`_base`), so the model sees them as
they train. The data's batches are read by the graph of their own length."""

import numpy as np

from .. import graph
from ..engine import buckets
from . import loss_graph


class LossLengths:
    """LossTrainer's per-length graphs (a no-op for a model of fixed shapes)."""

    def _init_lengths(self, lg):
        """After compile(): the first length's graph (lg) kept, its engine built on the model's current one."""
        self._base = self._owner._engine
        self._traced, self._records, self._rec = {}, {}, None
        if self._owner._dynamic:
            self._rec = self._remember(lg, first=True)
            self._bind_to(self._rec["shapes"])

    def _remember(self, lg, first=False):
        """Keep lg's graph by the shapes of its inputs (the model's at its length, then its targets')."""
        if first:
            io, nodes = (self._inputs, self._input_names, self._inputs_dict, self._outputs, self._output_names,
                         self._outputs_dict), self._nodes
        else:
            io = graph.normalize_io(lg.inputs, lg.outputs)
            nodes = graph.collect_nodes(io[0], io[3])
            if io[4] != self._output_names or lg.weights != self._loss_weights or \
                    [type(l) for l in lg.losses] != [type(l) for l in self._out_losses]:
                raise ValueError(f"{self._owner.name}: the loss traced at input shapes {list(lg.at)} has other "
                                 f"terms than at the first length's ({io[4]} against {self._output_names}); a loss "
                                 "whose terms change with the length cannot share one optimizer state: give the "
                                 "inputs a fixed length")
        shapes = [tuple(s) for s in lg.at] + [tuple(s) for _, s in lg.x_targets + lg.x_weights]
        rec = dict(lg=lg, io=io, nodes=nodes, shapes=shapes)
        self._records[tuple(shapes)] = rec
        return rec

    def _use(self, rec):
        (self._inputs, self._input_names, self._inputs_dict, self._outputs, self._output_names,
         self._outputs_dict) = rec["io"]
        self._nodes, self._lg, self._rec = rec["nodes"], rec["lg"], rec

    def _graph_at(self, shapes, y=None):
        """The loss graph of the model at these per-sample input shapes, for targets y (their shapes decide how a
        custom loss takes them: loss_graph.target_shapes); traced on first use."""
        owner = self._owner
        at = tuple(tuple(int(d) for d in s) for s in shapes)
        with graph.at_shapes(owner, at):
            ys = loss_graph.target_shapes(owner, self._lg.given_losses, y)
        rec = self._traced.get((at, ys))
        if rec is None:
            lg = loss_graph.LossGraph(owner, self._lg.given_losses, owner._loss_weights, owner._metric_raw, ys, at=at,
                                      temporal=self._lg.temporal)
            rec = self._traced[(at, ys)] = self._remember(lg)
        return rec["lg"]

    def _bind_to(self, shapes):
        """Make the graph and engine of these input shapes (the model's, then its targets') current."""
        if self._rec is None:
            return super()._bind_to(shapes)
        shapes = [tuple(int(d) for d in s) for s in shapes]
        n = len(self._owner._inputs)
        rec = self._records.get(tuple(shapes))
        if rec is None and len(shapes) == len(self._inputs):
            self._graph_at(shapes[:n])
            rec = self._records.get(tuple(shapes))
        if rec is None:   # (the shapes are checked against the current graph's inputs: the error names them)
            return super()._bind_to(shapes)
        before = self._rec
        self._use(rec)
        try:
            super()._bind_to(shapes)
        except Exception:
            self._use(before)
            raise

    def _declared_shapes(self, lengths):
        """fit(lengths=...) / estimate_memory(lengths=...): the input shapes of each length (the model's, then
        the targets' of its loss graph there); None for a model of fixed shapes."""
        if self._rec is None:
            return None
        out = []
        for shapes in buckets.declared_shapes(self._owner, lengths):
            lg = self._graph_at(shapes)
            out.append([tuple(s) for s in lg.at] + [tuple(s) for _, s in lg.x_targets + lg.x_weights])
        return out

    def _lg_for(self, x, y):
        """The loss graph of the length of x (arrays, a list or a dict by input name)."""
        owner = self._owner
        if self._rec is None:
            return self._lg
        if isinstance(x, dict):
            if any(n not in x for n in owner._input_names):
                return self._lg   # (its arrays() names what is missing)
            xs = [x[n] for n in owner._input_names]
        elif isinstance(x, (list, tuple)):
            xs = list(x)
        else:
            xs = [x]
        if len(xs) != len(owner._inputs) or any(np.ndim(a) < 1 for a in xs):
            return self._lg
        return self._graph_at([np.shape(a)[1:] for a in xs], y)


class ByLength:
    """A source's batches read by the loss graph of their own length (LossLengths._lg_for)."""

    def __init__(self, trainer):
        self._trainer = trainer

    def batch(self, item):
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
            return self._trainer._lg.batch(item)   # (its error)
        return self._trainer._lg_for(item[0], item[1]).batch(item)
