"""Bugs planted on purpose, one at a time, make the CUDA checks fail: each
mutant is a copy of csrc/cuda with one edit, built by copying the emulation's
build folder so that only the edited file and its includers recompile, then
the suite's test that catches it runs against that build in the emulated
configuration that exposes it (docs/devices.md lists them). The same tests
pass on the unmutated build in test_cuda_sim.py's configurations. Also: the
coverage script counts a file that never ran, and the nvcc check fails a
64 KiB static __shared__ array that PTX alone lets through."""

import os
import shutil
import subprocess
from collections import namedtuple

import pytest

import test_cuda_sim as sim

ROOT = sim.ROOT
pytestmark = sim.pytestmark

Mutant = namedtuple("Mutant", "file old new build tests k env")
FORWARD_NAN = dict(BF_SIM_THREAD_ORDER="forward", BF_SIM_NAN_FILL="1")
INTERLEAVED = dict(BF_SIM_INTERLEAVE="1", BF_SIM_NAN_FILL="1")
BACKEND = "tests/test_cuda_backend.py"
CLIP = BACKEND + "::test_gradient_clipping_and_amsgrad_train_to_the_cpu_weights_on_cuda"
EMBEDDING = BACKEND + "::test_an_embedding_gradient_over_repeated_ids_trains_to_the_cpu_weights_on_cuda"
MUTANTS = {
    # a dropped barrier: in forward order thread 0 reads its peers' NaN-filled slots
    "layernorm.cu barrier dropped": Mutant(
        "layernorm.cu", "    sh[threadIdx.x] = v;\n    __syncthreads();\n", "    sh[threadIdx.x] = v;\n", "default",
        ["tests/test_cuda_kernel_files.py"], "layer_norm", FORWARD_NAN),
    "reduce.cu barrier dropped": Mutant(
        "reduce.cu", "    sh[threadIdx.x] = v;\n    __syncthreads();\n", "    sh[threadIdx.x] = v;\n", "default",
        [BACKEND + "::test_dense_model_trains_to_the_cpu_weights_on_cuda"], None, FORWARD_NAN),
    "sum of squares barrier dropped": Mutant(
        "blocksum.cuh", "    part[threadIdx.x] = s;\n    __syncthreads();\n", "    part[threadIdx.x] = s;\n", "default",
        [CLIP], "clipnorm", FORWARD_NAN),
    # cuDNN's workspace on the weight copy: the stand-in scribbles NaN over it at the call
    "conv workspace on the weight copy": Mutant(
        "conv.cu", "    L->algo = off;\n", "    L->algo = L->wt;\n", "default",
        [BACKEND + "::test_global_average_pooling_and_valid_conv_match_the_cpu_on_cuda"], None, FORWARD_NAN),
    # the compute stream no longer waits for the upload: with lazy streams it reads the slot before the copy
    "upload event not waited for": Mutant(
        "backend.cu", "    BF_CUDA_CHECK(st, cudaStreamWaitEvent(st->stream, st->loaded[k], 0));\n", "", "default",
        [BACKEND + "::test_dense_model_trains_to_the_cpu_weights_on_cuda"], None,
        dict(FORWARD_NAN, BF_SIM_STREAMS="lazy")),
    # a lost update: within a block (embedding rows) and between blocks (one atomic per block)
    "embedding atomicAdd as +=": Mutant(
        "embedding.cu", "atomicAdd(&dtable[(long)k * D + e % D], dout[e]);", "dtable[(long)k * D + e % D] += dout[e];",
        "interleave", [EMBEDDING], None, INTERLEAVED),
    "sum of squares atomicAdd as +=": Mutant(
        "blocksum.cuh", "atomicAdd(out, part[0]);", "*out += part[0];", "interleave", [CLIP], "global_clipnorm",
        INTERLEAVED),
    "AMSGrad max as min": Mutant(
        "optimizers.cu", "vi = s2[i] > vi ? s2[i] : vi;", "vi = s2[i] < vi ? s2[i] : vi;", "default", [CLIP],
        "amsgrad", FORWARD_NAN),
}


@pytest.fixture(scope="module")
def builds():
    """the unmutated builds a mutant's build folder starts from (cached, built once per tree)"""
    lib = sim._build(sim.SIM_DIR)
    return {"default": os.path.dirname(lib), "interleave": os.path.dirname(sim._interleave_build(lib))}


@pytest.mark.slow   # a one-file build and a pytest run each: 10-25 s
@pytest.mark.parametrize("name", list(MUTANTS))
def test_a_planted_bug_fails_the_test_that_catches_it(builds, name, tmp_path):
    m = MUTANTS[name]
    src = tmp_path / "cuda"
    shutil.copytree(os.path.join(ROOT, "csrc", "cuda"), src)
    text = (src / m.file).read_text()
    assert text.count(m.old) == 1, m.old
    (src / m.file).write_text(text.replace(m.old, m.new))
    out = tmp_path / "build"
    shutil.copytree(builds[m.build], out, symlinks=True)   # time stamps kept: only the edit and its includers rebuild
    env = dict(INTERLEAVE="1", COVERAGE="0", BASE_DIR=builds["default"]) if m.build == "interleave" else {}
    lib = sim._build(out, CUDA_SRC=str(src), **env)
    r, counts = sim._pytest(lib, m.tests, k=m.k, args=["-x"], **m.env)
    assert counts.get("failed", 0) >= 1, f"{name} got through:\n{r.stdout[-3000:]}"


# the coverage table before its fix: a file's first row kept only if it beat 0 lines at 0%, so a file that never
# ran had no line count and left the total
COVERAGE_BUG = ("    if (!(f in seen)) { seen[f] = 1; files[++k] = f; best[f] = pct; tot[f] = n }\n"
                "    else if (pct * n > best[f] * tot[f])",
                "    if (!(f in seen)) { seen[f] = 1; files[++k] = f }\n"
                "    if (pct * n > best[f] * tot[f])")


@pytest.mark.parametrize("planted", [False, True], ids=["script", "its old bug planted"])
def test_the_coverage_table_counts_a_cuda_file_that_never_ran(tmp_path, planted):
    """tests/c_cuda/sim_coverage.sh's table (REPORT_ONLY=1 on a folder of
    objects): a .cu compiled with coverage but never run is a row with its
    lines at 0% and counts in the total (nccl.cu's 112 lines were left out)."""
    obj = tmp_path / "obj"
    obj.mkdir()
    (tmp_path / "never.cpp").write_text('#line 1 "csrc/cuda/never.cu"\nint f(int x) {\n  if (x > 2)\n'
                                        '    return x * 2;\n  return x + 1;\n}\n')
    subprocess.run(["g++", "-x", "c++", "--coverage", "-c", "never.cpp", "-o", "obj/never.cu.o"], cwd=tmp_path,
                   check=True)
    script = tmp_path / "c_cuda" / "sim_coverage.sh"
    script.parent.mkdir()
    text = open(os.path.join(ROOT, "tests", "c_cuda", "sim_coverage.sh")).read()
    if planted:
        assert COVERAGE_BUG[0] in text
        text = text.replace(*COVERAGE_BUG)
    script.write_text(text)
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True,
                       env=dict(os.environ, REPORT_ONLY="1", OUT_DIR=str(tmp_path)))
    rows = {ln.split()[0]: ln.split()[1:] for ln in r.stdout.splitlines() if ln.strip()}
    counted = rows.get("csrc/cuda/never.cu") == ["4", "0", "0.0%"] and rows.get("total") == ["4", "0", "0.0%"]
    assert counted != planted, r.stdout + r.stderr


@pytest.mark.skipif(sim._nvcc() is None, reason="no nvcc")
def test_a_64_kib_static_shared_array_fails_the_nvcc_check(tmp_path):
    """test_cuda_sim's nvcc check of one file (PTX, then ptxas for sm_80 and
    sm_90) on reduce.cu with its block-sum array grown to 64 KiB: --ptx
    alone passes it, ptxas refuses it (static shared memory is 48 KiB)."""
    src = tmp_path / "cuda"
    shutil.copytree(os.path.join(ROOT, "csrc", "cuda"), src)
    text = (src / "reduce.cu").read_text()
    old = "__shared__ double sh[BF_SUM_THREADS];"
    assert old in text
    (src / "reduce.cu").write_text(text.replace(old, "__shared__ double sh[8192];"))
    r = subprocess.run(sim._nvcc_check_cmd(str(src / "reduce.cu"), str(tmp_path / "reduce")), cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode != 0 and "shared" in (r.stdout + r.stderr).lower(), r.stdout + r.stderr


FLAGS = ("-O3 --generate-code=arch=compute_80,code=[sm_80] --generate-code=arch=compute_90,code=[sm_90] "
         "-Xcompiler=-Wall,-Wextra -std=c++17 --Werror=all-warnings")


@pytest.mark.parametrize("change,counted", [
    (None, True), ("flags without --Werror", False), ("object failed", False), ("source edited", False),
    ("header edited", False), ("another tree's build", False)])
def test_the_nvcc_check_takes_from_the_build_only_up_to_date_werror_compiles(tmp_path, change, counted):
    """tests/nvcc_build.py: a .cu counts as checked by the install's build only if build.ninja compiled it with
    --Werror=all-warnings for sm_80 and sm_90 in a build of this tree, its object exists (nvcc leaves none when
    a warning fails it) and is newer than the source and every header; anything else is compiled by the check."""
    import nvcc_build
    for f in ("csrc/cuda/a.cu", "csrc/core/x.h"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("")
    b = tmp_path / "build" / "cp3-linux"
    (b / "CMakeFiles").mkdir(parents=True)
    home = "/elsewhere" if change == "another tree's build" else tmp_path
    (b / "CMakeCache.txt").write_text(f"CMAKE_HOME_DIRECTORY:INTERNAL={home}\n")
    flags = FLAGS.replace(" --Werror=all-warnings", "") if change == "flags without --Werror" else FLAGS
    (b / "build.ninja").write_text(f"build CMakeFiles/a.cu.o: CUDA_COMPILER__cuda_Release {tmp_path}/csrc/cuda/a.cu"
                                   f" || deps\n  DEFINES = -DX\n  FLAGS = {flags}\n  INCLUDES = -Icsrc\n\n")
    if change != "object failed":
        (b / "CMakeFiles" / "a.cu.o").write_text("")
    (b / "_cuda.so").write_text("")
    t = os.path.getmtime(tmp_path / "csrc/cuda/a.cu")
    for f, dt in (("csrc/cuda/a.cu", 0), ("csrc/core/x.h", 0), ("build/cp3-linux/CMakeFiles/a.cu.o", 5),
                  ("build/cp3-linux/_cuda.so", 6)):
        if (tmp_path / f).exists():
            os.utime(tmp_path / f, (t + dt, t + dt))
    edited = {"source edited": "csrc/cuda/a.cu", "header edited": "csrc/core/x.h"}.get(change)
    if edited:
        os.utime(tmp_path / edited, (t + 10, t + 10))
    assert nvcc_build.checked_sources(str(tmp_path)) == ({"csrc/cuda/a.cu": "build/cp3-linux"} if counted else {})
