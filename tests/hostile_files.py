"""Hostile model files for the loader tests: compression bombs built in
milliseconds (one deflate block of zeros repeated, so no gigabytes are ever
compressed or held here), zip archives whose members declare whatever size
the test says; and the bounds a load is held to: an address-space limit (a
runaway allocation fails instead of the OOM killer ending pytest) and the
peak resident memory a load added (VmHWM, reset through clear_refs)."""

import contextlib
import resource
import struct
import zipfile
import zlib

MiB = 1 << 20


def _zero_block():
    """Raw deflate bytes of 1 MiB of zeros, ending in a full flush (so the block can be repeated), and
    the final empty block that ends a stream of them."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(bytes(MiB)) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(bytes(MiB)) + c.flush(zlib.Z_FULL_FLUSH)
    assert block == again   # the flush reset the compressor: the same bytes each time
    return block, c.flush(zlib.Z_FINISH)


def deflate_zeros(mib):
    """A raw deflate stream (a zip member's data) that inflates to mib MiB of zeros."""
    block, end = _zero_block()
    return block * mib + end


def zlib_zeros(mib):
    """A zlib stream (an HDF5 deflate chunk) that inflates to mib MiB of zeros, checksum included."""
    n = mib * MiB
    return b"\x78\xda" + deflate_zeros(mib) + struct.pack(">I", ((n % 65521) << 16) | 1)


def write_zip(path, members):
    """A zip archive of members [(name, data as stored, method, declared file_size, crc)], sizes past
    4 GiB in zip64 extra fields, as zipfile reads them."""
    out, central = bytearray(), bytearray()
    for name, data, method, size, crc in members:
        name = name.encode()
        big = size >= 0xFFFFFFFF
        extra = struct.pack("<HHQQ", 1, 16, size, len(data)) if big else b""
        fsize, csize = (0xFFFFFFFF, 0xFFFFFFFF) if big else (size, len(data))
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, method, 0, 0x21, crc, csize, fsize, len(name),
                           len(extra)) + name + extra + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, method, 0, 0x21, crc, csize, fsize,
                               len(name), len(extra), 0, 0, 0, 0, offset) + name + extra
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(out), 0)
    with open(path, "wb") as f:
        f.write(bytes(out + central + end))


def zip_members(path):
    """[(name, data as stored, method, file_size, crc)] of a zip written by zipfile (stored or deflated)."""
    out = []
    with zipfile.ZipFile(path) as z:
        for i in z.infolist():
            with open(path, "rb") as f:
                f.seek(i.header_offset)
                head = f.read(30)
                n, m = struct.unpack("<HH", head[26:30])
                f.seek(i.header_offset + 30 + n + m)
                out.append((i.filename, f.read(i.compress_size), i.compress_type, i.file_size, i.CRC))
    return out


def _status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"no {key} in /proc/self/status")


def reset_peak_rss():
    """Start a fresh peak-RSS count (VmHWM); the RSS now, or None where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return _status("VmRSS")


def peak_rss():
    return _status("VmHWM")


@contextlib.contextmanager
def address_space_limit(extra_bytes):
    """This process may map at most extra_bytes more while inside: past that an allocation fails
    (MemoryError, or an HDF5 allocation error) instead of the OOM killer ending the process."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _status("VmSize") + extra_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
