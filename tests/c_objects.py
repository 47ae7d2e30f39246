"""The standalone C checks' programs (tests/c, tests/c_cuda), built as the
one-command build did (same compiler, flags, sources, libraries) but one
object per source, cached under build/c_checks by the compile command and the
contents of the source and of every local header it includes: each source
compiles once per tree (the direct-convolution kernels were compiled by five
tests), and a program links from the objects. Workers of a parallel run
share the cache (atomic renames; a file lock per object)."""

import fcntl
import hashlib
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, "build", "c_checks")
INCLUDE_DIRS = ["csrc/core", "csrc/cpu"]
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def _local_headers(src):
    """the headers of this tree that src includes, directly or through one another (quoted includes found in the
    source's folder or the -I folders, as the compiler looks them up)"""
    seen, todo = [], [src]
    while todo:
        f = todo.pop()
        for name in _INCLUDE.findall(open(os.path.join(ROOT, f), errors="replace").read()):
            for d in [os.path.dirname(f)] + INCLUDE_DIRS:
                h = os.path.normpath(os.path.join(d, name))
                if os.path.exists(os.path.join(ROOT, h)):
                    if h not in seen:
                        seen.append(h)
                        todo.append(h)
                    break
    return sorted(seen)


def _digest(parts, files):
    h = hashlib.sha256("\0".join(parts).encode())
    for f in files:
        h.update(f.encode() + b"\0" + open(os.path.join(ROOT, f), "rb").read())
    return h.hexdigest()[:20]


def _locked_build(path, build):
    """build(tmp) makes path's file unless it exists; one process builds it, the others wait and reuse it"""
    if os.path.exists(path):
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(path):
            tmp = f"{path}.{os.getpid()}.tmp"
            build(tmp)
            os.replace(tmp, path)


def _run(cmd):
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, " ".join(cmd) + "\n" + r.stderr[-6000:]


def program(name, cc, cflags, sources, ldflags):
    """the path of the program `cc cflags sources ldflags` builds, from cached objects"""
    objs = []
    for src in sources:
        key = _digest([cc, *cflags, src], [src, *_local_headers(src)])
        obj = os.path.join(CACHE, "obj", f"{os.path.basename(src)}-{key}.o")
        _locked_build(obj, lambda tmp, src=src: _run([cc, *cflags, "-c", src, "-o", tmp]))
        objs.append(obj)
    exe = os.path.join(CACHE, "bin", f"{name}-{_digest([cc, *objs, *ldflags], [])}")
    _locked_build(exe, lambda tmp: _run([cc, *objs, *ldflags, "-o", tmp]))
    return exe
