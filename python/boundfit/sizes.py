"""Byte sizes: parse "512MiB" / "4GB" / "1.5 GiB" / "1e9" / 1024 into bytes, and
format bytes for people ("9.31 GiB").

Units (case-insensitive), as in GNU coreutils:
  KB MB GB TB PB         powers of 1000 (SI)
  KiB MiB GiB TiB PiB    powers of 1024 (IEC); Ki Mi Gi Ti Pi (Kubernetes' spelling) too
  K M G T P              powers of 1024, as ulimit, docker, dd and most Unix tools read them
  B or nothing           bytes
A fractional result is rounded down to whole bytes. Negative, NaN, infinite or
unreadable values raise ValueError naming the argument; other types TypeError."""

from decimal import Decimal, InvalidOperation
import numbers
import re

_UNITS = {"": 1, "b": 1}
for _i, _p in enumerate("kmgtp", start=1):
    _UNITS[_p + "b"] = 1000 ** _i
    _UNITS[_p + "ib"] = _UNITS[_p + "i"] = _UNITS[_p] = 1024 ** _i

_NUMBER = re.compile(r"\s*([+-]?(?:[0-9][0-9_]*)?\.?[0-9]*(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*")
_HELP = "examples: 1073741824, '512MiB', '4GB', '1.5 GiB'"


def parse_size(value, argument="size"):
    """Bytes (int >= 0) from an int, a float, or a string like '512MiB', '4GB', '1.5 GiB', '1e9'."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise TypeError(f"{argument} must be a number of bytes or a string like '4GiB', "
                        f"got {type(value).__name__} {value!r}")
    if isinstance(value, str):
        m = _NUMBER.fullmatch(value)
        unit = m.group(2).lower() if m else None
        if m is None or unit not in _UNITS or not any(c.isdigit() for c in m.group(1)):
            raise ValueError(f"{argument}: cannot read {value!r} as a size ({_HELP})")
        try:
            n = Decimal(m.group(1).replace("_", "")) * _UNITS[unit]
        except InvalidOperation:
            raise ValueError(f"{argument}: cannot read {value!r} as a size ({_HELP})") from None
    elif isinstance(value, numbers.Integral):
        n = int(value)
    else:
        n = float(value)
        if n != n or n in (float("inf"), float("-inf")):
            raise ValueError(f"{argument} must be a finite size in bytes, got {value!r}")
    if n < 0:
        raise ValueError(f"{argument} must be a non-negative size, got {value!r}")
    return int(n)


def format_bytes(n):
    """'9.31 GiB', '512.00 MiB', '1.00 KiB', '100 B' (powers of 1024, two decimals)."""
    n = int(n)
    for unit, scale in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"
