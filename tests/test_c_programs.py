"""The standalone C checks, built with the system C compiler and run:
tests/c (the CPU convolution kernels against naive references) and
tests/c_cuda against the _cuda.so this install built: the loader probe (its
ABI, report, check and open, which must fail cleanly without a GPU) and the
op-by-op comparison of every CUDA op with the CPU kernel (skips, with the
reason, without a usable GPU). Each source compiles once per tree
(tests/c_objects.py caches the objects by their sources' contents)."""

import os
import shutil
import subprocess
import sys

import pytest

import boundfit
import c_objects

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CC = os.environ.get("CC", "gcc")
CUDA_SO = os.path.join(os.path.dirname(boundfit.__file__), "_cuda.so")

pytestmark = pytest.mark.skipif(shutil.which(CC) is None, reason=f"no C compiler ({CC})")


def _openblas():
    import scipy_openblas32 as s
    return s.get_include_dir(), s.get_lib_dir()


# every GEMM of the engine goes through its pool (csrc/cpu/gemm.c, par.c)
ENGINE_GEMM = ["csrc/cpu/gemm.c", "csrc/cpu/par.c"]
# Conv2D: im2col + GEMM, and the direct kernels per instruction set
CONV2D = ["csrc/cpu/conv2d.c", "csrc/cpu/conv2d_direct.c", "csrc/cpu/conv2d_direct_avx512.c",
          "csrc/cpu/conv2d_direct_avx2.c", "csrc/cpu/cpu_isa.c"]
# the CPU kernels tests/c_cuda/test_cuda_ops.c compares every CUDA op with
CUDA_OPS_CPU = [f"csrc/cpu/{f}.c" for f in ("activations", "batchnorm", "dense", "dropout", "loss", "metrics",
                                            "optimizers", "optimizers_more", "pool", "reduce", "act_more", "strided",
                                            "rescale", "augment", "conv1d", "conv2d_transpose", "prelu", "reduce_axes")] + CONV2D


def _build(name, sources, extra=()):
    """the program of these sources, the engine's GEMM and status.c (c_objects: one cached object per source)"""
    inc, lib = _openblas()
    sources = list(sources) + [f for f in ENGINE_GEMM if f not in sources] + ["csrc/core/status.c"]
    cflags = ["-O2", "-Wall", "-Wextra", "-std=c11", "-Icsrc/core", "-Icsrc/cpu", f"-I{inc}"]
    ldflags = [f"-L{lib}", "-lscipy_openblas", f"-Wl,-rpath,{lib}", "-ldl", "-lm", "-lpthread", *extra]
    return c_objects.program(name, CC, cflags, sources, ldflags)


def _run(exe, *args):
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=300)


def test_cpu_conv_kernels_pass_their_standalone_checks():
    exe = _build("test_conv_kernels", ["tests/c/test_conv_kernels.c", *CONV2D, "csrc/cpu/pool.c",
                                       "csrc/cpu/batchnorm.c", "csrc/cpu/dropout.c"])
    r = _run(exe, "--no-timing")
    assert r.returncode == 0, r.stdout[-4000:]


def test_direct_conv2d_matches_naive_on_each_isa_with_exact_workspace_and_thread_bits():
    exe = _build("test_conv_direct", ["tests/c/test_conv_direct.c", *CONV2D])
    r = _run(exe)
    assert r.returncode == 0 and " 0 FAIL" in r.stdout, r.stdout[-4000:]


def test_cpu_conv1d_and_conv2d_transpose_kernels_match_naive_loops():
    exe = _build("test_convx_kernels", ["tests/c/test_convx_kernels.c", "csrc/cpu/conv1d.c",
                                        "csrc/cpu/conv2d_transpose.c", *CONV2D])
    r = _run(exe)
    assert r.returncode == 0 and " 0 FAIL" in r.stdout, r.stdout[-4000:]


# LayerNorm's and attention's softmax row kernels per instruction set (rowops.h)
ROWOPS = ["csrc/cpu/rowops.c", "csrc/cpu/rowops_scalar.c", "csrc/cpu/rowops_avx2.c", "csrc/cpu/rowops_avx512.c",
          "csrc/cpu/cpu_isa.c"]


def test_layernorm_and_softmax_row_kernels_match_double_loops_on_each_isa():
    exe = _build("test_rowops", ["tests/c/test_rowops.c", *ROWOPS])
    r = _run(exe)
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "0 FAIL", r.stdout[-4000:]


def test_thread_pool_runs_every_task_once_and_split_gemms_give_the_same_bits():
    exe = _build("test_par_pool", ["tests/c/test_par_pool.c"])
    r = _run(exe)
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "0 FAIL", r.stdout[-4000:]


needs_cuda_module = pytest.mark.skipif(not os.path.exists(CUDA_SO), reason="this build has no CUDA backend")


@needs_cuda_module
def test_cuda_module_loads_reports_and_refuses_cleanly():
    exe = _build("dlopen_probe", ["tests/c_cuda/dlopen_probe.c"])
    r = _run(exe, CUDA_SO)
    assert r.returncode == 0, r.stdout[-4000:]
    assert "all expectations hold" in r.stdout


@needs_cuda_module
@pytest.mark.gpu
def test_every_cuda_op_matches_the_cpu_kernel():
    exe = _build("test_cuda_ops", ["tests/c_cuda/test_cuda_ops.c"] + CUDA_OPS_CPU)
    r = _run(exe, CUDA_SO)
    if r.returncode == 0 and r.stdout.startswith("SKIP"):
        pytest.skip(r.stdout.strip())
    assert r.returncode == 0, r.stdout[-6000:]
    print(r.stdout, file=sys.stderr)
