"""A real memory-limited cgroup for tests: start child processes inside it and
tell how they ended (exit code, OOM kill, peak usage).

    with memory_cgroup(128 << 20) as cg:
        r = cg.run_python("import numpy as np; np.ones(1 << 30, np.uint8)", timeout=30)
        assert r.returncode == -9 and r.killed_by_oom       # r unpacks as (rc, out, err, oom)
        p = cg.popen([...])                                  # long-running children
        argv = cg.wrap([...])                                # for launchers we don't Popen ourselves

The group is a child of this process's own memory cgroup: cgroup v1 (the memory
controller's mount) or v2 (where the memory controller is delegated to us),
both found from /proc/self/mountinfo and /proc/self/cgroup. Swap is limited
too (memory.memsw.limit_in_bytes / memory.swap.max = 0) where the files exist.
Where no group can be made (no controller, not root, read-only) the test is
skipped with the reason. On exit every process still in the group (all started
here) is killed by pid and the group is removed."""

from collections import namedtuple
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest


class RunResult(namedtuple("RunResult", "returncode stdout stderr killed_by_oom")):
    """run_python's outcome; also .peak_bytes, .failcnt, .oom_kills (this run's), .timed_out."""


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _write(path, text):
    with open(path, "w") as f:
        f.write(str(text))


def _counter(text, key):
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key:
            return int(parts[1])
    return 0


def find_parent():
    """(version, directory) of this process's memory cgroup to create children in, or (None, reason)."""
    mounts = []
    for line in (_read("/proc/self/mountinfo") or "").splitlines():
        left, _, right = line.partition(" - ")
        left, right = left.split(), right.split()
        if len(left) >= 5 and len(right) >= 3:
            if right[0] == "cgroup" and "memory" in right[2].split(","):
                mounts.append((1, left[3], left[4]))
            elif right[0] == "cgroup2":
                mounts.append((2, left[3], left[4]))
    own = {}
    for line in (_read("/proc/self/cgroup") or "").splitlines():
        hid, ctrls, path = (line.split(":", 2) + ["", ""])[:3]
        if "memory" in ctrls.split(","):
            own[1] = path
        elif hid == "0" and ctrls == "":
            own[2] = path
    for version in (1, 2):          # v1 holds the memory controller when both are mounted (hybrid)
        for v, mroot, mpoint in mounts:
            path = own.get(version)
            if v != version or path is None or not (path + "/").startswith(mroot.rstrip("/") + "/"):
                continue
            d = os.path.join(mpoint, path[len(mroot.rstrip("/")):].strip("/"))
            if version == 2 and "memory" not in (_read(os.path.join(d, "cgroup.controllers")) or "").split():
                continue
            return version, d.rstrip("/")
    return None, "no cgroup memory controller (v1 mount, or v2 with memory delegated) is available to this process"


class MemoryCgroup:
    """A created cgroup: path, version (1 or 2), limit (bytes)."""

    def __init__(self, path, version, limit):
        self.path, self.version, self.limit = path, version, limit
        self.procs_file = os.path.join(path, "cgroup.procs")
        self._children = []

    def _file(self, v1name, v2name):
        return os.path.join(self.path, v1name if self.version == 1 else v2name)

    def _join(self):                                   # preexec_fn: runs in the child before exec
        _write(self.procs_file, os.getpid())

    def wrap(self, argv):
        """argv prefixed by a shell that moves itself into the group, then execs argv."""
        return ["/bin/sh", "-c", 'echo $$ > "$1" && shift && exec "$@"', "sh", self.procs_file] + list(argv)

    def popen(self, args, **kw):
        p = subprocess.Popen(args, preexec_fn=self._join, **kw)
        self._children.append(p)
        return p

    def run_python(self, code, timeout=60, env=None):
        """Run `sys.executable -c code` in the group: RunResult(returncode, stdout, stderr, killed_by_oom)."""
        kills = self.oom_kills()
        p = self.popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=env)
        timed_out = False
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            p.kill()
            out, err = p.communicate()
        r = RunResult(p.returncode, out, err, p.returncode == -signal.SIGKILL and self.oom_kills() > kills)
        r.peak_bytes, r.failcnt, r.oom_kills, r.timed_out = (self.peak_bytes(), self.failcnt(),
                                                             self.oom_kills() - kills, timed_out)
        return r

    def usage_bytes(self):
        v = _read(self._file("memory.usage_in_bytes", "memory.current"))
        return int(v) if v else None

    def peak_bytes(self):
        """Peak usage of the group (v2: memory.peak, kernels >= 5.19), or None."""
        v = _read(self._file("memory.max_usage_in_bytes", "memory.peak"))
        return int(v) if v else None

    def failcnt(self):
        """Times the limit was hit (v1 memory.failcnt; v2 memory.events 'max')."""
        if self.version == 1:
            v = _read(self._file("memory.failcnt", ""))
            return int(v) if v else 0
        return _counter(_read(os.path.join(self.path, "memory.events")), "max")

    def oom_kills(self):
        """Processes the OOM killer has killed in this group so far."""
        return _counter(_read(self._file("memory.oom_control", "memory.events")), "oom_kill")

    def oom_killed(self):
        return self.oom_kills() > 0

    def pids(self):
        return [int(x) for x in (_read(self.procs_file) or "").split()]

    def _kill_all(self):
        for p in self._children:
            if p.poll() is None:
                p.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=10)
        for pid in self.pids():       # grandchildren (a kernel behind a wrapper): started here too
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _sweep(parent):
    """Remove empty groups left by test processes that died without cleaning up."""
    with contextlib.suppress(OSError):
        for name in os.listdir(parent):
            parts = name.split("-")
            if name.startswith("boundfit-test-") and len(parts) == 4 and parts[2].isdigit() \
                    and not os.path.exists(f"/proc/{parts[2]}"):
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(parent, name))


def _create(parent, version, limit):
    _sweep(parent)
    path = os.path.join(parent, f"boundfit-test-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    os.mkdir(path)
    try:
        if version == 1:
            _write(os.path.join(path, "memory.limit_in_bytes"), limit)
            if os.path.exists(os.path.join(path, "memory.memsw.limit_in_bytes")):
                _write(os.path.join(path, "memory.memsw.limit_in_bytes"), limit)
        else:
            if not os.path.exists(os.path.join(path, "memory.max")):
                _write(os.path.join(parent, "cgroup.subtree_control"), "+memory")
            _write(os.path.join(path, "memory.max"), limit)
            if os.path.exists(os.path.join(path, "memory.swap.max")):
                _write(os.path.join(path, "memory.swap.max"), 0)
    except OSError:
        with contextlib.suppress(OSError):
            os.rmdir(path)
        raise
    return path


@contextlib.contextmanager
def memory_cgroup(limit_bytes):
    """A fresh child cgroup limited to limit_bytes (no swap); skips the test where impossible."""
    version, parent = find_parent()
    if version is None:
        pytest.skip(parent)
    try:
        path = _create(parent, version, int(limit_bytes))
    except OSError as e:
        pytest.skip(f"cannot create a memory-limited cgroup v{version} under {parent}: {e}")
    cg = MemoryCgroup(path, version, int(limit_bytes))
    try:
        yield cg
    finally:
        cg._kill_all()
        for _ in range(100):
            try:
                os.rmdir(path)
                break
            except FileNotFoundError:
                break
            except OSError:
                cg._kill_all()
                time.sleep(0.05)
