"""MemoryPlan: what a run will hold, where ("host" or a device like "cuda:0"),
against which budget. Totals are sums of the entries; a readable table (str),
an HTML table with a bar per location for notebooks, plot() (plan_plot.py: memory
over the step program, from the engine plan attached as .engine_plan), and the MemoryBudgetError
a plan that does not fit raises:
  "needs 9.31 GiB on cuda:0, 7.80 GiB available; batch_size <= 1536 fits, or micro_batch='auto'"
On the host, what the process already holds before the run (the model's
weights, BLAS buffers: held_bytes) is in the plan's total and in its budget
alike; the error's needed / available figures are the run's new bytes against
the limit itself, and the message names the held bytes apart.
"""

from dataclasses import dataclass
import html

from ..errors import MemoryBudgetError
from ..runtime.budget import anon_rss_bytes
from ..sizes import format_bytes
from . import plan_plot


@dataclass
class PlanEntry:
    """One thing a run holds: name, bytes, where ("host" / "cuda:0"), category (params,
    gradients, optimizer, activations, workspace, inputs, runtime...) and a free note."""
    name: str
    bytes: int
    where: str = "host"
    category: str = ""
    note: str = ""


def _entry(e):
    if isinstance(e, PlanEntry):
        return e
    return PlanEntry(**e) if isinstance(e, dict) else PlanEntry(*e)


class MemoryPlan:
    """The exact memory of one run. Device budget (None: unknown) applies to all non-host entries."""

    def __init__(self, entries, budget_host_bytes, budget_device_bytes=None, max_batch_size=None, batch_size=None,
                 micro_batch=None, device="cpu", budget_host_source="", budget_device_source=""):
        self.breakdown = [_entry(e) for e in entries]
        self.budget_host_bytes = int(budget_host_bytes)
        self.budget_device_bytes = None if budget_device_bytes is None else int(budget_device_bytes)
        self.max_batch_size = max_batch_size
        self.batch_size, self.micro_batch, self.device = batch_size, micro_batch, str(device)
        self.budget_host_source, self.budget_device_source = budget_host_source, budget_device_source
        self.headroom_bytes, self.headroom_reason = 0, ""
        self.engine_plan = None  # the engine's plan of the step (ops, buffers), set by memory.build_plan
        self.held_bytes = 0      # of host_bytes, already held before the run (the model's weights...)
        self.anon_rss_at_plan = anon_rss_bytes()  # the progress display's baseline: the run adds to it

    @property
    def host_bytes(self):
        return sum(int(e.bytes) for e in self.breakdown if e.where == "host")

    @property
    def device_bytes(self):
        return sum(int(e.bytes) for e in self.breakdown if e.where != "host")

    @property
    def peak(self):
        """The run's peak: its host and device bytes together (.host_bytes, .device_bytes: each)."""
        return self.host_bytes + self.device_bytes

    def by_category(self, where=None):
        """{category: bytes} of the breakdown (on `where` only: "host" or the device, when given)."""
        out = {}
        for e in self.breakdown:
            if where is None or e.where == where:
                out[e.category] = out.get(e.category, 0) + int(e.bytes)
        return out

    @property
    def host_fits(self):
        return self.host_bytes <= self.budget_host_bytes

    @property
    def device_fits(self):
        return self.budget_device_bytes is None or self.device_bytes <= self.budget_device_bytes

    @property
    def fits(self):
        return self.host_fits and self.device_fits

    def _device_name(self):
        return next((e.where for e in self.breakdown if e.where != "host"), self.device)

    def locations(self):
        """[(where, total bytes, budget bytes or None, budget source)]: host, then the device if used."""
        out = [("host", self.host_bytes, self.budget_host_bytes, self.budget_host_source)]
        if self.device not in ("cpu", "host") or self.device_bytes:
            out.append((self._device_name(), self.device_bytes, self.budget_device_bytes, self.budget_device_source))
        return out

    def shortfalls(self):
        """[(where, needed, available)] of every budget exceeded, the device first. On the host both
        leave out held_bytes: the run's new bytes against the limit (memory_limit, or the memory left)."""
        return [(w, need - self._held(w), have - self._held(w)) for w, need, have, _ in reversed(self.locations())
                if have is not None and need > have]

    def _held(self, where):
        return self.held_bytes if where == "host" else 0

    def _budget_text(self, where, have, src):
        """The budget of a location as the table shows it: the host's split into what the process already
        holds and the limit (or memory left) for the run."""
        if have is None:
            return "unknown"
        held = self._held(where)
        if not held:
            return format_bytes(have) + (f" ({src})" if src else "")
        return (f"{format_bytes(have)} = {format_bytes(held)} already held by this process + "
                f"{format_bytes(have - held)} for the run" + (f" ({src})" if src else ""))

    def shortfall(self):
        """(where, needed, available) of the first budget exceeded, else None."""
        s = self.shortfalls()
        return s[0] if s else None

    def _head(self):
        mb = f", micro_batch={self.micro_batch}" if self.micro_batch else ""
        return f"Memory plan: batch_size={self.batch_size}{mb}, device={self.device}"

    def _verdict(self):
        s = self.shortfall()
        if s is None:
            return "fits: yes"
        return f"fits: NO, short by {format_bytes(s[1] - s[2])} on {s[0]}: {budget_message(self)}"

    def _largest(self):
        m = self.max_batch_size
        return "unknown" if m is None else "none (even batch_size=1 does not fit)" if m == 0 else str(m)

    def __str__(self):
        rows = [("entry", "where", "category", "size", "note")]
        rows += [(e.name, e.where, e.category, format_bytes(e.bytes), e.note) for e in self.breakdown]
        w = [max(len(r[i]) for r in rows) for i in range(4)]
        fmt = "{0:<%d}  {1:<%d}  {2:<%d}  {3:>%d}  {4}" % tuple(w)
        table = [fmt.format(*r).rstrip() for r in rows]
        totals = []
        for where, need, have, src in self.locations():
            pct = "" if not have else f"  {100 * need / have:.0f}%"
            totals.append(f"{where + ' total':<{w[0]}}  {format_bytes(need):>10}{pct} of budget "
                          f"{self._budget_text(where, have, src)}")
        rule = "-" * max(len(x) for x in table + totals)
        lines = [self._head(), rule, table[0], rule] + table[1:] + [rule] + totals
        lines.append(self._verdict())
        lines.append(f"largest batch size that fits: {self._largest()}")
        if self.headroom_bytes:
            lines.append(self._headroom())
        return "\n".join(lines)

    def plot(self, ax=None, where=None):
        """The run's memory over its step program (ops on x, bytes on y): what is held for the whole run, the
        activation buffers live at each op (the largest named), the peak and the budget line. Needs matplotlib
        (pip install "boundfit[plot]"); returns the Figure (a PNG in notebooks). where: "host" or the device
        (default: where the activations live); ax: draw into these matplotlib axes."""
        return plan_plot.plot(self, ax=ax, where=where)

    def _headroom(self):
        return f"headroom left: {format_bytes(self.headroom_bytes)} {self.headroom_reason}".rstrip()

    def __repr__(self):
        return (f"<MemoryPlan host={format_bytes(self.host_bytes)} device={format_bytes(self.device_bytes)} "
                f"fits={self.fits} max_batch_size={self.max_batch_size}>")

    def _repr_html_(self):
        esc = lambda v: html.escape(str(v))  # noqa: E731
        td = "<td style='padding:1px 8px'>"
        tdr = "<td style='padding:1px 8px;text-align:right;font-family:monospace'>"
        body = "".join(f"<tr>{td}{esc(e.name)}</td>{td}{esc(e.where)}</td>{td}{esc(e.category)}</td>"
                       f"{tdr}{format_bytes(e.bytes)}</td>{td}{esc(e.note)}</td></tr>" for e in self.breakdown)
        totals = ""
        for where, need, have, src in self.locations():
            ok = have is None or need <= have
            color = "#2e7d32" if ok else "#c62828"
            frac = 0 if not have else min(need / have, 1)
            bar = (f"<div title='{esc(src)}' style='background:#e0e0e0;width:200px;height:10px;display:inline-block'>"
                   f"<div style='background:{color};height:10px;width:{frac * 200:.0f}px'></div></div>")
            totals += (f"<tr style='border-top:1px solid #999'>{td}<b>{esc(where)} total</b></td>{td}</td>{td}</td>"
                       f"{tdr}<b>{format_bytes(need)}</b></td>{td}{bar} budget "
                       f"{esc(self._budget_text(where, have, src))}</td></tr>")
        color = "#2e7d32" if self.fits else "#c62828"
        verdict = "fits" if self.fits else "does not fit" + esc(self._verdict()[len("fits: NO"):])
        return (f"<div class='boundfit-plan'><b>{esc(self._head())}</b>"
                f"<table><tr><th>entry</th><th>where</th><th>category</th><th>size</th><th>note</th></tr>"
                f"{body}{totals}</table><span style='color:{color};font-weight:bold'>{verdict}</span>"
                f"; largest batch size that fits: {esc(self._largest())}"
                + (f"<br>{esc(self._headroom())}" if self.headroom_bytes else "") + "</div>")


def format_budget_message(needed_bytes, available_bytes, where, max_batch_size=None):
    """"needs 9.31 GiB on cuda:0, 7.80 GiB available; batch_size <= 1536 fits, or micro_batch='auto'"."""
    head = f"needs {format_bytes(needed_bytes)} on {where}, {format_bytes(available_bytes)} available"
    if max_batch_size is None:
        return head + "; micro_batch='auto' keeps the batch size in less memory"
    if max_batch_size <= 0:
        return head + "; even batch_size=1 does not fit: free memory or raise the limit (bf.set_memory_limit)"
    return head + f"; batch_size <= {max_batch_size} fits, or micro_batch='auto'"


def _held_note(plan, where):
    """On the host: where the available figure comes from, and what the process already holds besides it."""
    held = plan._held(where)
    if not held:
        return ""
    src = f"{plan.budget_host_source}: " if plan.budget_host_source else ""
    return (f" ({src}the limit on what the run adds; this process already holds another {format_bytes(held)}: "
            "the model's weights, BLAS buffers)")


def budget_message(plan):
    """The MemoryBudgetError message of a plan that does not fit (first shortfall; others appended)."""
    (where, need, have), *more = plan.shortfalls()
    msg = format_budget_message(need, have, where, plan.max_batch_size) + _held_note(plan, where)
    for w, n, h in more:
        msg += f" (also needs {format_bytes(n)} on {w}, {format_bytes(h)} available{_held_note(plan, w)})"
    return msg


def budget_error(plan):
    """The MemoryBudgetError (not raised) for a plan that does not fit."""
    if plan.fits:
        raise ValueError("budget_error() needs a plan that does not fit")
    where, need, have = plan.shortfall()
    return MemoryBudgetError(budget_message(plan), plan=plan, needed_bytes=need, available_bytes=have, where=where,
                             max_batch_size=plan.max_batch_size)


def raise_budget_error(plan):
    """Raise the plan's MemoryBudgetError (carrying plan, needed/available bytes, where, max_batch_size)."""
    raise budget_error(plan)
