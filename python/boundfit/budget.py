"""Memory budgets. Host: the smaller of (cgroup limit - usage), walking up the
cgroup tree, v1 and v2, and MemAvailable, less a safety margin; overridden by
bf.set_memory_limit(host=...), the BOUNDFIT_MEMORY_LIMIT environment variable
or a per-call memory_limit. Device: free memory less a reserve, or the
override (BOUNDFIT_DEVICE_MEMORY_LIMIT / set_memory_limit(device=...))."""

import os

from .sizes import format_bytes, parse_size

_limits = {"host": None, "device": None}
_UNLIMITED = 1 << 62


def set_memory_limit(host=None, device=None):
    """Cap the memory boundfit plans against. Bytes or '4GiB'; 'auto' clears a cap."""
    for key, val in (("host", host), ("device", device)):
        if val is None:
            continue
        _limits[key] = None if val == "auto" else parse_size(val, f"{key}")


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
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


def _mounts(root="/"):
    """{controller or 'cgroup2': mount point} from /proc/self/mountinfo."""
    out = {}
    text = _read(os.path.join(root, "proc/self/mountinfo")) or ""
    for line in text.splitlines():
        parts = line.split()
        if " - " not in line:
            continue
        left, right = line.split(" - ", 1)
        fstype, _, opts = (right.split() + ["", "", ""])[:3]
        mnt = left.split()[4]
        if fstype == "cgroup2":
            out["cgroup2"] = mnt
        elif fstype == "cgroup" and "memory" in opts.split(","):
            out["memory"] = mnt
        del parts
    return out


def cgroup_headroom(root="/"):
    """(bytes the cgroup tree still allows, description) or (None, None)."""
    mounts = _mounts(root)
    text = _read(os.path.join(root, "proc/self/cgroup")) or ""
    best = None
    for line in text.splitlines():
        hid, ctrls, path = (line.split(":", 2) + ["", ""])[:3]
        if "memory" in ctrls.split(",") and "memory" in mounts:
            files, base = ("memory.limit_in_bytes", "memory.usage_in_bytes"), mounts["memory"]
        elif hid == "0" and ctrls == "" and "cgroup2" in mounts:
            files, base = ("memory.max", "memory.current"), mounts["cgroup2"]
        else:
            continue
        rel = path.strip("/")
        while True:
            d = os.path.join(root, base.lstrip("/"), rel) if rel else os.path.join(root, base.lstrip("/"))
            limit, usage = _int(_read(os.path.join(d, files[0]))), _int(_read(os.path.join(d, files[1])))
            if limit is not None and usage is not None and limit < _UNLIMITED // 2:
                room = max(limit - usage, 0)
                if best is None or room < best[0]:
                    best = (room, f"cgroup {'/' + rel} limit {format_bytes(limit)}, using {format_bytes(usage)}")
            if not rel:
                break
            rel = os.path.dirname(rel)
    return best if best else (None, None)


def mem_available(root="/"):
    for line in (_read(os.path.join(root, "proc/meminfo")) or "").splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def margin(n):
    """Safety margin kept free: 64 MiB or 5%, whichever is larger."""
    return max(64 << 20, n // 20)


def host_budget(override=None, root="/"):
    """(bytes the next run may newly use on the host, where that number came from)."""
    if override is not None:
        return parse_size(override, "memory_limit"), "memory_limit argument"
    if _limits["host"] is not None:
        return _limits["host"], "bf.set_memory_limit(host=...)"
    env = os.environ.get("BOUNDFIT_MEMORY_LIMIT")
    if env:
        return parse_size(env, "BOUNDFIT_MEMORY_LIMIT"), "BOUNDFIT_MEMORY_LIMIT"
    avail = mem_available(root)
    room, desc = cgroup_headroom(root)
    cands = [(v, d) for v, d in ((avail, "MemAvailable"), (room, desc)) if v is not None]
    if not cands:
        return 1 << 30, "no memory information found; assuming 1 GiB"
    v, d = min(cands)
    return max(v - margin(v), 0), f"{d}, less a {format_bytes(margin(v))} margin"


def raw_headroom(root="/"):
    """Bytes left before the cgroup limit or MemAvailable runs out (no margin), or None."""
    vals = [v for v in (mem_available(root), cgroup_headroom(root)[0]) if v is not None]
    return min(vals) if vals else None


def device_budget(free_bytes, override=None):
    if override is not None:
        return min(parse_size(override, "memory_limit"), free_bytes), "memory_limit argument"
    if _limits["device"] is not None:
        return min(_limits["device"], free_bytes), "bf.set_memory_limit(device=...)"
    env = os.environ.get("BOUNDFIT_DEVICE_MEMORY_LIMIT")
    if env:
        return min(parse_size(env, "BOUNDFIT_DEVICE_MEMORY_LIMIT"), free_bytes), "BOUNDFIT_DEVICE_MEMORY_LIMIT"
    reserve = max(256 << 20, free_bytes // 20)
    return max(free_bytes - reserve, 0), f"free device memory less a {format_bytes(reserve)} reserve"


def process_usage_bytes(root="/"):
    """Resident set size of this process (VmRSS), or None."""
    for line in (_read(os.path.join(root, "proc/self/status")) or "").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return None


def peak_rss_bytes(root="/"):
    for line in (_read(os.path.join(root, "proc/self/status")) or "").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return None
