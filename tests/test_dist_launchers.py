"""Launchers that never wait forever (issue 31): one rank stuck mid-epoch
(tests/dist_programs/stuck_rank.py: SIGSTOPped, or asleep for an hour) while
the other raises DistributedError at the deadline (BF_DIST_TIMEOUT). Under
`python -m boundfit.distribute --nproc-per-node 2` and under `mpiexec
-disable-auto-cleanup ... -m boundfit.distribute` (skipped without mpiexec),
the launcher ends the stuck rank BF_DIST_GRACE seconds after the failure and
exits non-zero, naming the failed and the stuck rank. Before, both waited
for the stuck rank forever. The only time limit is the hang guard."""
import sys

import pytest

from boundfit.distribute import launch
from dist_util import MPIEXEC, PROGRAMS, free_port, job_env, needs_mpi, run_job

STUCK = f"{PROGRAMS}/stuck_rank.py"
ENV = dict(BF_DIST_TIMEOUT="3", BF_DIST_GRACE="1")


def test_local_launcher_ends_a_stopped_rank_and_exits_with_the_failed_ranks_status(tmp_path):
    cmd = [sys.executable, "-m", "boundfit.distribute", "--nproc-per-node", "2", "--master-port", str(free_port()),
           STUCK, "stop"]
    [(rc, out)] = run_job([cmd], job_env(**ENV), tmp_path)
    assert rc == 1, out   # rank 0's: its DistributedError
    assert "DistributedError" in out and "did not complete within 3.0 s" in out, out
    assert "boundfit.distribute: rank 0 ended with status 1" in out
    assert "rank 1 (pid " in out and "was still running 1 s after rank 0 ended with status 1: it is stuck; " \
        "ending it (SIGTERM)" in out, out
    assert "rank 1 ended with signal 15 (SIGTERM) (stuck)" in out   # SIGCONT let the stopped rank take it
    assert out.rstrip().endswith("the job failed (rank 0 ended with status 1); ended stuck rank 1"), out


@needs_mpi
def test_mpi_wrapper_ends_a_sleeping_rank_and_mpiexec_exits_non_zero(tmp_path):
    cmd = [MPIEXEC, "-disable-auto-cleanup", "-n", "2", sys.executable, "-m", "boundfit.distribute", STUCK, "sleep"]
    [(rc, out)] = run_job([cmd], job_env(**ENV), tmp_path)
    assert rc != 0, out
    assert "DistributedError" in out and "did not complete within 3.0 s" in out, out
    assert "boundfit.distribute: rank 0 ended with status 1" in out
    # hydra's SIGUSR1 to the other wrappers (it killed them before: "User defined signal 1", the rank left behind)
    assert "was still running 1 s after mpiexec said another rank failed (SIGUSR1): it is stuck" in out, out
    assert "rank 1 ended with signal 15 (SIGTERM) (stuck)" in out, out
    assert "User defined signal 1" not in out


@pytest.mark.parametrize("grace", ["abc", "-1", "nan"])
def test_bad_grace_period_is_refused_naming_the_variable_before_any_rank_starts(monkeypatch, grace):
    monkeypatch.setenv("BF_DIST_GRACE", grace)
    with pytest.raises(SystemExit, match=f"BF_DIST_GRACE must be a number of seconds >= 0, got '{grace}'"):
        launch._launch_main(["--nproc-per-node", "2", "no_such_script.py"])
