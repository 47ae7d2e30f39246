"""Data parallel on CUDA devices over NCCL (issue 26), on the device
emulation (csrc/cuda_sim) with its NCCL stand-in (sim_nccl.cpp, the same C
API over shared memory; BF_NCCL_LIB points nccl.cu at it): 2 emulated-CUDA
ranks launched torchrun-style (tests/dist_programs/train_cuda.py), each
initialized with its own seed, get rank 0's weights by ncclBroadcast (the
host transport does not carry them on a GPU) and end with bit-identical
weights, equal to one process with batch 2B; the plan holds
NCCL's device buffers as measured around ncclCommInitRank, and a device
memory_limit covers them; a rank dying
before it joins the communicator, or inside the all-reduce, or stuck in it,
makes the others raise DistributedError
within seconds (heartbeat) or at the deadline (ncclCommAbort). Our NCCL
declarations (nccl_api.h) are checked against the real nccl.h when one is
found. What only real GPUs can check: NCCL's own transports (NVLink, IB),
its real memory use and its asynchronous errors."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from test_cuda_sim import SIM_DIR, _build, _cuda_include, pytestmark  # noqa: F401 - the emulation's skip condition
from test_distributed import _launch, _launch_tcp, needs_mpi

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAM = os.path.join(ROOT, "tests", "dist_programs", "train_cuda.py")


@pytest.fixture(scope="module")
def sim_env():
    lib = _build(SIM_DIR)
    # streams run late: the all-reduce after the gradients queued on its stream, the scale after the all-reduce
    return {"BF_CUDA_LIB": lib, "BF_NCCL_LIB": lib, "BF_SIM_DEVICES": "2", "BF_SIM_STREAMS": "lazy"}


def _weights(path):
    z = np.load(path)
    return [z[f"arr_{i}"] for i in range(len(z.files))]


def test_two_emulated_cuda_ranks_match_one_process_with_twice_the_batch(tmp_path, sim_env):
    recs, _, out, log = _launch_tcp(tmp_path, 2, "equal", batch=8, program=PROGRAM, **sim_env)
    assert sorted(recs) == [0, 1] and all("error" not in r for r in recs.values()), (recs, log)
    assert [recs[r]["device"] for r in (0, 1)] == ["cuda:0", "cuda:1"]   # device='cuda': the rank's own GPU
    w0, w1 = _weights(out / "final0.npz"), _weights(out / "final1.npz")
    for a, b in zip(w0, w1):   # the stand-in sums in rank order on every rank: the same bits
        assert np.array_equal(a, b)
    # one process (no group) from rank 0's initial weights with batch 16
    r = subprocess.run([sys.executable, PROGRAM, "single", str(out), "16"], cwd=str(out), capture_output=True,
                       text=True, env=dict(os.environ, **sim_env), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    single = json.loads((out / "rank0.json").read_text())
    assert "error" not in single, single
    for a, b in zip(w0, _weights(out / "single.npz")):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(recs[0]["history"]["loss"], single["history"]["loss"], rtol=1e-5)
    # NCCL's device buffers in the plan: the stand-in takes 2 channels x NCCL_BUFFSIZE (4 MiB)
    for rk in (0, 1):
        assert recs[rk]["nccl"] == [["NCCL communicator buffers (measured at init)", 8 << 20, f"cuda:{rk}"]]
        assert recs[rk]["fits"]


def test_a_rank_dying_inside_the_nccl_all_reduce_makes_the_other_raise_within_seconds(tmp_path, sim_env):
    recs, took, _, log = _launch_tcp(tmp_path, 2, "fail", timeout=30, program=PROGRAM, BF_SIM_NCCL_DIE_RANK="1",
                                     **sim_env)
    assert 1 not in recs, recs   # it died in its 3rd all-reduce
    r0 = recs[0]
    assert r0["error"] == "DistributedError", (r0, log)
    assert "rank 1" in r0["message"] and "NCCL" in r0["message"], r0["message"]


def test_nccl_buffers_count_against_a_device_memory_limit_on_every_rank(tmp_path, sim_env):
    recs, _, _, log = _launch_tcp(tmp_path, 2, "budget", program=PROGRAM, **sim_env)
    assert sorted(recs) == [0, 1], log
    for r in (0, 1):   # the same MemoryBudgetError on both, naming rank 1, before step one
        assert recs[r]["error"] == "MemoryBudgetError", (recs[r], log)
        assert "rank 1" in recs[r]["message"], recs[r]["message"]
        assert recs[r]["e_available_bytes"] == recs[1]["limit"]
        assert recs[r]["e_needed_bytes"] == recs[1]["limit"] - (4 << 20) + (8 << 20)


def test_a_rank_dying_before_it_joins_the_nccl_communicator_makes_the_other_raise_within_seconds(tmp_path, sim_env):
    # ncclCommInitRankConfig is non-blocking: the wait for the peers is polled with the heartbeat
    recs, took, _, log = _launch_tcp(tmp_path, 2, "fail", timeout=30, program=PROGRAM, BF_SIM_NCCL_DIE_RANK="1",
                                     BF_SIM_NCCL_DIE_AT="init", **sim_env)
    assert 1 not in recs, recs
    r0 = recs[0]
    assert r0["error"] == "DistributedError", (r0, log)
    assert "rank 1" in r0["message"] and "NCCL communicator's setup" in r0["message"], r0["message"]


@needs_mpi
def test_under_mpiexec_a_rank_dying_inside_the_nccl_all_reduce_is_found_by_the_heartbeat(tmp_path, sim_env):
    recs, took, _, log = _launch(tmp_path, 2, "fail", wrapper=True, timeout=30, program=PROGRAM,
                                 BF_SIM_NCCL_DIE_RANK="1", **sim_env)
    assert 1 not in recs, recs
    r0 = recs[0]
    assert r0["error"] == "DistributedError", (r0, log)
    assert "rank 1" in r0["message"] and "NCCL" in r0["message"], r0["message"]


def test_a_rank_stuck_in_the_nccl_all_reduce_makes_every_rank_raise_at_the_deadline(tmp_path, sim_env):
    recs, took, _, log = _launch_tcp(tmp_path, 2, "fail", timeout=2, program=PROGRAM, BF_SIM_NCCL_STALL_RANK="1",
                                     **sim_env)
    assert sorted(recs) == [0, 1], log
    for r in (0, 1):
        assert recs[r]["error"] == "DistributedError", (recs[r], log)
        assert "did not complete within" in recs[r]["message"] and "NCCL communicator aborted" in recs[r]["message"]


def test_without_nccl_a_cuda_fit_under_data_parallel_names_the_wheel(tmp_path, sim_env):
    env = dict(sim_env, BF_NCCL_LIB="/nonexistent/libnccl.so.2")
    recs, _, _, log = _launch_tcp(tmp_path, 2, "fail", timeout=10, program=PROGRAM, **env)
    assert sorted(recs) == [0, 1], log
    assert "cannot load /nonexistent/libnccl.so.2" in recs[0]["message"], recs[0]
    assert recs[1]["error"] == "DistributedError", recs[1]   # told by rank 0, not left waiting


def _nccl_header():
    for d in ("/usr/local/cuda/include", "/usr/include", "/usr/local/include"):
        if os.path.exists(os.path.join(d, "nccl.h")):
            return d
    try:
        import nvidia.nccl as n  # noqa: PLC0415 - optional wheel, only its header's folder
        d = os.path.join(list(n.__path__)[0], "include")
        return d if os.path.exists(os.path.join(d, "nccl.h")) else None
    except ImportError:
        return None


@pytest.mark.skipif(_nccl_header() is None, reason="no nccl.h (pip install nvidia-nccl-cu13)")
def test_our_nccl_declarations_match_the_real_nccl_header():
    r = subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-fsyntax-only", f"-I{_nccl_header()}",
                        f"-I{_cuda_include()}", os.path.join(ROOT, "tests", "c_cuda", "nccl_abi_check.cpp")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
