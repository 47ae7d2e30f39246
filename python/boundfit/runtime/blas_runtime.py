"""The BLAS runtime, brought up before the first plan and measured.

OpenBLAS gives each call in flight a packing buffer (32 MiB on x86-64) that
GEMMs touch lazily, so the first run of a process used to grow RSS by up to
that much per thread beyond its plan. The engine runs OpenBLAS on one thread
from each thread of its own pool (csrc/cpu/par.c, gemm.c), so as many calls
are in flight as the pool has threads. Before any plan reads the budget,
probe GEMMs over zero pages (boundfit._core.blas_probe, on every thread at
once: only the output is written, and it is released) touch every thread's
buffer to its end; the growth of RSS they cause is measured and stated in
every plan as held memory. From then on a run touches nothing of BLAS's that
is not already resident.

The probes run once per process, and again only if the thread count is
raised later (boundfit._core.set_num_threads, up to the pool's size). Where
the memory left cannot hold a buffer per thread, the thread count is lowered
to what fits (the plan says so) rather than risk the OOM killer; where it
cannot hold one, MemoryBudgetError.
"""

from .. import _core
from . import blas_verified as _verified, budget
from ..errors import MemoryBudgetError

# Probe shapes (M, N, K). The engine calls OpenBLAS on one thread from each of
# its pool's threads at once (csrc/cpu/gemm.c), and each call takes a buffer of
# its own; the probe runs a shape on every thread at the same time. OpenBLAS
# 0.3.34 packs into the buffer only for N >= 512 (narrower products take a
# path without it), and fills it for M >= 24576 (Skylake-X kernels) or 28672
# (Haswell / Zen), K >= 1024 (measured: 32 MiB a thread); the wide product covers the A-panel part in builds that pack it
# otherwise. Rounds repeat until one adds less than _SETTLED bytes (measured,
# not assumed).
_PROBES = ((32768, 512, 1024), (16, 1 << 14, 1024))
_PROBE_OUT = max(4 * m * n for m, n, _ in _PROBES)  # bytes the largest probe writes, per thread
_SETTLED = 64 << 10
_ROUNDS = 4
# One thread's buffer at most before two or more threads have been measured:
# OpenBLAS's BUFFER_SIZE on x86-64 (probes here saturate at 32 MiB a thread,
# 2 threads 64 MiB, 4 threads 128 MiB). A single-threaded GEMM uses far less.
_THREAD_BOUND = 32 << 20

_state = {"threads": 0, "bytes": 0, "per_thread": None, "limited_from": None, "rounds": 0}


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
    """Run probe rounds until one adds < _SETTLED; returns RSS growth (bytes). A first round that grows RSS as much
    as the first round of an earlier process that a second round then proved settled (same BLAS build, CPU, thread
    count and probes: _verified) is taken as settled without the second round, half the probe's time."""
    start, known, first = _rss(), _verified.load(_probe_key()), None
    for r in range(_ROUNDS):
        before = _rss()
        for m, n, k in _PROBES:
            _core.blas_probe(m, n, k)
        if before is None:
            break
        grew = _rss() - before
        if r == 0:
            first = grew
            if known is not None and abs(grew - known) < _SETTLED:
                break
        elif grew < _SETTLED:
            if r == 1:
                _verified.save(_probe_key(), first)
            break
        if r == 0 and grew < _SETTLED:
            break
    _state["rounds"] = r + 1
    end = _rss()
    return max(end - start, 0) if start is not None and end is not None else 0


def _probe_key():
    """what a first round's growth depends on: the BLAS build, the threads probed and those already up, the probes,
    the CPU"""
    cpu = next((line.split(":", 1)[1].strip() for line in _read_lines("/proc/cpuinfo") if line.startswith("model name")),
               "")
    return f"{_core.build_info()['blas']}|{threads()} from {_state['threads']}|{_PROBES}|{cpu}"


def _read_lines(path):
    try:
        with open(path) as f:
            return f.readlines()
    except OSError:
        return []


def _room():
    room = budget.raw_headroom()
    return None if room is None else room - budget.margin(room) // 2


def ensure():
    """Bring the BLAS buffers of every thread up (once); returns their bytes."""
    n, have = threads(), _state["threads"]
    if n == have:
        return _state["bytes"]
    if _rss() is None:  # no /proc: nothing to measure with; probe anyway so runs add nothing
        for m, nn, k in _PROBES:
            _core.blas_probe(m, nn, k)
        _state["threads"] = n
        return 0
    if n > have:
        per = _state["per_thread"] or _THREAD_BOUND
        room = _room()
        if room is not None:
            # the probe writes _PROBE_OUT on each of the n threads (released) while
            # the n - have new buffers come up: n * _PROBE_OUT + (n - have) * per
            fit = max(int((room + have * per) // (per + _PROBE_OUT)), have)
            if fit < 1:
                need = per + _PROBE_OUT
                raise MemoryBudgetError(
                    f"the BLAS runtime needs up to {budget.format_bytes(need)} on host to start, "
                    f"{budget.format_bytes(max(room, 0))} available: free memory or raise the limit",
                    needed_bytes=need, available_bytes=max(room, 0), where="host", max_batch_size=0)
            if fit < n:
                _state["limited_from"] = n
                n = fit
                _core.set_num_threads(n)
        _state["bytes"] += _probe_until_settled()
        if n >= 2:
            _state["per_thread"] = max(_state["bytes"] // n, 1)
    _state["threads"] = n
    return _state["bytes"]
