"""The 64-bit hashes Keras's Hashing, HashedCrossing and the lookups' OOV
buckets use through TensorFlow, written out so that boundfit gives the same
bins without TensorFlow: FarmHash's Fingerprint64 (farmhashna::Hash64, what
tf.strings.to_hash_bucket_fast takes modulo the bins), SipHash-2-4 with a
128-bit key (tf.strings.to_hash_bucket_strong's, highwayhash::SipHash) and
TensorFlow's FingerprintCat64 (tf.sparse.cross_hashed's combination).
Arithmetic is on Python ints masked to 64 bits; callers hash each distinct
value once (categorical data has few), not each element."""

import struct

M64 = (1 << 64) - 1
K0, K1, K2 = 0xC3A5C85C97CB3127, 0xB492B66FBE98F273, 0x9AE16A3B2F90404F
_KMUL = 0xC6A4A7935BD1E995
CROSS_KEY = 0xDECAFCAFFE   # tf.sparse.cross_hashed's default hash_key


def _rot(v, s):
    return v if s == 0 else ((v >> s) | (v << (64 - s))) & M64


def _shift_mix(v):
    return v ^ (v >> 47)


def _f64(s, i):
    return struct.unpack_from("<Q", s, i)[0]


def _f32(s, i):
    return struct.unpack_from("<I", s, i)[0]


def _len16(u, v, mul):
    a = ((u ^ v) * mul) & M64
    a ^= a >> 47
    b = ((v ^ a) * mul) & M64
    b ^= b >> 47
    return (b * mul) & M64


def _len0to16(s, n):
    if n >= 8:
        mul = K2 + n * 2
        a = (_f64(s, 0) + K2) & M64
        b = _f64(s, n - 8)
        c = (_rot(b, 37) * mul + a) & M64
        d = ((_rot(a, 25) + b) * mul) & M64
        return _len16(c, d, mul)
    if n >= 4:
        mul = K2 + n * 2
        a = _f32(s, 0)
        return _len16((n + (a << 3)) & M64, _f32(s, n - 4), mul)
    if n > 0:
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_shift_mix(((y * K2) ^ (z * K0)) & M64) * K2) & M64
    return K2


def _len17to32(s, n):
    mul = K2 + n * 2
    a = (_f64(s, 0) * K1) & M64
    b = _f64(s, 8)
    c = (_f64(s, n - 8) * mul) & M64
    d = (_f64(s, n - 16) * K2) & M64
    return _len16((_rot((a + b) & M64, 43) + _rot(c, 30) + d) & M64, (a + _rot((b + K2) & M64, 18) + c) & M64, mul)


def _len33to64(s, n):
    mul = K2 + n * 2
    a = (_f64(s, 0) * K2) & M64
    b = _f64(s, 8)
    c = (_f64(s, n - 8) * mul) & M64
    d = (_f64(s, n - 16) * K2) & M64
    y = (_rot((a + b) & M64, 43) + _rot(c, 30) + d) & M64
    z = _len16(y, (a + _rot((b + K2) & M64, 18) + c) & M64, mul)
    e = (_f64(s, 16) * mul) & M64
    f = _f64(s, 24)
    g = ((y + _f64(s, n - 32)) * mul) & M64
    h = ((z + _f64(s, n - 24)) * mul) & M64
    return _len16((_rot((e + f) & M64, 43) + _rot(g, 30) + h) & M64, (e + _rot((f + a) & M64, 18) + g) & M64, mul)


def _weak32(s, i, a, b):
    w, x, y, z = _f64(s, i), _f64(s, i + 8), _f64(s, i + 16), _f64(s, i + 24)
    a = (a + w) & M64
    b = _rot((b + a + z) & M64, 21)
    c = a
    a = (a + x + y) & M64
    b = (b + _rot(a, 44)) & M64
    return (a + z) & M64, (b + c) & M64


def fingerprint64(s):
    """FarmHash Fingerprint64 of bytes s (TensorFlow's Fingerprint64)."""
    n = len(s)
    if n <= 16:
        return _len0to16(s, n)
    if n <= 32:
        return _len17to32(s, n)
    if n <= 64:
        return _len33to64(s, n)
    seed = 81
    x = seed
    y = (seed * K1 + 113) & M64
    z = (_shift_mix((y * K2 + 113) & M64) * K2) & M64
    v = w = (0, 0)
    x = (x * K2 + _f64(s, 0)) & M64
    end = ((n - 1) // 64) * 64
    last64 = n - 64
    i = 0
    while True:
        x = (_rot((x + y + v[0] + _f64(s, i + 8)) & M64, 37) * K1) & M64
        y = (_rot((y + v[1] + _f64(s, i + 48)) & M64, 42) * K1) & M64
        x ^= w[1]
        y = (y + v[0] + _f64(s, i + 40)) & M64
        z = (_rot((z + w[0]) & M64, 33) * K1) & M64
        v = _weak32(s, i, (v[1] * K1) & M64, (x + w[0]) & M64)
        w = _weak32(s, i + 32, (z + w[1]) & M64, (y + _f64(s, i + 16)) & M64)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = K1 + ((z & 0xFF) << 1)
    i = last64
    w = ((w[0] + ((n - 1) & 63)) & M64, w[1])
    v = ((v[0] + w[0]) & M64, v[1])
    w = ((w[0] + v[0]) & M64, w[1])
    x = (_rot((x + y + v[0] + _f64(s, i + 8)) & M64, 37) * mul) & M64
    y = (_rot((y + v[1] + _f64(s, i + 48)) & M64, 42) * mul) & M64
    x ^= (w[1] * 9) & M64
    y = (y + v[0] * 9 + _f64(s, i + 40)) & M64
    z = (_rot((z + w[0]) & M64, 33) * mul) & M64
    v = _weak32(s, i, (v[1] * mul) & M64, (x + w[0]) & M64)
    w = _weak32(s, i + 32, (z + w[1]) & M64, (y + _f64(s, i + 16)) & M64)
    z, x = x, z
    return _len16((_len16(v[0], w[0], mul) + _shift_mix(y) * K0 + z) & M64, (_len16(v[1], w[1], mul) + x) & M64, mul)


def _sipround(v0, v1, v2, v3):
    v0 = (v0 + v1) & M64
    v1 = _rot(v1, 64 - 13) ^ v0
    v0 = _rot(v0, 32)
    v2 = (v2 + v3) & M64
    v3 = _rot(v3, 64 - 16) ^ v2
    v0 = (v0 + v3) & M64
    v3 = _rot(v3, 64 - 21) ^ v0
    v2 = (v2 + v1) & M64
    v1 = _rot(v1, 64 - 17) ^ v2
    v2 = _rot(v2, 32)
    return v0, v1, v2, v3


def siphash(key, s):
    """SipHash-2-4 of bytes s under key (two unsigned 64-bit ints), as TensorFlow's StrongKeyedHash."""
    k0, k1 = key[0] & M64, key[1] & M64
    v0, v1 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D
    v2, v3 = k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573
    n = len(s)
    tail = n & ~7
    for i in range(0, tail, 8):
        m = _f64(s, i)
        v3 ^= m
        v0, v1, v2, v3 = _sipround(*_sipround(v0, v1, v2, v3))
        v0 ^= m
    m = ((n & 0xFF) << 56) | int.from_bytes(s[tail:], "little")
    v3 ^= m
    v0, v1, v2, v3 = _sipround(*_sipround(v0, v1, v2, v3))
    v0 ^= m
    v2 ^= 0xFF
    for _ in range(4):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


def fingerprint_cat64(fp1, fp2):
    """TensorFlow's FingerprintCat64: two fingerprints combined (tf.sparse.cross_hashed)."""
    result = fp1 ^ _KMUL
    result ^= (_shift_mix((fp2 * _KMUL) & M64) * _KMUL) & M64
    result = (result * _KMUL) & M64
    result = (_shift_mix(result) * _KMUL) & M64
    return _shift_mix(result)
