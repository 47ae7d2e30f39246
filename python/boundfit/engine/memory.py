"""Exact memory plans of runs, the budget check before anything is allocated,
the largest batch that fits, and the between-steps watchdog.

A plan is the engine's own list of what a run will reserve (its arenas are
sized from the same numbers, so the plan equals their high-water marks), plus
the weights and optimizer state the model holds."""

from collections import namedtuple

import numpy as np

from .. import _core, losses, optimizers
from ..layers.reduce import mixing_layer, require_whole_batches
from ..errors import MemoryBudgetError
from ..runtime import blas_runtime, budget, devices, dist_group, shared_budget
from .plan import MemoryPlan, PlanEntry, budget_error


class Weighted(namedtuple("Weighted", "train evaluate")):
    """Whether a run's training and its evaluation (fit's validation, or
    evaluate) batches carry sample or class weights, whose per-batch slots
    the engine then plans; predict never does."""

    def of(self, mode):
        return bool(self.train if mode == "train" else self.evaluate if mode == "evaluate" else False)


UNWEIGHTED = Weighted(False, False)


def _engine_plan(model, mode, rows, device, weighted):
    return model._engine.plan(mode, int(rows), device, weighted=weighted.of(mode))


def _align(n):
    return (n + 63) // 64 * 64


# the planned region's categories, by each buffer's kind as the engine tags it (csrc/core/bufs.h bf_buf_kind)
_KINDS = {"saved": "saved activations", "gradient": "activation gradients",
          "workspace": "workspaces (im2col and the like)", "loss": "loss and metric buffers",
          "state": "layer state (dropout masks, batch statistics)"}


def _scratch_split(p, where, prefix):
    """The liveness-planned region, split by what is live when it peaks; the
    parts add up to the region exactly (reuse gaps are named as such)."""
    bufs = p["buffers"]
    total = _align(p["scratch_bytes"])
    if not bufs:
        return []
    top = max(bufs, key=lambda b: b[4] + _align(b[1]))
    t = top[2]
    parts = {}
    for (name, nbytes, first, last, offset), tag in zip(bufs, p["buffer_kinds"]):
        if first <= t <= last and nbytes:
            kind = _KINDS[tag]
            parts[kind] = parts.get(kind, 0) + _align(nbytes)
    out = [PlanEntry(f"{prefix}{kind} (live at the peak)", n, where, "activations") for kind, n in parts.items()]
    gap = total - sum(parts.values())
    if gap:
        out.append(PlanEntry(f"{prefix}reuse gaps in the planned region", gap, where, "activations"))
    return out


def _entries(p, prefix=""):
    out = []
    for name, category, nbytes, where in p["entries"]:
        if category == "activations":
            out += _scratch_split(p, where, prefix)
        else:
            out.append(PlanEntry(prefix + name, nbytes, where, category))
    return out


def _weights_bytes(eng):
    """The weight arena's bytes: the engine's own or, for a training graph, its model's (which it computes on)."""
    eng = eng.weights_base() or eng
    return eng.weight_arena_bytes or eng.n_params * 4


def _model_entries(model, mode):
    eng = model._engine
    out = [PlanEntry("parameters (held by the model)", _weights_bytes(eng), "host", "parameters", "allocated")]
    if blas_runtime.resident_bytes():
        out.append(PlanEntry(blas_runtime.note(), blas_runtime.resident_bytes(), "host", "runtime", "resident"))
    if mode == "train" and eng.optimizer_arena_bytes:
        out.append(PlanEntry("optimizer state (held by the model)", eng.optimizer_arena_bytes, "host",
                             "optimizer state", "allocated"))
    cached = _cached(model)
    if cached:
        out.append(PlanEntry(f"engines of {len(model._engines) - 1} other input length(s) (cached: weights and "
                             "optimizer state)", cached, "host", "cached", "allocated"))
    return out


def _cached(model):
    """Host bytes of the engines a variable-length model keeps for its other input shapes."""
    fn = getattr(model, "cached_engine_bytes", None)
    return fn() if fn is not None else 0


def _held(model, mode):
    eng = model._engine
    weights = (eng.weights_base() or eng).weight_arena_bytes or 0   # a training graph's: its model's
    return (weights + (eng.optimizer_arena_bytes if mode == "train" else 0) + blas_runtime.resident_bytes()
            + _cached(model))


PREFETCH_STACK = 256 << 10  # csrc/core/prefetch.h BF_PREFETCH_STACK
# What the Python side of a run allocates (callbacks' logs, progress, the
# interpreter's caches on first use; the engine's Run objects are their own
# entry): a bound, not a count. Fresh-process runs of every kind measure
# 0.1-0.4 MiB (tests/test_first_fit.py checks the whole plan against the
# peak RSS growth).
LOOP_OBJECTS = 1 << 20


def _runtime_entries(model, mode, rows, val_rows, shuffle_rows, text_chars=0):
    """What a run needs outside the engine's arenas, stated: the prefetch
    thread's stack, when shuffling, the epoch's int64 row order, and the
    buffers of host-side preprocessing (stage_entries)."""
    runs = 2 if mode == "train" and val_rows else 1  # training and validation each open one
    out = [PlanEntry("prefetch thread stack", PREFETCH_STACK, "host", "runtime", "outside the arena"),
           PlanEntry(f"engine run descriptions ({runs} Run object{'s' if runs > 1 else ''}: buffer table, "
                     "per-node state)", runs * (_core.RUN_OBJECT_BYTES + model._engine.run_tables_bytes), "host",
                     "runtime", "outside the arena"),
           PlanEntry("Python objects of the loop (bound)", LOOP_OBJECTS, "host", "runtime", "outside the arena")]
    if mode == "train" and shuffle_rows:
        out.append(PlanEntry(f"shuffle order ({shuffle_rows} rows, int64)", 8 * shuffle_rows, "host", "runtime",
                             "outside the arena"))
    return out + stage_entries(model, mode, rows, val_rows, shuffle_rows, text_chars)


_GATHER_ITEM = 8   # the widest dtype (int64 / float64) a gathered label or weight may have


def stage_entries(model, mode, rows, val_rows, shuffle_rows, text_chars=0):
    """A model with host-side preprocessing (TextVectorization on a string
    Input, the structured-data layers on their Inputs: engine/host_stage.py): each stage's output buffer of one batch,
    the array the engine then reads as any input batch (and validation's);
    when training shuffles, the batch's labels, weights and other inputs
    are gathered into buffers of the batch's rows (a bound: 8 bytes a value);
    text_chars (the data's longest text, when known): the Python objects
    vectorizing one batch hold (a bound, TextVectorization.temporaries_bound)."""
    stages = getattr(model, "_host_stages", None) or {}
    out = []
    for name, r in (("", rows), ("validation: ", val_rows if mode == "train" else None)):
        for L in (stages.values() if r else ()):
            w, dt = int(np.prod(L._stage_shape(), dtype=np.int64)), np.dtype(L.batch_dtype())
            out.append(PlanEntry(f"{name}{L.name}: one batch vectorized on the host ({r} x {w}, {dt.name})",
                                 r * w * dt.itemsize, "host", "runtime", "outside the arena: an input batch"))
    if text_chars:
        r = max(rows, val_rows or 0)
        for L in stages.values():
            out.append(PlanEntry(f"{L.name}: Python objects vectorizing one batch (texts up to {text_chars} "
                                 "characters, bound)", L.temporaries_bound(r, text_chars), "host", "runtime",
                                 "outside the arena"))
    if stages and mode == "train" and shuffle_rows:
        per_row = sum(_size(s) for s in model._engine.output_shapes) + 1
        per_row += sum(_size(t._ps) for k, t in enumerate(model._inputs) if k not in stages)
        out.append(PlanEntry(f"one shuffled batch's labels, weights and other inputs, gathered ({rows} rows, bound)",
                             rows * per_row * _GATHER_ITEM, "host", "runtime", "outside the arena"))
    return out


def _size(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _needed(model, mode, rows, device, weighted, val_rows=None, predict_rows=None, shuffle_rows=0, text_chars=0):
    """(host bytes, device bytes) this run would newly reserve."""
    p = _engine_plan(model, mode, rows, device, weighted)
    h, d = p["host_bytes"], p["device_bytes"]
    h += sum(e.bytes for e in _runtime_entries(model, mode, rows, val_rows, shuffle_rows, text_chars))
    if val_rows:
        v = _engine_plan(model, "evaluate", val_rows, device, weighted)
        h, d = h + v["host_bytes"], d + v["device_bytes"]
    if predict_rows:
        h += predict_rows * _out_size(model) * 4
    return h, d


def _out_size(model):
    total = 0
    for shape in model._engine.output_shapes:
        n = 1
        for s in shape:
            n *= s
        total += n
    return total


def _budgets(device, memory_limit):
    """Host and device budgets (bytes, source), less what other runs on the machine's ledger reserved and have
    not taken yet; and the SharedView of those runs."""
    if not _is_device(device) or device.startswith("emu"):
        blas_runtime.ensure()  # before the budget is read: runs on the host's BLAS add nothing after it
    shared = shared_budget.SharedView(shared_budget.others())
    host_limit = memory_limit if not _is_device(device) else None
    host, host_src = shared_budget.host_budget(*budget.host_budget(host_limit), host_limit, shared)
    dev, dev_src = (None, None)
    if _is_device(device):
        free, total = _core.device_mem_info(device)
        taken = dist_group.nccl_bytes(device)   # NCCL's buffers: out of `free` already, and a plan entry
        dev, dev_src = shared_budget.device_budget(*budget.device_budget(free + taken, memory_limit), device,
                                                   free + taken, memory_limit, shared)
    return host, host_src, dev, dev_src, shared


def _is_device(device):
    return device is not None and device != "cpu"


def _fits(model, mode, rows, device, hb, db, weighted, val_rows=None, predict_rows=None, shuffle_rows=0,
          text_chars=0):
    h, d = _needed(model, mode, rows, device, weighted, val_rows, predict_rows, shuffle_rows, text_chars)
    return h <= hb and (db is None or d <= db)


def _max_rows(model, mode, device, hb, db, upper, weighted, val_rows=None, shuffle_rows=0, text_chars=0):
    """Largest rows in [1, upper] whose plan fits (plans are monotone in rows)."""
    if not _fits(model, mode, 1, device, hb, db, weighted, val_rows, shuffle_rows=shuffle_rows,
                 text_chars=text_chars):
        return 0
    lo, hi = 1, max(1, int(upper))
    if _fits(model, mode, hi, device, hb, db, weighted, val_rows, shuffle_rows=shuffle_rows,
             text_chars=text_chars):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _fits(model, mode, mid, device, hb, db, weighted, val_rows, shuffle_rows=shuffle_rows,
                 text_chars=text_chars):
            lo = mid
        else:
            hi = mid
    return lo


_AUTO_CAP = 1 << 16


def build_plan(model, mode, batch_size, device, memory_limit, micro_batch=None, val_batch=None, predict_rows=None,
               max_rows=None, shuffle_rows=0, weighted=UNWEIGHTED, text_chars=0, data_entries=()):
    """The plan of a run of batch_size rows (or 'auto': the largest that fits),
    in micro-batches when micro_batch is given; plan.batch_size is the one the
    run takes. data_entries: what the data source holds whatever the batch
    size (a PyDataset's queue, engine/workers.py), in the plan and taken off
    the budget the batch-size searches fit into."""
    hb, hsrc, db, dsrc, shared = _budgets(device, memory_limit)
    data_bytes = sum(e.bytes for e in data_entries)
    hb_all, hb = hb, max(hb - data_bytes, 0)
    held = _held(model, mode)
    # automatic choices keep the watchdog's tolerance free on top of the margin
    auto = batch_size == "auto" or micro_batch == "auto"
    keep = budget.watchdog_tolerance(hb) if auto else 0
    ab = max(hb - keep, 0)
    if auto and not _fits(model, mode, 1, device, ab, db, weighted, shuffle_rows=shuffle_rows,
                          text_chars=text_chars):
        ab = hb  # too tight to keep it: only the margin stays free (the table says so)
    # batch_size="auto": the largest batch that fits (no larger than the data)
    cap = min(max_rows or _AUTO_CAP, _AUTO_CAP)
    if batch_size == "auto":
        batch_size = max(1, _max_rows(model, mode, device, ab, db, cap, weighted, shuffle_rows=shuffle_rows,
                                      text_chars=text_chars))
    batch_size = int(batch_size)
    rows = batch_size
    if micro_batch == "auto":
        rows = max(1, _max_rows(model, mode, device, ab, db, batch_size, weighted,
                                min(val_batch, batch_size) if val_batch else None, shuffle_rows, text_chars))
    elif micro_batch is not None:
        if isinstance(micro_batch, bool) or not isinstance(micro_batch, int) or micro_batch <= 0:
            raise ValueError(f"micro_batch must be a positive int, 'auto' or None, got {micro_batch!r}")
        rows = min(int(micro_batch), batch_size)
    if weighted.train or weighted.evaluate:
        _check_weights_per_sample(model)
    if rows < batch_size:
        require_whole_batches(getattr(model, "_node_layers", ()), f"a batch of {batch_size} rows cannot run as micro-batches of "
                              f"{rows}: use micro_batch=None")
    val_rows = min(val_batch, rows) if val_batch else None
    if val_batch and mixing_layer(getattr(model, "_node_layers", ())) is not None:
        val_rows = val_batch   # whole validation batches, larger than the training ones too: it mixes samples
    p = _engine_plan(model, mode, rows, device, weighted)
    entries = _model_entries(model, mode) + _entries(p)
    if val_rows:
        entries += _entries(_engine_plan(model, "evaluate", val_rows, device, weighted), "validation: ")
    if predict_rows:
        entries.append(PlanEntry("predictions (returned array)", predict_rows * _out_size(model) * 4, "host",
                                 "outputs"))
    entries += _runtime_entries(model, mode, rows, val_rows, shuffle_rows, text_chars) + list(data_entries)
    max_bs = _max_rows(model, mode, device, hb, db, _AUTO_CAP, weighted, val_batch, shuffle_rows, text_chars)
    plan = MemoryPlan(entries, budget_host_bytes=hb_all + held, budget_device_bytes=(db if db is not None else None),
                      max_batch_size=max_bs, batch_size=batch_size, micro_batch=rows if rows != batch_size else None,
                      device=device, budget_host_source=hsrc, budget_device_source=dsrc)
    plan.rows, plan.val_rows, plan.mode = rows, val_rows or rows, mode
    plan.engine_plan = p   # the step program's ops and buffers, for plan.plot()
    plan.held_bytes = held
    plan.shared = shared   # the other runs on the machine's ledger it was planned beside
    if auto:
        plan.headroom_bytes = max(hb_all - (plan.host_bytes - held), 0)
        tol = budget.format_bytes(keep)
        plan.headroom_reason = (f"below the budget, on top of its margin: the automatic choice keeps {tol} free "
                                f"(the between-steps watchdog's tolerance for memory outside the plan, from a "
                                f"generator or callback)" if ab < hb else
                                f"below the budget, on top of its margin: too little memory to also keep the "
                                f"watchdog's tolerance ({tol}) free; memory outside the plan beyond half the margin "
                                f"stops the run")
    return plan


def _check_weights_per_sample(model):
    """sample_weight / class_weight on an output of one number per sample (Keras (B,)): Keras 3 reduces its
    loss over the batch axis before weighing it (mean(loss) * mean(weights) per batch), mixing the samples.
    A traced loss's per-sample values (a training graph's output under the engine's MEAN loss) are Keras's
    per-sample losses, which it weighs per sample."""
    out_losses = getattr(model, "_out_losses", None) or [None] * len(model._outputs or [])
    for name, t, loss in zip(model._output_names or [], model._outputs or [], out_losses):
        if t._ps == () and not (model._is_training_graph and getattr(loss, "kind", None) == losses.MEAN):
            raise ValueError(f"sample_weight / class_weight: the output {name!r} has one number per sample (shape "
                             "(None,)), whose loss Keras 3 reduces over the batch axis before weighing it (the "
                             "batch's mean loss times its mean weight), mixing the samples; give the output shape "
                             "(None, 1) (keras.ops.expand_dims(x, -1)) for per-sample weights")


def plan_fit(model, batch_size, micro_batch, device, memory_limit, val_batch, max_rows=None, shuffle_rows=0,
             weighted=UNWEIGHTED, text_chars=0, data_entries=()):
    """The plan of a fit (training run, with its validation run when val_batch is given)."""
    return build_plan(model, "train", batch_size, device, memory_limit, micro_batch, val_batch, max_rows=max_rows,
                      shuffle_rows=shuffle_rows, weighted=weighted, text_chars=text_chars, data_entries=data_entries)


def plan_run(model, mode, batch_size, device, memory_limit, predict_rows=None, weighted=UNWEIGHTED, text_chars=0,
             data_entries=()):
    """The plan of an evaluate or predict run (predict_rows: the returned array's rows)."""
    return build_plan(model, mode, batch_size or 32, device, memory_limit, predict_rows=predict_rows,
                      weighted=weighted, text_chars=text_chars, data_entries=data_entries)


def estimate(model, batch_size, optimizer=None, device=None, micro_batch=None, mode="train", memory_limit=None,
             validation_batch_size=None, shuffle_rows=0, weighted=UNWEIGHTED):
    """Model.estimate_memory's plan: the model built and compiled (or given an optimizer), no data needed."""
    model._require_built()
    if mode in ("train", "evaluate") and model.optimizer is None and optimizer is None:
        raise RuntimeError("estimate_memory(mode='train') needs a compiled model or optimizer=")
    if optimizer is not None and model.optimizer is None:
        opt = optimizers.get(optimizer)
        model._engine.compile(**opt._engine_args(model), loss=0, from_logits=False)
    return build_plan(model, mode, batch_size, devices.resolve(device), memory_limit, micro_batch,
                      validation_batch_size, shuffle_rows=shuffle_rows, weighted=weighted)


def require_fits(plan):
    """Raise the plan's MemoryBudgetError if it does not fit."""
    if not plan.fits:
        raise budget_error(plan)


class Watchdog:
    """Between chunks: stop at a step boundary when memory outside the plan (a
    leaking generator or callback) has grown and what is left before the limit
    is under half the safety margin, i.e. before the OOM killer would act.
    Growth is read from anonymous resident memory: pages of a memory-mapped
    dataset the run reads are page cache, not memory the run holds. A run that
    reuses a kept arena (see bf.utils.clear_session) starts with the pages of
    it still resident (counted when it is taken), and the kernel still lists
    them as reclaimable (inactive_file, MemAvailable): both readings leave
    them out."""

    def __init__(self, plan):
        self.plan = plan
        self.planned = plan.host_bytes - plan.held_bytes
        self.base, self.reused = None, 0
        self._taken = _core.kept_taken()

    def start(self):
        """Called once the run's arenas are reserved."""
        self.reused = _core.kept_taken() - self._taken
        rss = budget.anon_rss_bytes()
        self.base = None if rss is None else rss - self.reused

    def check(self, epoch, step):
        used = budget.anon_rss_bytes()
        if used is None or self.base is None:
            return
        outside = used - self.base - self.planned
        if outside <= 0:
            return
        room = budget.raw_headroom()
        room = None if room is None else max(room - self.reused, 0)
        if room is not None and room < budget.watchdog_floor(room + used):
            raise MemoryBudgetError(
                f"stopped at epoch {epoch}, step {step}: memory outside the plan grew by {outside / 2**20:.0f} MiB "
                f"(a leaking generator or callback?) and only {room / 2**20:.0f} MiB remain before the limit",
                plan=self.plan, needed_bytes=outside, available_bytes=room, where="host",
                max_batch_size=self.plan.max_batch_size)
