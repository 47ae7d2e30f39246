"""fit / evaluate / predict: argument checks, the memory plan and budget check
before anything is allocated, then the epoch loop. The engine runs chunks of
steps with the GIL released; between chunks this loop reports progress, runs
callbacks, lets Ctrl-C in and checks memory outside the plan. Steps run one at
a time when a callback overrides a batch hook, or when the learning rate is a
callable or a schedule the engine has no closed form for (its rate
lr(iterations) is then set in the engine before each step)."""

import time

import numpy as np

from .. import schedules, utils
from ..callbacks import CallbackList, TerminateOnNaN
from ..callbacks.progbar import Progbar
from ..errors import DataError, NonFiniteError
from ..runtime import devices
from . import admission, buckets, data as data_mod, dist_fit, host_stage, memory
from .sources import SequenceData

_CHUNK_SECONDS = 0.1
_GUARD = True  # benchmarks/bench_guard.py turns the guards off to measure their cost


def _verbose(v):
    return 1 if v == "auto" else int(v)


def _chunks(run_fn, total_steps, on_chunk, stop=None):
    """Call run_fn(first, n) over [0, total_steps) in chunks of about _CHUNK_SECONDS
    (until stop() is true, checked after each chunk)."""
    step, chunk = 0, 1
    while step < total_steps and not (stop is not None and stop()):
        n = min(chunk, total_steps - step)
        t0 = time.perf_counter()
        out = run_fn(step, n)
        dt = time.perf_counter() - t0
        step += n
        on_chunk(step, out)
        per = dt / n if n else dt
        chunk = max(1, min(4 * chunk, int(_CHUNK_SECONDS / per) if per > 0 else 4 * chunk))


class _Stepper:
    """The `chunks` a data source runs an epoch with: _chunks when no batch hook
    needs each step, else one step at a time with before_step(step) first.
    Either way it stops after the step where model.stop_training became true."""

    def __init__(self, model, per_step, before_step=None):
        self.model, self.per_step, self._before = model, per_step, before_step

    def stopped(self):
        return bool(self.model.stop_training)

    def before_step(self, step):
        if self.per_step and self._before is not None:
            self._before(step)

    def __call__(self, run_fn, total_steps, on_chunk):
        if not self.per_step:
            return _chunks(run_fn, total_steps, on_chunk, stop=self.stopped)
        for step in range(total_steps):
            if self.stopped():
                break
            self.before_step(step)
            on_chunk(step + 1, run_fn(step, 1))


def _apply_schedule(model, schedule):
    lr = float(schedule(model._engine.iterations()))
    model._engine.set_learning_rate(lr)
    model.optimizer._track_lr(lr)


def _totals():
    """[loss sum, rows, per-output loss sums (None until a chunk brings them)]"""
    return [0.0, 0, None]


def _acc(tot, out):
    """Add a chunk's (loss sum, rows, steps, wait_s, per-output loss sums)."""
    tot[0] += out[0]
    tot[1] += out[1]
    if len(out) > 4:
        tot[2] = list(out[4]) if tot[2] is None else [a + b for a, b in zip(tot[2], out[4])]


def log_keys(model):
    """Keras's names of the logged values: loss, per output its loss (several
    outputs), then the compiled metrics (`<output>_<metric>` with several outputs)."""
    return list(_logs(_totals(), None, model).keys())


def _logs(totals, run, model, prefix=""):
    """Keras's logs: the loss (sum over outputs of loss weight times the sum of
    weighted per-sample losses, over the rows, as Keras's sum_over_batch_size
    averaged over batches by size), each output's loss when there are several,
    and each metric's value over the epoch so far, computed by the engine."""
    loss_sum, rows = totals[0], totals[1]
    nan = float("nan")
    logs = {prefix + "loss": loss_sum / rows if rows else nan}
    if model._n_outputs > 1:
        out_loss = totals[2] if len(totals) > 2 else None
        for k, name in enumerate(model._output_names):
            logs[f"{prefix}{name}_loss"] = out_loss[k] / rows if rows and out_loss else nan
    names = list(model.compiled_metrics)
    if names:
        values = run.metric_results() if run is not None else [nan] * len(names)
        for n, v in zip(names, values):
            logs[prefix + n] = v
    rename = getattr(model, "_log_map", None)   # a model's training graph: the model's own names
    if rename is not None:
        logs = {prefix + rename[k[len(prefix):]]: v for k, v in logs.items() if k[len(prefix):] in rename}
    return logs


def _cb_model(model):
    """The model callbacks see: the model itself when its training graph runs (models/loss_graph.py)."""
    return getattr(model, "_callback_model", model)


def class_weight_table(class_weight):
    """Keras's class_weight dict as a float32 table by class id (others weigh 1)."""
    if class_weight is None:
        return None
    if not isinstance(class_weight, dict) or not class_weight:
        raise ValueError(f"class_weight must be a non-empty dict {{class id: weight}}, got {class_weight!r}")
    keys = []
    for k, v in class_weight.items():
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ValueError(f"class_weight: keys must be non-negative class ids, got {k!r}")
        try:
            float(v)
        except (TypeError, ValueError):
            raise ValueError(f"class_weight[{k}] must be a number, got {v!r}") from None
        keys.append(int(k))
    table = np.ones(max(keys) + 1, dtype=np.float32)
    for k, v in class_weight.items():
        table[int(k)] = float(v)
    return table
def _check_weights_for_outputs(model, sample_weight, class_weight, what="sample_weight"):
    """Several outputs: one sample_weight array weighs every output's loss and
    weighted metrics; per-output weights and class_weight are refused."""
    if model._n_outputs <= 1:
        return
    if class_weight is not None:
        raise ValueError(f"class_weight is only supported for models with a single output; this one has "
                         f"{model._n_outputs} outputs {model._output_names}. Pass sample_weight instead")
    if isinstance(sample_weight, (list, tuple, dict)):
        raise ValueError(f"{what}: per-output sample weights (a list or dict by output) are not implemented yet; "
                         "pass one array of per-sample weights, which weighs every output")


def _check_class_weight_output(model, class_weight):
    """class_weight weighs a sample by its label: undefined for targets per position."""
    if class_weight is None or getattr(model, "_engine", None) is None:  # a subclassed model not traced yet
        return
    out = tuple(model._engine.output_shape)
    if len(out) >= 2:
        raise ValueError(f"class_weight: the model's output {out} is a sequence (one target per position); "
                         "class weights per sample are not defined for it. Pass sample_weight instead")


def _prepare(model, x, y, validation_data=None):
    """Subclassed models are traced on the data's shapes. Several inputs /
    outputs need nothing here: the engine gathers each array in place."""
    x, y, validation_data = data_mod.adapt_all(x, y, validation_data)   # tf.data, DataLoader, pandas
    seq = x is not None and data_mod._is_sequence(x)
    if not model._functional and x is not None and not seq:
        model._require_built(x)
    return x, y, validation_data


def _resolve_device(model, device):
    return devices.resolve(device)


@admission.releases
def fit(model, x, y, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
        validation_data=None, shuffle=True, initial_epoch=0, steps_per_epoch=None, micro_batch=None,
        memory_limit=None, device=None, class_weight=None, sample_weight=None, validation_batch_size=None,
        validation_freq=1, validation_steps=None, lengths=None, memory_wait=None):
    model._require_compiled("fit")
    admission.wait_seconds(memory_wait)   # checked before anything else
    _check_validation_freq(validation_freq)
    if class_weight is not None and sample_weight is not None:
        raise ValueError("You cannot `class_weight` and `sample_weight` at the same time.")
    _check_weights_for_outputs(model, sample_weight, class_weight)
    cw_table = class_weight_table(class_weight)
    if not isinstance(epochs, int) or epochs < 0:
        raise ValueError(f"epochs must be a non-negative int, got {epochs!r}")
    if not 0.0 <= float(validation_split) < 1.0:
        raise ValueError(f"validation_split must be in [0, 1), got {validation_split!r}")
    verbose = dist_fit.verbose(_verbose(verbose))   # [dist hook] progress from rank 0 only
    device = _resolve_device(model, dist_fit.device_for_rank(device))   # [dist hook] 'cuda': this rank's GPU
    x, validation_data = dist_fit.prepare_fit(model, x, validation_data, device)   # [dist hook] Sequences by rank, NCCL
    x, y, validation_data = _prepare(model, x, y, validation_data)
    _check_class_weight_output(model, class_weight)
    train, val = data_mod.adapt_for_fit(model, x, y, batch_size, validation_split, validation_data, steps_per_epoch,
                                        shuffle, validation_batch_size, sample_weight=sample_weight,
                                        validation_steps=validation_steps)
    train, val = host_stage.staged(model, train), host_stage.staged(model, val)   # strings vectorized per batch
    train.class_weight = cw_table
    model._require_built(train.sample_x())
    declared = buckets.declared_shapes(model, lengths)
    bucketed = isinstance(train, SequenceData) and getattr(model, "_dynamic", False)   # batches of several lengths
    if declared is not None and not bucketed:
        raise ValueError("lengths: declared lengths apply to a Sequence / PyDataset / generator x whose batches have "
                         "several lengths; arrays have one")
    # validation batches of several lengths (or of another length than training's): each on its length's engine,
    # alone (the training run is closed meanwhile), planned and checked before its first step
    val_lengths = val is not None and getattr(model, "_dynamic", False) and (
        isinstance(val, SequenceData) or _other_length(model, val, train))
    train.check(model)
    if val_lengths:   # its first batch checked on its own length's engine, then training's first length again
        model._require_built(val.sample_x())
        val.check(model)
        model._require_built(train.sample_x())
    elif val is not None:
        val.check(model)
    # plan before anything is allocated; refuse if it does not fit
    weighted = memory.Weighted(train=train.weighted or cw_table is not None,
                               evaluate=val is not None and val.weighted)

    chars = host_stage.longest_text(train, val)   # strings: the Python objects vectorizing a batch are bounded by it

    def plan_at(batch_request):
        return memory.plan_fit(model, batch_request, micro_batch, device, memory_limit,
                               val.batch_size if val is not None and not val_lengths else None,
                               max_rows=train.num_rows,
                               shuffle_rows=train.num_rows if train.shuffle and train.num_rows else 0, weighted=weighted,
                               text_chars=chars, data_entries=data_mod.source_entries(train, val))

    request = data_mod.batch_request(train)
    first_shapes, plans, val_plans = list(getattr(model, "_bound", None) or []), {}, {}
    vw = memory.Weighted(train=False, evaluate=weighted.evaluate)

    def plan_val():
        return memory.plan_run(model, "evaluate", val.batch_size, device, memory_limit, weighted=vw)
    def first_plan():
        if declared is None:
            return plan_at(request)
        # every declared length planned (and its engine built) before step one
        plans.update(_plan_declared(model, declared, lambda: plan_at(request)))
        if val_lengths:   # and validation's run at each of them
            val_plans.update(_plan_declared(model, declared, plan_val, "validation"))
        if buckets.key(first_shapes) not in plans:
            raise DataError(f"batch 0: input shape {buckets.shape_text(first_shapes)} is not one of the lengths "
                            f"fit(lengths=...) declared: {sorted(buckets.shape_text(s) for s in declared)}",
                            batch_index=0)
        model._bind_to(first_shapes)
        return plans[buckets.key(first_shapes)]
    # checked and its peak reserved on the machine's ledger, waiting for other runs' memory if asked
    plan = admission.admit("fit", first_plan, memory_wait, verbose, short_ok=dist_fit.active() is not None)
    hold = plan.reservation
    # [dist hook] one plan agreed by every rank (all raise if one is short)
    plan = dist_fit.agree_plan(model, plan, plan_at, request == "auto", train.num_rows)
    memory.require_fits(plan)
    admission.update(plan, hold)
    batch_size = plan.batch_size   # from here on the plan's: the data sources are not told
    model._last_batch_size = batch_size
    train, val = dist_fit.shard_fit_data(model, train, val, plan.device)   # [dist hook] rank 0's weights, data by rank
    model._last_plan = plan   # already while it runs: the progress bar shows memory against it
    cbs = CallbackList(callbacks, _cb_model(model),
                       {"epochs": epochs, "steps": train.steps_for(batch_size), "verbose": verbose},
                       add_history=True, add_progbar=verbose != 0)
    history = cbs.history
    nan_stop = next((c for c in cbs.callbacks if isinstance(c, TerminateOnNaN)), None)
    schedule = getattr(model.optimizer, "_schedule", None)
    form = schedules.engine_form(schedule)
    model._engine.set_schedule(*(form or schedules.engine_form(None)))
    model._schedule_form = form or schedules.engine_form(None)   # the engines of other lengths get it too
    schedule = schedules.step_fn(schedule) if form is None else None   # the engine computes closed forms itself
    model.stop_training = False
    model._initial_epoch = None
    seed = utils.next_seed()

    def open_train(p):
        return model._engine.open_run("train", p.rows, device=p.device, host_budget=0, device_budget=0,
                                      seed=seed, guard=_GUARD, weighted=weighted.train)
    shaped = bucketed or val_lengths   # the training run can switch (or close and reopen) its engine
    if shaped:
        run = buckets.ShapeRuns(model, open_train, lambda: plan_at(request), plan, memory.Watchdog, declared)
        run.plans.update(plans)
        watchdog = run
    else:
        watchdog = memory.Watchdog(plan)
        run = open_train(plan)
    vrun, val_shapes = None, list(getattr(model, "_bound", None) or [])
    val_closed = []
    try:
        dist_fit.broadcast_on_device(run, plan.device)   # [dist hook] on a GPU: rank 0's weights over NCCL
        if val is not None and not val_lengths:
            vrun = model._engine.open_run("evaluate", plan.val_rows, device=plan.device,
                                          weighted=weighted.evaluate)
        watchdog.start() if not shaped else run.started()
        admission.mark_allocated(plan, hold)
        cbs.on_train_begin()
        initial_epoch = model._initial_epoch or initial_epoch  # BackupAndRestore resumes here
        waited, t_start = [0.0], time.perf_counter()
        per_step = schedule is not None or cbs.per_batch("train")
        last_logs = None

        def before_step(step):
            if schedule is not None:
                _apply_schedule(model, schedule)
            cbs.on_train_batch_begin(step)

        for epoch in range(initial_epoch, epochs):
            cbs.on_epoch_begin(epoch)
            tot = _totals()
            run.reset_metrics()

            def on_chunk(step_done, out, tot=tot):
                _acc(tot, out)
                waited[0] += out[3]
                if _GUARD:
                    (run.watchdog if shaped else watchdog).check(epoch, step_done)
                cbs.on_train_batch_end(step_done - 1, logs=_logs(tot, run, model))

            try:
                train.run_epoch(run, epoch, on_chunk, _Stepper(model, per_step, before_step), batch_size)
            except NonFiniteError as e:
                if nan_stop is None:
                    raise _with_epoch(e, epoch) from None
                nan_stop.terminate(getattr(e, "step", None))
            dist_fit.sync_moving_stats(model)   # [dist hook] BatchNormalization's moving statistics averaged
            if schedule is not None:
                _apply_schedule(model, schedule)   # the rate of the next update, as Keras reports it
            elif form is not None and form[0]:
                model.optimizer._track_lr(model._engine.learning_rate())
            terminated = nan_stop is not None and nan_stop.terminated_batch is not None
            dist_fit.sum_over_ranks(model, [(tot, run, True)])   # [dist hook] totals and metric sums of all ranks
            logs = _logs(tot, run, model)
            if terminated:
                logs["loss"] = float("nan")
            elif (vrun is not None or val_lengths) and _should_validate(epoch, validation_freq):
                vt = _totals()
                if val_lengths:
                    run.suspend()
                    vrun = _length_runs(model, val, val_plans, plan_val, vw, declared)
                elif bucketed:
                    run.bind_back(val_shapes, vrun)   # validation runs on the first length's engine
                _validate(model, cbs, val, vrun, vt)
                dist_fit.sum_over_ranks(model, [(vt, vrun, dist_fit.is_sharded(val))])   # [dist hook]
                logs.update(_logs(vt, vrun, model, "val_"))
                if val_lengths:
                    vrun.close()
                    val_closed += vrun.closed
                    vrun = None
            cbs.on_epoch_end(epoch, logs=logs)
            last_logs = logs
            train.on_epoch_end()
            if model.stop_training:
                break
        cbs.on_train_end(logs=last_logs)   # as Keras: the last epoch's logs
        # share of the training loop's time spent waiting for batches
        model.data_wait_fraction = waited[0] / max(time.perf_counter() - t_start, 1e-9)
    finally:
        model._last_run_stats = [r.stats() for r in (run, vrun) if r is not None]
        if vrun is not None:
            vrun.close()
        run.close()
        if shaped:   # per length run: (input shapes, plan, arena statistics, engine bytes)
            model._bucket_runs = run.closed
            model._bucket_plans = dict(run.plans)
        if val_lengths:
            model._validation_runs, model._validation_plans = val_closed, dict(val_plans)
    model.history = history
    model._last_plan = plan if not shaped else max(run.plans.values(), key=lambda p: p.host_bytes)
    return history


def _other_length(model, val, train):
    """Validation arrays whose length is not training's first (a variable-length model): the model bound to
    training's first length again after looking."""
    model._require_built(val.sample_x())
    shapes = list(model._bound)
    model._require_built(train.sample_x())
    return shapes != list(model._bound)


def _length_runs(model, val, plans, plan_now, vw, declared):
    """Validation's runs over batches of several lengths (the training run closed meanwhile): one per length on
    its engine, as evaluate makes them; each length planned once (plans, kept over the epochs; with
    fit(lengths=...) all before step one, and no other length taken) and checked against the budget before its
    first batch."""
    model._require_built(val.sample_x())   # the engine of its first batch's length
    shapes = list(model._bound)
    if declared is not None and buckets.key(shapes) not in plans:
        raise DataError(f"validation batch 0: input shape {buckets.shape_text(shapes)} is not one of the lengths "
                        f"fit(lengths=...) declared: {sorted(buckets.shape_text(s) for s in declared)}",
                        batch_index=0)
    first = plans.get(buckets.key(shapes)) or plan_now()
    plans[buckets.key(shapes)] = first
    buckets.require_fits(first, shapes, 0, "validation")
    runs = buckets.ShapeRuns(model, lambda p: model._engine.open_run("evaluate", p.rows, device=p.device,
                                                                    weighted=vw.evaluate), plan_now, first,
                             declared=declared, label="validation")
    runs.plans = plans
    return runs


def _plan_declared(model, declared, plan_now, label=""):
    """fit(lengths=...): each declared length's engine built (or taken from the
    cache) and its run planned and checked against the budget, before step one."""
    plans = {}
    for shapes in declared:
        model._bind_to(shapes)
        p = plan_now()
        plans[buckets.key(shapes)] = p
        buckets.require_fits(p, shapes, None, label)
    return plans


def _check_validation_freq(freq):
    ok = (isinstance(freq, int) and not isinstance(freq, bool) and freq > 0) or (
        isinstance(freq, (list, tuple)) and all(isinstance(e, int) and not isinstance(e, bool) for e in freq))
    if not ok:
        raise ValueError(f"validation_freq must be a positive int or a list of epochs (1-based), got {freq!r}")


def _should_validate(epoch, freq):
    """Keras: validate after epoch e (1-based) when e % freq == 0, or e is in the list."""
    return (epoch + 1) % freq == 0 if isinstance(freq, int) else (epoch + 1) in freq


def _validate(model, cbs, val, vrun, vt):
    """Validation inside fit: on_test_* hooks as Keras calls them."""
    cbs.on_test_begin()
    vrun.reset_metrics()

    def on_chunk(step, out):
        _acc(vt, out)
        cbs.on_test_batch_end(step - 1, logs=_logs(vt, vrun, model))

    stop, model.stop_training = model.stop_training, False   # a stop asked during the epoch ends fit, not this
    try:
        val.run_eval(vrun, on_chunk, _Stepper(model, cbs.per_batch("test"), lambda s: cbs.on_test_batch_begin(s)))
    finally:
        model.stop_training = stop or model.stop_training
    cbs.on_test_end(logs=_logs(vt, vrun, model, "val_"))


def _with_epoch(e, epoch):
    err = NonFiniteError(f"epoch {epoch}: {e}", epoch=epoch, step=getattr(e, "step", None),
                         layer=getattr(e, "layer", None))
    err.what = getattr(e, "what", None)
    return err


@admission.releases
def evaluate(model, x, y=None, batch_size=None, verbose="auto", steps=None, return_dict=False, memory_limit=None,
             device=None, callbacks=None, sample_weight=None, memory_wait=None, **kwargs):
    model._require_compiled("evaluate")
    admission.wait_seconds(memory_wait)
    verbose = dist_fit.verbose(_verbose(verbose))   # [dist hook] progress from rank 0 only
    device = _resolve_device(model, device)
    _check_weights_for_outputs(model, sample_weight, None)
    x, y, _ = _prepare(model, x, y)
    src = host_stage.staged(model, data_mod.adapt_for_eval(model, x, y, batch_size, steps,
                                                           sample_weight=sample_weight))
    model._require_built(src.sample_x())
    src.check(model)
    src = dist_fit.shard_eval(model, src)   # [dist hook] rank 0's weights, rows by rank
    plan = admission.admit("evaluate", lambda: memory.plan_run(
        model, "evaluate", src.batch_size, device, memory_limit,
        weighted=memory.Weighted(train=False, evaluate=src.weighted), text_chars=host_stage.longest_text(src),
        data_entries=data_mod.source_entries(src)), memory_wait, verbose)
    cbs = CallbackList(callbacks, _cb_model(model), {"steps": src.steps_per_epoch, "verbose": verbose})
    if isinstance(src, SequenceData) and getattr(model, "_dynamic", False):   # batches of several lengths
        seed = utils.next_seed()   # (keras.random's draws in a graph: new per call, as Keras's SeedGenerator)
        run = buckets.ShapeRuns(model, lambda p: model._engine.open_run("evaluate", p.rows, device=p.device,
                                                                        seed=seed,
                                                                        weighted=src.weighted),
                                lambda: memory.plan_run(model, "evaluate", src.batch_size, device, memory_limit,
                                                        weighted=memory.Weighted(train=False,
                                                                                 evaluate=src.weighted)), plan)
    else:
        run = model._engine.open_run("evaluate", plan.rows, device=plan.device, weighted=src.weighted,
                                     seed=utils.next_seed())
    tot = _totals()
    admission.mark_allocated(plan)
    bar = Progbar(src.steps_per_epoch, verbose, plan=plan)
    stop, model.stop_training = getattr(model, "stop_training", False), False
    try:
        cbs.on_test_begin()

        def on_chunk(step, out):
            _acc(tot, out)
            logs = _logs(tot, run, model)
            bar.update(step, logs)
            cbs.on_test_batch_end(step - 1, logs=logs)
        src.run_eval(run, on_chunk, _Stepper(model, cbs.per_batch("test"), lambda s: cbs.on_test_batch_begin(s)))
        # [dist hook] the totals and metric sums of every rank's rows
        dist_fit.sum_over_ranks(model, [(tot, run, dist_fit.is_sharded(src))])
        logs = _logs(tot, run, model)
    finally:
        model.stop_training = stop
        run.close()
    cbs.on_test_end(logs=logs)
    bar.update(src.steps_per_epoch, logs, finalize=True)
    if return_dict:
        return logs
    return logs["loss"] if len(logs) == 1 else list(logs.values())


@admission.releases
def predict(model, x, batch_size=None, verbose="auto", steps=None, memory_limit=None, device=None, callbacks=None,
            memory_wait=None, **kwargs):
    admission.wait_seconds(memory_wait)
    verbose = dist_fit.verbose(_verbose(verbose))   # [dist hook] progress from rank 0 only
    device = _resolve_device(model, device)
    x, _, _ = _prepare(model, x, None)
    src = host_stage.staged(model, data_mod.adapt_for_predict(model, x, batch_size, steps))
    model._require_built(src.sample_x())
    src.check(model, need_y=False)
    src, gather = dist_fit.shard_predict(model, src)   # [dist hook] rank 0's weights, a block of rows by rank
    plan = admission.admit("predict", lambda: memory.plan_run(
        model, "predict", src.batch_size, device, memory_limit,
        predict_rows=dist_fit.predict_rows(src, gather),   # [dist hook] with the gathered rows
        text_chars=host_stage.longest_text(src), data_entries=data_mod.source_entries(src)), memory_wait, verbose)
    cbs = CallbackList(callbacks, model, {"steps": src.steps_per_epoch, "verbose": verbose})
    if isinstance(src, SequenceData) and getattr(model, "_dynamic", False):   # batches of several lengths
        seed = utils.next_seed()   # (keras.random's draws in a graph: new per call, as Keras's SeedGenerator)
        run = buckets.ShapeRuns(model, lambda p: model._engine.open_run("predict", p.rows, device=p.device, seed=seed),
                                lambda: memory.plan_run(model, "predict", src.batch_size, device, memory_limit),
                                plan)
    else:
        run = model._engine.open_run("predict", plan.rows, device=plan.device, seed=utils.next_seed())
    admission.mark_allocated(plan)
    bar = Progbar(src.steps_per_epoch, verbose, plan=plan)
    stop, model.stop_training = getattr(model, "stop_training", False), False
    shapes = [tuple(s) for s in model._engine.output_shapes]
    sizes = [int(np.prod(s)) for s in shapes]

    def view(out, start, rows):
        """Rows [start, start + rows) of the predictions: output k is an (n, its
        size) block of the engine's buffer after the blocks before it."""
        if len(shapes) == 1:
            return out[start:start + rows]
        flat, n, outs, off = out.reshape(-1), out.shape[0], [], 0
        for shape, size in zip(shapes, sizes):
            outs.append(flat[n * off:n * (off + size)].reshape((n,) + shape)[start:start + rows])
            off += size
        return dict(zip(model._output_names, outs)) if model._outputs_dict else outs

    def on_step(step, outputs):
        bar.update(step)
        cbs.on_predict_batch_end(step - 1, logs={"outputs": outputs})   # the batch's (or chunk's) predictions
    try:
        cbs.on_predict_begin()
        out = src.run_predict(run, shapes[0] if len(shapes) == 1 else (sum(sizes),), on_step,
                              _Stepper(model, cbs.per_batch("predict"), lambda s: cbs.on_predict_batch_begin(s)),
                              view, sizes)
    finally:
        model.stop_training = stop
        run.close()
    cbs.on_predict_end()
    bar.update(src.steps_per_epoch, finalize=True)
    return dist_fit.gather_predictions(view(out, 0, out.shape[0]), gather)   # [dist hook] every rank's rows

