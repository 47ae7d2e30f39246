"""The constant matrices of Fourier transforms and spectrograms, in NumPy
(float64): scipy.signal.get_window's common windows (scipy is no dependency
of boundfit), keras.ops.stft's window, the real DFT of a frame and the mel
filter bank of Keras's MelSpectrogram. ops_fft.py, the STFT initializer and
the audio layers (layers/audio.py) share them."""

import numpy as np

# name -> the symmetric window of n points (scipy's sym=True)
_SYMMETRIC = {
    "hann": np.hanning, "hanning": np.hanning, "hamming": np.hamming, "blackman": np.blackman,
    "bartlett": np.bartlett, "boxcar": np.ones, "rectangular": np.ones, "ones": np.ones,
    "cosine": lambda n: np.sin(np.pi / n * (np.arange(n) + 0.5)),
}


def check_window_name(cls, window):
    """window as given when it is not a name, or a name get_window computes; ValueError naming `window` otherwise"""
    if isinstance(window, str) and window not in _SYMMETRIC:
        raise ValueError(f"{cls}: window {window!r} is not one boundfit computes (it has {sorted(_SYMMETRIC)}); "
                         "give the window as an array, e.g. scipy.signal.get_window(name, frame_length, periodic)")
    return window


def get_window(window, n, periodic=False):
    """scipy.signal.get_window(window, n, fftbins=periodic) for the names above: periodic is the symmetric window
    of n + 1 points without its last"""
    check_window_name("get_window", window)
    if n <= 1:
        return np.ones(max(int(n), 0))
    fn = _SYMMETRIC[window]
    return np.asarray(fn(n + 1)[:-1] if periodic else fn(n), np.float64)


def stft_window(op, window, sequence_length, fft_length):
    """keras.ops.stft's window (hann / hamming periodic, an array, or None: ones) zero-padded to fft_length in the
    middle"""
    L, n = int(sequence_length), int(fft_length)
    if n < L:
        raise ValueError(f"keras.ops.{op}: fft_length ({n}) must be >= sequence_length ({L})")
    if isinstance(window, str):
        if window not in ("hann", "hamming"):
            raise ValueError(f"keras.ops.{op}: window must be 'hann', 'hamming', an array or None, got {window!r}")
        win = get_window(window, L, periodic=True)
    elif window is None:
        win = np.ones(L)
    else:
        win = np.asarray(window, np.float64)
        if win.shape != (L,):
            raise ValueError(f"keras.ops.{op}: window must have shape ({L},), got {win.shape}")
    lp = (n - L) // 2
    return np.pad(win, (lp, n - L - lp))


def rdft(length, n):
    """x (length,) cut or zero-padded to n, then its n // 2 + 1 bins: (length, 2F) [C | -S]"""
    f = n // 2 + 1
    ang = 2 * np.pi * np.outer(np.arange(length), np.arange(f)) / n
    m = np.concatenate([np.cos(ang), -np.sin(ang)], axis=1)
    m[n:] = 0.0
    return m


def _hertz_to_mel(f):
    return 1127.0 * np.log(1.0 + f / 700.0)


def mel_matrix(num_mel_bins, num_spectrogram_bins, sampling_rate, lower_edge_hertz, upper_edge_hertz):
    """Keras's MelSpectrogram.linear_to_mel_weight_matrix (HTK's mel scale, triangles of peak 1, the DC bin
    zero): (num_spectrogram_bins, num_mel_bins), computed in float32 as Keras"""
    f32 = np.float32
    freqs = np.linspace(f32(0.0), f32(sampling_rate) / f32(2.0), num_spectrogram_bins, dtype=f32)[1:]
    bins_mel = _hertz_to_mel(freqs)[:, None].astype(f32)
    edges = np.linspace(_hertz_to_mel(f32(lower_edge_hertz)), _hertz_to_mel(f32(upper_edge_hertz)),
                        num_mel_bins + 2, dtype=f32)
    lower, center, upper = edges[None, :-2], edges[None, 1:-1], edges[None, 2:]
    lower_slopes = (bins_mel - lower) / (center - lower)
    upper_slopes = (upper - bins_mel) / (upper - center)
    m = np.maximum(f32(0.0), np.minimum(lower_slopes, upper_slopes))
    return np.pad(m, ((1, 0), (0, 0))).astype(f32)
