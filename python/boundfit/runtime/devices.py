"""Device names: 'cpu' (default), 'cuda', 'cuda:N'; bf.set_default_device.

'emu' is the CPU's kernels behind a device's interface: separate memory
(4 GiB, reported like cudaMemGetInfo), weight copies both ways, double-
buffered batch uploads, a run workspace. It exists so that the device path of
the engine (plans, budgets, weight synchronisation) is tested on machines
without a GPU; it is no faster than 'cpu'."""

import contextlib

_default = {"device": None}


def set_default_device(device):
    """Device used when fit / evaluate / predict get device=None ('cpu' unless set)."""
    _default["device"] = None if device is None else _check(device)


def _check(device):
    if not isinstance(device, str):
        raise TypeError(f"device must be a string like 'cpu' or 'cuda:0', got {device!r}")
    d = device.strip().lower()
    if d == "gpu" or d.startswith("gpu:"):   # Keras's names: "gpu:0", "cpu:0"
        d = "cuda" + d[3:]
    if d == "cpu:0":
        d = "cpu"
    if d == "cpu" or d == "cuda" or (d.startswith("cuda:") and d[5:].isdigit()):
        return "cuda:0" if d == "cuda" else d
    if d in ("emu", "emu:0"):
        return "emu:0"
    raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")


@contextlib.contextmanager
def device(device_name):
    """keras.device: fit / evaluate / predict inside the `with` block run on device_name ("cpu", "cpu:0", "gpu:0",
    "cuda:1", ...) unless given device=."""
    prev = _default["device"]
    set_default_device(device_name)
    try:
        yield
    finally:
        _default["device"] = prev


def resolve(device):
    if device is None:
        return _default["device"] or "cpu"
    return _check(device)
