"""benchmarks/gpu_check.sh, the one command to run first on a lent GPU, dry-run
on the device emulation (BF_GPU_CHECK_DRY=1): every step runs (one CUDA test,
the benchmark's script on one case, the seed CNN refused under half its plan
and trained by micro-batches), the sanitizer step skips with its reason where
compute-sanitizer is missing, and the report lists each step."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM = os.path.join(ROOT, "build", "cuda_sim", "_cuda.so")


@pytest.fixture(scope="module")
def sim_lib():
    if not os.path.exists(os.path.join(ROOT, "csrc", "cuda_sim", "build.sh")) or not _has_nvcc_headers():
        pytest.skip("no CUDA headers: the emulation cannot be built")
    r = subprocess.run(["bash", "csrc/cuda_sim/build.sh"], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, OUT_DIR=os.path.dirname(SIM), PYTHON=sys.executable))
    assert r.returncode == 0, r.stderr[-3000:]
    return SIM


def _has_nvcc_headers():
    import shutil
    return shutil.which("nvcc") is not None or os.path.exists("/usr/local/cuda/include/cuda_runtime.h")


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
