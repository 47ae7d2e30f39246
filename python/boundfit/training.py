"""fit / evaluate / predict: argument checks, the memory plan and budget check
before anything is allocated, then the epoch loop. The engine runs chunks of
steps with the GIL released; between chunks this loop reports progress, runs
callbacks, lets Ctrl-C in and checks memory outside the plan."""

import time

import numpy as np

from . import data as data_mod, functional, memory, utils
from .callbacks import CallbackList, History
from .errors import NonFiniteError
from .progress import Progbar

_CHUNK_SECONDS = 0.1
_GUARD = True  # benchmarks/bench_guard.py turns the guards off to measure their cost


def _verbose(v):
    return 1 if v == "auto" else int(v)


def _chunks(run_fn, total_steps, on_chunk):
    """Call run_fn(first, n) over [0, total_steps) in chunks of about _CHUNK_SECONDS."""
    step, chunk = 0, 1
    while step < total_steps:
        n = min(chunk, total_steps - step)
        t0 = time.perf_counter()
        out = run_fn(step, n)
        dt = time.perf_counter() - t0
        step += n
        on_chunk(step, out)
        per = dt / n if n else dt
        chunk = max(1, min(4 * chunk, int(_CHUNK_SECONDS / per) if per > 0 else 4 * chunk))


def _totals():
    return [0.0, 0.0, 0, None, None]


def _acc(tot, out):
    """Add a chunk's (loss sum, accuracy sum, rows, steps, wait, per-output loss sums, accuracy sums)."""
    tot[0] += out[0]
    tot[1] += out[1]
    tot[2] += out[2]
    if len(out) > 6:
        tot[3] = list(out[5]) if tot[3] is None else [a + b for a, b in zip(tot[3], out[5])]
        tot[4] = list(out[6]) if tot[4] is None else [a + b for a, b in zip(tot[4], out[6])]


def log_keys(model):
    """Keras's names of the logged values: loss, then per output its loss and accuracy."""
    return list(_logs(_totals(), model).keys())


def _logs(totals, model, prefix=""):
    loss_sum, acc_sum, rows, out_loss, out_acc = totals
    nan = float("nan")
    logs = {prefix + "loss": loss_sum / rows if rows else nan}
    if model._n_outputs > 1:
        names = model._output_names
        for k, name in enumerate(names):
            logs[f"{prefix}{name}_loss"] = out_loss[k] / rows if rows and out_loss else nan
        for k, name in enumerate(names):
            if model._out_metrics[k]:
                logs[f"{prefix}{name}_accuracy"] = out_acc[k] / rows if rows and out_acc else nan
    elif model.compiled_metrics:
        logs[prefix + "accuracy"] = acc_sum / rows if rows else nan
    return logs


def _prepare(model, x, y, validation_data=None):
    """Subclassed models are traced on the data's shapes; several inputs / outputs
    are packed into one x / y array (a float32 copy) for the engine."""
    seq = x is not None and data_mod._is_sequence(x)
    if not model._functional and x is not None and not seq:
        model._require_built(x)
    if model._functional and (functional.is_multi(model) or isinstance(x, dict) or isinstance(y, dict)):
        if seq:
            raise ValueError("models with several inputs or outputs take arrays (lists or dicts of them), not a "
                             "Sequence or generator, in this version")
        x = functional.pack_x(model, x)
        if y is not None:
            y = functional.pack_y(model, y)
        if isinstance(validation_data, (tuple, list)) and len(validation_data) in (2, 3):
            validation_data = (functional.pack_x(model, validation_data[0], "validation_data[0]"),
                               functional.pack_y(model, validation_data[1], "validation_data[1]"))
    return x, y, validation_data


def _resolve_device(model, device):
    from . import devices
    return devices.resolve(device)


def fit(model, x, y, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
        validation_data=None, shuffle=True, initial_epoch=0, steps_per_epoch=None, micro_batch=None,
        memory_limit=None, device=None, class_weight=None, sample_weight=None, validation_batch_size=None,
        validation_freq=1):
    model._require_compiled("fit")
    if class_weight is not None or sample_weight is not None:
        raise ValueError("class_weight / sample_weight are not supported")
    if not isinstance(epochs, int) or epochs < 0:
        raise ValueError(f"epochs must be a non-negative int, got {epochs!r}")
    if not 0.0 <= float(validation_split) < 1.0:
        raise ValueError(f"validation_split must be in [0, 1), got {validation_split!r}")
    verbose = _verbose(verbose)
    device = _resolve_device(model, device)
    x, y, validation_data = _prepare(model, x, y, validation_data)
    train, val = data_mod.adapt_for_fit(model, x, y, batch_size, validation_split, validation_data, steps_per_epoch,
                                        shuffle, validation_batch_size)
    model._require_built(train.sample_x())
    train.check(model)
    if val is not None:
        val.check(model)
    # plan before anything is allocated; refuse if it does not fit
    plan = memory.plan_fit(model, "auto" if train.auto_batch else train.batch_size, micro_batch, device,
                           memory_limit, val.batch_size if val is not None else None, max_rows=train.num_rows,
                           shuffle_rows=train.num_rows if train.shuffle and train.num_rows else 0)
    memory.require_fits(plan)
    if train.auto_batch:
        train.set_batch_size(plan.batch_size)
    model._last_batch_size = train.batch_size
    history = History()
    cbs = CallbackList([history] + list(callbacks or []), model,
                       {"epochs": epochs, "steps": train.steps_per_epoch, "verbose": verbose})
    model.stop_training = False
    watchdog = memory.Watchdog(plan)
    run = model._engine.open_run("train", plan.rows, device=plan.device, host_budget=0, device_budget=0,
                                 seed=utils.next_seed(), guard=_GUARD)
    vrun = None
    try:
        if val is not None:
            vrun = model._engine.open_run("evaluate", plan.val_rows, device=plan.device)
        cbs.on_train_begin()
        waited, t_start = [0.0], time.perf_counter()
        for epoch in range(initial_epoch, epochs):
            cbs.on_epoch_begin(epoch)
            if verbose:
                print(f"Epoch {epoch + 1}/{epochs}")
            bar = Progbar(train.steps_per_epoch, verbose)
            tot = _totals()

            def on_chunk(step_done, out, tot=tot, bar=bar):
                _acc(tot, out)
                waited[0] += out[4]
                if _GUARD:
                    watchdog.check(epoch, step_done)
                logs = _logs(tot, model)
                bar.update(step_done, logs)
                cbs.on_train_batch_end(step_done - 1, logs)

            try:
                train.run_epoch(run, epoch, on_chunk, _chunks)
            except NonFiniteError as e:
                raise _with_epoch(e, epoch) from None
            logs = _logs(tot, model)
            if vrun is not None and (epoch + 1) % validation_freq == 0:
                vt = _totals()
                val.run_eval(vrun, lambda s, out: _acc(vt, out), _chunks)
                logs.update(_logs(vt, model, "val_"))
            bar.update(train.steps_per_epoch, logs, finalize=True)
            cbs.on_epoch_end(epoch, logs)
            train.on_epoch_end()
            if model.stop_training:
                break
        cbs.on_train_end()
        watchdog.finish()
        # share of the training loop's time spent waiting for batches
        model.data_wait_fraction = waited[0] / max(time.perf_counter() - t_start, 1e-9)
    finally:
        model._last_run_stats = [r.stats() for r in (run, vrun) if r is not None]
        if vrun is not None:
            vrun.close()
        run.close()
    model.history = history
    model._last_plan = plan
    return history


def _with_epoch(e, epoch):
    err = NonFiniteError(f"epoch {epoch}: {e}", epoch=epoch, step=getattr(e, "step", None),
                         layer=getattr(e, "layer", None))
    err.what = getattr(e, "what", None)
    return err


def evaluate(model, x, y=None, batch_size=None, verbose="auto", steps=None, return_dict=False, memory_limit=None,
             device=None, **kwargs):
    model._require_compiled("evaluate")
    verbose = _verbose(verbose)
    device = _resolve_device(model, device)
    x, y, _ = _prepare(model, x, y)
    src = data_mod.adapt_for_eval(model, x, y, batch_size, steps)
    model._require_built(src.sample_x())
    src.check(model)
    plan = memory.plan_run(model, "evaluate", src.batch_size, device, memory_limit)
    memory.require_fits(plan)
    run = model._engine.open_run("evaluate", plan.rows, device=plan.device)
    tot = _totals()
    bar = Progbar(src.steps_per_epoch, verbose)
    try:
        def on_chunk(step, out):
            _acc(tot, out)
            bar.update(step, _logs(tot, model))
        src.run_eval(run, on_chunk, _chunks)
    finally:
        run.close()
    logs = _logs(tot, model)
    bar.update(src.steps_per_epoch, logs, finalize=True)
    if return_dict:
        return logs
    return logs["loss"] if len(logs) == 1 else list(logs.values())


def predict(model, x, batch_size=None, verbose="auto", steps=None, memory_limit=None, device=None, **kwargs):
    verbose = _verbose(verbose)
    device = _resolve_device(model, device)
    x, _, _ = _prepare(model, x, None)
    src = data_mod.adapt_for_predict(model, x, batch_size, steps)
    model._require_built(src.sample_x())
    src.check(model, need_y=False)
    plan = memory.plan_run(model, "predict", src.batch_size, device, memory_limit,
                           predict_rows=src.num_rows)
    memory.require_fits(plan)
    run = model._engine.open_run("predict", plan.rows, device=plan.device)
    bar = Progbar(src.steps_per_epoch, verbose)
    shapes = model._engine.output_shapes
    sizes = [int(np.prod(s)) for s in shapes]
    try:
        out = src.run_predict(run, shapes[0] if len(shapes) == 1 else (sum(sizes),), lambda step: bar.update(step),
                              _chunks)
    finally:
        run.close()
    bar.update(src.steps_per_epoch, finalize=True)
    if len(shapes) == 1:
        return out
    # the engine writes output k as an (n, its size) block after the blocks before it
    flat, n, outs, off = out.reshape(-1), out.shape[0], [], 0
    for shape, size in zip(shapes, sizes):
        outs.append(flat[n * off:n * (off + size)].reshape((n,) + tuple(shape)))
        off += size
    return dict(zip(model._output_names, outs)) if model._outputs_dict else outs

