"""What the install's CMake build (pip's build/{wheel_tag}, pyproject.toml's
build-dir, or any CMake build folder under build/ of this tree) already proved
of csrc/cuda: the .cu files it compiled with nvcc's warnings as errors
(CMakeLists.txt BOUNDFIT_CUDA_WERROR) for real sm_80 and sm_90 code, whose
object is newer than the source and every header of csrc/cuda and csrc/core,
into a _cuda.so newer than the objects. A compile that failed left no object,
so each such file passed what tests/test_cuda_sim.py's nvcc check asks (front
end and PTX with -Werror, ptxas for sm_80 and sm_90); the check compiles only
the others itself."""

import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# what each .cu's compile must have had (the check's own flags: test_cuda_sim._nvcc_check_cmd)
NEEDED = ("--Werror=all-warnings", "-Xcompiler=-Wall,-Wextra", "code=[sm_80]", "code=[sm_90]")


def _newest_header(root):
    hdrs = [p for d in ("csrc/cuda", "csrc/core") for ext in ("*.h", "*.cuh")
            for p in glob.glob(os.path.join(root, d, ext))]
    return max((os.path.getmtime(p) for p in hdrs), default=0.0)


def _compiles(build_dir):
    """{source path: (object path, flags)} of the CUDA compiles in build_dir/build.ninja"""
    text = open(os.path.join(build_dir, "build.ninja")).read()
    out = {}
    for m in re.finditer(r"^build (\S+\.cu\.o): CUDA_COMPILER\S* (\S+\.cu)\b.*\n((?:  .*\n)*)", text, re.M):
        flags = re.search(r"^  FLAGS = (.*)$", m.group(3), re.M)
        out[os.path.realpath(m.group(2))] = (os.path.join(build_dir, m.group(1)), flags.group(1) if flags else "")
    return out


def _build_dirs(root):
    for cache in glob.glob(os.path.join(root, "build", "*", "CMakeCache.txt")):
        d = os.path.dirname(cache)
        home = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", open(cache).read(), re.M)
        if home and os.path.realpath(home.group(1)) == os.path.realpath(root) and \
                os.path.exists(os.path.join(d, "build.ninja")) and os.path.exists(os.path.join(d, "_cuda.so")):
            yield d


def checked_sources(root=ROOT):
    """{csrc/cuda/x.cu: the build folder whose up-to-date object proves it} over every CMake build of the tree"""
    done, newest_hdr = {}, _newest_header(root)
    for d in _build_dirs(root):
        lib_time = os.path.getmtime(os.path.join(d, "_cuda.so"))
        for src, (obj, flags) in _compiles(d).items():
            rel = os.path.relpath(src, root)
            if not rel.startswith("csrc/cuda/") or not os.path.exists(src) or not os.path.exists(obj):
                continue
            t = os.path.getmtime(obj)
            if all(f in flags for f in NEEDED) and t > os.path.getmtime(src) and t > newest_hdr and t <= lib_time:
                done[rel] = os.path.relpath(d, root)
    return done
