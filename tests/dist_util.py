"""Launching data-parallel test programs (tests/dist_programs/) for
test_dist_shuffle_seed.py and test_dist_launchers.py: the mpiexec to use (or
a skip marker without one), a free TCP port, the environment of a fresh job,
and a run whose only time limit is a generous hang guard that kills the
whole job (its session) when it trips."""
import os
import shutil
import signal
import socket
import subprocess
import sys

import pytest

import boundfit
from boundfit import distribute

PROGRAMS = os.path.join(os.path.dirname(__file__), "dist_programs")
HANG_GUARD_S = 120


def _mpiexec():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.exists(here) else shutil.which("mpiexec")


MPIEXEC = _mpiexec()
HAVE_MPI = MPIEXEC is not None and distribute.find_mpi_library() is not None
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="needs mpiexec and libmpi_abi.so (pip install mpich)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job_env(**extra):
    """This environment without a launcher's variables, one thread per rank,
    the boundfit this test imported first on the path, plus extra."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI_", "PMIX_", "HYDRA_")) and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    here = os.path.dirname(os.path.dirname(os.path.abspath(boundfit.__file__)))
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([here] + env.get("PYTHONPATH", "").split(os.pathsep)),
               **extra)
    return env


def run_job(cmds, env, cwd):
    """Start every command (a list of argv lists, or of (argv, env) pairs) in
    its own session, its output to a file in cwd, and wait for all;
    [(returncode, output)]. A job still running after HANG_GUARD_S seconds
    is killed and the test fails."""
    procs, logs = [], []
    for i, c in enumerate(cmds):
        argv, e = c if isinstance(c[0], list) else (c, env)
        logs.append(os.path.join(str(cwd), f"job{i}.log"))
        with open(logs[-1], "wb") as log:
            procs.append(subprocess.Popen(argv, env=e, cwd=str(cwd), stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True))
    try:
        codes = [p.wait(timeout=HANG_GUARD_S) for p in procs]
    except subprocess.TimeoutExpired:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        codes = None
    outs = []
    for path in logs:
        with open(path, "rb") as f:
            outs.append(f.read().decode(errors="replace"))
    if codes is None:
        pytest.fail(f"the job did not end within {HANG_GUARD_S} s:\n" + "\n".join(o[-2000:] for o in outs))
    return list(zip(codes, outs))
