"""boundfit's pytest plugin (entry point pytest11 `boundfit`): experiments run as
tests share the machine instead of killing each other.

- Fits inside tests wait for memory other runs hold (the machine's ledger,
  shared by every pytest-xdist worker): BOUNDFIT_MEMORY_WAIT defaults to the
  ini option `boundfit_memory_wait` (600 s). A fit that would not fit even
  alone still raises at once.
- `@pytest.mark.memory_budget("2GiB", device=None)`: the test's memory limit
  (bf.set_memory_limit for its duration).
- The `memory_plans` fixture: the MemoryPlans of the runs the test made
  (plan.peak, plan.by_category(), plan.mode), to assert on.
- At the end of the run, a table of the fits the tests ran: test, plan peak
  (host, and device), its new host bytes (less what the model already held),
  the measured peak RSS growth during the fit (VmHWM, reset when the fit
  starts; a process's first fit also faults in the libraries' code pages),
  seconds waited for memory, samples/s, final loss. Ini option `boundfit_fit_table`: all
  (default), marked (tests with the marker or the fixture) or none. Records
  travel from xdist workers in the reports' user_properties."""

from contextlib import contextmanager
import os
import time

import pytest

from .engine import admission
from .runtime import budget
from .sizes import format_bytes

_KEY = "boundfit_fit"
_TABLES = ("all", "marked", "none")
_states = []   # the configured sessions' states (one, but for pytest run inside pytest)


def pytest_addoption(parser):
    parser.addini("boundfit_memory_wait", "seconds a fit inside a test waits for memory other runs on the machine "
                  "hold (BOUNDFIT_MEMORY_WAIT, when unset)", default="600")
    parser.addini("boundfit_fit_table", "fits the end-of-run table lists: all, marked (tests with the memory_budget "
                  "marker or the memory_plans fixture) or none", default="all")


class _State:
    def __init__(self, config):
        self.table = str(config.getini("boundfit_fit_table")).strip().lower()
        if self.table not in _TABLES:
            raise pytest.UsageError(f"ini option boundfit_fit_table must be one of {_TABLES}, got {self.table!r}")
        self.item, self.plans, self.rows = None, None, []

    def recording(self):
        item = self.item
        if item is None or self.table == "none":
            return False
        return self.table == "all" or item.get_closest_marker("memory_budget") is not None or \
            "memory_plans" in getattr(item, "fixturenames", ())

    @contextmanager
    def observe(self, what, model, scope):
        record = what == "fit" and self.recording()
        rss0 = _reset_peak() if record else None
        t0 = time.perf_counter()
        yield
        if self.plans is not None:
            self.plans.extend(scope.plans)
        if record and scope.plans:
            self.item.user_properties.append((_KEY, _row(self.item.nodeid, model, scope.plans[0], rss0,
                                                         time.perf_counter() - t0)))


def _reset_peak():
    """This process's RSS now, its peak (VmHWM) reset to it; None where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return budget.process_usage_bytes()


def _row(nodeid, model, plan, rss0, seconds):
    hwm = budget.peak_rss_bytes()
    measured = None if rss0 is None or hwm is None else max(hwm - rss0, 0)
    hist = getattr(getattr(model, "history", None), "history", None) or {}
    params = getattr(getattr(model, "history", None), "params", None) or {}
    epochs = len(hist.get("loss", []))
    waited = float(getattr(plan, "memory_waited", 0.0))
    run_s = max(seconds - waited, 1e-9)
    samples = epochs * int(params.get("steps") or 0) * int(plan.batch_size or 0)
    loss = hist.get("loss", [None])[-1] if hist.get("loss") else None
    return {"test": nodeid, "plan": plan.host_bytes, "device": plan.device_bytes,
            "new": plan.host_bytes - plan.held_bytes, "measured": measured,
            "waited": waited, "samples_s": samples / run_s if samples else None,
            "loss": None if loss is None else float(loss)}


def pytest_configure(config):
    config.addinivalue_line("markers", "memory_budget(host, device=None): the test's memory limit "
                            "(bf.set_memory_limit(host=..., device=...) while it runs), e.g. memory_budget('2GiB')")
    os.environ.setdefault("BOUNDFIT_MEMORY_WAIT", str(config.getini("boundfit_memory_wait")))
    state = _State(config)
    config._boundfit = state
    _states.append(state)
    admission.observers.append(state.observe)


def pytest_unconfigure(config):
    state = getattr(config, "_boundfit", None)
    if state is not None and state.observe in admission.observers:
        admission.observers.remove(state.observe)
        _states.remove(state)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    state = getattr(item.config, "_boundfit", None)
    if state is not None:
        state.item = item
    try:
        yield
    finally:
        if state is not None:
            state.item, state.plans = None, None


@pytest.fixture(autouse=True)
def _boundfit_memory_budget(request):
    """Applies @pytest.mark.memory_budget(host, device=None) for the test's duration."""
    mark = request.node.get_closest_marker("memory_budget")
    if mark is None:
        yield
        return
    host = mark.args[0] if mark.args else mark.kwargs.get("host")
    before = budget.set_memory_limit()
    budget.set_memory_limit(host=host, device=mark.kwargs.get("device"))
    try:
        yield
    finally:
        budget.set_memory_limit(host=before["host"] or "auto", device=before["device"] or "auto")


@pytest.fixture
def memory_plans(request):
    """The MemoryPlans of the fit / evaluate / predict runs the test makes (in order), to assert on:
    plan.peak, plan.host_bytes, plan.device_bytes, plan.by_category(), plan.mode."""
    state = request.config._boundfit
    state.plans = []
    return state.plans


def pytest_runtest_logreport(report):
    """Each test's fit records, from its teardown report (an xdist worker's too)."""
    if report.when == "teardown" and _states:
        _states[-1].rows += [v for k, v in getattr(report, "user_properties", ()) if k == _KEY]


def _fmt(n):
    return "-" if n is None else format_bytes(n)


def pytest_terminal_summary(terminalreporter):
    state = getattr(terminalreporter.config, "_boundfit", None)
    if state is None or not state.rows:
        return
    rows = state.rows
    head = ("test", "plan peak", "plan new", "measured peak growth", "waited", "samples/s", "final loss")
    rows = [head] + [(r["test"], _fmt(r["plan"]) + (f" + {_fmt(r['device'])} device" if r["device"] else ""),
                      _fmt(r["new"]), _fmt(r["measured"]), f"{r['waited']:.1f} s",
                      "-" if r["samples_s"] is None else f"{r['samples_s']:.0f}",
                      "-" if r["loss"] is None else f"{r['loss']:.4g}") for r in rows]
    w = [max(len(r[i]) for r in rows) for i in range(len(head))]
    terminalreporter.write_sep("=", f"boundfit: {len(state.rows)} fit(s)")
    for r in rows:
        terminalreporter.write_line("  ".join(c.ljust(w[0]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r)))
