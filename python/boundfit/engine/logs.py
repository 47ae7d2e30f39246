"""The logs of fit, evaluate and predict: a run's totals (loss sum, rows,
per-output loss sums) added chunk by chunk, and Keras's log dict made from
them and the engine's metric results."""


def totals():
    """[loss sum, rows, per-output loss sums (None until a chunk brings them)]"""
    return [0.0, 0, None]


def add(tot, out):
    """Add a chunk's (loss sum, rows, steps, wait_s, per-output loss sums)."""
    tot[0] += out[0]
    tot[1] += out[1]
    if len(out) > 4:
        tot[2] = list(out[4]) if tot[2] is None else [a + b for a, b in zip(tot[2], out[4])]


def log_keys(model):
    """Keras's names of the logged values: loss, per output its loss (several
    outputs), then the compiled metrics (`<output>_<metric>` with several outputs)."""
    return list(logs(totals(), None, model).keys())


def logs(tot, run, model, prefix=""):
    """Keras's logs: the loss (sum over outputs of loss weight times the sum of
    weighted per-sample losses, over the rows, as Keras's sum_over_batch_size
    averaged over batches by size), each output's loss when there are several,
    and each metric's value over the epoch so far, computed by the engine."""
    loss_sum, rows = tot[0], tot[1]
    nan = float("nan")
    out = {prefix + "loss": loss_sum / rows if rows else nan}
    if model._n_outputs > 1:
        out_loss = tot[2] if len(tot) > 2 else None
        for k, name in enumerate(model._output_names):
            out[f"{prefix}{name}_loss"] = out_loss[k] / rows if rows and out_loss else nan
    names = list(model.compiled_metrics)
    if names:
        values = run.metric_results() if run is not None else [nan] * len(names)
        if run is not None and hasattr(run, "metric_stats"):   # a traced metric's result from its sums, as Keras's
            values = [_result(run, q, o, v) for q, (v, (o, _, _)) in enumerate(zip(values, model._metric_objs))]
        for n, v in zip(names, values):
            out[prefix + n] = v
    rename = getattr(model, "_log_map", None)   # a model's training graph: the model's own names
    if rename is not None:
        out = {prefix + rename[k[len(prefix):]]: v for k, v in out.items() if k[len(prefix):] in rename}
    return out


def _result(run, q, obj, value):
    """Metric q's value: the engine's, or a traced metric's (metrics/traced.py SumsOf) from its summed statistics."""
    source = getattr(obj, "source", None)
    if source is None:
        return value
    r = source.result_from(run.metric_stats(q))
    return float(r) if getattr(r, "ndim", 0) == 0 else r


def callback_model(model):
    """The model callbacks see: the model itself when its training graph runs (models/loss_graph.py)."""
    return getattr(model, "_callback_model", model)
