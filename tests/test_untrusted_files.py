"""Untrusted model files: compression and shape bombs in `.keras`, `.npz` and
`.weights.h5` files are refused with a ValueError naming the file and the
member or dataset before a byte of them is read (each load here runs under an
address-space limit, the issue's 700 MiB cgroup in a child where one can be
made), data from outside the file (external storage, virtual datasets,
external and soft links) is refused as Keras 3 refuses it, and a refused load
leaves the model's weights and optimizer state as they were."""

import io
import os
import sys
import zipfile
import zlib

import h5py
import numpy as np
import pytest

import boundfit as bf
from boundfit import layers as L

import keras_ref
from cgroup_util import memory_cgroup
from hostile_files import MiB, address_space_limit, deflate_zeros, write_zip, zip_members, zlib_zeros

HEADROOM = 512 * MiB   # what a load may map here; every bomb below inflates to 1 GiB or more


def _model(units=4, inputs=3, state=None):
    m = bf.Sequential([L.Dense(units, input_shape=(inputs,)), L.Dense(2)])
    m.compile(optimizer="adam", loss="mse")
    if state is not None:   # Adam's slots, as after `state` steps
        n = m._engine.n_trainable
        m._engine.restore_optimizer_state(state, [np.full(n, state, np.float32), np.full(n, 2 * state, np.float32)])
    return m


def _keras_model(keras, units=4, inputs=3):
    return keras.Sequential([keras.Input((inputs,)), keras.layers.Dense(units), keras.layers.Dense(2)])


def _same(a, b):
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def _keras_bomb(tmp_path, declared, mib):
    """A .keras file of _model() whose model.weights.h5 declares `declared` bytes and inflates to mib MiB."""
    src, dst = tmp_path / "m.keras", tmp_path / f"bomb-{declared}.keras"
    _model().save(src)
    members = [m if m[0] != "model.weights.h5" else (m[0], deflate_zeros(mib), zlib.DEFLATED, declared, 0)
               for m in zip_members(src)]
    write_zip(dst, members)
    return dst


@pytest.mark.parametrize("declared, mib, message", [
    (4608 * MiB, 4608, r"member 'model.weights.h5' declares 4608.00 MiB .*more than the .* it may hold"),
    (64 * MiB, 64, r"member 'model.weights.h5' declares 64.00 MiB .*more than the .* it may hold"),
    (2 * MiB, 4608, r"member 'model.weights.h5'.*Bad CRC-32"),   # its declared size lies: never read past it
], ids=["4.5GiB", "64MiB-below-keras-floor", "declared-size-lies"])
def test_keras_zip_bomb_is_refused_before_it_is_read(tmp_path, declared, mib, message):
    path = _keras_bomb(tmp_path, declared, mib)
    with address_space_limit(HEADROOM), pytest.raises(ValueError, match=f"{path}: {message}"):
        bf.models.load_model(path)
    m = _model()
    before = m.get_weights()
    with address_space_limit(HEADROOM), pytest.raises(ValueError, match=message):
        m.load_weights(path)
    _same(before, m.get_weights())


def test_keras_refuses_the_4_5_gib_zip_bomb_as_boundfit_does(tmp_path):
    keras = keras_ref.load()
    path = _keras_bomb(tmp_path, 4608 * MiB, 4608)
    with pytest.raises(ValueError, match="Not allowed: ZIP member 'model.weights.h5' declares"):
        keras.saving.load_model(path)


def _graph_model():
    i = L.Input((3,))
    m = bf.Model(i, L.Dense(2)(L.Dense(4)(i)))
    m.compile(optimizer="adam", loss="mse")
    return m


def _npy_header(shape):
    b = io.BytesIO()
    np.lib.format.write_array_header_1_0(b, {"descr": "<f4", "fortran_order": False, "shape": shape})
    return b.getvalue()


def _npz_with_w0(tmp_path, data, method, declared, crc=0):
    src, dst = tmp_path / "g.npz", tmp_path / "bomb.npz"
    _graph_model().save(src)
    write_zip(dst, [m if m[0] != "w0.npy" else (m[0], data, method, declared, crc) for m in zip_members(src)])
    return dst


def _deflated_npy(shape, mib):
    """A raw deflate stream: the .npy header of shape (float32), then mib MiB of zeros."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(_npy_header(shape)) + c.flush(zlib.Z_FULL_FLUSH) + deflate_zeros(mib)


@pytest.mark.parametrize("case", ["header-declares-4GiB", "right-header-4GiB-member", "stored-shape-bomb"])
def test_npz_graph_file_bombs_are_refused_from_the_npy_header(tmp_path, case):
    if case == "header-declares-4GiB":
        path = _npz_with_w0(tmp_path, _deflated_npy((1 << 30,), 4096), zlib.DEFLATED, 4096 * MiB + 128)
        message = r"member 'w0.npy': the file has shape \(1073741824,\), the model needs \(3, 4\)"
    elif case == "right-header-4GiB-member":
        path = _npz_with_w0(tmp_path, _deflated_npy((3, 4), 4096), zlib.DEFLATED, 4096 * MiB + 128)
        message = r"member 'w0.npy': it declares 4096.00 MiB \(4294967424 bytes\), its header 176 bytes"
    else:   # a stored member whose header alone declares 8 GiB
        head = _npy_header((1 << 31,))
        path = _npz_with_w0(tmp_path, head, zipfile.ZIP_STORED, len(head), zlib.crc32(head))
        message = r"member 'w0.npy': the file has shape \(2147483648,\), the model needs \(3, 4\)"
    with address_space_limit(HEADROOM), pytest.raises(ValueError, match=f"{path}: {message}"):
        bf.models.load_model(path)


def _weights(tmp_path, m, edit, name="w.weights.h5"):
    """m's .weights.h5, edited by edit(h5py File)."""
    path = tmp_path / name
    m.save_weights(path)
    with h5py.File(path, "r+") as f:
        edit(f)
    return path


def test_h5_shape_bomb_is_refused_before_it_is_read(tmp_path):
    def bomb(f):   # 8 GiB declared, nothing stored: the file stays a few KiB
        del f["layers/dense/vars/0"]
        f.create_dataset("layers/dense/vars/0", shape=(1 << 31,), dtype="f4", chunks=(1 << 20,), compression="gzip")
    m = _model()
    path = _weights(tmp_path, m, bomb)
    assert os.path.getsize(path) < 64 << 10
    before = m.get_weights()
    with address_space_limit(HEADROOM), pytest.raises(
            ValueError, match=rf"{path}: layer 'dense.*' \(Dense\) expects weights \[\(3, 4\), \(4,\)\], the file has "
                              r"\[\(2147483648,\), \(4,\)\]"):
        m.load_weights(path)
    _same(before, m.get_weights())
    keras = keras_ref.load()
    with pytest.raises(ValueError, match="Not allowed: H5 dataset '0' declares 8.00 GB"):
        _keras_model(keras).load_weights(path)


def test_h5_deflate_chunk_bomb_of_the_right_shape_is_refused(tmp_path):
    """HDF5's deflate filter grows its buffer past the chunk: a 4 KiB kernel whose 1 MiB chunk inflates to
    1 GiB (Keras 3.15 reads it: its guard starts at 4 GiB declared)."""
    def bomb(f):
        del f["layers/dense/vars/0"]
        d = f.create_dataset("layers/dense/vars/0", shape=(8, 128), dtype="f4", chunks=(8, 128), compression="gzip")
        d.id.write_direct_chunk((0, 0), zlib_zeros(1024), 0)
    m = _model(units=128, inputs=8)
    path = _weights(tmp_path, m, bomb)
    before = m.get_weights()
    with address_space_limit(HEADROOM), pytest.raises(
            ValueError, match=rf"{path}: dataset /layers/dense/vars/0: its chunk at \(0, 0\) inflates to more than "
                              r"the chunk's 4096 bytes \(a compression bomb\)"):
        m.load_weights(path)
    _same(before, m.get_weights())


def test_h5_compressed_weights_of_the_right_size_load(tmp_path):
    """Compression is fine where each chunk inflates to its size: h5py's gzip, shuffle and fletcher32."""
    m = _model(units=128, inputs=8)
    want = [np.full(w.shape, 0.5, np.float32) for w in m.get_weights()]

    def gzip(f):
        for k, name in enumerate(["layers/dense/vars/0", "layers/dense/vars/1"]):
            del f[name]
            f.create_dataset(name, data=want[k], chunks=True, compression="gzip", shuffle=True, fletcher32=True)
    path = _weights(tmp_path, m, gzip)
    with address_space_limit(HEADROOM):
        m.load_weights(path)
    _same(want[:2], m.get_weights()[:2])


@pytest.fixture
def secret(tmp_path):
    """A file that must never reach the weights: 48 bytes of it, and an h5 holding them as a (3, 4) float32."""
    raw = tmp_path / "secret.bin"
    data = np.arange(12, dtype=np.float32).reshape(3, 4) + 1000
    raw.write_bytes(data.tobytes())
    with h5py.File(tmp_path / "secret.h5", "w") as f:
        f["x"] = data
    return raw, tmp_path / "secret.h5"


def _outside(kind, raw, h5):
    def edit(f):
        name = "layers/dense/vars/0"
        del f[name]
        if kind == "external-storage":
            f.create_dataset(name, shape=(3, 4), dtype="f4", external=[(os.fspath(raw), 0, 48)])
        elif kind == "virtual":
            layout = h5py.VirtualLayout(shape=(3, 4), dtype="f4")
            layout[:] = h5py.VirtualSource(os.fspath(h5), "x", shape=(3, 4))
            f.create_virtual_dataset(name, layout)
        elif kind == "external-link":
            f[name] = h5py.ExternalLink(os.fspath(h5), "x")
        elif kind == "external-link-group":
            del f["layers/dense"]
            f["layers/dense"] = h5py.ExternalLink(os.fspath(h5), "/")
        else:
            f["secret"] = np.arange(12, dtype=np.float32).reshape(3, 4)
            f[name] = h5py.SoftLink("/secret")
    return edit


@pytest.mark.parametrize("kind, message, keras_message", [
    ("external-storage", r"dataset /layers/dense/vars/0 stores its data in another file .*secret.bin",
     "Not allowed: H5 file with external Dataset"),
    ("virtual", r"dataset /layers/dense/vars/0 is a virtual dataset", "Not allowed: H5 file with virtual Dataset"),
    ("external-link", r"/layers/dense/vars/0 is an HDF5 ExternalLink; not allowed",
     "Not allowed: H5 file with ExternalLink"),
    ("external-link-group", r"/layers/dense is an HDF5 ExternalLink; not allowed",
     "Not allowed: H5 file with ExternalLink"),
    ("soft-link", r"/layers/dense/vars/0 is an HDF5 SoftLink; not allowed", "Not allowed: H5 file with SoftLink"),
], ids=["external-storage", "virtual", "external-link", "external-link-group", "soft-link"])
def test_h5_data_from_outside_the_file_is_refused_as_keras_refuses_it(tmp_path, secret, kind, message, keras_message):
    m = _model()
    path = _weights(tmp_path, m, _outside(kind, *secret))
    before = m.get_weights()
    with pytest.raises(ValueError, match=f"{path}: {message}"):
        m.load_weights(path)
    _same(before, m.get_weights())
    keras = keras_ref.load()
    with pytest.raises(ValueError, match=keras_message):
        _keras_model(keras).load_weights(path)


def test_refused_optimizer_state_leaves_weights_and_state_unchanged(tmp_path, secret):
    """The optimizer's datasets are checked with the layers', before anything is set."""
    m = _model(state=3)
    other = _model(state=5)
    other.set_weights([w + 1 for w in other.get_weights()])

    def edit(f):
        del f["boundfit/slot1"]
        f["boundfit/slot1"] = h5py.ExternalLink(os.fspath(secret[1]), "x")
    path = _weights(tmp_path, other, edit)
    before, state = m.get_weights(), m._engine.optimizer_state()
    with pytest.raises(ValueError, match=rf"{path}: /boundfit/slot1 is an HDF5 ExternalLink"):
        m.load_weights(path)
    _same(before, m.get_weights())
    after = m._engine.optimizer_state()
    assert after[0] == state[0]
    _same(state[1], after[1])


def test_keras_file_with_a_hostile_weights_member_is_refused(tmp_path, secret):
    """The same checks inside a .keras archive (its weights member copied out within its bound first)."""
    src = tmp_path / "m.keras"
    _model().save(src)
    h5 = _weights(tmp_path, _model(), _outside("external-link", *secret))
    dst = tmp_path / "hostile.keras"
    data = h5.read_bytes()
    write_zip(dst, [m if m[0] != "model.weights.h5" else (m[0], data, 0, len(data), zlib.crc32(data))
                    for m in zip_members(src)])
    with pytest.raises(ValueError, match=rf"{dst}: /layers/dense/vars/0 is an HDF5 ExternalLink"):
        bf.models.load_model(dst)


def test_bombs_stay_within_a_700_mib_cgroup(tmp_path):
    """The issue's setting: a child in a 700 MiB memory cgroup loads the 4.5 GiB .keras bomb and the 1 GiB
    h5 chunk bomb, gets a ValueError for each, and is not OOM-killed."""
    keras_bomb = _keras_bomb(tmp_path, 4608 * MiB, 4608)

    def bomb(f):
        del f["layers/dense/vars/0"]
        d = f.create_dataset("layers/dense/vars/0", shape=(8, 128), dtype="f4", chunks=(8, 128), compression="gzip")
        d.id.write_direct_chunk((0, 0), zlib_zeros(1024), 0)
    h5_bomb = _weights(tmp_path, _model(units=128, inputs=8), bomb)
    code = f"""
import boundfit as bf
from boundfit import layers as L
for load in (lambda: bf.models.load_model({os.fspath(keras_bomb)!r}),
             lambda: bf.Sequential([L.Dense(128, input_shape=(8,)), L.Dense(2)]).load_weights({os.fspath(h5_bomb)!r})):
    try:
        load()
    except ValueError as e:
        print("refused:", e)
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    with memory_cgroup(700 * MiB) as cg:
        r = cg.run_python(code, timeout=300, env=env)
    assert r.returncode == 0 and not r.killed_by_oom, (r.returncode, r.stderr[-2000:])
    assert r.stdout.count("refused:") == 2, r.stdout
    assert "compression bomb" in r.stdout and "declares 4608.00 MiB" in r.stdout
    if r.peak_bytes is not None:
        assert r.peak_bytes < 700 * MiB
