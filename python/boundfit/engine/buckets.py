"""Batches of several shapes in one fit / evaluate (variable-length inputs,
bucketed by length as keras.io's text pipelines batch them).

A ShapeRuns stands for the run of one fit or evaluate: it holds the open run
of the current batch shape. A batch of another shape closes it (its metric
statistics move on), makes the model's engine for that shape current (built
once, then cached by shape in the model: weights and optimizer state are
copied, never rebuilt), plans the run for that shape (once; the plan is kept)
and checks it against the budget before its first step: a shape that does not
fit raises MemoryBudgetError naming it, with the model as after the last step.
`lengths` declared upfront (fit(lengths=[...])) are all planned before step
one; a batch of another length is then refused."""

import numpy as np

from ..errors import DataError, MemoryBudgetError
from .arrays import check_x, check_y
from .plan import budget_error


def batch_shapes(xb):
    """Per-sample shapes of a batch's input arrays."""
    return [tuple(int(d) for d in a.shape[1:]) for a in xb.arrays]


def shape_text(shapes):
    return ", ".join(str((None,) + tuple(s)) for s in shapes)


def declared_shapes(model, lengths):
    """fit(lengths=[...]): the per-sample input shapes of each declared length
    (the variable dimension of every input takes it). None: none declared."""
    if lengths is None:
        return None
    own = getattr(model, "_declared_shapes", None)   # a training graph: its loss graph's shapes at each length
    own = own(lengths) if own is not None else None
    if own is not None:
        return own
    if not getattr(model, "_dynamic", False):
        raise ValueError(f"lengths: the model {model.name!r} has no variable-length input (keras.Input(shape=(None, "
                         "...))); lengths applies to those")
    if isinstance(lengths, (int, np.integer)) or not hasattr(lengths, "__iter__"):
        raise ValueError(f"lengths must be a list of positive ints, got {lengths!r}")
    out = []
    for n in lengths:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
            raise ValueError(f"lengths must be a list of positive ints, got {lengths!r}")
        out.append([tuple(int(n) if d is None else d for d in t._ps) for t in model._inputs])
    if not out:
        raise ValueError("lengths must name at least one length")
    return out


def batch_text(k, label=""):
    """'batch k', or 'validation batch k' (label: the data's name)"""
    return f"{label} batch {k}" if label else f"batch {k}"


def key(shapes):
    return tuple(tuple(s) for s in shapes)


def require_fits(plan, shapes, k=None, label=""):
    """The plan of one input shape against the budget: MemoryBudgetError naming the shape (and batch k of the
    data `label` names: 'validation')."""
    if plan.fits:
        return
    e = budget_error(plan)
    at = batch_text(k, label) + ": " if k is not None else f"{label}: " if label else ""
    raise MemoryBudgetError(f"{at}input shape {shape_text(shapes)}: {e}", plan=plan, needed_bytes=e.needed_bytes,
                            available_bytes=e.available_bytes, where=e.where, max_batch_size=e.max_batch_size)


class ShapeRuns:
    """The run of a fit (mode 'train') or evaluate over batches of several
    shapes; quacks as the engine's run for the data sources and the logs.
    open_run(plan) opens the engine's run for the model's current engine,
    plan_for() plans the current engine's run, watchdog(plan) (optional) makes
    the between-steps watchdog of a plan."""

    def __init__(self, model, open_run, plan_for, first_plan, watchdog=None, declared=None, label=""):
        self.model, self.label = model, label
        self._open, self._plan_for, self._make_watchdog = open_run, plan_for, watchdog
        self.shapes = list(model._bound)
        self.plans = {key(self.shapes): first_plan}
        self.declared = None if declared is None else {key(s) for s in declared}
        self.closed = []   # (shapes, plan, run stats, engine bytes) of each run closed
        self.watchdog = watchdog(first_plan) if watchdog is not None else None
        self.engine = model._engine
        self.run, self._last_stats = open_run(first_plan), None
        self.plan, self._sums = first_plan, None

    def started(self):
        if self.watchdog is not None:
            self.watchdog.start()

    # ---- the batch's run ----
    def for_batch(self, k, xb, yb=None):
        """The run for batch k (switching shape first when it has another)."""
        shapes = batch_shapes(xb)
        if self.run is not None and shapes == self.shapes and self.model._engine is self.engine:
            return self.run
        if self.declared is not None and key(shapes) not in self.declared:
            raise DataError(f"{batch_text(k, self.label)}: input shape {shape_text(shapes)} is not one of the lengths "
                            "fit(lengths=...) "
                            f"declared and planned: {sorted(shape_text(s) for s in self.declared)}", batch_index=k)
        if self.run is None:   # suspended (validation of other lengths ran alone): reopened, planned as before
            return self._open_at(k, shapes, xb, yb, self._sums)
        self.run.sync_model()   # a device run's weights back into its engine's arrays
        if shapes == self.shapes:   # the engine was switched away (validation) and back
            self._bind(k, shapes)
            self.run.load_model()
            self.engine = self.model._engine
            return self.run
        return self._open_at(k, shapes, xb, yb, self.run.metric_sums())

    def _open_at(self, k, shapes, xb, yb, sums):
        """The run of another shape (or this one's again after suspend()), its plan checked before it opens."""
        self._bind(k, shapes)   # a length the layers refuse raises here, with this run still open
        self._close()
        try:
            if xb is not None:
                check_x(self.model, xb)
            if yb is not None:
                check_y(self.model, yb)
        except DataError as e:
            raise DataError(f"{batch_text(k, self.label)}: {e}", batch_index=k) from None
        plan = self.plan_of(shapes, k)
        self.watchdog = self._make_watchdog(plan) if self._make_watchdog is not None else None
        self.engine = self.model._engine
        self.run = self._open(plan)
        if sums is not None:
            self.run.set_metric_sums(sums)
        self.shapes, self.plan = shapes, plan
        self.started()
        return self.run

    def suspend(self):
        """Close the open run, keeping its metric sums, so that validation on
        engines of other lengths runs alone (its plans count no other run);
        the next step reopens this shape's run on its plan, checked again."""
        if self.run is None:
            return
        self.run.sync_model()
        self._sums = self.run.metric_sums()
        self._close()

    def _live(self):
        """The open run (reopened after suspend() for a source that does not ask per batch: arrays)."""
        if self.run is None:
            self._open_at(None, self.shapes, None, None, self._sums)
        return self.run

    def _bind(self, k, shapes):
        try:
            self.model._bind_to(shapes)
        except ValueError as e:
            raise DataError(f"{batch_text(k, self.label)}: {e}", batch_index=k) from None

    def plan_of(self, shapes, k=None):
        """The plan of the current engine (built for shapes): made once per
        shape, checked against the budget before its first step."""
        plan = self.plans.get(key(shapes))
        if plan is None:
            plan = self._plan_for()
            self.plans[key(shapes)] = plan
        require_fits(plan, shapes, k, self.label)
        return plan

    def bind_back(self, shapes, other):
        """Make the engine of `shapes` current (another run, e.g. validation's,
        runs on it): this run's newest weights go there first."""
        if self.model._bound == list(shapes) and self.model._engine is self.engine and self.shapes == list(shapes):
            return
        self.run.sync_model()
        self.model._bind_to(list(shapes))
        other.load_model()

    def _close(self):
        if self.run is None:
            return
        eng, stats = self.engine, self.run.stats()   # the arena's high-water mark, before it is released
        self.run.close()
        self.run, self._last_stats = None, stats
        self.closed.append((list(self.shapes), self.plan, stats,
                            (eng.weight_arena_bytes or 0) + (eng.optimizer_arena_bytes or 0)))

    # ---- as the engine's run ----
    def train(self, *a):
        return self._live().train(*a)

    def evaluate(self, *a):
        return self._live().evaluate(*a)

    def predict(self, *a):
        return self._live().predict(*a)

    def reset_metrics(self):
        if self.run is None:
            self._sums = None   # the run reopens with fresh metrics
        else:
            self.run.reset_metrics()

    def metric_results(self):
        return self._live().metric_results()

    def metric_sums(self):
        return self._sums if self.run is None else self.run.metric_sums()

    def set_metric_sums(self, sums):
        self._live().set_metric_sums(sums)

    def stats(self):
        return self.run.stats() if self.run is not None else self._last_stats

    def close(self):
        self._close()


def other_length(model, val, train):
    """Validation arrays whose length is not training's first (a variable-length model): the model bound to
    training's first length again after looking."""
    model._require_built(val.sample_x())
    shapes = list(model._bound)
    model._require_built(train.sample_x())
    return shapes != list(model._bound)


def undeclared(shapes, declared, label=""):
    """DataError: batch 0's input shapes are not among fit(lengths=...)'s."""
    return DataError(f"{batch_text(0, label)}: input shape {shape_text(shapes)} is not one of the lengths "
                     f"fit(lengths=...) declared: {sorted(shape_text(s) for s in declared)}", batch_index=0)


def length_runs(model, val, plans, plan_now, vw, declared):
    """Validation's runs over batches of several lengths (the training run closed meanwhile): one per length on
    its engine, as evaluate makes them; each length planned once (plans, kept over the epochs; with
    fit(lengths=...) all before step one, and no other length taken) and checked against the budget before its
    first batch."""
    model._require_built(val.sample_x())   # the engine of its first batch's length
    shapes = list(model._bound)
    if declared is not None and key(shapes) not in plans:
        raise undeclared(shapes, declared, "validation")
    first = plans.get(key(shapes)) or plan_now()
    plans[key(shapes)] = first
    require_fits(first, shapes, 0, "validation")
    runs = ShapeRuns(model, lambda p: model._engine.open_run("evaluate", p.rows, device=p.device,
                                                             weighted=vw.evaluate), plan_now, first,
                     declared=declared, label="validation")
    runs.plans = plans
    return runs


def plan_declared(model, declared, plan_now, label=""):
    """fit(lengths=...): each declared length's engine built (or taken from the
    cache) and its run planned and checked against the budget, before step one."""
    plans = {}
    for shapes in declared:
        model._bind_to(shapes)
        p = plan_now()
        plans[key(shapes)] = p
        require_fits(p, shapes, None, label)
    return plans
