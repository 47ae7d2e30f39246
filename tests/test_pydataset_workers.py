"""PyDataset(workers=N, max_queue_size=Q) as Keras 3 runs it: N threads
fetch batches up to Q ahead, the batches are trained on in order, a
worker's exception arrives as the user's own with the batch index as a
note, the workers stop at the end of fit, on an exception and on Ctrl-C,
the queue is an entry of the plan, and the first fit stays within it.
Synchronisation is deterministic (events), never timing."""

import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import boundfit as bf

from pydataset_util import X, Y, small_model



class Rows(bf.utils.PyDataset):
    """Batches of 32 rows, fresh copies (as a decoder makes them); records which thread read which index."""

    def __init__(self, fail_at=None, **kw):
        super().__init__(**kw)
        self.fail_at, self.threads = fail_at, {}

    def __len__(self):
        return 10

    def __getitem__(self, i):
        self.threads[i] = threading.current_thread().name
        if i == self.fail_at:
            raise KeyError(f"my own error at {i}")
        return X[i * 32:(i + 1) * 32].copy(), Y[i * 32:(i + 1) * 32].copy()


def _pool_threads():
    return [t for t in threading.enumerate() if t.name.startswith("boundfit-pydataset")]


def test_workers_train_on_the_batches_in_order_as_one_thread_does():
    one, four = small_model(), small_model()
    h1 = one.fit(Rows(), epochs=2, shuffle=False, verbose=0)
    data = Rows(workers=4, max_queue_size=3)
    h4 = four.fit(data, epochs=2, shuffle=False, verbose=0)
    assert h1.history["loss"] == h4.history["loss"]          # same batches, same order: same numbers
    for a, b in zip(one.get_weights(), four.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert {n.split("_")[0] for i, n in data.threads.items() if i} == {"boundfit-pydataset"}
    np.testing.assert_array_equal(one.predict(Rows(), verbose=0), four.predict(Rows(workers=3), verbose=0))
    assert not _pool_threads()                                  # stopped at the end of fit / predict


def test_a_worker_exception_arrives_as_the_users_own_with_the_batch_index():
    m = small_model()
    with pytest.raises(KeyError, match="my own error at 6") as ei:
        m.fit(Rows(fail_at=6, workers=3, max_queue_size=2), epochs=1, shuffle=False, verbose=0)
    assert "boundfit: raised by the data source while fetching batch 6" in ei.value.__notes__
    assert not _pool_threads()
    assert m.optimizer.iterations == 6                          # batches 0-5 trained, model usable
    assert np.isfinite(m.fit(X, Y, verbose=0).history["loss"][0])


def test_ctrl_c_at_a_step_boundary_stops_the_workers():
    m = small_model()
    stop = bf.callbacks.LambdaCallback(
        on_train_batch_end=lambda b, logs: signal.raise_signal(signal.SIGINT) if b == 3 else None)
    with pytest.raises(KeyboardInterrupt):
        m.fit(Rows(workers=2, max_queue_size=4), epochs=3, shuffle=False, verbose=0, callbacks=[stop])
    assert m.optimizer.iterations == 4
    assert not _pool_threads()


def test_workers_stay_within_max_queue_size_batches_ahead():
    """Batch k's read waits for the step of batch k - Q - 1 to have begun: more than Q ahead would deadlock,
    caught by a generous hang guard (never reached when the queue is bounded)."""
    q, stepped, ahead = 2, {}, []

    class Gated(Rows):
        def __getitem__(self, i):
            if i > q:
                ok = stepped.setdefault(i - q - 1, threading.Event()).wait(60)
                ahead.append(ok)
            return super().__getitem__(i)
    cb = bf.callbacks.LambdaCallback(on_train_batch_begin=lambda b, logs: stepped.setdefault(b, threading.Event()).set())
    small_model().fit(Gated(workers=3, max_queue_size=q), epochs=1, shuffle=False, verbose=0, callbacks=[cb])
    assert ahead and all(ahead)


def test_the_queue_is_a_plan_entry_sized_from_the_first_batch():
    m = small_model()
    m.fit(Rows(workers=3, max_queue_size=4), epochs=1, verbose=0)
    entry = [e for e in m._last_plan.breakdown if "PyDataset queue" in e.name]
    assert len(entry) == 1 and "4 batches" in entry[0].name and "3 workers" in entry[0].name
    batch = 32 * 16 * 4 + 32 * 1 * 4
    assert entry[0].bytes == 7 * batch + 3 * bf.engine.workers.WORKER_STACK
    m.fit(Rows(), epochs=1, verbose=0)                            # one thread: no queue
    assert not [e for e in m._last_plan.breakdown if "PyDataset queue" in e.name]


@pytest.mark.parametrize("bad,match", [(dict(workers=-1), "workers must be a non-negative int, got -1"),
                                       (dict(workers=2, max_queue_size=0), "max_queue_size must be a positive int")])
def test_bad_worker_settings_are_refused_by_name_before_a_batch_is_read(bad, match):
    m = small_model()
    w0 = m.get_weights()
    data = Rows(**bad)
    with pytest.raises(ValueError, match=match):
        m.fit(data, verbose=0)
    assert data.threads == {}                                     # nothing read
    for a, b in zip(w0, m.get_weights()):
        np.testing.assert_array_equal(a, b)


FIRST_FIT = """
import numpy as np, boundfit as bf
from boundfit import layers
from boundfit.runtime import budget
rng = np.random.default_rng(0)
x = rng.standard_normal((512, 2048), dtype=np.float32); y = rng.standard_normal((512, 1), dtype=np.float32)
class Batches(bf.utils.PyDataset):
    def __len__(self):
        return 8
    def __getitem__(self, i):
        return x[i * 64:(i + 1) * 64] * 1.0, y[i * 64:(i + 1) * 64] * 1.0   # fresh arrays, as a decoder makes
m = bf.Sequential([layers.Dense(64, activation="relu", input_shape=(2048,)), layers.Dense(1)])
m.compile(optimizer="adam", loss="mse")
m.estimate_memory(64)                                          # the engine built before the measure
open("/proc/self/clear_refs", "w").write("5")
r0 = budget.process_usage_bytes()
m.fit(Batches(workers=3, max_queue_size=6), epochs=2, verbose=0)
p = m._last_plan
print("GROWTH", p.host_bytes - p.held_bytes, budget.peak_rss_bytes() - r0)
"""


def test_first_fit_from_workers_grows_rss_by_at_most_its_plan():
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(FIRST_FIT)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    new, grown = map(int, r.stdout.split("GROWTH")[1].split())
    print(f"grew {grown / 2**20:.2f} MiB, plan {new / 2**20:.2f} MiB new")
    assert 0 < grown <= new
