"""Memory budgets: how many more bytes a run may use before something kills it.

Host, by default: the smaller of
  - the cgroup headroom, limit minus working set, at every level from this
    process's cgroup up to the mount's root (a parent's limit applies too);
    v1: memory.limit_in_bytes / memory.usage_in_bytes; v2: the smaller of
    memory.max and memory.high ("max" = none) / memory.current; the working
    set is usage less inactive_file from memory.stat (clean page cache the
    kernel drops before it kills anyone);
  - MemAvailable from /proc/meminfo,
less a safety margin of max(64 MiB, 5%). Mounts come from /proc/self/mountinfo
(none is hard-coded); without cgroups MemAvailable alone counts.
Device, by default: free device memory less a reserve of max(256 MiB, 5%).

Overrides, strongest first: the per-call memory_limit argument,
set_memory_limit(host=..., device=...), and the environment variables
BOUNDFIT_MEMORY_LIMIT / BOUNDFIT_DEVICE_MEMORY_LIMIT. "auto" means "detect".
An override is a cap: it never exceeds what the machine really has left
(host: the headroom without margin; device: the free memory).

Every reader takes root= (a fake / in tests) and never raises on a missing or
unreadable file; it returns None instead."""

from collections import namedtuple
import os

from ..sizes import format_bytes, parse_size

_UNLIMITED = 1 << 62            # v1 writes 2^63 - 4096 for "no limit"; v2 writes "max"
_limits = {"host": None, "device": None}


class CgroupReading(namedtuple("CgroupReading", "path version limit usage working_set")):
    """One limited cgroup level: its directory, v1 or v2, limit, usage and working set in bytes."""
    __slots__ = ()

    @property
    def headroom(self):
        return max(self.limit - self.working_set, 0)


def set_memory_limit(host=None, device=None):
    """Cap the memory boundfit plans against: bytes or strings like '4GiB'.
    None leaves a cap unchanged, 'auto' clears it. Returns the caps now in force."""
    new = dict(_limits)
    for key, val in (("host", host), ("device", device)):
        if isinstance(val, str) and val.strip().lower() == "auto":
            new[key] = None
        elif val is not None:
            new[key] = parse_size(val, key)
    _limits.update(new)
    return dict(_limits)


# ---- readers ---------------------------------------------------------------

def _path(root, path):
    return os.path.join(root, path.lstrip("/"))


def _read(path):
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read().strip()
    except (OSError, ValueError):
        return None


def _int(text):
    if text is None:
        return None
    if text == "max":
        return _UNLIMITED
    try:
        return int(text)
    except ValueError:
        return None


def _kv(text, key):
    """The value of `key` in 'key value [kB]' lines (memory.stat, /proc/meminfo, status), in bytes, or None."""
    start = 0
    text = text or ""
    while True:
        i = text.find(key, start)
        if i < 0:
            return None
        start = i + len(key)
        if (i == 0 or text[i - 1] == "\n") and text[start:start + 1] in (":", " "):
            parts = text[start:].split("\n", 1)[0].replace(":", " ").split()
            if parts and parts[0].isdigit():
                return int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
            return None


def _unescape(field):
    """mountinfo escapes space, tab, newline and backslash as \\ooo."""
    for code in ("040", "011", "012", "134"):
        field = field.replace("\\" + code, chr(int(code, 8)))
    return field


def cgroup_mounts(root="/"):
    """[(version 1 or 2, mount root, mount point)] of memory-capable cgroup mounts."""
    out = []
    for line in (_read(_path(root, "/proc/self/mountinfo")) or "").splitlines():
        left, sep, right = line.partition(" - ")
        left, right = left.split(), right.split()
        if not sep or len(left) < 5 or len(right) < 3:
            continue
        if right[0] == "cgroup2":
            out.append((2, _unescape(left[3]), _unescape(left[4])))
        elif right[0] == "cgroup" and "memory" in right[2].split(","):
            out.append((1, _unescape(left[3]), _unescape(left[4])))
    return out


_DIRS_CACHE = {}  # this process's cgroup file's text -> cgroup_dirs("/") (mountinfo is read once per membership)


def cgroup_dirs(root="/"):
    """[(version, [directory of this process's cgroup, its parent, ..., the mount point])]."""
    membership = _read(_path(root, "/proc/self/cgroup")) or ""
    if root == "/" and membership in _DIRS_CACHE:
        return _DIRS_CACHE[membership]
    mounts = cgroup_mounts(root)
    out = []
    for line in membership.splitlines():
        hid, ctrls, cpath = (line.split(":", 2) + ["", ""])[:3]
        version = 1 if "memory" in ctrls.split(",") else 2 if hid == "0" and ctrls == "" else None
        if version is None:
            continue
        # the mount whose root is the longest prefix of our path (containers mount a sub-tree)
        best = None
        for v, mroot, mpoint in mounts:
            prefix = mroot.rstrip("/") + "/"
            if v == version and (cpath + "/").startswith(prefix) and (best is None or len(mroot) > len(best[0])):
                best = (mroot, mpoint)
        if best is None:       # a namespaced path outside every mount root: the mount is our group
            best = next(((mroot, mpoint) for v, mroot, mpoint in mounts if v == version), None)
            if best is None:
                continue
            cpath = best[0]
        rel = cpath[len(best[0].rstrip("/")):].strip("/")
        dirs = []
        while True:
            dirs.append(_path(root, os.path.join(best[1], rel) if rel else best[1]))
            if not rel:
                break
            rel = os.path.dirname(rel)
        out.append((version, dirs))
    if root == "/":
        _DIRS_CACHE[membership] = out
    return out


def _reading(version, d):
    if version == 1:
        limit = _int(_read(os.path.join(d, "memory.limit_in_bytes")))
    else:
        limits = [_int(_read(os.path.join(d, f))) for f in ("memory.max", "memory.high")]
        limits = [x for x in limits if x is not None]
        limit = min(limits) if limits else None
    if limit is None or limit >= _UNLIMITED // 2:   # no limit here: usage and stat are not read
        return None
    usage = _int(_read(os.path.join(d, "memory.usage_in_bytes" if version == 1 else "memory.current")))
    if usage is None:
        return None
    stat = _read(os.path.join(d, "memory.stat"))
    inactive = _kv(stat, "total_inactive_file" if version == 1 else "inactive_file") or 0
    return CgroupReading(d, version, limit, usage, max(usage - min(inactive, usage), 0))


def cgroup_limits(root="/"):
    """CgroupReading for every limited cgroup on this process's path, tightest first."""
    found = [r for version, dirs in cgroup_dirs(root) for d in dirs for r in [_reading(version, d)] if r]
    return sorted(found, key=lambda r: r.headroom)


def cgroup_headroom(root="/"):
    """(bytes the cgroup tree still allows, description), or (None, None) without a limit."""
    lims = cgroup_limits(root)
    if not lims:
        return None, None
    r = lims[0]
    return r.headroom, (f"cgroup v{r.version} {r.path} limit {format_bytes(r.limit)}, "
                        f"working set {format_bytes(r.working_set)}")


def cgroup_usage(root="/"):
    """The tightest limited cgroup's CgroupReading (limit, usage, working set), or None.
    For the watchdog: cheap, a few small files."""
    lims = cgroup_limits(root)
    return lims[0] if lims else None


def mem_available(root="/"):
    """MemAvailable from /proc/meminfo (MemFree on kernels before 3.14), or None."""
    info = _read(_path(root, "/proc/meminfo"))
    avail = _kv(info, "MemAvailable")
    return avail if avail is not None else _kv(info, "MemFree")


def _status(key, root):
    return _kv(_read(_path(root, "/proc/self/status")), key)


def process_usage_bytes(root="/"):
    """Resident set size of this process now (VmRSS), or None."""
    return _status("VmRSS", root)


def anon_rss_bytes(root="/"):
    """Anonymous resident memory of this process (RssAnon: the heap, the arenas; not the pages of
    memory-mapped files, which are reclaimable page cache), or VmRSS where the kernel does not say."""
    anon = _status("RssAnon", root)
    return anon if anon is not None else _status("VmRSS", root)


def peak_rss_bytes(root="/"):
    """Peak resident set size of this process (VmHWM), or None."""
    return _status("VmHWM", root)


def raw_headroom(root="/"):
    """Bytes left before the cgroup limit or MemAvailable runs out (no margin), or None."""
    vals = [v for v in (mem_available(root), cgroup_headroom(root)[0]) if v is not None]
    return min(vals) if vals else None


def margin(n):
    """Safety margin kept free on the host: 64 MiB or 5%, whichever is larger."""
    return max(64 << 20, int(n) // 20)


def watchdog_floor(n):
    """The watchdog stops a run when less than this is left before the limit
    (n: usage plus what is left) and memory outside the plan has grown."""
    return margin(n) // 2


def watchdog_tolerance(budget_bytes):
    """Bytes batch_size='auto' / micro_batch='auto' keep free below the budget,
    so that the watchdog tolerates as much again of memory outside the plan."""
    return margin(budget_bytes) // 2


def device_reserve(free_bytes):
    """Device memory kept free for the CUDA context, cuBLAS/cuDNN handles: 256 MiB or 5%."""
    return max(256 << 20, int(free_bytes) // 20)


# ---- budgets ---------------------------------------------------------------

def _override(override, key, env, argument="memory_limit"):
    """(bytes, source) of the strongest override in force, or (None, None)."""
    if override is not None and not (isinstance(override, str) and override.strip().lower() == "auto"):
        return parse_size(override, argument), f"{argument}={override!r}"
    if _limits[key] is not None:
        return _limits[key], f"bf.set_memory_limit({key}=...)"
    text = os.environ.get(env, "").strip()
    if text and text.lower() != "auto":
        return parse_size(text, env), f"{env}={text}"
    return None, None


def host_budget(override=None, root="/"):
    """(bytes the next run may newly use on the host, where that number came from)."""
    cap, src = _override(override, "host", "BOUNDFIT_MEMORY_LIMIT")
    avail = mem_available(root)
    room, desc = cgroup_headroom(root)
    cands = [(v, d) for v, d in ((room, desc), (avail, "MemAvailable")) if v is not None]
    if cap is not None:
        have = min(cands)[0] if cands else None
        if have is not None and cap > have:
            return have, f"{src}, capped at the {format_bytes(have)} left ({min(cands)[1]})"
        return cap, src
    if not cands:
        return 1 << 30, "no memory information found; assuming 1 GiB"
    v, d = min(cands)
    return max(v - margin(v), 0), f"{d} {format_bytes(v)} free, less a {format_bytes(margin(v))} margin"


def device_budget(free_bytes, override=None):
    """(bytes a run may use on the device, where that number came from); free_bytes from cudaMemGetInfo."""
    free_bytes = int(free_bytes)
    cap, src = _override(override, "device", "BOUNDFIT_DEVICE_MEMORY_LIMIT")
    if cap is not None:
        if cap > free_bytes:
            return free_bytes, f"{src}, capped at the {format_bytes(free_bytes)} free"
        return cap, src
    reserve = device_reserve(free_bytes)
    return max(free_bytes - reserve, 0), (f"{format_bytes(free_bytes)} free device memory, "
                                          f"less a {format_bytes(reserve)} reserve")
