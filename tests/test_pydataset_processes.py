"""PyDataset(workers=N, use_multiprocessing=True, max_queue_size=Q) as Keras 3
takes it: N worker processes (forkserver) write each batch into a
shared-memory block that is in the plan; the batches are trained on in
order (the weights equal the one-thread path's bit for bit), a worker's
exception arrives as the user's own with the batch index, a dead worker or a
batch larger than its block is a DataError naming the batch, a data set that
cannot be pickled is refused before any batch, and no /dev/shm segment
outlives the fit however it ends. No timing: every wait is on a pipe or a
process's exit."""

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
from multiprocessing import shared_memory

import numpy as np
import pytest

import boundfit as bf
from boundfit.engine import worker_procs

from pydataset_util import X, Y, small_model

MP = dict(workers=2, use_multiprocessing=True, max_queue_size=3)


class Unpicklable(Exception):
    """An exception that cannot cross back: it holds a lock."""

    def __init__(self, msg):
        super().__init__(msg)
        self.lock = threading.Lock()


class Rows(bf.utils.PyDataset):
    """Batches of 32 rows; batch `fail_at` fails as `how` says; `in_workers`: any batch but the first (which fit
    reads itself, for the plan) read in this process is an error."""

    def __init__(self, fail_at=None, how="raise", in_workers=False, **kw):
        super().__init__(**kw)
        self.fail_at, self.how, self.parent = fail_at, how, os.getpid() if in_workers else None

    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i and os.getpid() == self.parent:
            raise RuntimeError(f"batch {i} read in the training process")
        if i == self.fail_at:
            if self.how == "raise":
                raise KeyError(f"my own error at {i}")
            if self.how == "unpicklable":
                raise Unpicklable(f"locked error at {i}")
            if self.how == "exit":
                os._exit(3)
            if self.how == "larger":
                return X[:64].copy(), Y[:64].copy()
        return X[i * 32:(i + 1) * 32].copy(), Y[i * 32:(i + 1) * 32].copy()


@pytest.fixture
def blocks(monkeypatch):
    """The names of the shared-memory blocks this process creates."""
    made = []

    class Recorded(shared_memory.SharedMemory):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            made.append(self.name)
    monkeypatch.setattr(worker_procs.shared_memory, "SharedMemory", Recorded)
    return made


def _left(made):
    assert made
    assert not multiprocessing.active_children()                  # every worker process stopped and reaped
    return [n for n in made if os.path.exists(os.path.join("/dev/shm", n))]


def test_worker_processes_train_on_the_batches_in_order_as_one_thread_does(blocks):
    one, procs = small_model(), small_model()
    h1 = one.fit(Rows(), epochs=2, shuffle=False, verbose=0)
    hp = procs.fit(Rows(in_workers=True, **MP), epochs=2, shuffle=False, verbose=0)
    assert h1.history["loss"] == hp.history["loss"]
    for a, b in zip(one.get_weights(), procs.get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(one.predict(Rows(), verbose=0), procs.predict(Rows(in_workers=True, **MP),
                                                                                  verbose=0))
    assert _left(blocks) == []


def test_a_worker_process_exception_arrives_as_the_users_own_with_the_batch_index(blocks):
    m = small_model()
    with pytest.raises(KeyError, match="my own error at 6") as ei:
        m.fit(Rows(fail_at=6, **MP), epochs=1, shuffle=False, verbose=0)
    notes = "\n".join(ei.value.__notes__)
    assert "boundfit: raised by the data source while fetching batch 6" in notes
    assert "in worker process boundfit-pydataset-" in notes and "__getitem__" in notes   # the worker's traceback
    assert m.optimizer.iterations == 6                              # batches 0-5 trained, model usable
    assert _left(blocks) == []
    assert np.isfinite(m.fit(X, Y, verbose=0).history["loss"][0])


@pytest.mark.parametrize("how,match", [
    ("unpicklable", r"batch 4: the data set raised test_pydataset_processes\.Unpicklable: locked error at 4 in a "
                    r"worker process \(the exception could not be pickled back\)"),
    ("exit", r"batch 4: worker process boundfit-pydataset-\d \(pid \d+\) ended with exit code 3 before returning it"),
    ("larger", r"batch 4 does not fit the shared-memory block of worker processes: it needs 4352 bytes, the shared "
               r"block holds 2176 \(sized from the first batch\)")])
def test_a_batch_no_worker_can_hand_over_is_a_data_error_naming_it(blocks, how, match):
    m = small_model()
    with pytest.raises(bf.errors.DataError, match=match) as ei:
        m.fit(Rows(fail_at=4, how=how, **MP), epochs=1, shuffle=False, verbose=0)
    assert ei.value.batch_index == 4
    assert m.optimizer.iterations == 4
    assert _left(blocks) == []


def test_no_shared_memory_outlives_ctrl_c_at_a_step_boundary(blocks):
    m = small_model()
    stop = bf.callbacks.LambdaCallback(
        on_train_batch_end=lambda b, logs: signal.raise_signal(signal.SIGINT) if b == 3 else None)
    with pytest.raises(KeyboardInterrupt):
        m.fit(Rows(**MP), epochs=3, shuffle=False, verbose=0, callbacks=[stop])
    assert m.optimizer.iterations == 4
    assert _left(blocks) == []


def test_the_shared_blocks_are_a_plan_entry_sized_from_the_first_batch():
    m = small_model()
    m.fit(Rows(workers=3, use_multiprocessing=True, max_queue_size=4), epochs=1, verbose=0)
    entry = [e for e in m._last_plan.breakdown if "PyDataset" in e.name]
    assert len(entry) == 1 and "shared-memory blocks (6 of" in entry[0].name and "3 worker processes" in entry[0].name
    assert entry[0].bytes == 6 * (32 * 16 * 4 + 128)               # x's rows, y's 128 bytes (64-byte aligned)
    assert "counted once" in entry[0].note and "not in this process's plan" in entry[0].note


class Locked(Rows):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.lock, self.read = threading.Lock(), []

    def __getitem__(self, i):
        self.read.append(i)
        return super().__getitem__(i)


def test_a_data_set_that_cannot_be_pickled_is_refused_by_name_before_a_batch_is_read():
    m = small_model()
    w0 = m.get_weights()
    data = Locked(**MP)
    with pytest.raises(ValueError, match=r"use_multiprocessing=True \(workers=2\) needs a data set that can be "
                                         r"pickled .*'forkserver'.*; Locked cannot be: TypeError: cannot pickle "
                                         r"'_thread.lock' object"):
        m.fit(data, verbose=0)
    assert data.read == []
    for a, b in zip(w0, m.get_weights()):
        np.testing.assert_array_equal(a, b)


class Wide(bf.utils.PyDataset):
    """8 batches of 64 rows of 2048 features, fresh arrays (as a decoder makes them)."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        r = np.random.default_rng(i)
        return r.standard_normal((64, 2048), dtype=np.float32), r.standard_normal((64, 1), dtype=np.float32)


FIRST_FIT = """
import boundfit as bf
from boundfit import layers
from boundfit.runtime import budget
from test_pydataset_processes import Wide
m = bf.Sequential([layers.Dense(64, activation="relu", input_shape=(2048,)), layers.Dense(1)])
m.compile(optimizer="adam", loss="mse")
m.estimate_memory(64)                                          # the engine built before the measure
open("/proc/self/clear_refs", "w").write("5")
r0 = budget.process_usage_bytes()
m.fit(Wide(workers=3, use_multiprocessing=True, max_queue_size=6), epochs=2, verbose=0)
p = m._last_plan
print("GROWTH", p.host_bytes - p.held_bytes, budget.peak_rss_bytes() - r0)
"""


def test_first_fit_from_worker_processes_grows_rss_by_at_most_its_plan():
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here] + sys.path))
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(FIRST_FIT)], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    new, grown = map(int, r.stdout.split("GROWTH")[1].split())
    print(f"grew {grown / 2**20:.2f} MiB, plan {new / 2**20:.2f} MiB new")
    assert 0 < grown <= new
