"""The CUDA backend without a GPU: csrc/cuda built for the host by the device
emulation (csrc/cuda_sim/build.sh, cached under build/cuda_sim), then the
Python CUDA tests run against it (BF_CUDA_LIB) in subprocesses (forks of a
process that has imported pytest and boundfit: tests/pytest_forks.py), in both
thread orders of a block with NaN-filled fresh memory, streams run late
(lazily and shuffled) and at compute capability 8.0 and 9.0; the embedding
gradient and a global norm run with threads switched at every store and
blocks interleaved (an instrumented build, cached under
build/cuda_sim_interleave); and csrc/cuda compiles with nvcc and warnings as
errors, through ptxas. Bugs planted on purpose fail these:
test_cuda_mutants.py. What this proves and what only a GPU can:
docs/devices.md, "The CUDA backend without a GPU"."""

import os
import platform
import re
import shlex
import shutil
import subprocess
import sys

import pytest

import pytest_forks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "csrc", "cuda_sim", "build.sh")
# the emulation's build folder; tests/c_cuda/sim_coverage.sh points it at its COVERAGE=1 build
SIM_DIR = os.path.abspath(os.environ.get("BF_SIM_BUILD", os.path.join(ROOT, "build", "cuda_sim")))


def _cuda_include():
    for d in (os.environ.get("CUDA_INC", ""), "/usr/local/cuda/include", "/usr/include"):
        if d and os.path.exists(os.path.join(d, "cuda_runtime.h")):
            return d
    return None


pytestmark = pytest.mark.skipif(
    platform.machine() != "x86_64" or shutil.which("g++") is None or _cuda_include() is None,
    reason="the device emulation needs x86-64, g++ and the CUDA headers (cuda_runtime.h, cublas_v2.h, cudnn.h)")

# the tests of the suite that train on device="cuda" (the rest of these files
# run on the CPU or the "emu" device, and run in the main suite anyway); the
# 100x100 model's full batch (4096 images, 1.3e9-value activations) is
# minutes of emulated threads and is left to a real GPU
CUDA_TESTS = ["tests/test_cuda_backend.py", "tests/test_recurrent_cuda.py", "tests/test_cuda_kernel_files.py",
              "tests/test_ops_elementwise.py::test_every_op_runs_on_cuda_as_on_the_cpu",
              "tests/test_sequence_losses.py::test_a_masked_tagger_trains_on_cuda_as_on_the_cpu",
              "tests/test_sources_and_interrupts.py::"
              "test_cuda_without_a_usable_gpu_raises_device_error_and_cpu_still_trains",
              "tests/test_device_path.py", "tests/test_text_cuda.py",
              "tests/test_deep_models.py::test_a_deep_model_trains_on_cuda_as_on_the_cpu",
              "tests/test_ops_index.py::test_index_ops_train_to_the_cpu_weights_on_cuda", "tests/test_mixed_cuda.py",
              "tests/test_optimizer_ema.py::test_ema_trains_on_cuda_as_on_the_cpu"]
TOO_BIG = "not 100x100"


def _build(out_dir, **env):
    e = dict(os.environ, OUT_DIR=str(out_dir), PYTHON=sys.executable, **env)
    r = subprocess.run(["bash", BUILD], cwd=ROOT, capture_output=True, text=True, env=e)
    assert r.returncode == 0, r.stderr[-4000:]
    return r.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def sim_lib():
    return _build(SIM_DIR)


def _pytest(lib, tests, k=TOO_BIG, args=(), **sim_env):
    """`python -m pytest` of tests on the CUDA module lib, in a fork of pytest_forks' server (the stdout and stderr
    of the run in r.stdout)"""
    env = dict(os.environ, BF_CUDA_LIB=lib, KERAS_BACKEND=os.environ.get("KERAS_BACKEND", "jax"), **sim_env)
    cmd = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args, *tests]
    if k:
        cmd += ["-k", k]
    r = pytest_forks.run(cmd, ROOT, env)
    counts = {w: int(n) for n, w in re.findall(r"(\d+) (passed|failed|skipped|error)", r.stdout)}
    return r, counts


@pytest.mark.parametrize("order,cc,streams", [("forward", "8.0", "lazy"), ("reverse", "9.0", "shuffled")])
def test_the_cuda_tests_pass_on_the_device_emulation(sim_lib, order, cc, streams):
    """Every kernel's threads in order and in reverse, at CC 8.0 and 9.0 (the
    cuBLAS default workspace differs): the same results as on the CPU. Both
    runs fill fresh device and shared memory with NaN (a read of what nobody
    wrote): in forward order that is what catches a dropped barrier (thread 0
    reads its peers' slots before they run), in reverse order the peers have
    written them; the reverse run also shuffles the blocks. Streams run late
    (BF_SIM_STREAMS): work queues until the host waits, then the stream it
    waits for runs last (lazy: a stream missing its wait on another reads
    before the other wrote) or the streams take turns at random (shuffled).
    The cuBLAS and cuDNN stand-ins scribble NaN over their workspace at every
    call, and every GEMM must run in the planned cuBLAS workspace
    (BF_SIM_PLANNED_WORKSPACE: the default pool is device memory outside the
    plan). Multiply-adds are fused as nvcc fuses them (build.sh FP_CONTRACT:
    the tolerances hold for FMA rounding)."""
    extra = dict(BF_SIM_BLOCK_ORDER="shuffled") if order == "reverse" else {}
    r, counts = _pytest(sim_lib, CUDA_TESTS, BF_SIM_THREAD_ORDER=order, BF_SIM_CC=cc, BF_SIM_PLANNED_WORKSPACE="1",
                        BF_SIM_NAN_FILL="1", BF_SIM_STREAMS=streams, **extra)
    assert r.returncode == 0 and not counts.get("failed"), r.stdout[-6000:] + r.stderr[-2000:]
    assert counts.get("passed", 0) >= 50, r.stdout[-3000:]


@pytest.fixture(scope="module")
def sim_runtime_test(sim_lib, tmp_path_factory):
    """tests/c_cuda/test_sim_runtime.cu built as the emulation builds csrc/cuda"""
    import scipy_openblas32 as s
    tmp = tmp_path_factory.mktemp("simrt")
    (tmp / "src").mkdir()
    shutil.copy(os.path.join(ROOT, "tests", "c_cuda", "test_sim_runtime.cu"), tmp / "src")
    subprocess.run([sys.executable, os.path.join(ROOT, "csrc", "cuda_sim", "rewrite_launches.py"), str(tmp / "src"),
                    str(tmp / "out"), "tests/c_cuda"], check=True)
    obj = os.path.join(os.path.dirname(sim_lib), "obj")
    exe = tmp / "test_sim_runtime"
    cmd = ["g++", "-std=c++17", "-O1", "-x", "c++", "-include", "sim_device.h", "-Wno-deprecated-declarations",
           "-Icsrc/cuda_sim", "-Icsrc/cpu", f"-I{_cuda_include()}", f"-I{s.get_include_dir()}",
           str(tmp / "out" / "test_sim_runtime.cu"), "-x", "none",
           *[os.path.join(obj, f) for f in ("sim_runtime.cpp.o", "sim_streams.cpp.o", "sim_blas.cpp.o", "sim_dnn.cpp.o",
                                          "switch.S.o")],
           f"-L{s.get_lib_dir()}", "-lscipy_openblas", f"-Wl,-rpath,{s.get_lib_dir()}", "-lpthread", "-o", str(exe)]
    if os.environ.get("COVERAGE") == "1":   # the objects of sim_coverage.sh's build call gcov's runtime
        cmd.insert(-2, "--coverage")
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    return str(exe)


@pytest.mark.parametrize("order,cc,streams", [("forward", "8.0", "lazy"), ("reverse", "9.0", "shuffled"),
                                              ("shuffled", "8.0", "sync")])
def test_the_emulation_keeps_cuda_semantics_and_reports_misuse(sim_runtime_test, order, cc, streams):
    env = dict(os.environ, BF_SIM_THREAD_ORDER=order, BF_SIM_BLOCK_ORDER=order, BF_SIM_CC=cc, BF_SIM_STREAMS=streams)
    r = subprocess.run([sim_runtime_test], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "0 of" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([sim_runtime_test, "divergent"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "0 of 1 checks failed" in r.stdout, r.stdout + r.stderr


@pytest.fixture(scope="module")
def cuda_ops_test():
    """test_c_programs' build of tests/c_cuda/test_cuda_ops.c (the same cached program)"""
    from test_c_programs import CUDA_OPS_CPU, _build as build_c
    return build_c("test_cuda_ops", ["tests/c_cuda/test_cuda_ops.c"] + CUDA_OPS_CPU)


@pytest.mark.parametrize("order", ["forward", "reverse"])
def test_every_cuda_op_matches_the_cpu_kernel_on_the_emulation(sim_lib, cuda_ops_test, order):
    """tests/c_cuda/test_cuda_ops.c (every vtable op against the CPU kernel, and
    the sticky error of a faulting kernel) against the emulated module."""
    exe = cuda_ops_test
    env = dict(os.environ, BF_SIM_THREAD_ORDER=order, BF_SIM_NAN_FILL="1",
               BF_SIM_BLOCK_ORDER="shuffled" if order == "reverse" else "forward")
    r = subprocess.run([str(exe), sim_lib], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and not r.stdout.startswith("SKIP"), r.stdout[-6000:]
    assert re.search(r"^0 of \d{3,} checks failed", r.stdout, re.M), r.stdout[-3000:]


def test_the_cuda_report_names_the_emulated_device(sim_lib):
    code = "from boundfit import _core; print(_core.cuda_report())"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, BF_CUDA_LIB=sim_lib, BF_SIM_CC="9.0"))
    assert r.returncode == 0, r.stderr
    assert re.search(r"^ok\s+cuda:0\s+.*compute capability 9\.0", r.stdout, re.M), r.stdout


@pytest.mark.parametrize("env,says", [
    (dict(BF_SIM_DRIVER_VERSION="12040"), "update the NVIDIA driver"),
    (dict(BF_SIM_DRIVER_VERSION="0"), "no NVIDIA driver found"),
    (dict(BF_SIM_DEVICES="0"), "no usable GPU"),
    (dict(BF_SIM_CC="7.5"), "compute capability 7.5 is not covered"),
    (dict(BF_SIM_CUDNN_VERSION="8907"), "cuDNN 8.9.7 is loaded"),
])
def test_a_driver_device_or_library_mismatch_is_a_clear_device_error(sim_lib, env, says):
    """check.cu's refusals, each a DeviceError naming what was found and the fix,
    with the CUDA report saying PROBLEM; the weights stay as they were."""
    code = ("import numpy as np, boundfit as bf\n"
            "from boundfit import _core\n"
            "m = bf.Sequential([bf.layers.Dense(1, input_shape=(2,))])\n"
            "m.compile(optimizer='sgd', loss='mse')\n"
            "w = m.get_weights()\n"
            "try:\n    m.fit(np.zeros((4, 2), 'f'), np.zeros((4, 1), 'f'), verbose=0, device='cuda')\n"
            "except bf.DeviceError as e:\n    print('DeviceError', e)\n"
            "assert all((a == b).all() for a, b in zip(w, m.get_weights()))\n"
            "print(_core.cuda_report())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, BF_CUDA_LIB=sim_lib, **env))
    assert r.returncode == 0 and "DeviceError" in r.stdout and says in r.stdout, r.stdout + r.stderr
    assert "PROBLEM" in r.stdout, r.stdout


def test_a_driver_of_an_older_minor_runs_the_runtime_by_minor_version_compatibility(sim_lib):
    """NVIDIA's rule: a CUDA 13.5 runtime (what pip picks) runs on a CUDA 13.0
    driver; only an older major is refused (the case above). The fit trains
    and the report says why the runtime is accepted."""
    code = ("import numpy as np, boundfit as bf\n"
            "from boundfit import _core\n"
            "m = bf.Sequential([bf.layers.Dense(1, input_shape=(2,))])\n"
            "m.compile(optimizer='sgd', loss='mse')\n"
            "h = m.fit(np.ones((4, 2), 'f'), np.ones((4, 1), 'f'), verbose=0, device='cuda')\n"
            "assert np.isfinite(h.history['loss'][0])\n"
            "print(_core.cuda_report())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, BF_CUDA_LIB=sim_lib, BF_SIM_RUNTIME_VERSION="13050",
                                BF_SIM_DRIVER_VERSION="13000"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^ok\s+CUDA runtime\s+13\.5 .*CUDA 13\.0 by minor-version compatibility", r.stdout, re.M), \
        r.stdout
    assert "PROBLEM" not in r.stdout, r.stdout


@pytest.mark.parametrize("lib,says", [("cublas", "cuBLAS error on cuda:0 at gemm.cu"),
                                      ("cudnn", "cuDNN error on cuda:0 at conv.cu")])
def test_a_failing_cublas_or_cudnn_call_is_a_device_error_naming_the_call(sim_lib, lib, says):
    """cuda_errors.cu's cuBLAS / cuDNN paths (BF_SIM_FAIL injects the failure):
    a DeviceError with the library, file:line, call and status; the weights
    stay those before the fit, and the CPU still trains the model."""
    code = ("import numpy as np, boundfit as bf\n"
            "L = bf.layers\n"
            "m = bf.Sequential([L.Conv2D(2, (3, 3), input_shape=(6, 6, 1)), L.Flatten(), L.Dense(1)])\n"
            "m.compile(optimizer='sgd', loss='mse')\n"
            "x, y = np.ones((4, 6, 6, 1), 'f'), np.zeros((4, 1), 'f')\n"
            "w = m.get_weights()\n"
            "try:\n    m.fit(x, y, verbose=0, device='cuda')\n"
            "except bf.DeviceError as e:\n    print('DeviceError', e)\n"
            "assert all((a == b).all() for a, b in zip(w, m.get_weights()))\n"
            "assert np.isfinite(m.fit(x, y, verbose=0, device='cpu').history['loss'][0])\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, BF_CUDA_LIB=sim_lib, BF_SIM_FAIL=lib))
    assert r.returncode == 0 and "DeviceError" in r.stdout and says in r.stdout, r.stdout + r.stderr
    assert "EXECUTION_FAILED" in r.stdout, r.stdout


def _interleave_build(sim_lib):
    """csrc/cuda with the loads and stores of its sources with atomics instrumented (build.sh INTERLEAVE=1, a folder
    of its own, cached; the other objects are the default build's)"""
    return _build(os.path.join(os.path.dirname(SIM_DIR), "cuda_sim_interleave"), INTERLEAVE="1", COVERAGE="0",
                  BASE_DIR=os.path.dirname(sim_lib))


@pytest.fixture(scope="module")
def interleave_lib(sim_lib):
    return _interleave_build(sim_lib)


def test_scatter_adds_and_block_sums_keep_every_update_with_threads_switched_at_every_store(interleave_lib):
    """BF_SIM_INTERLEAVE=1 on the instrumented build: a thread yields before
    every store to device or shared memory and at every atomic, and blocks
    run four at a time, their threads taking turns, so a plain `+=` where an
    atomicAdd belongs loses the updates of the threads that ran between its
    load and its store, in its block or another (the embedding gradient's
    within blocks, the sum of squares' one per block between them: both fail,
    made so on purpose, test_cuda_mutants.py). The embedding gradient over
    repeated ids and a global-norm clip over 259 weights (two blocks) still
    give the CPU's numbers."""
    tests = ["tests/test_cuda_backend.py::"
             "test_an_embedding_gradient_over_repeated_ids_trains_to_the_cpu_weights_on_cuda",
             "tests/test_cuda_backend.py::test_gradient_clipping_and_amsgrad_train_to_the_cpu_weights_on_cuda"]
    r, counts = _pytest(interleave_lib, tests, k="embedding or global_clipnorm", BF_SIM_INTERLEAVE="1",
                        BF_SIM_NAN_FILL="1")
    assert r.returncode == 0 and counts.get("passed") == 2, r.stdout[-3000:] + r.stderr[-2000:]


def _nvcc():
    for p in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if p and os.path.exists(p):
            return p
    return None


def _nvcc_check_cmd(src, out):
    """one .cu through nvcc's front end to PTX (out.ptx, warnings as errors), then ptxas for sm_80 and sm_90"""
    ptxas = os.path.join(os.path.dirname(_nvcc()), "ptxas")
    ptx = out + ".ptx"
    cmd = [_nvcc(), "-std=c++17", "--ptx", "-arch=compute_80", "--Werror", "all-warnings", "-Xcompiler=-Wall,-Wextra",
           "-Icsrc", "-Icsrc/core", f"-I{_cuda_include()}", src, "-o", ptx]
    return ["sh", "-c", " && ".join([shlex.join(cmd)] + [shlex.join([ptxas, f"-arch={sm}", "-O0", ptx, "-o",
                                                                     f"{ptx}.{sm}.cubin"]) for sm in ("sm_80", "sm_90")])]


@pytest.mark.skipif(_nvcc() is None, reason="no nvcc")
def test_csrc_cuda_compiles_with_nvcc_and_warnings_as_errors(tmp_path):
    """Front end and PTX of every .cu with -Werror, then ptxas's machine code
    for the default architectures' GPUs (CMakeLists.txt: sm_80, sm_90): what
    g++ cannot check (device-only rules, nvcc's warnings) and what PTX alone
    passes but the real build fails (ptxas's limits: static shared memory over
    48 KiB, the parameter space). The install's CMake build does all of it
    (nvcc --Werror=all-warnings, real sm_80 and sm_90 code): a file it
    compiled, up to date, is read from its build.ninja (tests/nvcc_build.py);
    the others are compiled here, ptxas at -O0 (the limits do not depend on
    the optimization level, and it takes half the time)."""
    import nvcc_build
    srcs = sorted(f for f in os.listdir(os.path.join(ROOT, "csrc", "cuda")) if f.endswith(".cu"))
    built = nvcc_build.checked_sources()
    print(f"{len(built)} of {len(srcs)} .cu compiled with -Werror by the build ({sorted(set(built.values()))})")
    procs = []
    for f in srcs:
        if os.path.join("csrc", "cuda", f) in built:
            continue
        cmd = _nvcc_check_cmd(os.path.join("csrc", "cuda", f), str(tmp_path / f))
        procs.append((f, subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          text=True)))
        if len(procs) >= 4:
            name, p = procs.pop(0)
            out = p.communicate()[0]
            assert p.returncode == 0, f"{name}:\n{out[-3000:]}"
    for name, p in procs:
        out = p.communicate()[0]
        assert p.returncode == 0, f"{name}:\n{out[-3000:]}"
