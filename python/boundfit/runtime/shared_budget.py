"""A run's budgets on a shared machine: budget.py's budgets less what the other
runs on the ledger (ledger.py) have reserved and not yet taken, and what the
budget would be were they all finished (waiting only helps a run short of less).

Host: each constraint budget.py reads (MemAvailable; each limited cgroup level)
loses the others' pending bytes that it will be charged for: MemAvailable all
of them, a cgroup level those of holders inside it; what they already hold is
already out of the readings. Device: the free memory loses the others'
pending bytes on the same physical device. A cap (memory_limit,
set_memory_limit, the environment) bounds the result as budget.py's does."""

from dataclasses import dataclass, field
import socket

from ..sizes import format_bytes
from . import budget, ledger


@dataclass
class SharedView:
    """The other runs a plan was made beside: their Records, and by location
    ("host", a device key) the bytes they reserved and had not yet taken
    (pending) and this run's budget were they all finished (alone)."""
    records: list = field(default_factory=list)
    pending: dict = field(default_factory=dict)
    alone: dict = field(default_factory=dict)

    def holders(self, where):
        """The runs holding or reserving memory on `where` (a plan's location name)."""
        key = _key(where)
        return [r for r in self.records if r.state == "running" and r.bytes.get(key, 0) > 0]

    def waiters(self):
        return [r for r in self.records if r.state == "waiting"]


def _key(where):
    return "host" if where in ("host", "cpu") else ledger.device_key(where)


def others():
    """The other processes' live records on this machine."""
    host = socket.gethostname()
    return [r for r in ledger.ledger(include_self=False) if r.host in ("", host)]


def _note(src, pending, n):
    return f"{src}, less {format_bytes(pending)} reserved and not yet taken by {n} other run(s) on this machine " \
           "(bf.memory.ledger())"


def host_budget(hb, src, override, view):
    """(budget, source) less the others' pending host bytes; fills view.pending / view.alone['host']."""
    recs = [r for r in view.records if r.bytes.get("host")]
    cons = []   # (headroom, others' pending charged to it, others' in use charged to it)
    avail = budget.mem_available()
    if avail is not None:
        cons.append((avail, sum(r.pending("host") for r in recs), sum(r.in_use("host") for r in recs)))
    for lim in budget.cgroup_limits():
        inside = [r for r in recs if lim.path in r.cgroups]
        cons.append((lim.headroom, sum(r.pending("host") for r in inside), sum(r.in_use("host") for r in inside)))
    cap = budget._override(override, "host", "BOUNDFIT_MEMORY_LIMIT")[0]

    def fit(v):
        return max(min(cap, v) if cap is not None else v - budget.margin(v), 0)
    pending = max((p for _, p, _ in cons), default=0)
    view.pending["host"] = pending
    view.alone["host"] = max(hb, fit(min(h + u for h, _, u in cons))) if cons else hb
    if not pending:
        return hb, src
    new = min(hb, fit(min(h - p for h, p, _ in cons)))
    return (new, _note(src, pending, len([r for r in recs if r.pending("host")]))) if new < hb else (hb, src)


def device_budget(db, src, device, free, override, view):
    """(budget, source) less the others' pending bytes on this physical device; fills view for it."""
    key = ledger.device_key(device)
    recs = [r for r in view.records if r.bytes.get(key)]
    pending, in_use = sum(r.pending(key) for r in recs), sum(r.in_use(key) for r in recs)
    cap = budget._override(override, "device", "BOUNDFIT_DEVICE_MEMORY_LIMIT")[0]

    def fit(v):
        return max(min(cap, v) if cap is not None else v - budget.device_reserve(v), 0)
    view.pending[key] = pending
    view.alone[key] = max(db, fit(free + in_use))
    if not pending:
        return db, src
    new = min(db, fit(free - pending))
    return (new, _note(src, pending, len([r for r in recs if r.pending(key)]))) if new < db else (db, src)
