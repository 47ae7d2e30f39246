"""Loader fuzz: random mutations of valid `.keras`, `.weights.h5` and `.npz`
files (byte flips, truncation, member swaps and drops, zip size and method
field edits, HDF5 dataset shape / dtype / storage / link edits and attribute
edits, .npy members of other shapes and dtypes). Every outcome is a load that
works or one of the documented exceptions (saving/bounded_read.py: ValueError
for refused or malformed content, OSError for a file or HDF5 structure that
cannot be read), never another type and never an allocation past an
address-space bound; a refused load_weights leaves the weights unchanged.
Hypothesis, derandomized: the same examples on every run, a few seconds
(BF_FUZZ_EXAMPLES=2000 for a deeper run).
(Edits of config.json's own content are the config validator's fuzz.)"""

import io
import os
import zipfile
import zlib

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import boundfit as bf
from boundfit import layers as L

from hostile_files import MiB, address_space_limit, peak_rss, reset_peak_rss, write_zip, zip_members

FUZZ = settings(max_examples=int(os.environ.get("BF_FUZZ_EXAMPLES", 40)), deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DOCUMENTED = (ValueError, OSError)
HEADROOM, PEAK_RSS = 1024 * MiB, 128 * MiB   # the base files' models need a few KiB


def _sequential():
    m = bf.Sequential([L.Dense(4, input_shape=(3,)), L.BatchNormalization(), L.Dense(2)])
    m.compile(optimizer="adam", loss="mse")
    n = m._engine.n_trainable   # optimizer state as after some steps, without running one
    m._engine.restore_optimizer_state(3, [np.full(n, 0.25, np.float32), np.full(n, 0.5, np.float32)])
    return m


def _functional():
    i = L.Input((3,))
    m = bf.Model(i, L.Dense(2)(L.Dense(4)(i)))
    m.compile(optimizer="adam", loss="mse")
    return m


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    _sequential().save(d / "m.keras")
    _sequential().save_weights(d / "m.weights.h5")
    _functional().save(d / "g.npz")
    assert "meta.npy" in zipfile.ZipFile(d / "g.npz").namelist()
    return Base(d, {k: (d / k).read_bytes() for k in ("m.keras", "m.weights.h5", "g.npz")})


class Base(tuple):
    """(folder, {name: bytes}) of the valid files, shown by its folder in a failure report."""

    def __new__(cls, folder, files):
        return super().__new__(cls, (folder, files))

    def __repr__(self):
        return f"Base({self[0]})"


# ---- mutations ----

def _flip(data, draw):
    b = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        b[draw(st.integers(0, len(b) - 1))] ^= draw(st.integers(1, 255))
    return bytes(b)


def _truncate(data, draw):
    return data[:draw(st.integers(0, len(data) - 1))]


def _rezip(path, members):
    write_zip(path, members)
    return path.read_bytes()


def _zip_edit(path, draw):
    """A member swap, drop or duplicate, or an edit of a declared size, CRC or compression method."""
    ms = [list(m) for m in zip_members(path)]
    names = [m[0] for m in ms if m[0] != "config.json"]
    i = draw(st.sampled_from(range(len(ms))))
    what = draw(st.sampled_from(["swap", "drop", "duplicate", "size", "crc", "method"]))
    if what == "swap":
        j = [m[0] for m in ms].index(draw(st.sampled_from(names)))
        k = [m[0] for m in ms].index(draw(st.sampled_from(names)))
        ms[j][1:], ms[k][1:] = ms[k][1:], ms[j][1:]
    elif what == "drop":
        del ms[i]
    elif what == "duplicate":
        ms.append(list(ms[i]))
    elif what == "size":
        ms[i][3] = draw(st.sampled_from([0, 1, ms[i][3] - 1, ms[i][3] + 1, 1 << 31, (1 << 32) + 5, 1 << 40]))
    elif what == "crc":
        ms[i][4] ^= draw(st.integers(1, 0xFFFFFFFF))
    else:
        ms[i][2] = draw(st.sampled_from([0, 8, 12, 14, 99]))
    return _rezip(path, [tuple(m) for m in ms])


_DTYPES = ["f2", "f4", ">f8", "i8", "u1", "?", "c8", "S4", "i4,f4", "(2,3)f4", "vlen-str"]
_SHAPES = [(), (0,), (1,), (3,), (4,), (3, 4), (4, 3), (4, 2), (2,), (1 << 31,), (1 << 20, 1 << 20), (3, 4, 1)]


def _dataset(g, name, draw, shape=None):
    """A dataset of a drawn dtype, shape and storage (contiguous, gzip chunks, nothing stored) at g[name]."""
    shape = shape if shape is not None else draw(st.sampled_from(_SHAPES))
    kind = draw(st.sampled_from(_DTYPES))
    dtype = h5py.string_dtype() if kind == "vlen-str" else np.dtype(kind)
    size = int(np.prod(shape, dtype=np.int64))
    store = draw(st.sampled_from(["data", "gzip", "empty"])) if size <= 64 else "empty"
    if store == "empty":
        chunks = tuple(min(s, 256) for s in shape) if shape and all(shape) else None
        g.create_dataset(name, shape=shape, dtype=dtype, chunks=chunks, compression="gzip" if chunks else None)
        return
    data = np.arange(size).reshape(shape).astype(dtype) if kind != "vlen-str" else \
        np.array(["x" * k for k in range(size)], dtype=object).reshape(shape)
    g.create_dataset(name, data=data, **({"compression": "gzip", "chunks": True} if store == "gzip" and shape else {}))


def _h5_edit(h5_bytes, draw, tmp):
    """h5_bytes with one dataset, group or attribute edited through h5py."""
    path = tmp / "edit.h5"
    path.write_bytes(h5_bytes)
    with h5py.File(path, "r+") as f:
        sets, groups = [], []
        f.visititems(lambda n, o: (sets if isinstance(o, h5py.Dataset) else groups).append(n))
        what = draw(st.sampled_from(["replace", "replace", "same-shape", "delete", "group", "soft-link", "attr"]))
        name = draw(st.sampled_from(sets))
        if what in ("replace", "same-shape"):
            shape = f[name].shape if what == "same-shape" else None
            del f[name]
            _dataset(f, name, draw, shape)
        elif what == "delete":
            del f[draw(st.sampled_from(sets + groups))]
        elif what == "group":
            del f[name]
            f.create_group(name)
        elif what == "soft-link":
            other = draw(st.sampled_from(sets + groups))
            del f[name]
            f[name] = h5py.SoftLink("/" + other)
        else:
            g = f[draw(st.sampled_from(groups))]
            g.attrs[draw(st.sampled_from(["iterations", "learning_rate", "optimizer", "name", "backup_epoch"]))] = \
                draw(st.sampled_from([np.int64(-1), np.float64("nan"), np.float64("inf"), 1 << 62, "Adam", "SGD",
                                      b"\xff", np.zeros(3), np.zeros((1 << 10, 1 << 10), np.uint8)[:2], 7, 0.5]))
    return path.read_bytes()


def _keras_h5_edit(path, draw, tmp):
    ms = zip_members(path)
    out = []
    for name, data, method, size, crc in ms:
        if name == "model.weights.h5":
            data = _h5_edit(data, draw, tmp)
            size, crc, method = len(data), zlib.crc32(data), zipfile.ZIP_STORED
        out.append((name, data, method, size, crc))
    return _rezip(path, out)


def _npz_edit(path, draw):
    """A w / s / meta member replaced by an .npy array of a drawn shape and dtype (valid CRC)."""
    ms = zip_members(path)
    i = draw(st.sampled_from(range(len(ms))))
    shape = draw(st.sampled_from([s for s in _SHAPES if int(np.prod(s, dtype=np.int64)) <= 64]))
    dtype = draw(st.sampled_from(["f4", "f8", "u1", "i8", "?", "c8", "S4", "O"]))
    b = io.BytesIO()
    a = np.zeros(shape, dtype) if dtype != "O" else np.array([None] * int(np.prod(shape)), object).reshape(shape)
    np.save(b, a, allow_pickle=True)
    data = b.getvalue()
    ms[i] = (ms[i][0], data, zipfile.ZIP_STORED, len(data), zlib.crc32(data))
    return _rezip(path, ms)


# ---- loads ----

def _documented(load):
    """load() works, or raises a documented exception, its peak resident memory at most PEAK_RSS more than
    before (an address-space limit turns a runaway allocation into a failure, not an OOM kill; HDF5 may
    reserve, without touching, a header size read from a damaged file: its outcome counts, not the limit)."""
    start = reset_peak_rss()
    outcome = None
    try:
        with address_space_limit(HEADROOM):
            load()
    except DOCUMENTED as e:
        outcome = e
    if start is not None:
        assert peak_rss() - start <= PEAK_RSS, (peak_rss() - start, outcome)
    return outcome


def _load_weights_all_or_nothing(path):
    """load_weights(path) works, or raises a documented error with the model's weights as they were."""
    m = _sequential()
    before = m.get_weights()
    if _documented(lambda: m.load_weights(path)) is not None:
        for u, v in zip(before, m.get_weights()):
            np.testing.assert_array_equal(u, v)


@given(data=st.data())
@FUZZ
def test_mutated_weights_h5_loads_or_raises_a_documented_error(base, data):
    d, files = base
    src = files["m.weights.h5"]
    how = data.draw(st.sampled_from(["flip", "truncate", "h5", "h5", "h5"]))
    mutated = _flip(src, data.draw) if how == "flip" else _truncate(src, data.draw) if how == "truncate" else \
        _h5_edit(src, data.draw, d)
    path = d / "x.weights.h5"
    path.write_bytes(mutated)
    _load_weights_all_or_nothing(path)


@given(data=st.data())
@FUZZ
def test_mutated_keras_file_loads_or_raises_a_documented_error(base, data):
    d, files = base
    path = d / "x.keras"
    path.write_bytes(files["m.keras"])
    how = data.draw(st.sampled_from(["flip", "truncate", "zip", "zip", "h5", "h5"]))
    if how in ("flip", "truncate"):
        path.write_bytes((_flip if how == "flip" else _truncate)(files["m.keras"], data.draw))
    elif how == "zip":
        _zip_edit(path, data.draw)
    else:
        _keras_h5_edit(path, data.draw, d)
    _documented(lambda: bf.models.load_model(path))
    _load_weights_all_or_nothing(path)


@given(data=st.data())
@FUZZ
def test_mutated_npz_graph_file_loads_or_raises_a_documented_error(base, data):
    d, files = base
    path = d / "x.npz"
    path.write_bytes(files["g.npz"])
    how = data.draw(st.sampled_from(["flip", "truncate", "zip", "npy", "npy"]))
    if how in ("flip", "truncate"):
        path.write_bytes((_flip if how == "flip" else _truncate)(files["g.npz"], data.draw))
    elif how == "zip":
        _zip_edit(path, data.draw)
    else:
        _npz_edit(path, data.draw)
    _documented(lambda: bf.models.load_model(path))
