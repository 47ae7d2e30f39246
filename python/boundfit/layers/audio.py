"""STFTSpectrogram and MelSpectrogram as Keras 3 computes them, composed of
the engine's primitives (compose.py): the frames of a signal are one Gather
of constant positions (reflect- or zero-padded), each frame's Fourier
transform a Dense of the frame samples (no bias): STFTSpectrogram's
`real_kernel` / `imag_kernel` (trainable, the STFT initializer, kept as
(frame_length, 1, bins) as Keras) or MelSpectrogram's constant DFT matrix
(window folded in, a frozen Dense made in call(): no weight of the Keras
layer), then elementwise math, a frozen Dense of the mel filter bank, and
MelSpectrogram's top_db clip against the maximum over the whole batch (a
reduction over the batch axis, as Keras: micro-batches refuse it)."""

import math
import numbers
import warnings

import numpy as np

from .. import initializers, spectral
from .compose import KerasShapedWeights
from .core import Dense
from .cropping import ZeroPadding1D
from .emath import Binary, Unary
from .index import Gather
from .layer import Layer, keras_config
from .merge import Concatenate
from .reduce import Reduce
from .reshaping import Const, Permute, Reshape, Slice

_EPSILON = 1e-7   # keras.backend.epsilon()


def _int(cls, argument, v, low=1):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < low:
        raise ValueError(f"{cls}: {argument} must be an integer >= {low}, got {v!r}")
    return int(v)


def _real(cls, argument, v, low=None):
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or (low is not None and v < low):
        raise ValueError(f"{cls}: {argument} must be a finite number{f' >= {low}' if low is not None else ''}, got "
                         f"{v!r}")
    return float(v)


def _frames(x, positions, axis):
    """x's per-sample axis `axis` read at the (frames, samples) positions: Gather of a constant"""
    ids = Reshape(positions.shape)(Const(positions.reshape(-1).astype(np.float32))(x))
    return Gather(axis)([x, ids])


def _strided_frames(x, L, s, n):
    """n frames of L samples every s of x (T, C) per sample: (n, L, C). With k = ceil(L / s) <= 16, blocks of s
    samples side by side (Reshape, k Slices, Concatenate: no constant, so no weight Keras lacks); else a Gather"""
    t, c = x._ps
    k = -(-L // s)
    if k > 16:
        return _frames(x, np.arange(L)[None, :] + s * np.arange(n)[:, None], 0)
    need = (n - 1 + k) * s
    x = ZeroPadding1D((0, need - t))(x) if need > t else Slice((0, 0), (1, 1), (need, c))(x) if need < t else x
    blocks = Reshape((n - 1 + k, s, c))(x)
    parts = [Slice((j, 0, 0), (1, 1, 1), (n, s, c))(blocks) for j in range(k)]
    y = Concatenate(axis=2)(parts) if k > 1 else parts[0]                                # (n, k s, C)
    return y if k * s == L else Slice((0, 0, 0), (1, 1, 1), (n, L, c))(y)


def _fixed_dense(name, matrix):
    """a frozen Dense (no bias) whose kernel is the constant `matrix` (K, N): a product with a constant without a
    per-sample copy of it"""
    d = Dense(matrix.shape[1], use_bias=False, kernel_initializer=initializers.Constant(matrix.astype(np.float32)),
              name=name)
    d.trainable = False
    return d


class STFTSpectrogram(KerasShapedWeights, Layer):
    """Keras 3's `STFTSpectrogram(mode="log", frame_length=256, frame_step=None, fft_length=None, window="hann",
    periodic=False, scaling="density", padding="valid", expand_dims=False, data_format=None)`: each channel of a
    (time, channels) signal in frames of frame_length every frame_step samples ("valid": whole frames; "same":
    zero-padded as a convolution), times `real_kernel` and `imag_kernel` (frame_length, 1, fft_length // 2 + 1),
    the STFT initializer's trainable kernels; then the mode: "real", "imag", "angle", "stft" (both), "psd",
    "magnitude" or "log"."""
    _base = "stft_spectrogram"
    MODES = ("log", "magnitude", "psd", "real", "imag", "angle", "stft")

    def __init__(self, mode="log", frame_length=256, frame_step=None, fft_length=None, window="hann", periodic=False,
                 scaling="density", padding="valid", expand_dims=False, data_format=None, **kwargs):
        cls = "STFTSpectrogram"
        frame_length = _int(cls, "frame_length", frame_length)
        if frame_step is not None and (isinstance(frame_step, bool) or not isinstance(frame_step, numbers.Integral)
                                       or not 1 <= frame_step <= frame_length):
            raise ValueError(f"{cls}: `frame_step` should be a positive integer not greater than `frame_length`. "
                             f"Received frame_step={frame_step}, frame_length={frame_length}")
        if fft_length is not None and (isinstance(fft_length, bool) or not isinstance(fft_length, numbers.Integral)
                                       or fft_length < frame_length):
            raise ValueError(f"{cls}: `fft_length` should be not less than `frame_length`. Received "
                             f"fft_length={fft_length}, frame_length={frame_length}")
        if fft_length is not None and (fft_length & -fft_length) != fft_length:
            warnings.warn(f"`fft_length` is recommended to be a power of two. Received fft_length={fft_length}")
        if mode not in self.MODES:
            raise ValueError(f"{cls}: mode is invalid, it must be one of {', '.join(self.MODES)}. Received: "
                             f"mode={mode!r}")
        if scaling is not None and scaling not in ("density", "spectrum"):
            raise ValueError(f"{cls}: scaling is invalid, it must be None, 'density' or 'spectrum'. Received "
                             f"scaling={scaling!r}")
        if padding not in ("valid", "same"):
            raise ValueError(f"{cls}: padding is invalid, it should be 'valid' or 'same'. Received: padding={padding!r}")
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError(f"{cls}: data_format must be 'channels_last' or 'channels_first', got {data_format!r}")
        spectral.check_window_name(cls, window)
        super().__init__(**kwargs)
        self.mode, self.frame_length, self.frame_step, self.fft_length = mode, frame_length, frame_step, fft_length
        self._frame_step = int(frame_step or frame_length // 2)
        if self._frame_step < 1:
            raise ValueError(f"{cls}: frame_step (frame_length // 2 by default) must be >= 1, got frame_length="
                             f"{frame_length}")
        self._fft_length = int(fft_length or 2 ** int(math.ceil(math.log2(frame_length))))
        self.window = window.tolist() if isinstance(window, np.ndarray) else window
        self.periodic, self.scaling, self.padding = bool(periodic), scaling, padding
        self.expand_dims, self.data_format = bool(expand_dims), data_format or "channels_last"

    def build(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(f"STFTSpectrogram {self.name!r}: expects inputs of 3 axes (batch, time, channels), got "
                             f"shape {tuple(input_shape)}")
        bins = self._fft_length // 2 + 1
        self.real_kernel = self._kernel("real", bins) if self.mode != "imag" else None
        self.imag_kernel = self._kernel("imag", bins) if self.mode != "real" else None

    def _kernel(self, side, bins):
        d = Dense(bins, use_bias=False, name=f"{self.name}_{side}_kernel",
                  kernel_initializer=initializers.STFT(side, self.window, self.scaling, self.periodic))
        d._engine_shapes = [(self.frame_length, bins)]
        d._keras_var_shapes = [(self.frame_length, 1, bins)]
        return d

    def call(self, inputs):
        x = Permute((2, 1))(inputs) if self.data_format == "channels_first" else inputs   # (T, C)
        t, c = x._ps
        if t is None or c is None:
            raise ValueError(f"STFTSpectrogram {self.name!r}: needs a known length and channel count, got input "
                             f"shape {inputs.shape}")
        L, s = self.frame_length, self._frame_step
        if self.padding == "same":
            n = -(-t // s)
            total = max((n - 1) * s + L - t, 0)
            if total:
                x = ZeroPadding1D((total // 2, total - total // 2))(x)
        else:
            if t < L:
                raise ValueError(f"STFTSpectrogram {self.name!r}: a signal of {t} samples is shorter than "
                                 f"frame_length {L} (padding='valid')")
            n = (t - L) // s + 1
        frames = _strided_frames(x, L, s, n)                                             # (n, L, C)
        rows = Reshape((c * n, L))(Permute((3, 1, 2))(frames))                          # (C n, L)
        real = Reshape((c, n, -1))(self.real_kernel(rows)) if self.real_kernel is not None else None   # (C, n, F)
        imag = Reshape((c, n, -1))(self.imag_kernel(rows)) if self.imag_kernel is not None else None
        if self.mode in ("real", "imag"):
            return self._adjust(real if self.mode == "real" else imag)
        if self.mode == "angle":
            return self._adjust(Binary("arctan2")([imag, real]))
        if self.mode == "stft":
            return self._adjust(Concatenate(axis=-1)([real, imag]))
        power = Binary("add")([Unary("square")(real), Unary("square")(imag)])
        if self.mode == "psd":
            f = power._ps[-1]     # the bins but the first and last doubled (Keras: power + pad(power[1:-1]))
            return self._adjust(Concatenate(axis=-1)([_bins(power, 0, 1), Unary("multiply", 2.0)(
                _bins(power, 1, f - 1)), _bins(power, f - 1, f)]) if f > 2 else power)
        mag = Unary("sqrt")(Unary("maximum", _EPSILON)(power))
        return self._adjust(mag if self.mode == "magnitude" else Unary("log")(Unary("maximum", _EPSILON)(mag)))

    def _adjust(self, y):
        """(C, n, F) per sample in Keras's output layout"""
        c, n, f = y._ps
        if self.data_format == "channels_last":
            return Permute((2, 3, 1))(y) if self.expand_dims else Reshape((n, c * f))(Permute((2, 1, 3))(y))
        return y if self.expand_dims else Reshape((c * f, n))(Permute((1, 3, 2))(y))


def _bins(y, start, stop):
    """y (C, n, F) per sample, bins start..stop"""
    c, n, _ = y._ps
    return Slice((0, 0, start), (1, 1, 1), (c, n, stop - start))(y)


class MelSpectrogram(Layer):
    """Keras 3's `MelSpectrogram(fft_length=2048, sequence_stride=512, sequence_length=None, window="hann",
    sampling_rate=16000, num_mel_bins=128, min_freq=20.0, max_freq=None, power_to_db=True, top_db=80.0,
    mag_exp=2.0, min_power=1e-10, ref_power=1.0)`: of (batch, samples) signals, keras.ops.stft's frames (centered,
    reflect-padded), |stft| ** mag_exp, the mel filter bank, then in decibels 10 log10(max(S, min_power) /
    max(|ref_power|, min_power)) clipped below at the batch's maximum less top_db; (batch, num_mel_bins, frames)."""
    _base = "mel_spectrogram"

    def __init__(self, fft_length=2048, sequence_stride=512, sequence_length=None, window="hann",
                 sampling_rate=16000, num_mel_bins=128, min_freq=20.0, max_freq=None, power_to_db=True, top_db=80.0,
                 mag_exp=2.0, min_power=1e-10, ref_power=1.0, **kwargs):
        cls = "MelSpectrogram"
        self.fft_length = _int(cls, "fft_length", fft_length)
        self.sequence_stride = _int(cls, "sequence_stride", sequence_stride)
        self.sequence_length = _int(cls, "sequence_length", sequence_length or fft_length)
        if self.fft_length < self.sequence_length:
            raise ValueError(f"{cls}: `fft_length` must be greater than or equal to `sequence_length`. Received: "
                             f"`sequence_length`={self.sequence_length}, `fft_length`={self.fft_length}.")
        if window is not None and not isinstance(window, str):
            window = np.asarray(window, np.float64)
            if window.shape != (self.sequence_length,) or not np.isfinite(window).all():
                raise ValueError(f"{cls}: window must be 'hann', 'hamming', None or {self.sequence_length} finite "
                                 f"numbers (sequence_length), got shape {window.shape}")
            window = window.tolist()
        elif window not in (None, "hann", "hamming"):
            raise ValueError(f"{cls}: window must be 'hann', 'hamming', an array or None, got {window!r}")
        self.window = window
        self.sampling_rate = _real(cls, "sampling_rate", sampling_rate, 0.0)
        self.sampling_rate = int(sampling_rate) if float(sampling_rate).is_integer() else float(sampling_rate)
        self.num_mel_bins = _int(cls, "num_mel_bins", num_mel_bins)
        self.min_freq = _real(cls, "min_freq", min_freq, 0.0)
        self.max_freq = max_freq or int(self.sampling_rate / 2)
        _real(cls, "max_freq", self.max_freq, 0.0)
        if not self.max_freq > self.min_freq:
            raise ValueError(f"{cls}: max_freq ({self.max_freq}) must be greater than min_freq ({self.min_freq})")
        self.power_to_db = bool(power_to_db)
        self.top_db = _real(cls, "top_db", top_db, 0.0)
        self.mag_exp = _real(cls, "mag_exp", mag_exp)
        self.min_power = _real(cls, "min_power", min_power, 0.0)
        self.ref_power = _real(cls, "ref_power", ref_power)
        super().__init__(**kwargs)

    def call(self, inputs):
        if len(inputs._ps) != 1 or inputs._ps[0] is None:
            raise ValueError(f"MelSpectrogram {self.name!r}: expects (batch, samples) signals of a known length, got "
                             f"shape {inputs.shape}")
        t, n, s = inputs._ps[0], self.fft_length, self.sequence_stride
        if t < n // 2 + 1:
            raise ValueError(f"MelSpectrogram {self.name!r}: a signal of {t} samples is too short for fft_length {n} "
                             f"(reflect padding needs more than {n // 2})")
        pos = np.pad(np.arange(t), (n // 2, n // 2), mode="reflect")
        frames = 1 + (len(pos) - n) // s
        x = _frames(inputs, pos[np.arange(n)[None, :] + s * np.arange(frames)[:, None]], 0)   # (frames, n)
        win = spectral.stft_window("stft", self.window, self.sequence_length, n)
        ri = _fixed_dense(f"{self.name}_dft", spectral.rdft(n, n) * win[:, None])(x)         # (frames, 2F)
        f = n // 2 + 1
        power = Reduce("sum", (2,))(Reshape((frames, 2, f))(Unary("square")(ri)))            # (frames, F)
        spec = Unary("power", self.mag_exp)(Unary("sqrt")(power))
        mel = _fixed_dense(f"{self.name}_mel", spectral.mel_matrix(self.num_mel_bins, f, self.sampling_rate,
                                                                  self.min_freq, self.max_freq))(spec)
        if self.power_to_db:
            ref = 10.0 * np.log10(max(abs(np.float32(self.ref_power)), np.float32(self.min_power)))
            db = Unary("subtract", float(ref))(Unary("multiply", 10.0)(Unary("log10")(
                Unary("maximum", self.min_power)(mel))))
            top = Unary("subtract", self.top_db)(Reduce("max", None, keepdims=True)(db))   # over the whole batch
            mel = Binary("maximum")([db, top])
        return Permute((2, 1))(mel)                                                              # (mel bins, frames)


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(STFTSpectrogram)
def _stft_spectrogram_config(l):
    return dict(mode=l.mode, frame_length=l.frame_length, frame_step=l.frame_step, fft_length=l.fft_length,
                window=l.window, periodic=l.periodic, scaling=l.scaling, padding=l.padding,
                data_format=l.data_format, expand_dims=l.expand_dims)


@keras_config(MelSpectrogram)
def _mel_spectrogram_config(l):
    return dict(fft_length=l.fft_length, sequence_stride=l.sequence_stride, sequence_length=l.sequence_length,
                window=l.window, sampling_rate=l.sampling_rate, num_mel_bins=l.num_mel_bins, min_freq=l.min_freq,
                max_freq=l.max_freq, power_to_db=l.power_to_db, top_db=l.top_db, mag_exp=l.mag_exp,
                min_power=l.min_power, ref_power=l.ref_power)
