"""The machine's memory ledger (runtime/ledger.py, runtime/shared_budget.py,
engine/admission.py): runs reserve their planned peak, another run's budget
loses what they reserved and have not taken, and a run short of what others
hold raises at once naming them, or waits (memory_wait) until they release
or die. The other runs are forked children holding reservations on the
emulated device, whose 4 GiB are a fixed reading: the budgets are exact."""

import os
import stat
import subprocess
import sys
import threading

import numpy as np
import pytest

import boundfit as bf
from boundfit import __main__ as cli
from boundfit.runtime import budget, ledger

from cgroup_util import memory_cgroup
from ledger_util import holder, wait_until, waiting_pids

GiB, MiB = 1 << 30, 1 << 20
EMU_FREE = 4 * GiB   # the emulated device's free memory before a run


@pytest.fixture(autouse=True)
def private_ledger(tmp_path, monkeypatch):
    """Each test its own ledger directory, no waiting unless it asks."""
    d = tmp_path / "ledger"
    monkeypatch.setenv("BOUNDFIT_LEDGER_DIR", str(d))
    monkeypatch.delenv("BOUNDFIT_LEDGER", raising=False)
    monkeypatch.delenv("BOUNDFIT_MEMORY_WAIT", raising=False)
    return d


def model():
    m = bf.Sequential([bf.layers.Dense(64, activation="relu", input_shape=(32,)), bf.layers.Dense(1)])
    m.compile("adam", "mse")
    return m


X, Y = np.ones((256, 32), np.float32), np.ones((256, 1), np.float32)


def device_budget_beside(reserved):
    """The default emu budget beside others' pending `reserved` bytes: free less them, less the reserve."""
    free = EMU_FREE - reserved
    return free - budget.device_reserve(free)


def test_ledger_directory_is_made_private(private_ledger):
    assert ledger.directory() == str(private_ledger)
    assert stat.S_IMODE(os.stat(private_ledger).st_mode) == 0o700


@pytest.mark.parametrize("make, why", [
    (lambda p, t: os.symlink(t, p), "it is a symlink"),
    (lambda p, t: os.mkdir(p, 0o755), "its mode is 0o755, not 0o700"),
])
def test_unsafe_ledger_directory_turns_the_ledger_off_with_a_warning(tmp_path, monkeypatch, make, why):
    path = tmp_path / "shared-ledger"
    (tmp_path / "target").mkdir(mode=0o700)
    make(str(path), str(tmp_path / "target"))
    os.chmod(tmp_path / "target", 0o700)
    monkeypatch.setenv("BOUNDFIT_LEDGER_DIR", str(path))
    with pytest.warns(RuntimeWarning, match=f"ledger off: {path}: {why}"):
        assert ledger.directory() is None
    assert ledger.reserve("fit", {"host": 1}) is None
    assert "off" in str(ledger.ledger())


def test_a_fit_holds_its_reservation_while_it_runs_and_releases_it(private_ledger):
    m, seen = model(), []
    cb = bf.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: seen.append(ledger.ledger()))
    m.fit(X, Y, batch_size=32, epochs=1, verbose=0, device="emu", callbacks=[cb])
    (rec,) = seen[0]
    plan = m._last_plan
    assert (rec.pid, rec.what, rec.state) == (os.getpid(), "fit", "running")
    assert rec.bytes == {"host": plan.host_bytes - plan.held_bytes, "emu:0": plan.device_bytes}
    assert rec.script.startswith("pytest tests/test_memory_ledger.py::test_a_fit_holds")
    assert f"{os.getpid()}" in str(seen[0]) and "emu:0" in seen[0]._repr_html_()
    assert list(ledger.ledger()) == [] and _files(private_ledger) == []


def test_evaluate_and_predict_reserve_too():
    m, seen = model(), []
    cb = bf.callbacks.LambdaCallback(on_test_end=lambda logs: seen.append(ledger.ledger()),
                                     on_predict_end=lambda logs: seen.append(ledger.ledger()))
    m.evaluate(X, Y, verbose=0, callbacks=[cb])
    m.predict(X, verbose=0, callbacks=[cb])
    assert [r.what for led in seen for r in led] == ["evaluate", "predict"]
    assert list(ledger.ledger()) == []


def test_a_fit_that_raises_releases_its_reservation():
    m = model()
    cb = bf.callbacks.LambdaCallback(on_train_begin=lambda logs: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        m.fit(X, Y, batch_size=32, verbose=0, callbacks=[cb])
    assert list(ledger.ledger()) == []


def test_a_killed_holders_reservation_is_dropped_and_its_file_removed(private_ledger):
    with holder({"host": 5 * GiB}) as h:
        (rec,) = ledger.ledger()
        assert rec.pid == h.pid and rec.bytes == {"host": 5 * GiB} and rec.pending("host") == 5 * GiB
        h.kill()
        assert _files(private_ledger) == [os.path.basename(rec.path)]   # still there, its lock gone with it
        assert list(ledger.ledger()) == []
        assert _files(private_ledger) == []


def _files(d):
    return [n for n in os.listdir(d) if n.endswith(".res")]


def test_device_budget_loses_what_others_reserved_and_have_not_taken():
    alone = model().estimate_memory(batch_size=32, device="emu")
    assert alone.budget_device_bytes == device_budget_beside(0)
    with holder({"emu:0": GiB}) as h:
        plan = model().estimate_memory(batch_size=32, device="emu")
        assert plan.budget_device_bytes == device_budget_beside(GiB)
        assert "less 1.00 GiB reserved and not yet taken by 1 other run(s)" in plan.budget_device_source
        assert [r.pid for r in plan.shared.holders("emu:0")] == [h.pid]
        h.release()
        assert model().estimate_memory(batch_size=32, device="emu").budget_device_bytes == device_budget_beside(0)


def test_auto_batch_size_sizes_to_what_the_others_left():
    full = model().estimate_memory(batch_size="auto", device="emu")
    left = 16 * MiB   # what a holder of nearly all the device leaves this run
    with holder({"emu:0": EMU_FREE - budget.device_reserve(0) - left}):
        part = model().estimate_memory(batch_size="auto", device="emu")
    assert part.budget_device_bytes == left
    assert part.device_bytes <= left < full.device_bytes and 1 <= part.batch_size < full.batch_size
    assert part.max_batch_size < full.max_batch_size


LEFT = 128 << 10   # what the hog leaves: 32-row batches fit in it (64 KiB on the device), 256-row ones do not


def _hog():
    """A holder of all of the emulated device's budget but LEFT bytes."""
    return holder({"emu:0": EMU_FREE - budget.device_reserve(0) - LEFT})


def test_fit_short_of_what_another_run_holds_raises_at_once_naming_it():
    m = model()
    with _hog() as h:
        pid = h.pid
        with pytest.raises(bf.MemoryBudgetError) as e:
            m.fit(X, Y, batch_size=256, verbose=0, device="emu")
        m.fit(X, Y, batch_size=32, epochs=1, verbose=0, device="emu")   # what is left is enough for this
    msg = str(e.value)
    assert e.value.where == "emu:0" and e.value.available_bytes == LEFT
    assert f"other runs on this machine hold it: pid {pid} (pytest tests/test_memory_ledger.py::" in msg
    assert "fit) reserved 3.75 GiB on emu:0 (3.75 GiB of it not yet taken)" in msg
    assert msg.endswith("(fit(memory_wait=seconds) waits for them)")
    assert "batch_size <= " in msg


def _waits(capfd, act):
    """Run a fit that waits in a thread of its own; act(holder) once it waits. Its history, stderr."""
    m, out = model(), {}
    with _hog() as h:
        def run():
            try:
                out["history"] = m.fit(X, Y, batch_size=256, verbose=1, device="emu", memory_wait=HANG)
            except BaseException as e:   # noqa: BLE001 (reported below)
                out["error"] = e
        t = threading.Thread(target=run)
        t.start()
        wait_until(lambda: os.getpid() in waiting_pids(), "the fit's waiting record")
        act(h)
        t.join(HANG)
    assert "error" not in out, out.get("error")
    assert m._last_plan.memory_waited > 0 and list(ledger.ledger()) == []
    return out["history"], capfd.readouterr().err


HANG = 300.0   # a hang guard for memory_wait: a fit waits until its holder goes, never this long


def test_fit_waits_for_a_holder_that_releases_then_trains(capfd):
    hist, err = _waits(capfd, lambda h: h.release())
    assert len(hist.history["loss"]) == 1
    assert "boundfit: fit waiting for memory (needs " in err and "reserved 3.75 GiB on emu:0" in err


def test_fit_waits_for_a_holder_that_is_killed_then_trains(capfd):
    hist, err = _waits(capfd, lambda h: h.kill())
    assert np.isfinite(hist.history["loss"][0]) and "up to 300 s" in err


def test_waiting_that_cannot_help_raises_at_once(capfd, device_limit):
    device_limit("100KiB")   # the fit does not fit even alone: no use waiting for the holder
    with _hog():
        with pytest.raises(bf.MemoryBudgetError, match=r"waiting would not help: it would not fit were they all "
                                                       r"finished\)$"):
            model().fit(X, Y, batch_size=256, verbose=1, device="emu", memory_wait=HANG)
    assert "waiting for memory" not in capfd.readouterr().err


def test_memory_wait_times_out_with_the_same_message():
    with _hog():
        with pytest.raises(bf.MemoryBudgetError, match=r"reserved 3\.75 GiB on emu:0 .*\(waited 0 s, memory_wait\)$"):
            model().fit(X, Y, batch_size=256, verbose=0, device="emu", memory_wait=0.01)


@pytest.mark.parametrize("value", [-1, "soon", True, float("nan"), [3]])
def test_bad_memory_wait_is_refused_before_anything(value):
    m = model()
    for call in (lambda: m.fit(X, Y, memory_wait=value), lambda: m.evaluate(X, Y, memory_wait=value),
                 lambda: m.predict(X, memory_wait=value)):
        with pytest.raises(ValueError, match=rf"memory_wait must be None or a number of seconds >= 0 .*got "
                                             rf"{__import__('re').escape(repr(value))}"):
            call()


def test_bad_memory_wait_environment_is_refused(monkeypatch):
    monkeypatch.setenv("BOUNDFIT_MEMORY_WAIT", "forever")
    with pytest.raises(ValueError, match="BOUNDFIT_MEMORY_WAIT must be None or a number of seconds >= 0 "
                                         r".*got 'forever'"):
        model().fit(X, Y, verbose=0)


def test_ledger_off_reserves_nothing_and_sees_no_one(monkeypatch):
    with _hog():
        monkeypatch.setenv("BOUNDFIT_LEDGER", "0")
        plan = model().estimate_memory(batch_size=32, device="emu")
        assert plan.budget_device_bytes == device_budget_beside(0) and plan.shared.records == []
        seen = []
        model().fit(X, Y, batch_size=256, verbose=0, device="emu",
                    callbacks=[bf.callbacks.LambdaCallback(on_train_begin=lambda logs: seen.append(ledger.ledger()))])
        assert seen[0].path is None and list(seen[0]) == []


def test_python_m_boundfit_memory_prints_the_reservations(capsys):
    with holder({"host": 3 * MiB, "emu:0": 5 * MiB}) as h:
        pid = h.pid
        assert cli.main(["memory"]) == 0
        out = capsys.readouterr().out
        assert bf.memory.ledger()[0].pid == pid
    assert "1 run(s)" in out and f"{pid}" in out and "3.00 MiB" in out and "5.00 MiB" in out


# A fit of 258 MiB new host bytes (8192-row batches of a wide Dense layer), in a child process: the holder
# stops at on_train_begin (reserved, its arenas not yet touched) until `go` appears; the waiter first fits
# with memory_wait=0, then with memory_wait=300.
CHILD = r"""
import os, sys, time
import numpy as np
import boundfit as bf
role, sync = sys.argv[1], sys.argv[2]
m = bf.Sequential([bf.layers.Dense(4096, activation="relu", input_shape=(8,)), bf.layers.Dense(1)])
m.compile("sgd", "mse")
x, y = np.ones((8192, 8), np.float32), np.ones((8192, 1), np.float32)
def hold(logs):
    open(os.path.join(sync, "ready"), "w").close()
    end = time.monotonic() + 300
    while not os.path.exists(os.path.join(sync, "go")) and time.monotonic() < end:
        time.sleep(0.02)
if role == "holder":
    m.fit(x, y, batch_size=8192, verbose=0, callbacks=[bf.callbacks.LambdaCallback(on_train_begin=hold)])
else:
    try:
        m.fit(x, y, batch_size=8192, verbose=0, memory_wait=0)
    except bf.MemoryBudgetError as e:
        print("RAISED", e, flush=True)
    h = m.fit(x, y, batch_size=8192, verbose=1, memory_wait=300)
    print("TRAINED", h.history["loss"][0], m._last_plan.memory_waited > 0, flush=True)
"""


@pytest.mark.cgroup
@pytest.mark.slow
def test_fits_in_one_cgroup_that_do_not_fit_together_raise_or_wait_and_none_is_killed(tmp_path):
    """600 MiB for two processes (90 MiB each with their BLAS buffers) whose fits need 258 MiB each: one fits,
    not both (without the ledger the second would see the first's untouched arenas as free, and both be
    OOM-killed). The second raises at once, then waits; the first is SIGKILLed; the second then trains."""
    with memory_cgroup(600 * MiB) as cg:
        def start(role):
            return cg.popen([sys.executable, "-c", CHILD, role, str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
        a = start("holder")
        wait_until(lambda: os.path.exists(tmp_path / "ready") or a.poll() is not None, "the holder's reservation")
        assert a.poll() is None, a.communicate()
        b = start("waiter")
        wait_until(lambda: b.pid in waiting_pids() or b.poll() is not None, "the waiter's waiting record")
        a.kill()
        out, err = b.communicate(timeout=HANG)
        assert a.wait() == -9 and b.returncode == 0, err
        assert cg.oom_kills() == 0
    raised = next(line for line in out.splitlines() if line.startswith("RAISED"))
    assert f"other runs on this machine hold it: pid {a.pid} (python -c" in raised and "on host" in raised
    assert "(fit(memory_wait=seconds) waits for them)" in raised
    assert out.splitlines()[-1].endswith(" True") and "TRAINED" in out
    assert f"boundfit: fit waiting for memory (needs " in err and f"pid {a.pid} (python -c" in err
