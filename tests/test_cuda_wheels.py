"""The CUDA backend's libraries from NVIDIA's PyPI wheels (boundfit[cuda]):
found on sys.path in load order, and loaded instead of a system toolkit's.
The loading check runs where the wheels are installed (not in CI: they weigh
about 1 GB); with root it hides the system toolkit in a mount namespace first."""

import os
import shutil
import subprocess
import sys

import pytest

from boundfit import _core
from boundfit.runtime.cuda_libs import nccl_library, wheel_libraries

CUDNN_PARTS = ["graph", "ops", "cnn", "adv", "heuristic", "engines_precompiled", "engines_tensor_ir",
               "engines_runtime_compiled", "ext"]


def _touch(root, rel):
    os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
    open(os.path.join(root, rel), "w").close()


def test_wheel_libraries_come_in_load_order_first_path_first(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    for name in ["libcublas.so.13", "libcudart.so.13", "libcublasLt.so.13", "libnvblas.so.13"]:
        _touch(a, f"nvidia/cu13/lib/{name}")
    for part in CUDNN_PARTS[::-1]:
        _touch(a, f"nvidia/cudnn/lib/libcudnn_{part}.so.9")
    _touch(a, "nvidia/cudnn/lib/libcudnn.so.9")
    _touch(b, "nvidia/cu13/lib/libcudart.so.13")          # a second copy further down sys.path
    _touch(b, "other/lib/libcudart.so.13")
    got = wheel_libraries([str(tmp_path / "none"), a, b])
    names = [os.path.basename(p) for p in got]
    assert names == (["libcudart.so.13", "libcublasLt.so.13", "libcublas.so.13"]
                     + [f"libcudnn_{p}.so.9" for p in CUDNN_PARTS] + ["libcudnn.so.9"])
    assert all(p.startswith(a) for p in got)
    assert wheel_libraries([b]) == [os.path.join(b, "nvidia/cu13/lib/libcudart.so.13")]
    assert wheel_libraries([str(tmp_path)]) == []


def test_nccl_comes_from_the_wheel_else_from_the_loader_path(tmp_path, monkeypatch):
    """BF_NCCL_LIB first, then the nvidia-nccl wheel on sys.path, then a system
    libnccl.so.2 where dlopen finds it (LD_LIBRARY_PATH here)."""
    monkeypatch.delenv("BF_NCCL_LIB", raising=False)
    wheel, system = str(tmp_path / "site"), str(tmp_path / "system")
    _touch(wheel, "nvidia/nccl/lib/libnccl.so.2")
    _touch(system, "libnccl.so.2")
    monkeypatch.setenv("LD_LIBRARY_PATH", system)
    assert nccl_library([wheel]) == os.path.join(wheel, "nvidia/nccl/lib/libnccl.so.2")
    assert nccl_library([str(tmp_path / "none")]) == os.path.join(system, "libnccl.so.2")
    monkeypatch.setenv("BF_NCCL_LIB", "/x/libnccl.so.2")
    assert nccl_library([wheel]) == "/x/libnccl.so.2"


@pytest.mark.skipif(not _core.build_info()["cuda_built"], reason="built without the CUDA backend")
def test_diagnose_names_the_nccl_library(tmp_path, monkeypatch):
    import boundfit as bf
    _touch(str(tmp_path), "libnccl.so.2")
    monkeypatch.setenv("BF_NCCL_LIB", str(tmp_path / "libnccl.so.2"))
    line = next(ln for ln in bf.diagnose(print_fn=None).splitlines() if ln[9:].startswith("NCCL "))
    assert line.startswith("ok") and line.endswith(str(tmp_path / "libnccl.so.2")), line


def _toolkit_lib_dirs():
    """Real directories of the system's libcudart / libcublas / libcudnn (ldconfig's cache)."""
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout if shutil.which("ldconfig") else ""
    dirs = set()
    for line in out.splitlines():
        if any(f"{lib}.so." in line for lib in ("libcudart", "libcublas", "libcudnn")) and "=>" in line:
            dirs.add(os.path.dirname(os.path.realpath(line.split("=>")[1].strip())))
    return sorted(dirs)


@pytest.mark.skipif(not _core.build_info()["cuda_built"], reason="built without the CUDA backend")
@pytest.mark.skipif(not wheel_libraries(), reason="NVIDIA's CUDA wheels are not installed (pip install 'boundfit[cuda]')")
def test_cuda_report_loads_the_wheels_with_the_system_toolkit_hidden(tmp_path):
    code = "import boundfit as bf; print(bf.diagnose(print_fn=None))"
    cmd = [sys.executable, "-c", code]
    hidden = _toolkit_lib_dirs()
    if hidden and os.geteuid() == 0 and shutil.which("unshare"):
        empty = str(tmp_path / "empty")
        os.makedirs(empty)
        mounts = " && ".join(f"mount --bind {empty} {d}" for d in hidden)
        probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
        if probe.returncode == 0:
            cmd = ["unshare", "-m", "sh", "-c", f"{mounts} && exec \"$0\" \"$@\"", sys.executable, "-c", code]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    wheel_dir = os.path.dirname(os.path.dirname(os.path.dirname(wheel_libraries()[0])))
    for label in ("CUDA runtime ", "cuDNN  ", "cuBLAS "):   # the report's lines, with the copy each loaded
        line = next(ln for ln in out.stdout.splitlines() if ln[9:].startswith(label))
        assert line.startswith("ok") and f"({wheel_dir}/" in line, (label, out.stdout)
