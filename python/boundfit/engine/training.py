"""fit / evaluate / predict of a model under a Strategy (engine/strategy.py):
fit runs its FitLoop (engine/fit_loop.py); evaluate and predict plan their
run and check it against the budget before anything is allocated, then step
through the data as fit does (engine/stepping.py), with Keras's logs
(engine/logs.py). Each runs in an admission scope: the ledger reservations
it made are released when it ends."""

import numpy as np

from .. import session
from ..callbacks import CallbackList
from ..callbacks.progbar import Progbar
from ..runtime import devices
from . import admission, buckets, data as data_mod, host_stage, memory
from .fit_args import check_weights_for_outputs
from .fit_loop import FitLoop
from .logs import add, callback_model, logs as make_logs, totals
from .sources import SequenceData
from .stepping import Stepper, verbose_level


@admission.releases
def fit(model, strategy, x, y, **kwargs):
    return FitLoop(model, strategy, x, y, **kwargs).run()


@admission.releases
def evaluate(model, strategy, x, y=None, batch_size=None, verbose="auto", steps=None, return_dict=False,
             memory_limit=None, device=None, callbacks=None, sample_weight=None, memory_wait=None, **kwargs):
    model._require_compiled("evaluate")
    admission.wait_seconds(memory_wait)
    verbose = strategy.verbose(verbose_level(verbose))
    device = devices.resolve(device)
    check_weights_for_outputs(model, sample_weight, None)
    x, y, _ = data_mod.prepare(model, x, y)
    src = host_stage.staged(model, data_mod.adapt_for_eval(model, x, y, batch_size, steps,
                                                           sample_weight=sample_weight))
    model._require_built(src.sample_x())
    src.check(model)
    src = strategy.shard_eval(model, src)
    plan = admission.admit("evaluate", lambda: memory.plan_run(
        model, "evaluate", src.batch_size, device, memory_limit,
        weighted=memory.Weighted(train=False, evaluate=src.weighted), text_chars=host_stage.longest_text(src),
        data_entries=data_mod.source_entries(src)), memory_wait, verbose)
    cbs = CallbackList(callbacks, callback_model(model), {"steps": src.steps_per_epoch, "verbose": verbose})
    if isinstance(src, SequenceData) and getattr(model, "_dynamic", False):   # batches of several lengths
        seed = session.next_seed()   # (keras.random's draws in a graph: new per call, as Keras's SeedGenerator)
        run = buckets.ShapeRuns(model, lambda p: model._engine.open_run("evaluate", p.rows, device=p.device,
                                                                        seed=seed,
                                                                        weighted=src.weighted),
                                lambda: memory.plan_run(model, "evaluate", src.batch_size, device, memory_limit,
                                                        weighted=memory.Weighted(train=False,
                                                                                 evaluate=src.weighted)), plan)
    else:
        run = model._engine.open_run("evaluate", plan.rows, device=plan.device, weighted=src.weighted,
                                     seed=session.next_seed())
    tot = totals()
    admission.mark_allocated(plan)
    bar = Progbar(src.steps_per_epoch, width=30, verbose=verbose, interval=0, plan=plan)
    stop, model.stop_training = getattr(model, "stop_training", False), False
    try:
        cbs.on_test_begin()

        def on_chunk(step, out):
            add(tot, out)
            logs = make_logs(tot, run, model)
            bar.update(step, logs, finalize=False)
            cbs.on_test_batch_end(step - 1, logs=logs)
        src.run_eval(run, on_chunk, Stepper(model, cbs.per_batch("test"), lambda s: cbs.on_test_batch_begin(s)))
        strategy.reduce_logs(model, [(tot, run, strategy.is_sharded(src))])
        logs = make_logs(tot, run, model)
    finally:
        model.stop_training = stop
        run.close()
    cbs.on_test_end(logs=logs)
    bar.update(src.steps_per_epoch, logs, finalize=True)
    if return_dict:
        return logs
    return logs["loss"] if len(logs) == 1 else list(logs.values())


@admission.releases
def predict(model, strategy, x, batch_size=None, verbose="auto", steps=None, memory_limit=None, device=None,
            callbacks=None, memory_wait=None, **kwargs):
    admission.wait_seconds(memory_wait)
    verbose = strategy.verbose(verbose_level(verbose))
    device = devices.resolve(device)
    x, _, _ = data_mod.prepare(model, x, None)
    src = host_stage.staged(model, data_mod.adapt_for_predict(model, x, batch_size, steps))
    model._require_built(src.sample_x())
    src.check(model, need_y=False)
    src, gather = strategy.shard_predict(model, src)   # gather: None, or (rows, rows per process)
    plan = admission.admit("predict", lambda: memory.plan_run(
        model, "predict", src.batch_size, device, memory_limit,
        predict_rows=strategy.predict_rows(src, gather),   # with the gathered rows
        text_chars=host_stage.longest_text(src), data_entries=data_mod.source_entries(src)), memory_wait, verbose)
    cbs = CallbackList(callbacks, model, {"steps": src.steps_per_epoch, "verbose": verbose})
    if isinstance(src, SequenceData) and getattr(model, "_dynamic", False):   # batches of several lengths
        seed = session.next_seed()   # (keras.random's draws in a graph: new per call, as Keras's SeedGenerator)
        run = buckets.ShapeRuns(model, lambda p: model._engine.open_run("predict", p.rows, device=p.device, seed=seed),
                                lambda: memory.plan_run(model, "predict", src.batch_size, device, memory_limit),
                                plan)
    else:
        run = model._engine.open_run("predict", plan.rows, device=plan.device, seed=session.next_seed())
    admission.mark_allocated(plan)
    bar = Progbar(src.steps_per_epoch, width=30, verbose=verbose, interval=0, plan=plan)
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
        bar.update(step, finalize=False)
        cbs.on_predict_batch_end(step - 1, logs={"outputs": outputs})   # the batch's (or chunk's) predictions
    try:
        cbs.on_predict_begin()
        out = src.run_predict(run, shapes[0] if len(shapes) == 1 else (sum(sizes),), on_step,
                              Stepper(model, cbs.per_batch("predict"), lambda s: cbs.on_predict_batch_begin(s)),
                              view, sizes)
    finally:
        model.stop_training = stop
        run.close()
    cbs.on_predict_end()
    bar.update(src.steps_per_epoch, finalize=True)
    return strategy.gather_predictions(view(out, 0, out.shape[0]), gather)

