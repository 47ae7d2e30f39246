"""Byte sizes: parse "512MiB" / "4GB" / 1024 into bytes, format bytes for people.
KB/MB/GB/TB are powers of 1000; KiB/MiB/GiB/TiB and the bare K/M/G/T are powers of 1024."""

import re

_UNITS = {"": 1, "b": 1,
          "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
          "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_size(value, argument="size"):
    """Bytes from an int, a float, or a string like '512MiB', '4GB', '1.5 GiB', '1e9'."""
    if isinstance(value, bool):
        raise TypeError(f"{argument} must be a number of bytes or a string like '4GiB', got {value!r}")
    if isinstance(value, (int, float)):
        n = value
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", value)
        if not m or m.group(2).lower() not in _UNITS:
            raise ValueError(f"{argument}: cannot read {value!r} as a size (examples: 1073741824, '512MiB', '4GB')")
        n = float(m.group(1)) * _UNITS[m.group(2).lower()]
    else:
        raise TypeError(f"{argument} must be a number of bytes or a string like '4GiB', got {type(value).__name__}")
    if not n >= 0 or n != n or n == float("inf"):
        raise ValueError(f"{argument} must be a non-negative size, got {value!r}")
    return int(n)


def format_bytes(n):
    n = int(n)
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"
