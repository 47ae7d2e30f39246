"""Bounded reads of untrusted files: a zip member, an HDF5 dataset or a .npy
member is read only once what it declares (size, shape, dtype, storage) has
been checked against what the caller expects, and a zip member is streamed
with a hard cap on the bytes it inflates to (its declared size may lie).

What a load of a hostile or damaged file raises (the documented set):
ValueError naming the file and the member, dataset or attribute (refused or
malformed content: a size, shape or dtype other than the model's, a
compression bomb, data outside the file, a corrupt zip), or OSError (the file,
or its HDF5 structure, cannot be read). Refused as Keras 3 refuses them: a
dataset stored in another file (external storage), a virtual dataset, a soft
or external link on the way to a group or dataset the load reads."""

import contextlib
import io
import tempfile
import zipfile
import zlib

import h5py
import numpy as np
from h5py import h5d, h5l, h5z

MiB = 1 << 20
JSON_CAP = 32 * MiB     # config.json, metadata.json, a graph file's description: JSON of a model, not its weights
ASSET_CAP = 64 * MiB    # an asset file (TextVectorization's vocabulary)
_SPILL = 64 * MiB       # a member larger than this is copied to a temporary file, not held in memory
_STEP = MiB             # bytes read from a stream at a time
_ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
# h5py's filter order (shuffle, then deflate, then fletcher32 over the compressed chunk); others are refused
_H5_FILTERS = (h5z.FILTER_SHUFFLE, h5z.FILTER_DEFLATE, h5z.FILTER_FLETCHER32)
_LINK_KIND = {h5l.TYPE_SOFT: "SoftLink", h5l.TYPE_EXTERNAL: "ExternalLink"}


@contextlib.contextmanager
def refusing(where):
    """Errors of a malformed file as ValueError naming it (zipfile's BadZipFile, EOFError and
    NotImplementedError, zlib's error, h5py's KeyError, RuntimeError and TypeError for a damaged or
    unmappable HDF5 structure); OSError passes."""
    try:
        yield
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, KeyError, RuntimeError, TypeError) as e:
        raise ValueError(f"{where}: malformed file ({type(e).__name__}: {e})") from e


def _size(n):
    return f"{n / MiB:.2f} MiB ({n} bytes)" if n >= MiB else f"{n} bytes"


# ---- zip members ----

def open_zip(path):
    """zipfile.ZipFile(path), a malformed archive raising ValueError naming it."""
    with refusing(path):
        return zipfile.ZipFile(path)


def _member(z, name, cap, where):
    try:
        info = z.getinfo(name)
    except KeyError:
        raise ValueError(f"{where}: the archive has no {name}") from None
    if info.flag_bits & 0x1:
        raise ValueError(f"{where}: member {name!r} is encrypted")
    if info.compress_type not in _ZIP_METHODS:
        raise ValueError(f"{where}: member {name!r} uses zip compression method {info.compress_type}; Keras and "
                         "boundfit write stored or deflated members")
    if info.file_size > cap:
        raise ValueError(f"{where}: member {name!r} declares {_size(info.file_size)}, more than the "
                         f"{_size(cap)} it may hold")
    return info


def _copy(src, out, cap, name, where):
    n = 0
    while True:
        data = src.read(_STEP)
        if not data:
            return
        n += len(data)
        if n > cap:
            raise ValueError(f"{where}: member {name!r} inflates to more than the {_size(cap)} it may hold")
        out.write(data)


def zip_file(z, name, cap, where):
    """Member name of the open archive z as a seekable file (in memory, or a temporary file when large),
    after checking that it declares at most cap bytes; streamed, refused past cap actual bytes."""
    info = _member(z, name, cap, where)
    out = io.BytesIO() if info.file_size <= _SPILL else tempfile.TemporaryFile()
    try:
        with refusing(f"{where}: member {name!r}"), z.open(info) as src:
            _copy(src, out, cap, name, where)
    except BaseException:
        out.close()
        raise
    out.seek(0)
    return out


def zip_bytes(z, name, cap, where):
    """The bytes of member name (at most cap, declared and actual)."""
    with zip_file(z, name, cap, where) as f:
        return f.read()


def npy_member(z, name, where, shape=None, max_bytes=None, kinds="biuf"):
    """The array in .npy member name of the open archive z: its header is read first and must declare shape
    (or, shape None, one axis of at most max_bytes) and a plain dtype of a kind in kinds; the
    member must hold exactly that many bytes. No pickles (allow_pickle=False)."""
    info = _member(z, name, 1 << 62, where)
    what = f"{where}: member {name!r}"
    with refusing(what), z.open(info) as f:
        try:
            version = np.lib.format.read_magic(f)
            got, fortran, dtype = (np.lib.format.read_array_header_1_0(f) if version == (1, 0) else
                                   np.lib.format.read_array_header_2_0(f))
        except ValueError as e:
            raise ValueError(f"{what}: not a .npy array ({e})") from None
        _check_dtype(dtype, kinds, what)
        if shape is not None and tuple(got) != tuple(shape):
            raise ValueError(f"{what}: the file has shape {tuple(got)}, the model needs {tuple(shape)}")
        count = int(np.prod(got, dtype=np.int64))
        if shape is None and (len(got) != 1 or count * dtype.itemsize > max_bytes):
            raise ValueError(f"{what}: the file has shape {tuple(got)} of {dtype}, at most {_size(max_bytes)} "
                             "of one axis is read")
        if info.file_size != f.tell() + count * dtype.itemsize:
            raise ValueError(f"{what}: it declares {_size(info.file_size)}, its header "
                             f"{_size(f.tell() + count * dtype.itemsize)}")
        flat = np.empty(count, dtype)
        view, n = memoryview(flat.view(np.uint8)), 0
        while n < len(view):
            k = f.readinto(view[n:n + _STEP])
            if not k:
                raise ValueError(f"{what}: it ends after {n} of its {len(view)} bytes of data")
            n += k
        if f.read(1):
            raise ValueError(f"{what}: it holds more than its header declares")
    return flat.reshape(got[::-1]).T if fortran else flat.reshape(got)


# ---- HDF5 ----

def _check_dtype(dtype, kinds, what):
    if dtype.hasobject or dtype.names is not None or dtype.subdtype is not None or dtype.kind not in kinds \
            or dtype.itemsize > 8:
        raise ValueError(f"{what}: dtype {dtype} is not a plain number")


def _hard_link(group, name, where):
    """True when group has a link name, a hard one; refused if another kind (never followed)."""
    b = name.encode()
    if not group.id.links.exists(b):
        return False
    kind = group.id.links.get_info(b).type
    if kind != h5l.TYPE_HARD:
        raise ValueError(f"{where}: {group.name.rstrip('/')}/{name} is an HDF5 {_LINK_KIND.get(kind, 'user-defined link')}"
                         "; not allowed (its data would come from outside the file)")
    return True


def h5_group(parent, path, where):
    """The group at path under parent, reached through hard links only; None where it is missing."""
    g = parent
    for part in path.split("/"):
        if not _hard_link(g, part, where):
            return None
        g = g[part]
        if not isinstance(g, h5py.Group):
            raise ValueError(f"{where}: {g.name} is a dataset where a group is expected")
    return g


def h5_dataset(group, name, where):
    """Dataset name of group, checked before any byte of it is read: a hard link, its data stored in this
    file (no external storage, not virtual), a plain numeric dtype, compression h5py's (deflate, shuffle,
    fletcher32) with no chunk that inflates past its size."""
    if not _hard_link(group, name, where):
        raise ValueError(f"{where}: {group.name.rstrip('/')}/{name} is missing")
    ds = group[name]
    what = f"{where}: dataset {ds.name}"
    if not isinstance(ds, h5py.Dataset):
        raise ValueError(f"{what} is a group where a dataset is expected")
    if ds.external:
        raise ValueError(f"{what} stores its data in another file {ds.external}; not allowed")
    if ds.is_virtual:
        raise ValueError(f"{what} is a virtual dataset (its data in other datasets or files); not allowed")
    if ds.shape is None:
        raise ValueError(f"{what} has no shape (a null dataspace)")
    _check_dtype(ds.dtype, "biuf", what)
    return ds


def h5_read(ds, shape, where, max_items=None):
    """The array of dataset ds (from h5_dataset), read once its shape is shape (or, shape None, of at most
    one axis and max_items elements) and its chunks are known not to inflate past their size."""
    what = f"{where}: dataset {ds.name}"
    if shape is not None and tuple(ds.shape) != tuple(shape):
        raise ValueError(f"{what} has shape {ds.shape}, the model needs {tuple(shape)}")
    if shape is None and (len(ds.shape) > 1 or ds.size > max_items):
        raise ValueError(f"{what} has shape {ds.shape}, at most ({max_items},) is read")
    _check_chunks(ds, what)
    return np.asarray(ds[()])


def _check_chunks(ds, what):
    dcpl = ds.id.get_create_plist()
    if dcpl.get_layout() != h5d.CHUNKED:
        return
    chunk = int(np.prod(ds.chunks, dtype=np.int64)) * ds.dtype.itemsize
    if chunk > max(4 * ds.size * ds.dtype.itemsize, MiB):
        raise ValueError(f"{what} has chunks of {_size(chunk)}, far larger than its data")
    filters = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]
    if len(set(filters)) != len(filters) or any(f not in _H5_FILTERS for f in filters) or \
            filters != [f for f in _H5_FILTERS if f in filters]:
        raise ValueError(f"{what} uses the HDF5 filters {filters}; boundfit reads h5py's deflate "
                         f"({h5z.FILTER_DEFLATE}), shuffle ({h5z.FILTER_SHUFFLE}) and fletcher32 "
                         f"({h5z.FILTER_FLETCHER32}) in that order")
    if h5z.FILTER_DEFLATE in filters:
        _check_inflate(ds, filters, chunk, what)


def _check_inflate(ds, filters, chunk, what):
    """HDF5's deflate filter grows its output past the chunk's size: inflate each stored chunk here,
    at most chunk + 1 bytes of it, and refuse one that holds more (a compression bomb)."""
    deflate = filters.index(h5z.FILTER_DEFLATE)   # fletcher32's checksum after it is left unused by zlib
    for i in range(ds.id.get_num_chunks()):
        offset = ds.id.get_chunk_info(i).chunk_offset
        mask, raw = ds.id.read_direct_chunk(offset)
        if mask & (1 << deflate):
            continue
        d = zlib.decompressobj()
        n = len(d.decompress(raw, chunk + 1))
        if n > chunk or d.unconsumed_tail:
            raise ValueError(f"{what}: its chunk at {offset} inflates to more than the chunk's "
                             f"{_size(chunk)} (a compression bomb)")


def h5_scalar_attrs(obj, where):
    """{name: value} of obj's attributes, each checked to be a single number or string before it is read."""
    out = {}
    for name in obj.attrs:
        a = obj.attrs.get_id(name)
        if a.shape not in ((), (1,)) or a.dtype.kind not in "biufSUO" or a.dtype.subdtype is not None \
                or a.dtype.names is not None:
            raise ValueError(f"{where}: attribute {name!r} of {obj.name} has shape {a.shape} and dtype {a.dtype}, "
                             "a single number or string is expected")
        v = obj.attrs[name]
        v = v.reshape(()) if isinstance(v, np.ndarray) else v
        out[name] = v.item() if hasattr(v, "item") else v
    return out
