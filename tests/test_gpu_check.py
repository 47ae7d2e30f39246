"""benchmarks/gpu_check.sh, the one command to run first on a lent GPU, dry-run
on the device emulation (BF_GPU_CHECK_DRY=1): every step runs (one CUDA test,
the benchmark's script on one case, the seed CNN refused under half its plan
and trained by micro-batches), the sanitizer step skips with its reason where
compute-sanitizer is missing, and the report lists each step."""

import os
import subprocess
import sys

import pytest

import test_cuda_sim as sim

ROOT = sim.ROOT
pytestmark = sim.pytestmark   # x86-64, g++ and the CUDA headers, as the emulation needs


@pytest.fixture(scope="module")
def sim_lib():
    return sim._build(sim.SIM_DIR)


def test_the_gpu_check_runs_every_step_on_the_emulation_and_reports_them(sim_lib, tmp_path):
    env = dict(os.environ, BF_GPU_CHECK_DRY="1", BF_CUDA_LIB=sim_lib, OUT=str(tmp_path), PYTHON=sys.executable,
               PATH=os.environ.get("PATH", ""))
    r = subprocess.run(["bash", "benchmarks/gpu_check.sh"], cwd=ROOT, capture_output=True, text=True, env=env)
    report = (tmp_path / "report.txt").read_text()
    assert r.returncode == 0, r.stdout[-4000:] + "\n" + report
    lines = {ln.split()[0]: ln for ln in report.splitlines() if ln and not ln.startswith("----")}
    assert list(lines) == ["versions", "cuda_suite", "sanitizer", "bench_gpu", "seed_cnn"]
    for name in ("versions", "cuda_suite", "bench_gpu", "seed_cnn"):
        assert " ok " in lines[name], lines[name]
    assert " ok " in lines["sanitizer"] or "skipped (compute-sanitizer not found)" in lines["sanitizer"]
    assert "1 passed" in (tmp_path / "cuda_suite.log").read_text()
    assert "boundfit device emulation" in (tmp_path / "versions.log").read_text()
    cnn = (tmp_path / "seed_cnn.log").read_text()
    assert "refused before step one" in cnn and "micro_batch='auto' trained" in cnn
