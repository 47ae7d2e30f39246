"""Frameworks timed round by round in turn: each runs in its own subprocess
(its own memory, same threads), sets up, then times one round per request
from this process, alternating A, B, C, A, B, C, ... A busy spell of the
machine then slows every side alike instead of whichever ran during it.

A child's code defines `setup()` (warm-up), `one_round()` (returns seconds)
and `final()` (a byte count to report once the rounds are over, e.g. peak
memory, or 0); SERVE below is appended to it. `report()` prints the sides'
figures and ratios the same way for every benchmark (boundfit first, then
PyTorch and Keras 3, the latter on JAX's CPU backend as the tests use it).
Each side reports its best round (timeit's rule: the other rounds measure
the machine's other load, not the code) and its median. Between two rounds
the sides rest for PAUSE seconds, so that threads one side left spinning
(OpenMP's spin-wait lasts up to 200 ms) have gone to sleep before the next
side's round starts. KERAS_HEAD starts a Keras child: the backend, then
`K` and `L`, the names a model is built from in either framework."""

import statistics
import subprocess
import sys
import time

PAUSE = 0.5

KERAS_HEAD = """
import os
os.environ.setdefault("KERAS_BACKEND", "jax")
import keras as K
from keras import layers as L
"""
BOUNDFIT_HEAD = """
import boundfit as K
from boundfit import layers as L
"""

# the rounds of a child that trains model m on X, Y (arrays, or lists of them)
# with fit(), B rows a batch, or with step(i) (batch i) STEPS times a round;
# peak_growth(): peak RSS over r_data, the reading taken after the data
FIT_ROUNDS = """
def setup():
    first = (lambda a: [v[:B] for v in a] if isinstance(a, list) else a[:B])
    m.fit(first(X), first(Y), batch_size=B, epochs=1, verbose=0)  # warm-up (and the optimizer state)
def one_round():
    t0 = time.perf_counter(); m.fit(X, Y, batch_size=B, epochs=1, verbose=0, shuffle=False)
    return time.perf_counter() - t0
def peak_growth():
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - r_data) * 1024
"""
STEP_ROUNDS = """
def setup():
    step(0)
def one_round():
    t0 = time.perf_counter()
    for i in range(STEPS):
        step(i)
    return time.perf_counter() - t0
def peak_growth():
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - r_data) * 1024
"""

SERVE = """
import sys as _sys, time as _time
setup()
print("READY", flush=True)
for _line in _sys.stdin:
    if _line.strip() == "end":
        print("END", final(), flush=True)
        break
    _c0 = _time.process_time()
    _w = one_round()
    print("ROUND", _w, _time.process_time() - _c0, flush=True)
"""


class _Child:
    def __init__(self, code, python=sys.executable):
        self.p = subprocess.Popen([python, "-c", code + SERVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.cpu = []
        self._read("READY")

    def _read(self, tag):
        for line in self.p.stdout:
            if line.startswith(tag):
                return line[len(tag):].strip()
        err = self.p.stderr.read().strip().splitlines()   # stdout closed: the child is ending
        raise RuntimeError(err[-1] if err else "no reply")

    def _ask(self, what, tag):
        self.p.stdin.write(what + "\n")
        self.p.stdin.flush()
        return float(self._read(tag))

    def round(self):
        """the round's wall seconds; its CPU seconds (all the child's threads) go to self.cpu"""
        self.p.stdin.write("go\n")
        self.p.stdin.flush()
        wall, cpu = self._read("ROUND").split()
        self.cpu.append(float(cpu))
        return float(wall)

    def close(self):
        final = self._ask("end", "END")
        self.p.stdin.close()
        self.p.wait(timeout=60)
        return final


def run_sides(codes, rounds, cpu=None, pythons=None):
    """Returns, for each side: (best seconds, median seconds, final()) or
    (None, the error's last line). A list `cpu` gets each side's median CPU
    seconds a round (all its threads; None for a side that failed): on a
    shared machine the wall time is the scheduler's share, the CPU time the
    work done (spin-waiting included). `pythons`: each side's interpreter
    (default: this one), e.g. another python that has PyTorch."""
    kids, out = [], []
    for code, python in zip(codes, pythons or [sys.executable] * len(codes)):
        try:
            kids.append(_Child(code, python))
        except (RuntimeError, IndexError) as e:
            kids.append(e)
    times = [[] for _ in kids]
    for _ in range(rounds):
        for k, kid in enumerate(kids):
            if not isinstance(kid, Exception):
                time.sleep(PAUSE)
                times[k].append(kid.round())
    for kid, t in zip(kids, times):
        if isinstance(kid, Exception):
            out.append((None, str(kid)))
        else:
            out.append((min(t), statistics.median(t), kid.close()))
        if cpu is not None:
            cpu.append(None if isinstance(kid, Exception) else statistics.median(kid.cpu))
    return out


def report(title, samples, sides, names=("boundfit", "PyTorch", "Keras"),
           memory=("planned host bytes", "peak RSS growth", "peak RSS growth")):
    """Prints run_sides' results: samples/s best and median per side, each
    side's final() as MiB under its memory label (None: not shown), and the
    ratios of the first side to each other one."""
    print(title)
    rows = []
    for who, (best, *rest), label in zip(names, sides, memory):
        if best is None:
            print(f"  {who} unavailable: {rest[0]}")
            rows.append(None)
            continue
        med, final = rest
        mem = f", {label} {final / 2**20:8.1f} MiB" if label else ""
        print(f"  {who:9s}{samples / best:10.1f} samples/s best, {samples / med:8.1f} median{mem}")
        rows.append((best, med, final))
    if rows[0] is None:
        return
    a, am, af = rows[0]
    for who, label, row in zip(names[1:], memory[1:], rows[1:]):
        if row is not None:
            b, bm, bf = row
            mem = f"; memory {af / max(bf, 1):5.2f}x of {who}'s" if memory[0] and label else ""
            print(f"  against {who}: samples/s {b / a:5.2f}x best, {bm / am:5.2f}x median{mem}")
