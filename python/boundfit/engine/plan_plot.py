"""plan.plot(): a run's memory over its step program, drawn from the engine's
own plan (csrc/core/timeline.c): one stacked bar per op (forward, loss,
backward), the memory held for the whole run at the bottom (parameters,
optimizer state, gradients, batch slots, ...), above it the activation
buffers live at that op (the largest few named) and the free gaps between
them in the planned region, the peak and the budget line. The tallest bar is
the plan's total for that location, to the byte.

matplotlib is optional (pip install "boundfit[plot]"); nothing here uses
pyplot, so plotting leaves no global figure state behind. The returned figure
shows itself as a PNG in a notebook."""

import functools
import io

from ..sizes import format_bytes

_NAMED = 6  # activation buffers named in the legend (the largest)
_MAX_TICKS = 40  # op labels on the x axis
_HELD_COLORS = {"parameters": "#4e79a7", "optimizer state": "#a0cbe8", "gradients": "#f28e2b",
                "input batches": "#8cd17d", "runtime": "#bab0ac", "workspaces": "#d4a6c8",
                "outputs": "#9d7660", "validation run": "#86bcb6"}
_BOX = {"facecolor": "white", "alpha": 0.85, "edgecolor": "none", "pad": 1.5}   # line labels over the bars
_BUF_COLORS = ("#e15759", "#b07aa1", "#59a14f", "#edc948", "#76b7b2", "#ff9da7")


def _matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ImportError as e:
        raise ImportError('MemoryPlan.plot() needs matplotlib, an optional dependency: '
                          'pip install "boundfit[plot]" (or pip install matplotlib)') from e
    return FigureCanvasAgg


def timeline(plan, where=None):
    """The data plot() draws, for one location (default: where the run's
    activations live): dict with ops (labels), held [(label, bytes)], buffers
    [(name, bytes, first op, last op)] of that location's planned region, live
    and top (bytes per op), total and budget (bytes or None)."""
    p = getattr(plan, "engine_plan", None)
    if p is None or "ops" not in p:
        raise ValueError("this plan carries no step program (made by an older boundfit?); "
                         "use model.estimate_memory(...) to get one")
    act_where = next((w for _, c, _, w in p["entries"] if c == "activations"), "host")
    where = act_where if where is None else where
    locs = {loc[0]: loc for loc in plan.locations()}
    if where not in locs:
        raise ValueError(f"where must be one of {sorted(locs)}, got {where!r}")
    held = {}
    for e in plan.breakdown:
        if e.where != where or (e.category == "activations" and not e.name.startswith("validation: ")):
            continue
        label = "validation run" if e.name.startswith("validation: ") else e.category or "other"
        held[label] = held.get(label, 0) + int(e.bytes)
    here = where == act_where
    ops = [o[0] for o in p["ops"]]
    bufs = [(n, b, f, la) for n, b, f, la, _ in p["buffers"] if b] if here else []
    return {"where": where, "ops": ops, "held": sorted(held.items(), key=lambda kv: -kv[1]), "buffers": bufs,
            "live": [o[1] if here else 0 for o in p["ops"]], "top": [o[2] if here else 0 for o in p["ops"]],
            "total": locs[where][1], "budget": locs[where][2], "budget_source": locs[where][3]}


def _align(n):
    return (n + 63) // 64 * 64


def plot(plan, ax=None, where=None, named=_NAMED):
    """Draw the plan (see the module doc); returns the matplotlib Figure."""
    FigureCanvasAgg = _matplotlib()
    d = timeline(plan, where)
    if ax is None:
        fig = _figure_class()(figsize=(11, 5.6), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
    fig = ax.figure
    x = list(range(len(d["ops"])))
    total, budget = d["total"], d["budget"]
    unit, scale = next((u, f) for u, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("B", 1))
                       if max(total, budget or 0) >= 2 * f or f == 1)
    base = [0.0] * len(x)

    def band(heights, label, color, **kw):
        h = [v / scale for v in heights]
        style = {"edgecolor": "white", "linewidth": 0.4, **kw}
        ax.bar(x, h, bottom=base, width=0.8, label=label, color=color, **style)
        for i, v in enumerate(h):
            base[i] += v

    for label, n in d["held"]:
        band([n] * len(x), f"{label}: {format_bytes(n)} (whole run)", _HELD_COLORS.get(label, "#cccccc"))
    big = sorted(d["buffers"], key=lambda b: -b[1])[:named]
    named_live = [0] * len(x)
    for k, (name, nbytes, first, last) in enumerate(big):
        h = [_align(nbytes) if first <= t <= last else 0 for t in x]
        named_live = [a + b for a, b in zip(named_live, h)]
        band(h, f"{name}: {format_bytes(nbytes)}", _BUF_COLORS[k % len(_BUF_COLORS)])
    if len(d["buffers"]) > len(big):
        band([lv - n for lv, n in zip(d["live"], named_live)],
             f"{len(d['buffers']) - len(big)} smaller activation buffers", "#d7d7d7")
    if any(t > lv for t, lv in zip(d["top"], d["live"])):
        band([t - lv for t, lv in zip(d["top"], d["live"])], "free gaps in the planned region", "#ffffff",
             hatch="///", edgecolor="#9e9e9e")
    peak_at = max(x, key=lambda t: base[t])
    ax.axhline(total / scale, color="black", linestyle="--", linewidth=1)
    # the higher of the two lines is labelled above it, the lower one below, so close lines stay legible
    ax.text(-0.5, total / scale, f" peak {format_bytes(total)} at op '{d['ops'][peak_at]}'", ha="left",
            va="bottom" if budget is None or total >= budget else "top", fontsize=9, fontweight="bold", bbox=_BOX)
    top = total
    if budget is not None:
        color = "#2e7d32" if total <= budget else "#c62828"
        ax.axhline(budget / scale, color=color, linewidth=2)
        src = f" ({d['budget_source']})" if d["budget_source"] else ""
        ax.text(x[-1] + 0.5, budget / scale, f"budget {format_bytes(budget)}{src} ", ha="right",
                va="bottom" if budget > total else "top", fontsize=9, color=color, fontweight="bold", bbox=_BOX)
        top = max(total, budget)
    ax.set_ylim(0, top / scale * 1.1)
    every = max(1, len(x) // _MAX_TICKS + (len(x) % _MAX_TICKS > 0))   # a deep model: every k-th op named
    ax.set_xticks(x[::every], d["ops"][::every], rotation=35, ha="right", fontsize=8)
    ax.set_xlim(-0.6, x[-1] + 0.6)
    ax.set_ylabel(f"{unit} on {d['where']}")
    mb = f" in micro-batches of {plan.micro_batch}" if plan.micro_batch else ""
    verdict = ("fits" if budget is None or total <= budget else
               f"does not fit ({format_bytes(total - budget)} over)")
    step = {"evaluate": "evaluation step", "predict": "prediction step"}.get(getattr(plan, "mode", ""), "training step")
    ax.set_title(f"Memory over one {step}: batch_size={plan.batch_size}{mb} on {d['where']}, "
                 f"peak {format_bytes(total)}, {verdict}", fontsize=11)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False, reverse=True)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    return fig


def _png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


@functools.cache
def _figure_class():
    from matplotlib.figure import Figure

    class PlanFigure(Figure):
        """A Figure that shows itself as a PNG in a notebook (no pyplot needed)."""

        def _repr_png_(self):
            return _png(self)

    return PlanFigure
