"""Admission of a run to the machine: its plan is made and checked, and its new
peak reserved on the machine's ledger (runtime/ledger.py), under the ledger's
lock, so that two runs starting together cannot both count the same free
memory. A run short of memory that other runs hold raises at once
(memory_wait=None or 0), naming them, or waits up to memory_wait seconds
(re-checking every _POLL s, a progress line naming who holds what), then
raises the same error; a run that would not fit even were the others all
finished raises at once (the others not named unless it was to wait). The
reservation is released when the fit / evaluate / predict call returns or
raises (@releases): after its runs are closed.

@releases also runs `observers` around each call: callables (what, model,
scope) -> a context manager, where scope.plans will hold the plans the call
admitted (the pytest plugin's record of the runs a test made)."""

from contextlib import ExitStack
import functools
import math
import os
import sys
import threading
import time

from ..errors import MemoryBudgetError
from ..runtime import ledger
from ..sizes import format_bytes
from .plan import budget_error

_POLL = 0.2
_WAIT_ENV = "BOUNDFIT_MEMORY_WAIT"
_scopes = threading.local()
observers = []   # callables (what, model, scope) -> context manager, entered around each fit / evaluate / predict


class Scope:
    """One fit / evaluate / predict call: the plans it admitted, the reservations it holds."""

    def __init__(self):
        self.plans, self.holds = [], []


def wait_seconds(memory_wait):
    """memory_wait (None: $BOUNDFIT_MEMORY_WAIT, else 0) as seconds >= 0 (inf: no limit)."""
    value, name = memory_wait, "memory_wait"
    if value is None:
        value, name = os.environ.get(_WAIT_ENV, "").strip() or 0, _WAIT_ENV
    bad = isinstance(value, bool) or not isinstance(value, (int, float, str))
    try:
        secs = float(value) if not bad else math.nan
    except ValueError:
        secs = math.nan
    if not secs >= 0:
        raise ValueError(f"{name} must be None or a number of seconds >= 0 (math.inf: no limit), got {value!r}")
    return secs


def releases(fn):
    """Run fn (fit / evaluate / predict) in a scope whose ledger reservations are released when it ends."""
    what = fn.__name__

    @functools.wraps(fn)
    def wrapper(model, *args, **kwargs):
        stack, scope = _stack(), Scope()
        stack.append(scope)
        try:
            with ExitStack() as observed:
                for obs in list(observers):
                    observed.enter_context(obs(what, model, scope))
                return fn(model, *args, **kwargs)
        finally:
            stack.remove(scope)
            for hold in scope.holds:
                hold.release()
    return wrapper


def _stack():
    if not hasattr(_scopes, "stack"):
        _scopes.stack = []
    return _scopes.stack


def _hold_bytes(plan):
    out = {"host": max(plan.host_bytes - plan.held_bytes, 0)}
    dev = next((e.where for e in plan.breakdown if e.where != "host"), None)
    if dev is not None and plan.device_bytes:
        out[ledger.device_key(dev)] = plan.device_bytes
    return out


def _try(plan_fn):
    try:
        plan = plan_fn()
        if not plan.fits:
            raise budget_error(plan)
        return plan, None
    except MemoryBudgetError as e:
        return None, e


def _where(err):
    return "host" if err.where in ("host", "cpu") else err.where


def _helps(err, view):
    """Whether the plan would fit were the other runs all finished."""
    if view is None or err.plan is None or not view.holders(err.where):
        return False
    key = "host" if _where(err) == "host" else ledger.device_key(err.where)
    alone = view.alone.get(key)
    held = err.plan.held_bytes if key == "host" else 0
    return alone is not None and err.needed_bytes <= alone + held


def _holders_text(err, view):
    hs = view.holders(err.where) if view is not None else []
    if not hs:
        return ""
    key = "host" if _where(err) == "host" else ledger.device_key(err.where)
    return "; other runs on this machine hold it: " + ", ".join(
        f"{r.describe(key)} ({format_bytes(r.pending(key))} of it not yet taken)" for r in hs)


def _final(err, view, wait, waited, helps):
    """The error a run short of memory raises: others named only where they hold what is missing."""
    tail = _holders_text(err, view) if helps or wait else ""
    if tail and not helps:
        tail += " (waiting would not help: it would not fit were they all finished)"
    elif tail and wait:
        tail += f" (waited {waited:.0f} s, memory_wait)"
    elif tail:
        tail += " (fit(memory_wait=seconds) waits for them)"
    return MemoryBudgetError(f"{err}{tail}", plan=err.plan, needed_bytes=err.needed_bytes,
                             available_bytes=err.available_bytes, where=err.where, max_batch_size=err.max_batch_size)


def _needs(err):
    key = "host" if _where(err) == "host" else ledger.device_key(err.where)
    held = err.plan.held_bytes if key == "host" and err.plan is not None else 0
    return {key: max(err.needed_bytes - held, 0)}


def admit(what, plan_fn, memory_wait=None, verbose=1, short_ok=False):
    """plan_fn() -> the run's MemoryPlan (it may raise MemoryBudgetError); returns the plan once it fits, its
    peak reserved on the ledger until the enclosing @releases call ends (plan.reservation; plan.memory_waited:
    seconds it waited). short_ok: a plan still short when waiting ends is returned unreserved instead (the
    ranks of a data-parallel run then raise together). A data-parallel rank never waits: its peers would be at
    the plan's collective meanwhile, whose deadline is not the memory wait's."""
    wait = 0.0 if short_ok else wait_seconds(memory_wait)
    t0, waiting, shown = None, None, None
    _try(plan_fn)   # once outside the lock: first-time work (engines, BLAS) does not hold up other runs
    try:
        while True:
            with ledger.locked():
                plan, err = _try(plan_fn)
                if err is None:
                    hold = ledger.reserve(what, _hold_bytes(plan))
                    if _stack():
                        _stack()[-1].plans.append(plan)
                        _stack()[-1].holds += [hold] if hold is not None else []
                    plan.reservation, plan.memory_waited = hold, 0.0 if t0 is None else time.monotonic() - t0
                    return plan
            view = getattr(err.plan, "shared", None)
            t0 = time.monotonic() if t0 is None else t0
            waited, helps = time.monotonic() - t0, _helps(err, view)
            if not helps or waited >= wait:
                if short_ok and err.plan is not None:
                    err.plan.reservation, err.plan.memory_waited = None, waited
                    return err.plan
                raise _final(err, view, wait, waited, helps) from None
            if waiting is None:
                waiting = ledger.reserve(what, _needs(err), state="waiting")
            line = (f"boundfit: {what} waiting for memory ({err}{_holders_text(err, view)}); "
                    f"up to {wait:.0f} s")
            if verbose and line != shown:
                print(line, file=sys.stderr, flush=True)
                shown = line
            time.sleep(min(_POLL, max(wait - waited, 0.01)))
    finally:
        if waiting is not None:
            waiting.release()


def update(plan, hold):
    """hold (an admitted plan's reservation) re-sized to plan (a data-parallel run agreed on another batch)."""
    if hold is not None:
        hold.update(_hold_bytes(plan))


def mark_allocated(plan, hold=None):
    """The run's device arenas exist: a GPU's free memory now shows them, so others stop counting them as pending."""
    hold = hold or getattr(plan, "reservation", None)
    if hold is not None:
        b = _hold_bytes(plan)
        hold.update(allocated={k: v for k, v in b.items() if k != "host" and ledger.shares_free_memory(k)})
