"""The test harnesses themselves, proved on plain NumPy: a child in a memory
cgroup that touches 4x the limit is SIGKILLed by the OOM killer and the
harness says so; one under the limit exits 0; a Jupyter kernel in the cgroup
reports per cell ok / error / died. Skips where no cgroup can be created."""

import os
import signal

import pytest

from cgroup_util import memory_cgroup
from notebook_util import run_notebook

pytestmark = pytest.mark.cgroup
LIMIT = 128 << 20
NB_LIMIT = 256 << 20                   # ipykernel + numpy need about 80 MiB


def test_child_touching_four_times_the_limit_is_oom_killed():
    with memory_cgroup(LIMIT) as cg:
        r = cg.run_python(f"import numpy as np; a = np.ones({4 * LIMIT}, np.uint8); print(int(a.sum()))", timeout=30)
        assert r.returncode == -signal.SIGKILL, r.stderr
        assert r.killed_by_oom and r.oom_kills == 1
        assert r.stdout == ""
        assert r.peak_bytes is None or r.peak_bytes <= LIMIT


def test_child_under_the_limit_exits_normally_and_runs_in_the_group():
    with memory_cgroup(LIMIT) as cg:
        r = cg.run_python("import numpy as np; a = np.ones(16 << 20, np.uint8); print(int(a.sum()));"
                          "print(open('/proc/self/cgroup').read())", timeout=30)
        rc, out, err, killed = r
        assert (rc, killed) == (0, False), err
        assert str(16 << 20) in out and os.path.basename(cg.path) in out
        assert cg.peak_bytes() is None or 16 << 20 <= cg.peak_bytes() <= LIMIT
        path = cg.path
    assert not os.path.exists(path)


def test_popen_child_is_killed_and_group_removed_on_exit():
    with memory_cgroup(LIMIT) as cg:
        p = cg.popen(["sleep", "60"])
        assert p.pid in cg.pids()
        path = cg.path
    assert p.returncode == -signal.SIGKILL and not os.path.exists(path)


def test_notebook_cells_report_ok_error_and_continue_after_a_memory_error():
    with memory_cgroup(NB_LIMIT) as cg:
        res = run_notebook([
            "import numpy as np\ntry:\n    np.empty(1 << 50, np.uint8)\nexcept MemoryError as e:\n"
            "    print('caught', type(e).__name__)",
            "np.empty(1 << 50, np.uint8)",
            "print('cell 3 ran'); print(open('/proc/self/cgroup').read())",
        ], cgroup=cg, timeout=30)
        assert [r.status for r in res] == ["ok", "error", "ok"]
        assert "caught" in res[0].text and res[1].ename in ("MemoryError", "_ArrayMemoryError")
        assert "cell 3 ran" in res[2].text and os.path.basename(cg.path) in res[2].text
        assert cg.oom_kills() == 0


def test_notebook_kernel_killed_by_the_oom_killer_is_reported_dead():
    with memory_cgroup(NB_LIMIT) as cg:
        res = run_notebook([
            "import numpy as np",
            f"a = np.ones({4 * NB_LIMIT}, np.uint8)",
            "print('never')",
        ], cgroup=cg, timeout=30)
        assert [r.status for r in res] == ["ok", "died", "not run"]
        assert res[1].ename == "DeadKernelError"
        assert cg.oom_kills() >= 1


def test_harness_skips_with_the_reason_where_no_group_can_be_made(monkeypatch):
    import cgroup_util

    def denied(*a):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(cgroup_util, "_create", denied)
    with pytest.raises(pytest.skip.Exception, match="cannot create a memory-limited cgroup.*Permission denied"):
        with memory_cgroup(LIMIT):
            pass
    monkeypatch.setattr(cgroup_util, "find_parent", lambda: (None, "no cgroup memory controller"))
    with pytest.raises(pytest.skip.Exception, match="no cgroup memory controller"):
        with memory_cgroup(LIMIT):
            pass
