"""MemoryPlan: what a run will hold, where, against which budget; a readable
table (str) and an HTML table for notebooks; the MemoryBudgetError it raises."""

from dataclasses import dataclass
import html

from .errors import MemoryBudgetError
from .sizes import format_bytes


@dataclass
class PlanEntry:
    name: str
    bytes: int
    where: str = "host"
    category: str = ""
    note: str = ""


class MemoryPlan:
    def __init__(self, entries, budget_host_bytes, budget_device_bytes=None, max_batch_size=None, batch_size=None,
                 micro_batch=None, device="cpu", budget_host_source="", budget_device_source=""):
        self.breakdown = list(entries)
        self.budget_host_bytes = int(budget_host_bytes)
        self.budget_device_bytes = None if budget_device_bytes is None else int(budget_device_bytes)
        self.max_batch_size = max_batch_size
        self.batch_size, self.micro_batch, self.device = batch_size, micro_batch, device
        self.budget_host_source, self.budget_device_source = budget_host_source, budget_device_source

    @property
    def host_bytes(self):
        return sum(e.bytes for e in self.breakdown if e.where == "host")

    @property
    def device_bytes(self):
        return sum(e.bytes for e in self.breakdown if e.where != "host")

    @property
    def host_fits(self):
        return self.host_bytes <= self.budget_host_bytes

    @property
    def device_fits(self):
        return self.budget_device_bytes is None or self.device_bytes <= self.budget_device_bytes

    @property
    def fits(self):
        return self.host_fits and self.device_fits

    def shortfall(self):
        """(where, needed, available) of the first budget exceeded, else None."""
        if not self.device_fits:
            return self.device, self.device_bytes, self.budget_device_bytes
        if not self.host_fits:
            return "host", self.host_bytes, self.budget_host_bytes
        return None

    def _rows(self):
        return [(e.name, e.where, format_bytes(e.bytes), e.note) for e in self.breakdown]

    def __str__(self):
        head = f"Memory plan: batch_size={self.batch_size}" + (f", micro_batch={self.micro_batch}" if self.micro_batch
                                                                else "") + f", device={self.device}"
        rows = [("entry", "where", "bytes", "")] + self._rows()
        w = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [head, "-" * (sum(w) + 6)]
        for i, r in enumerate(rows):
            lines.append(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:>{w[2]}}  {r[3]}".rstrip())
            if i == 0:
                lines.append("-" * (sum(w) + 6))
        lines.append("-" * (sum(w) + 6))
        lines.append(f"host total     {format_bytes(self.host_bytes):>12}   budget {format_bytes(self.budget_host_bytes)}"
                     f" ({self.budget_host_source})")
        if self.device != "cpu":
            b = "?" if self.budget_device_bytes is None else format_bytes(self.budget_device_bytes)
            lines.append(f"device total   {format_bytes(self.device_bytes):>12}   budget {b} ({self.budget_device_source})")
        s = self.shortfall()
        lines.append("fits: yes" if s is None else
                     f"fits: NO - needs {format_bytes(s[1])} on {s[0]}, {format_bytes(s[2])} available")
        lines.append(f"largest batch size that fits: {self.max_batch_size}")
        return "\n".join(lines)

    def __repr__(self):
        return (f"<MemoryPlan host={format_bytes(self.host_bytes)} device={format_bytes(self.device_bytes)} "
                f"fits={self.fits} max_batch_size={self.max_batch_size}>")

    def _repr_html_(self):
        color = "#2e7d32" if self.fits else "#c62828"
        body = "".join(f"<tr><td>{html.escape(n)}</td><td>{html.escape(w)}</td><td style='text-align:right'>{b}</td>"
                       f"<td>{html.escape(note)}</td></tr>" for n, w, b, note in self._rows())
        used = self.host_bytes / max(self.budget_host_bytes, 1)
        bar = (f"<div style='background:#eee;width:300px;height:10px'><div style='background:{color};height:10px;"
               f"width:{min(used, 1) * 300:.0f}px'></div></div>")
        s = self.shortfall()
        verdict = "fits" if s is None else f"does not fit: needs {format_bytes(s[1])} on {s[0]}, {format_bytes(s[2])} available"
        return (f"<div><b>Memory plan</b> batch_size={self.batch_size} device={html.escape(str(self.device))}"
                f"<table><tr><th>entry</th><th>where</th><th>bytes</th><th></th></tr>{body}"
                f"<tr><td><b>host total</b></td><td></td><td style='text-align:right'><b>{format_bytes(self.host_bytes)}"
                f"</b></td><td>budget {format_bytes(self.budget_host_bytes)}</td></tr></table>{bar}"
                f"<span style='color:{color}'>{verdict}</span>; largest batch size that fits: {self.max_batch_size}</div>")


def budget_message(plan):
    where, need, have = plan.shortfall()
    ways = []
    if plan.max_batch_size:
        ways.append(f"batch_size <= {plan.max_batch_size} fits")
    ways.append("or micro_batch='auto'" if ways else "micro_batch='auto' keeps the batch size")
    return f"needs {format_bytes(need)} on {where}, {format_bytes(have)} available; {', '.join(ways)}"


def budget_error(plan):
    where, need, have = plan.shortfall()
    return MemoryBudgetError(budget_message(plan), plan=plan, needed_bytes=need, available_bytes=have, where=where,
                             max_batch_size=plan.max_batch_size)
