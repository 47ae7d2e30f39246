"""The CUDA runtime, cuBLAS and cuDNN from NVIDIA's PyPI wheels (`pip install
"boundfit[cuda]"`), as JAX and PyTorch find them: a GPU machine needs no CUDA
toolkit. `wheel_libraries()` lists the wheels' libraries in load order (each
one's dependencies first); the loader dlopens them before _cuda.so, so its
sonames resolve to these copies. The CUDA report (`bf.diagnose()`) names the
copy of each library that was loaded. `nccl_library()` finds NCCL (the
`nvidia-nccl-cu13` wheel, else a system libnccl.so.2 the dynamic loader
finds) for data-parallel training on GPUs; it is dlopen'ed only when a
DataParallel fit runs on a CUDA device (csrc/cuda/nccl.cu)."""

import glob
import os
import shutil
import subprocess
import sys

# (wheel folder under site-packages, library name prefixes in load order)
_WHEELS = (
    ("nvidia/cu13/lib", ("libcudart.so", "libcublasLt.so", "libcublas.so")),
    ("nvidia/cuda_runtime/lib", ("libcudart.so",)),           # the CUDA 12 wheels' layout
    ("nvidia/cublas/lib", ("libcublasLt.so", "libcublas.so")),
    ("nvidia/cudnn/lib", ("libcudnn_graph.so", "libcudnn_ops.so", "libcudnn_cnn.so", "libcudnn_adv.so",
                          "libcudnn_heuristic.so", "libcudnn_engines_precompiled.so",
                          "libcudnn_engines_tensor_ir.so", "libcudnn_engines_runtime_compiled.so",
                          "libcudnn_ext.so", "libcudnn.so")),
)


def wheel_libraries(paths=None):
    """Full paths of the wheels' libraries found on `paths` (sys.path), in load order."""
    found = []
    for entry in (sys.path if paths is None else paths):
        for folder, prefixes in _WHEELS:
            lib = os.path.join(entry or ".", folder)
            if not os.path.isdir(lib):
                continue
            for prefix in prefixes:
                found += sorted(glob.glob(os.path.join(lib, prefix + ".[0-9]*")))
    first = {}
    for p in found:                      # a library on two sys.path entries: the first one wins
        first.setdefault(os.path.basename(p), p)
    return list(first.values())


# NCCL's wheel folders (nvidia-nccl-cu13 / -cu12 both install nvidia/nccl/lib; the cu13 layout kept in mind)
_NCCL_DIRS = ("nvidia/nccl/lib", "nvidia/cu13/lib")


def nccl_library(paths=None):
    """Path of libnccl.so.2: BF_NCCL_LIB, else the wheel's copy on `paths`
    (sys.path), else the system's copy on the loader's path; None when not
    found."""
    env = os.environ.get("BF_NCCL_LIB")
    if env:
        return env
    for entry in (sys.path if paths is None else paths):
        for folder in _NCCL_DIRS:
            found = sorted(glob.glob(os.path.join(entry or ".", folder, "libnccl.so.[0-9]*")))
            if found:
                return found[0]
    return _system_nccl()


def _system_nccl():
    """libnccl.so.2 where dlopen would find it: LD_LIBRARY_PATH, then ldconfig's cache."""
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if d and os.path.isfile(os.path.join(d, "libnccl.so.2")):
            return os.path.join(d, "libnccl.so.2")
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    try:
        out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if line.strip().startswith("libnccl.so.2 ") and "=>" in line:
            return line.split("=>", 1)[1].strip()
    return None

