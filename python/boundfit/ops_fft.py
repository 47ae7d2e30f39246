"""keras.ops Fourier transforms (re-exported by ops.py): fft, fft2, ifft2,
rfft, irfft, stft, istft. Complex values are Keras's (real, imag) pairs.

On arrays: NumPy's FFT in float32, as Keras computes them on JAX. On
symbolic tensors a discrete Fourier transform is linear, so each is the
engine's MatMul of the last axis by a constant DFT matrix (Const), real and
imaginary parts side by side: [re, im] (..., 2K) @ [[C, -S], [S, C]]
(2K, 2N), C = cos(2 pi k n / N), S = sin(...); planned and differentiated
as any MatMul. fft2 / ifft2 transform the last axis, then (Permute) the one
before. stft frames the (reflect-padded) signal with one Gather and folds
the window into the matrix; istft is irfft of each frame by one matrix
(window and scale folded in), then the frames' overlap-add as k = frame /
hop shifted, zero-padded copies summed, times the constant 1 / (the
overlap-added squared window). A transform over the batch axis (a tensor
with no sample axis) is refused by name."""

import numpy as np

from . import ops_lax as lx
from .layers.emath import MatMul
from .layers.node import KerasTensor
from .layers.opnode import record
from .ops_shape import pad
from .spectral import rdft, stft_window

MATH = lx.MATH


def _pair(op, x):
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise ValueError(f"keras.ops.{op}: x must be a tuple (real, imag) of two tensors, got {type(x).__name__}")
    re, im = x
    if lx.sym(re, im):
        if not (isinstance(re, KerasTensor) and isinstance(im, KerasTensor)) or re.shape != im.shape:
            lx.refuse(op, "of a (real, imag) pair that is not two symbolic tensors of one shape")
        lx.sample_axis(op, re, -1)
        lx.static(op, re)
        return re, im
    re, im = np.asarray(re), np.asarray(im)
    if re.shape != im.shape:
        raise ValueError(f"keras.ops.{op}: real and imag must have one shape, got {re.shape} and {im.shape}")
    return re, im


def _complex(re, im):
    return np.asarray(re, np.float64) + 1j * np.asarray(im, np.float64)


def _parts(z):
    return z.real.astype(np.float32), z.imag.astype(np.float32)


def _lin(x, m):
    """x (B, ..., K) @ m (K, N) along the last axis: Reshape, MatMul with a Const, Reshape"""
    ps = lx.static("(composed op)", x)
    rows = int(np.prod(ps[:-1]))
    y = MatMul()([lx.reshape(x, (rows, ps[-1])), lx.const(m.astype(np.float32), x)])
    return lx.reshape(y, ps[:-1] + (m.shape[1],))


def _halves(y):
    a = len(y._ps) - 1
    n = y._ps[a] // 2
    return lx.cut(y, a, 0, n), lx.cut(y, a, n, 2 * n)


def _dft(k, n, inverse=False):
    """[[C, -S], [S, C]] of e^{-+2 pi i k n / N} for K inputs, N outputs (inverse: conjugate, / N)"""
    ang = 2 * np.pi * np.outer(np.arange(k), np.arange(n)) / n
    c, s = np.cos(ang), np.sin(ang) * (-1.0 if inverse else 1.0)
    m = np.block([[c, -s], [s, c]])
    return m / n if inverse else m


def _complex_last(re, im, inverse):
    """the (inverse) DFT of (re, im) along the last axis"""
    n = re._ps[-1]
    a = len(re._ps) - 1
    return _halves(_lin(lx.concat([re, im], a), _dft(n, n, inverse)))


def fft(x):
    """keras.ops.fft of (real, imag) along the last axis"""
    re, im = _pair("fft", x)
    if not isinstance(re, KerasTensor):
        return _parts(np.fft.fft(_complex(re, im), axis=-1))
    return record(_complex_last(re, im, False), "FFT", MATH, {}, [(re, im)])


def _two(op, x, inverse):
    re, im = _pair(op, x)
    if not isinstance(re, KerasTensor):
        f = np.fft.ifft2 if inverse else np.fft.fft2
        return _parts(f(_complex(re, im), axes=(-2, -1)))
    if len(re._ps) < 2:
        lx.refuse(op, f"of {re.shape}: the last two axes must be sample axes")
    re, im = _complex_last(re, im, inverse)
    r = len(re._ps)
    perm = tuple(range(r - 2)) + (r - 1, r - 2)
    re, im = _complex_last(lx.permute(re, perm), lx.permute(im, perm), inverse)
    return record((lx.permute(re, perm), lx.permute(im, perm)), "IFFT2" if inverse else "FFT2", MATH, {},
                  [(x[0], x[1])])


def fft2(x):
    """keras.ops.fft2 of (real, imag) over the last two axes"""
    return _two("fft2", x, False)


def ifft2(x):
    """keras.ops.ifft2 of (real, imag) over the last two axes"""
    return _two("ifft2", x, True)


def rfft(x, fft_length=None):
    """keras.ops.rfft of a real x along the last axis: (real, imag) of fft_length // 2 + 1 bins"""
    if not lx.sym(x):
        return _parts(np.fft.rfft(np.asarray(x, np.float64), n=fft_length, axis=-1))
    a = lx.sample_axis("rfft", x, -1)
    length = lx.static("rfft", x, a)
    n = int(fft_length or length)
    return record(_halves(_lin(x, rdft(length, n))), "RFFT", MATH, {"fft_length": fft_length}, [x])


def _irdft(f, n):
    """(re, im) of f bins -> n real samples (Hermitian: bins past n // 2 dropped, the imaginary part of bin 0 and
    of bin n / 2 ignored): (2F, n)"""
    k = np.arange(f)[:, None]
    ang = 2 * np.pi * k * np.arange(n)[None, :] / n
    w = np.where((k == 0) | (2 * k == n), 1.0, 2.0) * (k <= n // 2)
    return np.concatenate([w * np.cos(ang), -w * np.sin(ang)], axis=0) / n


def irfft(x, fft_length=None):
    """keras.ops.irfft of (real, imag) bins along the last axis: fft_length (default 2 * (bins - 1)) real samples"""
    re, im = _pair("irfft", x)
    f = re.shape[-1]
    n = int(fft_length or 2 * (f - 1))
    if not isinstance(re, KerasTensor):
        return np.fft.irfft(_complex(re, im), n=n, axis=-1).astype(np.float32)
    y = _lin(lx.concat([re, im], len(re._ps) - 1), _irdft(f, n))
    return record(y, "IRFFT", MATH, {"fft_length": fft_length}, [(re, im)])


def _window(op, window, sequence_length, fft_length):
    if lx.sym(window):
        lx.refuse(op, "a window that is a symbolic tensor (give an array)")
    return stft_window(op, window, sequence_length, fft_length)


def _check_stride(op, s):
    if not isinstance(s, (int, np.integer)) or isinstance(s, bool) or s <= 0:
        raise ValueError(f"`sequence_stride` must be a positive integer. Received: sequence_stride={s}")


def stft(x, sequence_length, sequence_stride, fft_length, window="hann", center=True):
    """keras.ops.stft of a real x along the last axis: (real, imag) (..., frames, fft_length // 2 + 1)"""
    _check_stride("stft", sequence_stride)
    n, s = int(fft_length), int(sequence_stride)
    win = _window("stft", window, sequence_length, n)
    cfg = {"sequence_length": sequence_length, "sequence_stride": s, "fft_length": n, "window": window,
           "center": center}
    if not lx.sym(x):
        x = np.asarray(x, np.float64)
        if center:
            x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(n // 2, n // 2)], mode="reflect")
        t = 1 + (x.shape[-1] - n) // s
        frames = x[..., np.arange(n)[None, :] + s * np.arange(t)[:, None]]
        return _parts(np.fft.rfft(frames * win, axis=-1))
    a = lx.sample_axis("stft", x, -1)
    length = lx.static("stft", x, a)
    pos = np.pad(np.arange(length), (n // 2, n // 2), mode="reflect") if center else np.arange(length)
    t = 1 + (len(pos) - n) // s
    if t < 1:
        raise ValueError(f"keras.ops.stft: a last axis of {length} is shorter than fft_length {n}")
    frames = lx.take(x, pos[np.arange(n)[None, :] + s * np.arange(t)[:, None]], a)
    return record(_halves(_lin(frames, rdft(n, n) * win[:, None])),
                  "STFT", MATH, cfg, [x])


def _ola_scale(win, t, n, s):
    """1 / the overlap-add of win ** 2 over t frames (where it is > 1e-10, else 1)"""
    norm = np.zeros(n + s * (t - 1))
    for i in range(t):
        norm[i * s:i * s + n] += win * win
    return 1.0 / np.where(norm > 1e-10, norm, 1.0)


def _ola(frames, s, length):
    """symbolic frames (B, ..., T, N) overlapped every s samples and summed: (B, ..., length)"""
    ps = frames._ps
    t, n = ps[-2], ps[-1]
    k = -(-n // s)
    if k * s != n:
        frames = pad(frames, [(0, 0)] * (len(ps)) + [(0, k * s - n)])
    r = len(ps)
    blocks = lx.reshape(frames, ps[:-1] + (k, s))
    total = None
    for c in range(k):
        piece = lx.reshape(lx.cut(blocks, r - 1, c, c + 1), ps[:-1] + (s,))
        piece = pad(piece, [(0, 0)] * (r - 1) + [(c, k - 1 - c), (0, 0)])
        total = piece if total is None else lx.add(total, piece)
    flat = lx.reshape(total, ps[:-2] + ((t + k - 1) * s,))
    return lx.cut(flat, r - 2, 0, length)


def istft(x, sequence_length, sequence_stride, fft_length, length=None, window="hann", center=True):
    """keras.ops.istft of (real, imag) frames (..., frames, bins): the overlap-added inverse transforms"""
    _check_stride("istft", sequence_stride)
    re, im = _pair("istft", x)
    n, s = int(fft_length), int(sequence_stride)
    win = _window("istft", window, sequence_length, n)
    t = re.shape[-2]
    if t is None or len(re.shape) < 2:
        raise ValueError(f"keras.ops.istft: x must be (..., frames, bins) with a static frame count, got {re.shape}")
    total = n + s * (t - 1)
    gain = win.sum() / (win.sum() if window is not None else s)
    scale = _ola_scale(win, t, n, s)
    start = n // 2 if center else 0
    end = start + int(length) if length is not None else total - n // 2 if center else total
    cfg = {"sequence_length": sequence_length, "sequence_stride": s, "fft_length": n, "length": length,
           "window": window, "center": center}
    if not isinstance(re, KerasTensor):
        frames = np.fft.irfft(_complex(re, im), n=n, axis=-1) * win * gain
        out = np.zeros(frames.shape[:-2] + (total,))
        for i in range(t):
            out[..., i * s:i * s + n] += frames[..., i, :]
        return (out * scale)[..., start:end].astype(np.float32)
    if len(re._ps) < 2:
        lx.refuse("istft", f"of {re.shape}: the frames and bins must be sample axes")
    f = re._ps[-1]
    frames = _lin(lx.concat([re, im], len(re._ps) - 1), _irdft(f, n) * (win * gain)[None, :])
    y = _ola(frames, s, total)
    end = min(end, total)   # as x[..., start:end] past the end
    y = lx.mul(lx.cut(y, len(y._ps) - 1, start, end), scale[start:end].astype(np.float32))
    return record(y, "ISTFT", MATH, cfg, [(re, im)])
