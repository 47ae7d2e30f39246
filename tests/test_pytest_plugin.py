"""boundfit's pytest plugin (python/boundfit/pytest_plugin.py), loaded as
pytest loads it from an installed package: through its pytest11 entry point
(pyproject.toml's, in a distribution's metadata on the path). A `-n 2` run
of fits that do not all fit at once beside another process's reservation:
the fits queue (none fails), and the table of fits is printed."""

import os
import subprocess
import sys
import tomllib

import pytest

from boundfit.runtime import budget

from ledger_util import holder

import boundfit as bf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INSTALLED = os.path.dirname(os.path.dirname(os.path.abspath(bf.__file__)))   # the boundfit under test, built

SWEEP = r'''
import os, time
import numpy as np, pytest
import boundfit as bf

FLAG = os.path.join(os.environ["SWEEP_DIR"], "someone-waited")
X, Y = np.ones((256, 32), np.float32), np.ones((256, 1), np.float32)

def model():
    m = bf.Sequential([bf.layers.Dense(64, activation="relu", input_shape=(32,)), bf.layers.Dense(1)])
    m.compile("adam", "mse")
    return m

@pytest.mark.parametrize("k", range(4))
def test_fit(k):
    m = model()
    def hold(logs):   # admitted: stay until some fit has had to wait for memory (hang guard 120 s)
        if m._last_plan.memory_waited > 0:
            open(FLAG, "w").close()
        end = time.monotonic() + 120
        while not (os.path.exists(FLAG) or any(r.state == "waiting" for r in bf.memory.ledger())):
            assert time.monotonic() < end, "hang guard"
            time.sleep(0.02)
    h = m.fit(X, Y, batch_size=256, verbose=0, device="emu", callbacks=[bf.callbacks.LambdaCallback(on_train_begin=hold)])
    assert np.isfinite(h.history["loss"][0])

@pytest.mark.memory_budget("1MiB")
def test_marker_sets_the_memory_limit():
    assert bf.set_memory_limit()["host"] == 1 << 20
    with pytest.raises(bf.MemoryBudgetError, match="on host"):
        model().fit(X, Y, batch_size=256, verbose=0)

def test_memory_plans_fixture(memory_plans):
    m = model()
    m.fit(X, Y, batch_size=32, verbose=0)
    m.predict(X, verbose=0)
    assert [p.mode for p in memory_plans] == ["train", "predict"]
    assert memory_plans[0].peak == memory_plans[0].host_bytes > 0
    assert memory_plans[0].by_category()["activations"] > 0
'''


def _entry_point_dist(tmp_path):
    """A distribution on the path whose metadata declares pyproject.toml's pytest11 entry point."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        eps = tomllib.load(f)["project"]["entry-points"]["pytest11"]
    assert eps == {"boundfit": "boundfit.pytest_plugin"}
    site = tmp_path / "site"
    info = site / "boundfit_plugin_ep-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: boundfit-plugin-ep\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
    return site


@pytest.mark.slow
def test_xdist_fits_that_do_not_all_fit_at_once_queue_and_the_table_is_printed(tmp_path, monkeypatch):
    """Another process holds all of the emulated device but room for one and a half fits: of the two workers'
    fits one runs, the other waits for it (the plugin makes fits wait), none fails; the end-of-run table lists
    them."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "test_sweep.py").write_text(SWEEP)
    monkeypatch.setenv("BOUNDFIT_LEDGER_DIR", str(tmp_path / "ledger"))
    monkeypatch.delenv("BOUNDFIT_MEMORY_WAIT", raising=False)
    env = dict(os.environ, SWEEP_DIR=str(sweep),
               PYTHONPATH=os.pathsep.join([str(_entry_point_dist(tmp_path)), INSTALLED]))
    one_fit = 241024   # the emulated device bytes of one test_fit (checked below against the table)
    with holder({"emu:0": 4 * 2**30 - budget.device_reserve(0) - 3 * one_fit // 2}):
        # -p no:hypothesispytest as pyproject.toml's addopts (the sweep's folder has no ini): hypothesis's plugin,
        # where installed, was ~2 CPU-s of each of the run's three processes
        r = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-p",
                            "no:hypothesispytest", "test_sweep.py"], cwd=sweep, env=env, capture_output=True,
                           text=True, timeout=600)
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    assert "6 passed" in out and "boundfit-plugin-ep-0" in out   # loaded through the entry point, no -p
    assert (sweep / "someone-waited").exists()   # a fit was admitted only after waiting for memory
    assert "boundfit: 5 fit(s)" in out, out[-3000:]
    table = out[out.index("boundfit: 5 fit(s)"):].splitlines()
    assert table[1].split() == ["test", "plan", "peak", "plan", "new", "measured", "peak", "growth", "waited",
                                "samples/s", "final", "loss"]
    rows = {line.split()[0]: line for line in table[2:7]}
    assert sorted(rows) == [f"test_sweep.py::test_fit[{k}]" for k in range(4)] + \
        ["test_sweep.py::test_memory_plans_fixture"]
    assert all("+ 235.38 KiB device" in rows[f"test_sweep.py::test_fit[{k}]"] for k in range(4))
