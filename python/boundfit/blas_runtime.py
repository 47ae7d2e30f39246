"""The BLAS runtime, brought up before the first plan and measured.

OpenBLAS gives each of its threads a packing buffer (32 MiB on x86-64) that
GEMMs touch lazily, so the first run of a process used to grow RSS by up to
that much per thread beyond its plan. Before any plan reads the budget, probe
GEMMs over zero pages (boundfit._core.blas_probe: only the small output is
written, and it is released) touch every thread's buffer to its end; the
growth of RSS they cause is measured and stated in every plan as held memory.
From then on a run touches nothing of BLAS's that is not already resident.

The probes run once per process, and again only for threads added later
(bf.utils.set_num_threads). One thread is probed first; its measured figure
says what the other threads will take, and the thread count is lowered to
what the memory left allows (stated in the plan) rather than risk the OOM
killer."""

from . import _core, budget
from .errors import MemoryBudgetError

# Probe shapes (M, N, K): a tall, thin product fills the B-panel part of the
# buffer, a wide one the A-panel part; doubled K covers deeper panels. Rounds
# repeat until one adds less than _SETTLED bytes (measured, not assumed).
_PROBES = ((1 << 17, 16, 1024), (16, 1 << 14, 1024), (1 << 17, 16, 2048))
_PROBE_OUT = max(4 * m * n for m, n, _ in _PROBES)  # bytes the largest probe writes
_SETTLED = 64 << 10
_ROUNDS = 4
# Before anything is measured: what one thread's buffer can take at most
# (OpenBLAS's BUFFER_SIZE is 32 MiB on x86-64; twice that as a bound)
_FIRST_THREAD_BOUND = 64 << 20

_state = {"threads": 0, "bytes": 0, "per_thread": 0, "limited_from": None}


def threads():
    return int(_core.build_info()["blas_threads"])


def resident_bytes():
    """Bytes of BLAS buffers brought up so far in this process (measured)."""
    return _state["bytes"]


def note():
    """A line for the plan table, or None before the runtime is up."""
    if not _state["threads"]:
        return None
    s = f"BLAS packing buffers ({_state['threads']} thread{'s' if _state['threads'] > 1 else ''}, measured)"
    if _state["limited_from"]:
        s += f"; threads lowered from {_state['limited_from']} to fit the memory left"
    return s


def _rss():
    return budget.process_usage_bytes()


def _probe_until_settled():
    """Run probe rounds until one adds < _SETTLED; returns RSS growth (bytes)."""
    start = _rss()
    for _ in range(_ROUNDS):
        before = _rss()
        for m, n, k in _PROBES:
            _core.blas_probe(m, n, k)
        if before is None or _rss() - before < _SETTLED:
            break
    end = _rss()
    return max(end - start, 0) if start is not None and end is not None else 0


def _room():
    room = budget.raw_headroom()
    return None if room is None else room - budget.margin(room) // 2


def ensure():
    """Bring the BLAS buffers of every thread up (once); returns their bytes."""
    n = threads()
    if n == _state["threads"]:
        return _state["bytes"]
    if _rss() is None:  # no /proc: nothing to measure with; probe anyway so runs add nothing
        for m, nn, k in _PROBES:
            _core.blas_probe(m, nn, k)
        _state.update(threads=n)
        return 0
    if not _state["threads"]:
        room = _room()
        need = _FIRST_THREAD_BOUND + _PROBE_OUT
        if room is not None and room < need:
            raise MemoryBudgetError(
                f"the BLAS runtime needs up to {budget.format_bytes(need)} on host to start, "
                f"{budget.format_bytes(max(room, 0))} available: free memory or raise the limit",
                needed_bytes=need, available_bytes=max(room, 0), where="host", max_batch_size=0)
        if n > 1:
            _core.set_num_threads(1)
        _state["per_thread"] = max(_probe_until_settled(), 1)
        _state.update(threads=1, bytes=_state["per_thread"])
        if n > 1:
            _core.set_num_threads(n)
    if n > _state["threads"]:
        room = _room()
        if room is not None:
            fit = _state["threads"] + max(int((room - _PROBE_OUT) // _state["per_thread"]), 0)
            if fit < n:
                _state["limited_from"] = n
                n = max(fit, 1)
                _core.set_num_threads(n)
        _state["bytes"] += _probe_until_settled()
    _state["threads"] = n
    return _state["bytes"]
