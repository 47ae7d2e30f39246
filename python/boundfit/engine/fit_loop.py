"""fit's loop in named phases (Model.fit -> training.fit -> FitLoop.run):
check the arguments; prepare the data; plan and admit (the run's memory
plan checked against the budget and reserved on the machine's ledger before
anything is allocated); set up the callbacks and the learning rate; open the
runs; then per epoch train its batches, validate, and end the epoch (its
callbacks); end, and close the runs whatever happened. What depends on the
processes that run it (progress from one rank, this rank's device, the data
by rank, one plan agreed, rank 0's weights, the logs summed) is asked of the
Strategy (engine/strategy.py) it is given.

The engine runs chunks of steps with the GIL released; between chunks the
loop reports progress, runs callbacks, lets Ctrl-C in and checks memory
outside the plan. Steps run one at a time when a callback overrides a batch
hook, or when the learning rate is a callable or a schedule the engine has
no closed form for (its rate lr(iterations) is then set in the engine before
each step)."""

import time

from .. import schedules, session
from ..optimizers.base import EMA_TO_WEIGHTS
from ..callbacks import CallbackList, TerminateOnNaN
from ..errors import NonFiniteError
from ..runtime import devices
from . import admission, buckets, data as data_mod, host_stage, memory
from .fit_args import (check_class_weight_output, check_validation_freq, check_weights_for_outputs,
                       class_weight_table, should_validate)
from .logs import add, callback_model, logs, totals
from .sources import SequenceData
from .stepping import Stepper, verbose_level

_GUARD = True  # benchmarks/bench_guard.py turns the guards off to measure their cost


def _apply_schedule(model, schedule):
    lr = float(schedule(model._engine.raw_steps()))   # Keras: the schedule at _iterations (accumulated steps too)
    model._engine.set_learning_rate(lr)
    model.optimizer._track_lr(lr)


def _with_epoch(e, epoch):
    err = NonFiniteError(f"epoch {epoch}: {e}", epoch=epoch, step=getattr(e, "step", None),
                         layer=getattr(e, "layer", None))
    err.what = getattr(e, "what", None)
    return err


class FitLoop:
    """One fit of `model` under `strategy`, with Keras's fit arguments (and boundfit's); run() returns the
    History."""

    def __init__(self, model, strategy, x, y, batch_size=None, epochs=1, verbose="auto", callbacks=None,
                 validation_split=0.0, validation_data=None, shuffle=True, initial_epoch=0, steps_per_epoch=None,
                 micro_batch=None, memory_limit=None, device=None, class_weight=None, sample_weight=None,
                 validation_batch_size=None, validation_freq=1, validation_steps=None, lengths=None,
                 memory_wait=None):
        self.model, self.strategy = model, strategy
        self.x, self.y, self.validation_data = x, y, validation_data
        self.batch_size, self.epochs, self.verbose, self.callbacks = batch_size, epochs, verbose, callbacks
        self.validation_split, self.shuffle, self.initial_epoch = validation_split, shuffle, initial_epoch
        self.steps_per_epoch, self.micro_batch, self.memory_limit = steps_per_epoch, micro_batch, memory_limit
        self.device, self.class_weight, self.sample_weight = device, class_weight, sample_weight
        self.validation_batch_size, self.validation_freq = validation_batch_size, validation_freq
        self.validation_steps, self.lengths, self.memory_wait = validation_steps, lengths, memory_wait

    def run(self):
        model = self.model
        self.check_arguments()
        self.prepare_data()
        self.plan_and_admit()
        self.set_up()
        self.open_train_run()
        self.val_run, self.val_closed = None, []
        val_shapes = list(getattr(model, "_bound", None) or [])
        try:
            self.begin()
            last_logs = None
            try:
                for epoch in range(self.initial_epoch, self.epochs):
                    epoch_logs = self.train_epoch(epoch)
                    self.validate(epoch, epoch_logs, val_shapes)
                    last_logs = self.end_epoch(epoch, epoch_logs)
                    if model.stop_training:
                        break
            finally:
                self.finalize_variable_values()
            self.end(last_logs)
        finally:
            self.close()
        model.history = self.history
        model._last_plan = self.plan if not self.shaped else max(self.train_run.plans.values(),
                                                                 key=lambda p: p.host_bytes)
        return self.history

    # ---- before anything is planned ----
    def check_arguments(self):
        model = self.model
        model._require_compiled("fit")
        admission.wait_seconds(self.memory_wait)   # checked before anything else
        check_validation_freq(self.validation_freq)
        if self.class_weight is not None and self.sample_weight is not None:
            raise ValueError("You cannot `class_weight` and `sample_weight` at the same time.")
        check_weights_for_outputs(model, self.sample_weight, self.class_weight)
        self.cw_table = class_weight_table(self.class_weight)
        if not isinstance(self.epochs, int) or self.epochs < 0:
            raise ValueError(f"epochs must be a non-negative int, got {self.epochs!r}")
        if not 0.0 <= float(self.validation_split) < 1.0:
            raise ValueError(f"validation_split must be in [0, 1), got {self.validation_split!r}")

    def prepare_data(self):
        """The training and validation sources, checked against the model (each on its own length's engine
        where validation batches have other lengths than training's)."""
        model, st = self.model, self.strategy
        self.verbose = st.verbose(verbose_level(self.verbose))
        self.device = devices.resolve(st.device(self.device))
        x, validation_data = st.prepare_fit(model, self.x, self.validation_data, self.device)
        x, y, validation_data = data_mod.prepare(model, x, self.y, validation_data)
        check_class_weight_output(model, self.class_weight)
        train, val = data_mod.adapt_for_fit(model, x, y, self.batch_size, self.validation_split, validation_data,
                                            self.steps_per_epoch, self.shuffle, self.validation_batch_size,
                                            sample_weight=self.sample_weight, validation_steps=self.validation_steps)
        train, val = host_stage.staged(model, train), host_stage.staged(model, val)   # strings vectorized per batch
        train.class_weight = self.cw_table
        model._require_built(train.sample_x())
        self.declared = buckets.declared_shapes(model, self.lengths)
        dynamic = getattr(model, "_dynamic", False)
        self.bucketed = isinstance(train, SequenceData) and dynamic   # batches of several lengths
        if self.declared is not None and not self.bucketed:
            raise ValueError("lengths: declared lengths apply to a Sequence / PyDataset / generator x whose batches "
                             "have several lengths; arrays have one")
        # validation batches of several lengths (or of another length than training's): each on its length's
        # engine, alone (the training run is closed meanwhile), planned and checked before its first step
        self.val_lengths = val is not None and dynamic and (
            isinstance(val, SequenceData) or buckets.other_length(model, val, train))
        train.check(model)
        if self.val_lengths:   # its first batch checked on its own length's engine, then training's first again
            model._require_built(val.sample_x())
            val.check(model)
            model._require_built(train.sample_x())
        elif val is not None:
            val.check(model)
        self.train, self.val = train, val
        self.weighted = memory.Weighted(train=train.weighted or self.cw_table is not None,
                                        evaluate=val is not None and val.weighted)
        self.chars = host_stage.longest_text(train, val)   # strings: bounds the Python objects vectorizing a batch

    # ---- the plan ----
    def plan_at(self, batch_request):
        train, val = self.train, self.val
        return memory.plan_fit(self.model, batch_request, self.micro_batch, self.device, self.memory_limit,
                               val.batch_size if val is not None and not self.val_lengths else None,
                               max_rows=train.num_rows,
                               shuffle_rows=train.num_rows if train.shuffle and train.num_rows else 0,
                               weighted=self.weighted, text_chars=self.chars,
                               data_entries=data_mod.source_entries(train, val))

    def plan_val(self):
        return memory.plan_run(self.model, "evaluate", self.val.batch_size, self.device, self.memory_limit,
                               weighted=self.vw)

    def first_plan(self):
        """The plan of the first batch's length; with fit(lengths=...) every declared length planned (and its
        engine built) before step one."""
        if self.declared is None:
            return self.plan_at(self.request)
        model = self.model
        self.plans.update(buckets.plan_declared(model, self.declared, lambda: self.plan_at(self.request)))
        if self.val_lengths:   # and validation's run at each of them
            self.val_plans.update(buckets.plan_declared(model, self.declared, self.plan_val, "validation"))
        if buckets.key(self.first_shapes) not in self.plans:
            raise buckets.undeclared(self.first_shapes, self.declared)
        model._bind_to(self.first_shapes)
        return self.plans[buckets.key(self.first_shapes)]

    def plan_and_admit(self):
        """The plan checked and its peak reserved on the machine's ledger (waiting for other runs' memory if
        asked), agreed by the strategy's processes; then the data as this process reads it."""
        model, st = self.model, self.strategy
        self.request = data_mod.batch_request(self.train)
        self.first_shapes, self.plans, self.val_plans = list(getattr(model, "_bound", None) or []), {}, {}
        self.vw = memory.Weighted(train=False, evaluate=self.weighted.evaluate)
        plan = admission.admit("fit", self.first_plan, self.memory_wait, self.verbose, short_ok=st.data_parallel)
        self.hold = plan.reservation
        plan = st.agree_plan(model, plan, self.plan_at, self.request == "auto", self.train.num_rows)
        memory.require_fits(plan)
        admission.update(plan, self.hold)
        self.plan = plan
        model._last_batch_size = plan.batch_size   # from here on the plan's: the data sources are not told
        self.train, self.val = st.shard_fit_data(model, self.train, self.val, plan.device)
        model._last_plan = plan   # already while it runs: the progress bar shows memory against it

    # ---- the run ----
    def set_up(self):
        """The callbacks (History, the progress bar) and the learning rate's schedule in the engine."""
        model = self.model
        self.cbs = CallbackList(self.callbacks, callback_model(model),
                                {"epochs": self.epochs, "steps": self.train.steps_for(self.plan.batch_size),
                                 "verbose": self.verbose},
                                add_history=True, add_progbar=self.verbose != 0)
        self.history = self.cbs.history
        self.nan_stop = next((c for c in self.cbs.callbacks if isinstance(c, TerminateOnNaN)), None)
        schedule = getattr(model.optimizer, "_schedule", None)
        self.form = schedules.engine_form(schedule)
        model._engine.set_schedule(*(self.form or schedules.engine_form(None)))
        model._schedule_form = self.form or schedules.engine_form(None)   # the engines of other lengths get it too
        self.schedule = schedules.step_fn(schedule) if self.form is None else None   # closed forms: the engine's
        model.stop_training = False
        model._initial_epoch = None
        self.seed = session.next_seed()

    def open_train(self, p):
        return self.model._engine.open_run("train", p.rows, device=p.device, host_budget=0, device_budget=0,
                                           seed=self.seed, guard=_GUARD, weighted=self.weighted.train)

    def open_train_run(self):
        """The training run; a ShapeRuns when it can switch (or close and reopen) its engine by length."""
        self.shaped = self.bucketed or self.val_lengths
        if self.shaped:
            self.train_run = buckets.ShapeRuns(self.model, self.open_train, lambda: self.plan_at(self.request),
                                          self.plan, memory.Watchdog, self.declared)
            self.train_run.plans.update(self.plans)
            self.watchdog = self.train_run
        else:
            self.watchdog = memory.Watchdog(self.plan)
            self.train_run = self.open_train(self.plan)

    def begin(self):
        model, plan = self.model, self.plan
        self.strategy.start_run(self.train_run, plan.device)
        if self.val is not None and not self.val_lengths:
            self.val_run = model._engine.open_run("evaluate", plan.val_rows, device=plan.device,
                                               weighted=self.weighted.evaluate)
        self.watchdog.start() if not self.shaped else self.train_run.started()
        admission.mark_allocated(plan, self.hold)
        self.cbs.on_train_begin()
        self.initial_epoch = model._initial_epoch or self.initial_epoch  # BackupAndRestore resumes here
        self.waited, self.t_start = 0.0, time.perf_counter()
        self.per_step = self.schedule is not None or self.cbs.per_batch("train")

    def before_step(self, step):
        if self.schedule is not None:
            _apply_schedule(self.model, self.schedule)
        self.cbs.on_train_batch_begin(step)

    # ---- an epoch ----
    def train_epoch(self, epoch):
        """The epoch's training batches; returns its logs (summed over the strategy's processes)."""
        model, run, cbs = self.model, self.train_run, self.cbs
        cbs.on_epoch_begin(epoch)
        tot = totals()
        run.reset_metrics()

        def on_chunk(step_done, out):
            add(tot, out)
            self.waited += out[3]
            if _GUARD:
                (run.watchdog if self.shaped else self.watchdog).check(epoch, step_done)
            cbs.on_train_batch_end(step_done - 1, logs=logs(tot, run, model))

        try:
            self.train.run_epoch(run, epoch, on_chunk, Stepper(model, self.per_step, self.before_step),
                                 self.plan.batch_size)
        except NonFiniteError as e:
            if self.nan_stop is None:
                raise _with_epoch(e, epoch) from None
            self.nan_stop.terminate(getattr(e, "step", None))
        self.strategy.end_epoch(model)
        if self.schedule is not None:
            _apply_schedule(model, self.schedule)   # the rate of the next update, as Keras reports it
        elif self.form is not None and self.form[0]:
            model.optimizer._track_lr(model._engine.learning_rate())
        self.terminated = self.nan_stop is not None and self.nan_stop.terminated_batch is not None
        self.strategy.reduce_logs(model, [(tot, run, True)])
        out = logs(tot, run, model)
        if self.terminated:
            out["loss"] = float("nan")
        return out

    def validate(self, epoch, epoch_logs, val_shapes):
        """Validation after the epoch (unless TerminateOnNaN stopped it), its val_ logs added to epoch_logs."""
        if self.terminated or not ((self.val_run is not None or self.val_lengths) and
                                   should_validate(epoch, self.validation_freq)):
            return
        model, run, cbs, val = self.model, self.train_run, self.cbs, self.val
        vt = totals()
        if self.val_lengths:
            run.suspend()
            self.val_run = buckets.length_runs(model, val, self.val_plans, self.plan_val, self.vw, self.declared)
        elif self.bucketed:
            run.bind_back(val_shapes, self.val_run)   # validation runs on the first length's engine
        vrun = self.val_run
        cbs.on_test_begin()
        vrun.reset_metrics()

        def on_chunk(step, out):
            add(vt, out)
            cbs.on_test_batch_end(step - 1, logs=logs(vt, vrun, model))

        stop, model.stop_training = model.stop_training, False   # a stop asked during the epoch ends fit, not this
        try:
            val.run_eval(vrun, on_chunk, Stepper(model, cbs.per_batch("test"), lambda s: cbs.on_test_batch_begin(s)))
        finally:
            model.stop_training = stop or model.stop_training
        cbs.on_test_end(logs=logs(vt, vrun, model, "val_"))
        self.strategy.reduce_logs(model, [(vt, vrun, self.strategy.is_sharded(val))])
        epoch_logs.update(logs(vt, vrun, model, "val_"))
        if self.val_lengths:
            vrun.close()
            self.val_closed += vrun.closed
            self.val_run = None

    def end_epoch(self, epoch, epoch_logs):
        self.cbs.on_epoch_end(epoch, logs=epoch_logs)
        self.train.on_epoch_end()
        return epoch_logs

    # ---- after the epochs ----
    def finalize_variable_values(self):
        """Keras's, in its fit's finally (before on_train_end): with use_ema, the trainable weights take their
        moving average (once the optimizer made one)."""
        model = self.model
        opt = getattr(model.optimizer, "inner_optimizer", model.optimizer)
        if self.epochs > 0 and getattr(opt, "use_ema", False) and model._engine.iterations() > 0:
            model._engine.ema(EMA_TO_WEIGHTS)

    def end(self, last_logs):
        self.cbs.on_train_end(logs=last_logs)   # as Keras: the last epoch's logs
        # share of the training loop's time spent waiting for batches
        self.model.data_wait_fraction = self.waited / max(time.perf_counter() - self.t_start, 1e-9)

    def close(self):
        """The runs closed (also after an error); what they used kept on the model for its reports."""
        model, run, vrun = self.model, self.train_run, self.val_run
        model._last_run_stats = [r.stats() for r in (run, vrun) if r is not None]
        if vrun is not None:
            vrun.close()
        run.close()
        if self.shaped:   # per length run: (input shapes, plan, arena statistics, engine bytes)
            model._bucket_runs = run.closed
            model._bucket_plans = dict(run.plans)
        if self.val_lengths:
            model._validation_runs, model._validation_plans = self.val_closed, dict(self.val_plans)
