"""Atomic saves: a file is written whole into a temporary file beside it,
fsynced, then renamed over it, so a failure (an exception, a full disk, a
killed process) leaves the previous file as it was.

As Keras's open(path, "wb") does, a save through a symlink replaces the
link's target (the link stays) and keeps the target's permission bits; a
new file gets 0666 less the umask. The temporary file is named
.<name>.bf<space>-<boot>-<pid>-<random>.tmp: <space> says which host and PID
namespace made it, <boot> which boot of that host. Each save removes the
temporary files of its folder that a dead process of this space left (an
earlier boot's, or one whose pid is gone); never one of a live process, nor
one made on another host or in another PID namespace. A write error that
the writer swallowed or wrapped (h5py turns EFBIG into SystemError) is
raised as the OSError it was."""

import errno
import hashlib
import io
import os
import re
import secrets
import socket
import stat


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def _pid_namespace():
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _tag(*parts):
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8]


def _marks():
    """(space, boot) of this process: computed per save, since a fork may enter another PID namespace."""
    return (_tag(socket.gethostname(), _read("/etc/machine-id"), _pid_namespace()),
            _tag(_read("/proc/sys/kernel/random/boot_id")))


_TEMP = re.compile(r"\..+\.bf([0-9a-f]{8})-([0-9a-f]{8})-([0-9]+)-[0-9a-f]{8}\.tmp")


def _alive(pid):
    try:
        os.kill(pid, 0)
    except PermissionError:   # another user's process
        return True
    except (ProcessLookupError, OverflowError):   # gone; a pid no process can have
        return False
    return True


def remove_stale_temps(folder, marks=None):
    """Remove the temporary files of saves in folder whose process died (see the header); [names removed]."""
    space, boot = marks or _marks()
    gone = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return gone
    for e in entries:
        m = _TEMP.fullmatch(e.name)
        if m is None or m.group(1) != space or not e.is_file(follow_symlinks=False):
            continue
        if m.group(2) == boot and _alive(int(m.group(3))):
            continue
        try:
            os.unlink(e.path)
            gone.append(e.name)
        except OSError:   # another save removed it first, or the folder is read-only
            pass
    return gone


def _target(path):
    """The file a save of path replaces: a symlink's target, resolved through every link."""
    path = os.path.abspath(os.fspath(path))
    real = os.path.realpath(path)
    if os.path.islink(real):
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
    return real


def _mode(target):
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


class _Recorder(io.FileIO):
    """The temporary file's raw writes, keeping the first OSError a writer may swallow or wrap."""
    error = None

    def write(self, b):
        try:
            return super().write(b)
        except OSError as e:
            if self.error is None:
                self.error = e
            raise

    def raise_recorded(self):
        if self.error is not None:
            raise self.error from None


def atomic_write(path, write):
    """write(f) into a temporary file beside path (its target, for a symlink), fsync, then rename over it.
    If write raises, path is left as it was, the temporary file removed, and a write error raised as its
    OSError."""
    target = _target(path)
    folder = os.path.dirname(target)
    marks = _marks()
    remove_stale_temps(folder, marks)
    mode = _mode(target)
    tmp = os.path.join(folder, f".{os.path.basename(target)}.bf{marks[0]}-{marks[1]}-{os.getpid()}-"
                               f"{secrets.token_hex(4)}.tmp")
    raw = _Recorder(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), "wb")
    f = io.BufferedWriter(raw)
    try:
        try:
            write(f)
            f.flush()
        except Exception:
            raw.raise_recorded()
            raise
        raw.raise_recorded()
        if mode is not None:
            os.fchmod(raw.fileno(), mode)
        os.fsync(raw.fileno())
        f.close()
        os.replace(tmp, target)
    except BaseException:
        try:
            f.close()
        except OSError:
            pass
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # the rename itself survives a crash once the folder is synced
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
