"""bf.diagnose(): build configuration, BLAS, CPU, memory limits and the CUDA
report (driver / runtime / cuDNN versions, GPUs), with a verdict per line."""

import os
import platform

from . import _core
from .runtime import blas_runtime, budget, cuda_libs
from .sizes import format_bytes


def report():
    """The environment report `diagnose()` prints, as text."""
    info = _core.build_info()
    lines = []

    def add(label, value, ok=True):
        lines.append(f"{'ok     ' if ok else 'PROBLEM'}  {label:<22} {value}")

    add("boundfit", f"0.1.0 (CUDA backend built: {'yes' if info['cuda_built'] else 'no'})")
    add("python", f"{platform.python_version()} on {platform.machine()} {platform.system()}")
    add("compiler", info["compiler"])
    add("BLAS", f"{info['blas']} ({info['blas_threads']} threads)")
    if blas_runtime.resident_bytes():
        add("BLAS buffers", f"{format_bytes(blas_runtime.resident_bytes())} resident ({blas_runtime.note()})")
    else:
        add("BLAS buffers", "not brought up yet (the first plan does, and measures them)")
    add("CPU cores", str(os.cpu_count()))
    host, src = budget.host_budget(None)
    add("host memory budget", f"{format_bytes(host)} ({src})", host > 0)
    if info["cuda_built"]:
        wheels = cuda_libs.wheel_libraries()
        add("CUDA wheels", f"{len(wheels)} libraries found (boundfit[cuda])" if wheels else
            "none found (the system's CUDA libraries are used; pip install \"boundfit[cuda]\" brings them)")
        nccl = cuda_libs.nccl_library()
        add("NCCL", nccl or "not found (needed only by DataParallel on GPUs: pip install \"boundfit[cuda]\" "
            "brings nvidia-nccl-cu13, or set BF_NCCL_LIB)")
    out = ["boundfit diagnose", "=" * 60] + lines + ["", "CUDA", "-" * 60, _core.cuda_report().rstrip()]
    return "\n".join(out)


def diagnose(print_fn=print):
    """Print (and return) the full environment report, GPU or not."""
    text = report()
    if print_fn:
        print_fn(text)
    return text
