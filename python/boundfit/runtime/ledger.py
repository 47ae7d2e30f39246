"""The machine's memory ledger: what every boundfit run of this user on this
machine has reserved (host, and each device), so that runs starting together
do not each count the same free memory.

One directory per user per machine: $BOUNDFIT_LEDGER_DIR, else
$XDG_RUNTIME_DIR/boundfit-ledger, else /dev/shm (or the temp dir)
/boundfit-ledger-<uid>; mode 0700, owned by us, not a symlink (anything else:
the ledger is off, with one warning). Each reservation is a small JSON file
(pid, script, what, bytes by location, the holder's anonymous RSS when it
reserved, its cgroups) on which its process holds an flock for its lifetime:
made under a temporary name, locked, then renamed into place, so a file under
its final name is locked from the start. A reader counts only files whose
lock is held; the OS drops a dead process's lock, and the next reader removes
its file. Admission takes `ledger.lock` (flock) while it reads the others,
checks its plan and writes its reservation. BOUNDFIT_LEDGER=0 turns it off.

In use versus pending: a holder's host memory in use is what its anonymous
RSS grew by since it reserved (read from /proc/<pid>/status), at most what it
reserved; a device's is what the holder marked allocated once its arenas
exist (a GPU's free memory then shows it); the emulated device's memory is
private to each process, so none of it shows in another's reading."""

from contextlib import contextmanager
from dataclasses import dataclass, field
import fcntl
import html
import json
import os
import socket
import stat
import sys
import tempfile
import time
import warnings

from ..sizes import format_bytes
from . import budget

_SUFFIX = ".res"
_warned = set()


def enabled():
    return os.environ.get("BOUNDFIT_LEDGER", "1").strip().lower() not in ("0", "off", "false", "no")


def _candidate():
    d = os.environ.get("BOUNDFIT_LEDGER_DIR", "").strip()
    if d:
        return d
    run = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if run and os.path.isdir(run):
        return os.path.join(run, "boundfit-ledger")
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
    return os.path.join(base, f"boundfit-ledger-{os.getuid()}")


def check_directory(path):
    """None when path is a directory we own, mode 0700, not a symlink; else why not."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"cannot read it ({e.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "it is a symlink"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_uid != os.getuid():
        return f"it is owned by uid {st.st_uid}, not this user ({os.getuid()})"
    if stat.S_IMODE(st.st_mode) & 0o077:
        return f"its mode is {oct(stat.S_IMODE(st.st_mode))}, not 0o700"
    return None


def directory():
    """The ledger's directory (made if missing), or None when the ledger is off or unsafe."""
    if not enabled():
        return None
    path = _candidate()
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:
        pass
    why = check_directory(path)
    if why is None:
        return path
    if path not in _warned:
        _warned.add(path)
        warnings.warn(f"boundfit memory ledger off: {path}: {why} (set BOUNDFIT_LEDGER_DIR to a private directory, "
                      "or BOUNDFIT_LEDGER=0)", RuntimeWarning, stacklevel=3)
    return None


@contextmanager
def locked():
    """The ledger-wide lock (flock on ledger.lock) while checking and reserving; a no-op when the ledger is off."""
    d = directory()
    if d is None:
        yield
        return
    fd = os.open(os.path.join(d, "ledger.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)   # drops the lock


def _status_bytes(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def anon_rss(pid):
    """Anonymous resident memory of process pid (RssAnon, or VmRSS), or None."""
    v = _status_bytes(pid, "RssAnon")
    return v if v is not None else _status_bytes(pid, "VmRSS")


def device_key(device):
    """The ledger's name of a device: a physical GPU whatever CUDA_VISIBLE_DEVICES renumbers it to."""
    device = str(device)
    if device.startswith("cuda:"):
        visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
        k = int(device[5:])
        if k < len(visible):
            return "cuda:" + visible[k] if visible[k].isdigit() else visible[k]
    return device


def shares_free_memory(where):
    """Whether another process's allocations on `where` show in this process's free-memory reading."""
    return where == "host" or not where.startswith("emu")


def _script():
    test = os.environ.get("PYTEST_CURRENT_TEST") if "_pytest" in sys.modules else None   # not a test's child
    if test:
        return "pytest " + test.rsplit(" (", 1)[0]
    argv = [a for a in sys.argv if a] or ["python"]
    name = "python -c" if argv[0] == "-c" else os.path.basename(argv[0])
    if name == "ipykernel_launcher.py":
        conn = next((a for a in argv[1:] if a.endswith(".json")), "")
        return "jupyter kernel " + os.path.basename(conn)
    return " ".join([name] + argv[1:])[:120]


@dataclass
class Record:
    """One reservation on the ledger (or a run waiting for memory: state 'waiting', `bytes` what it needs)."""
    pid: int
    script: str
    what: str
    state: str
    bytes: dict
    allocated: dict = field(default_factory=dict)
    baseline_rss: int = 0
    started: float = 0.0
    cgroups: list = field(default_factory=list)
    host: str = ""
    path: str = ""

    def in_use(self, where):
        """Of its reservation on `where`, what the holder already holds (so others' readings show it)."""
        n = int(self.bytes.get(where, 0))
        if where == "host":
            rss = anon_rss(self.pid)
            return 0 if rss is None else min(max(rss - self.baseline_rss, 0), n)
        return min(int(self.allocated.get(where, 0)), n) if shares_free_memory(where) else 0

    def pending(self, where):
        """Reserved on `where` and not yet in use: what others' readings do not show yet."""
        return 0 if self.state != "running" else int(self.bytes.get(where, 0)) - self.in_use(where)

    def describe(self, where=None):
        locs = [where] if where else [w for w in self.bytes if self.bytes[w]]
        parts = ", ".join(f"{format_bytes(self.bytes.get(w, 0))} on {w}" for w in locs)
        verb = "waiting for" if self.state == "waiting" else "reserved"
        return f"pid {self.pid} ({self.script}, {self.what}) {verb} {parts}"

    def __str__(self):
        return self.describe()


class Ledger(list):
    """The reservations on this machine (Records); str() is a table, _repr_html_ one for notebooks."""

    def __init__(self, records, path):
        super().__init__(records)
        self.path = path

    def _rows(self):
        now = time.time()
        rows = []
        for r in self:
            for w, n in r.bytes.items():
                use = "-" if r.state != "running" else format_bytes(r.in_use(w))
                rows.append((str(r.pid), r.script, r.what, r.state, w, format_bytes(n), use,
                             f"{max(now - r.started, 0):.0f} s"))
        return rows

    _HEAD = ("pid", "script", "run", "state", "where", "bytes", "in use", "for")

    def __str__(self):
        if self.path is None:
            return "boundfit memory ledger: off (BOUNDFIT_LEDGER=0, or its directory is unsafe)"
        rows = [self._HEAD] + self._rows()
        w = [max(len(r[i]) for r in rows) for i in range(len(self._HEAD))]
        lines = [f"boundfit memory ledger {self.path}: {len(self)} run(s)"]
        lines += ["  ".join(c.ljust(w[i]) if i < 5 else c.rjust(w[i]) for i, c in enumerate(r)).rstrip() for r in rows]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self):
        cell = "<td style='padding:1px 8px'>{}</td>"
        head = "".join(f"<th>{h}</th>" for h in self._HEAD)
        body = "".join("<tr>" + "".join(cell.format(html.escape(c)) for c in r) + "</tr>" for r in self._rows())
        return (f"<div class='boundfit-ledger'><b>boundfit memory ledger</b> {html.escape(str(self.path))}: "
                f"{len(self)} run(s)<table><tr>{head}</tr>{body}</table></div>")


def _load(path):
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    return Record(int(d["pid"]), str(d["script"]), str(d["what"]), str(d["state"]),
                  {str(k): int(v) for k, v in d["bytes"].items()},
                  {str(k): int(v) for k, v in d.get("allocated", {}).items()}, int(d.get("baseline_rss", 0)),
                  float(d.get("started", 0)), list(d.get("cgroups", [])), str(d.get("host", "")), path)


def _live(path):
    """The Record of a reservation file whose lock is held, else None (a stale file is removed)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                return _load(path)
            except (OSError, ValueError, KeyError, TypeError):
                return None
        try:   # nobody holds it: its process is gone (unless the holder has just renamed a new file over it)
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                os.unlink(path)
        except OSError:
            pass
        return None
    finally:
        os.close(fd)


def ledger(include_self=True):
    """The live reservations on this machine, oldest first (a Ledger: a list of Records)."""
    d = directory()
    if d is None:
        return Ledger([], None)
    try:
        names = sorted(n for n in os.listdir(d) if n.endswith(_SUFFIX))
    except OSError:
        names = []
    recs = [r for r in (_live(os.path.join(d, n)) for n in names) if r is not None]
    if not include_self:
        recs = [r for r in recs if r.pid != os.getpid()]
    return Ledger(sorted(recs, key=lambda r: r.started), d)


class Hold:
    """This process's reservation: its file, locked until release() (or the process's end)."""

    def __init__(self, d, what, nbytes, state="running"):
        self.dir, self.fd, self.path = d, None, None
        self.data = {"pid": os.getpid(), "script": _script(), "what": what, "state": state,
                     "bytes": {k: int(v) for k, v in nbytes.items()}, "allocated": {},
                     "baseline_rss": budget.anon_rss_bytes() or 0, "started": time.time(),
                     "cgroups": [p for _, dirs in budget.cgroup_dirs() for p in dirs], "host": socket.gethostname()}
        self._write()

    def _write(self):
        """A new locked file with the data, renamed over the old one, whose lock is then dropped."""
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.dir)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, json.dumps(self.data).encode())
            path = self.path or os.path.join(self.dir, f"{time.time_ns():020d}-{os.getpid()}{_SUFFIX}")
            os.rename(tmp, path)
        except BaseException:
            os.close(fd)
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        old, self.fd, self.path = self.fd, fd, path
        if old is not None:
            os.close(old)

    def update(self, nbytes=None, state=None, allocated=None):
        if self.fd is None:
            return
        if nbytes is not None:
            self.data["bytes"] = {k: int(v) for k, v in nbytes.items()}
        if state is not None:
            self.data["state"] = state
            if state == "running":
                self.data["baseline_rss"], self.data["started"] = budget.anon_rss_bytes() or 0, time.time()
        if allocated is not None:
            self.data["allocated"] = {k: int(v) for k, v in allocated.items()}
        self._write()

    def release(self):
        if self.fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None


def reserve(what, nbytes, state="running"):
    """A Hold of nbytes ({location: bytes}) on the ledger, or None when the ledger is off."""
    d = directory()
    return None if d is None else Hold(d, what, nbytes, state)
