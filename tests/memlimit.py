"""Run a child Python (or a Jupyter kernel) inside a real memory-limited
cgroup, and tell how it ended: exit code, OOM kill, peak usage.

Uses the cgroup v1 memory controller or cgroup v2, creating a child group
under this process's own group; skips (with the reason) where that is not
possible. Groups are removed afterwards."""

import contextlib
import os
import subprocess
import sys
import time
import uuid

import pytest


def _mounts():
    v1 = v2 = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fstype, _, opts = (right.split() + ["", "", ""])[:3]
            mnt = left.split()[4]
            if fstype == "cgroup" and "memory" in opts.split(","):
                v1 = mnt
            elif fstype == "cgroup2":
                v2 = mnt
    return v1, v2


def _own(controller_v1):
    with open("/proc/self/cgroup") as f:
        for line in f:
            hid, ctrls, path = line.rstrip("\n").split(":", 2)
            if controller_v1 and "memory" in ctrls.split(","):
                return path
            if not controller_v1 and hid == "0":
                return path
    return None


class MemoryCgroup:
    def __init__(self, path, v1, limit):
        self.path, self.v1, self.limit = path, v1, limit

    def _file(self, v1name, v2name):
        return os.path.join(self.path, v1name if self.v1 else v2name)

    def _join(self):
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def popen(self, args, **kw):
        return subprocess.Popen(args, preexec_fn=self._join, **kw)

    def run_python(self, code, timeout=120, env=None):
        p = self.popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=env)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        return p.returncode, out, err

    def peak_bytes(self):
        try:
            with open(self._file("memory.max_usage_in_bytes", "memory.peak")) as f:
                return int(f.read())
        except OSError:
            return None

    def oom_killed(self):
        try:
            if self.v1:
                with open(os.path.join(self.path, "memory.oom_control")) as f:
                    return any(l.startswith("oom_kill ") and int(l.split()[1]) > 0 for l in f)
            with open(os.path.join(self.path, "memory.events")) as f:
                return any(l.startswith("oom_kill ") and int(l.split()[1]) > 0 for l in f)
        except OSError:
            return False


@contextlib.contextmanager
def memory_cgroup(limit_bytes):
    v1, v2 = _mounts()
    base, own = (v1, _own(True)) if v1 else (v2, _own(False)) if v2 else (None, None)
    if base is None or own is None:
        pytest.skip("no cgroup memory controller is mounted here")
    path = os.path.join(base, own.lstrip("/"), f"boundfit-test-{uuid.uuid4().hex[:8]}")
    try:
        os.mkdir(path)
        if v1:
            with open(os.path.join(path, "memory.limit_in_bytes"), "w") as f:
                f.write(str(limit_bytes))
            try:
                with open(os.path.join(path, "memory.memsw.limit_in_bytes"), "w") as f:
                    f.write(str(limit_bytes))
            except OSError:
                pass
        else:
            with open(os.path.join(path, "memory.max"), "w") as f:
                f.write(str(limit_bytes))
    except OSError as e:
        with contextlib.suppress(OSError):
            os.rmdir(path)
        pytest.skip(f"cannot create a memory-limited cgroup here ({e})")
    try:
        yield MemoryCgroup(path, bool(v1), limit_bytes)
    finally:
        for _ in range(50):
            try:
                os.rmdir(path)
                break
            except OSError:
                time.sleep(0.1)
