"""The BLAS probe's verified first rounds, kept between processes.

blas_runtime brings OpenBLAS's buffers up with probe rounds until one adds
nothing: two rounds, the second only to prove the first settled them (~3 s
each on two threads). The first round's growth, once a second round proved
it complete, is kept here under a key of the BLAS build, the CPU, the thread
count and the probe shapes; a later process whose first round grows as much
skips the proof. A file that cannot be read or written is only a cache
missed: the process runs the second round."""

import json
import os

_FILE = "blas_probe.json"


def _path():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "boundfit", _FILE)


def _entries():
    try:
        with open(_path()) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def load(key):
    """The verified first round's growth in bytes for this key, or None"""
    v = _entries().get(key)
    return v if isinstance(v, int) and v >= 0 else None


def save(key, first_round_bytes):
    """Keep a first round's growth that a second round proved complete"""
    if first_round_bytes is None or first_round_bytes < 0:
        return
    entries = _entries()
    entries[key] = int(first_round_bytes)
    path = _path()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(entries, f)
        os.replace(tmp, path)
    except OSError:
        pass
