"""keras.utils.get_file: a file fetched once into Keras's cache folder
($KERAS_HOME or ~/.keras, shared with Keras), checked against a hash, and
optionally extracted. Any URL urllib opens works (https://, file://). An
archive is extracted only where each member lands inside the extraction
folder (no absolute paths, no `..`, no links out): a hostile archive raises
DataError naming the member instead of writing outside."""

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile

from .callbacks.progbar import Progbar
from .errors import DataError


def keras_home():
    return os.path.expanduser(os.environ.get("KERAS_HOME", os.path.join("~", ".keras")))


def _hasher(algorithm, file_hash):
    if algorithm == "auto":
        algorithm = "sha256" if len(file_hash) == 64 else "md5"
    if algorithm not in ("sha256", "md5"):
        raise ValueError(f"get_file: hash_algorithm must be 'auto', 'sha256' or 'md5', got {algorithm!r}")
    return algorithm, hashlib.new(algorithm)


def validate_file(fpath, file_hash, algorithm="auto", chunk_size=65535):
    """Whether the file's sha256 / md5 is file_hash (Keras's validate_file)."""
    algorithm, h = _hasher(algorithm, file_hash)
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            h.update(chunk)
    return h.hexdigest() == str(file_hash)


def _inside(root, name):
    target = os.path.realpath(os.path.join(root, name))
    return target == root or target.startswith(root + os.sep)


def extract_archive(file_path, path=".", archive_format="auto"):
    """Extract a tar / zip archive into `path`; False when it is neither. Every member must land inside
    `path` (links too), or DataError names it and nothing is written."""
    formats = {"auto": ("tar", "zip"), "tar": ("tar",), "zip": ("zip",), None: ()}
    if isinstance(archive_format, str) and archive_format not in formats:
        raise ValueError(f"get_file: archive_format must be 'auto', 'tar', 'zip' or None, got {archive_format!r}")
    kinds = formats[archive_format] if not isinstance(archive_format, (list, tuple)) else tuple(archive_format)
    root = os.path.realpath(path)
    for kind in kinds:
        if kind == "tar" and tarfile.is_tarfile(file_path):
            with tarfile.open(file_path) as archive:
                for m in archive.getmembers():
                    bad = not _inside(root, m.name) or m.isdev() or (
                        (m.issym() or m.islnk()) and not _inside(
                            root, os.path.join(os.path.dirname(m.name), m.linkname) if m.issym() else m.linkname))
                    if bad:
                        raise DataError(f"get_file: archive {file_path} member {m.name!r} would be written outside "
                                        f"{path}; nothing was extracted")
                os.makedirs(root, exist_ok=True)
                archive.extractall(root, filter="data")
            return True
        if kind == "zip" and zipfile.is_zipfile(file_path):
            with zipfile.ZipFile(file_path) as archive:
                for name in archive.namelist():
                    if os.path.isabs(name) or not _inside(root, name):
                        raise DataError(f"get_file: archive {file_path} member {name!r} would be written outside "
                                        f"{path}; nothing was extracted")
                os.makedirs(root, exist_ok=True)
                archive.extractall(root)
            return True
    return False


def _download(origin, target):
    """origin into target through a temporary file in the same folder (a failed fetch leaves nothing)."""
    print(f"Downloading data from {origin}")
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(origin) as src:
            total = src.headers.get("Content-Length") if hasattr(src, "headers") else None
            bar, done = Progbar(int(total) if total else None, unit_name="byte"), 0
            for chunk in iter(lambda: src.read(1 << 20), b""):
                out.write(chunk)
                done += len(chunk)
                bar.update(done, finalize=False)
            bar.update(done, finalize=True)
        os.replace(tmp, target)
    except urllib.error.URLError as e:
        os.unlink(tmp)
        raise DataError(f"get_file: URL fetch failure on {origin}: {getattr(e, 'reason', e)}") from e
    except BaseException:
        os.unlink(tmp)
        raise


def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None, cache_subdir="datasets",
             hash_algorithm="auto", extract=False, archive_format="auto", cache_dir=None, force_download=False):
    """Keras's get_file: the path of the cached file (or of its extraction folder with extract / untar)."""
    if origin is None:
        raise ValueError("get_file: give origin, the URL of the file (https://... or file://...)")
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    if file_hash is not None:
        hash_algorithm = _hasher(hash_algorithm, str(file_hash))[0]
    base = os.path.expanduser(os.fspath(cache_dir)) if cache_dir is not None else keras_home()
    try:
        os.makedirs(base, exist_ok=True)
        writable = os.access(base, os.W_OK)
    except OSError:
        writable = False
    if not writable:   # as Keras: a cache folder that cannot be written falls back to the temporary folder's
        base = os.path.join(tempfile.gettempdir(), ".keras")
    datadir = os.path.join(base, cache_subdir)
    os.makedirs(datadir, exist_ok=True)
    given = fname = os.fspath(fname) if fname is not None else None
    if not fname:
        fname = os.path.basename(urllib.parse.urlsplit(origin).path)
        if not fname:
            raise ValueError(f"get_file: cannot take a file name from origin {origin!r}; give fname")
    elif os.sep in fname:
        raise ValueError(f"get_file: fname must be a file name, not a path (got {fname!r}); the folder is cache_dir")
    if extract or untar:
        if given and "." in fname:
            target, extraction_dir = os.path.join(datadir, fname), os.path.join(datadir, f"{fname.split('.')[0]}_extracted")
        else:
            target, extraction_dir = os.path.join(datadir, f"{fname}_archive"), os.path.join(datadir, fname)
    else:
        target = os.path.join(datadir, fname)
    download = force_download or not os.path.exists(target)
    if not download and file_hash is not None and not validate_file(target, file_hash, hash_algorithm):
        print(f"A local file was found, but its {hash_algorithm} hash does not match {file_hash}: fetching it again.")
        download = True
    if download:
        _download(origin, target)
        if file_hash is not None and not validate_file(target, file_hash, hash_algorithm):
            os.unlink(target)
            raise DataError(f"get_file: the file fetched from {origin} does not match the {hash_algorithm} hash "
                            f"{file_hash} (incomplete or corrupted); it was removed")
    if extract or untar:
        if not extract_archive(target, extraction_dir, "tar" if untar else archive_format):
            shutil.rmtree(extraction_dir, ignore_errors=True)
            raise DataError(f"get_file: {target} is not a {'tar' if untar else 'tar or zip'} archive")
        return extraction_dir
    return target
