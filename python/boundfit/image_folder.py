"""image_dataset_from_directory, as Keras 3 defines it: the same files,
labels, subsets, order and class_names (folder_data.index_directory), and
batches of float32 images (batch, height, width, channels) decoded by
Pillow (which releases the GIL) in fit's worker threads and resized as
Keras's tf.data path resizes them (tf.image.resize, antialias=False), in
float32 as TensorFlow does: 'bilinear' and 'nearest' by TensorFlow's
half-pixel rule in C (_core.image_resize, straight into the batch, without
the GIL), 'area' by box overlaps, 'bicubic' by resize_bicubic's table of
Keys's cubic and the others as separable kernels (TensorFlow's
scale_and_translate spans and kernels) here in NumPy. A file Pillow cannot
read (corrupt, truncated) is a DataError naming it, or, with
skip_bad_files=True (a boundfit extension), left out of its batch with a
warning naming it."""

import numpy as np

from . import _core, folder_data

ALLOWLIST_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian", "mitchellcubic")

def _keys_table(a=-0.5, size=1024):
    """TensorFlow's resize_bicubic coefficients (resize_bicubic_op.cc InitCoeffsTable): (size + 1, 2) float32,
    Keys's cubic at i / size and at i / size + 1."""
    x = np.arange(size + 1, dtype=np.float64) / size
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    x1 = x + 1
    far = ((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a
    return np.stack([near, far], axis=1).astype(np.float32)


_KEYS = _keys_table()


def _bicubic_weights(n_in, n_out):
    """(n_out, n_in) float32 weights of tf.image.resize 'bicubic' (resize_bicubic, half-pixel centers): four taps
    from the 1024-step table, those outside the image dropped and the rest renormalized."""
    scale = np.float32(n_in) / np.float32(n_out)
    loc = (np.arange(n_out, dtype=np.float32) + np.float32(0.5)) * scale - np.float32(0.5)
    base = np.floor(loc).astype(np.int64)
    off = np.rint((loc - base.astype(np.float32)) * np.float32(1024)).astype(np.int64)
    taps = np.stack([_KEYS[off, 1], _KEYS[off, 0], _KEYS[1024 - off, 0], _KEYS[1024 - off, 1]], axis=1)
    idx = base[:, None] + np.arange(-1, 3)
    taps = np.where((idx >= 0) & (idx < n_in), taps, np.float32(0))
    total = taps.sum(axis=1, dtype=np.float32)
    taps = np.where(np.abs(total)[:, None] >= 1000 * np.finfo(np.float32).tiny,
                    taps * (np.float32(1) / total)[:, None], taps)
    w = np.zeros((n_out, n_in), np.float32)
    rows = np.repeat(np.arange(n_out), 4)
    np.add.at(w, (rows, np.clip(idx, 0, n_in - 1).ravel()), taps.ravel())
    return w


def _mitchell(x):
    return np.where(x >= 2, 0, np.where(x >= 1, (((-7 / 18) * x + 2) * x - 10 / 3) * x + 16 / 9,
                                        ((7 / 6) * x - 2) * x * x + 8 / 9))


def _lanczos(r):
    def k(x):
        px = np.pi * x
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.where(px < 1e-3, 1.0, r * np.sin(px) * np.sin(px / r) / (px * px))
        return np.where(x > r, 0, v)
    return k


# (kernel, radius), as TensorFlow's sampling_kernels.h
_KERNELS = {"mitchellcubic": (_mitchell, 2.0), "lanczos3": (_lanczos(3), 3.0),
            "lanczos5": (_lanczos(5), 5.0), "gaussian": (lambda x: np.where(x >= 1.5, 0, np.exp(-2 * x * x)), 1.5)}
_CHANNELS = {"grayscale": 1, "rgb": 3, "rgba": 4}
_MODES = {1: "L", 3: "RGB", 4: "RGBA"}
_C_RESIZE = ("bilinear", "nearest")   # resized by _core.image_resize; the others by _separable


def _pil():
    try:
        from PIL import Image  # optional dependency: pip install boundfit[image]
    except ImportError as e:
        raise ImportError("image_dataset_from_directory needs Pillow: pip install pillow "
                          "(or boundfit[image])") from e
    return Image


def _kernel_weights(n_in, n_out, interpolation):
    """(n_out, n_in) float32 weights of one axis: TensorFlow's spans without antialiasing (sample at
    (i + 0.5) * (1 / scale), taps within the kernel's radius, weights normalized), or, for 'area', each output
    pixel's box [i, i + 1) / scale's overlap with the input pixels."""
    scale = np.float32(n_out) / np.float32(n_in)
    src = np.arange(n_in, dtype=np.float32)
    if interpolation == "area":
        s = np.float32(n_in / n_out)
        lo = np.arange(n_out, dtype=np.float32)[:, None] * s
        w = np.clip(np.minimum(lo + s, src + 1) - np.maximum(lo, src), 0, None)
        return (w / s).astype(np.float32)
    if interpolation == "bicubic":
        return _bicubic_weights(n_in, n_out)
    kernel, radius = _KERNELS[interpolation]
    inv_scale = np.float32(1.0 / np.float64(scale))   # as TensorFlow rounds it: a tap at the radius is in or out
    f = (np.arange(n_out, dtype=np.float32) + np.float32(0.5)) * inv_scale
    start = np.clip(np.ceil(f - np.float32(radius) - np.float32(0.5)), 0, n_in - 1)
    end = np.clip(np.floor(f + np.float32(radius) - np.float32(0.5)), 0, n_in - 1) + 1
    inside = (src >= start[:, None]) & (src < end[:, None])
    w = np.where(inside, kernel(np.abs(src + np.float32(0.5) - f[:, None])), 0).astype(np.float32)
    total = w.sum(axis=1, keepdims=True)
    return np.where(np.abs(total) >= 1000 * np.finfo(np.float32).tiny, w / total, w).astype(np.float32)


def _separable(img, h, w, interpolation):
    wy = _kernel_weights(img.shape[0], h, interpolation)
    wx = _kernel_weights(img.shape[1], w, interpolation)
    rows = np.tensordot(wy, img.astype(np.float32), axes=(1, 0))        # (h, W, C)
    return np.einsum("ow,hwc->hoc", wx, rows).astype(np.float32)        # (h, w, C)


def resize(img, h, w, interpolation, out=None):
    """img (H, W, C) uint8 to (h, w, C) float32, written into `out` (any float32 (h, w, C) view) when given."""
    if out is None:
        out = np.empty((h, w, img.shape[2]), np.float32)
    if interpolation in _C_RESIZE:
        _core.image_resize(img, out, interpolation)
    elif img.shape[:2] == (h, w) and interpolation not in ("gaussian", "mitchellcubic"):   # interpolating: identity
        out[...] = img
    else:
        out[...] = _separable(img, h, w, interpolation)
    return out


def crop_box(height, width, th, tw):
    """Keras's smart_resize crop (float32 arithmetic, as its TensorFlow path): (top, left, rows, cols)."""
    ch = max(min(height, int(np.float32(width * th) / np.float32(tw))), 1)
    cw = max(min(width, int(np.float32(height * tw) / np.float32(th))), 1)
    return int(np.float32(height - ch) / np.float32(2)), int(np.float32(width - cw) / np.float32(2)), ch, cw


def pad_resize(img, th, tw, interpolation, out=None):
    """tf.image.resize_with_pad: scaled to fit inside (th, tw), centred, zeros around (into `out` when given)."""
    h, w = (np.float32(v) for v in img.shape[:2])
    ratio = max(w / np.float32(tw), h / np.float32(th))
    rh, rw = h / ratio, w / ratio
    top = max(0, int(np.floor((np.float32(th) - rh) / np.float32(2))))
    left = max(0, int(np.floor((np.float32(tw) - rw) / np.float32(2))))
    ih, iw = int(np.floor(rh)), int(np.floor(rw))
    if out is None:
        out = np.empty((th, tw, img.shape[2]), np.float32)
    out[...] = 0
    resize(img, ih, iw, interpolation, out[top:top + ih, left:left + iw])
    return out


class ImageFolderDataset(folder_data.FolderDataset):
    """Batches (images, labels) of an image folder, decoded per batch."""

    def __init__(self, paths, labels, *, image_size, num_channels, interpolation, crop_to_aspect_ratio,
                 pad_to_aspect_ratio, data_format, **kw):
        super().__init__(paths, labels, **kw)
        self.image_size, self.num_channels, self.interpolation = image_size, num_channels, interpolation
        self.crop, self.pad, self.data_format = crop_to_aspect_ratio, pad_to_aspect_ratio, data_format

    def decode(self, path, index):
        """One file as (height, width, channels) uint8, converted to the color mode as Keras converts it."""
        Image = _pil()
        try:
            with Image.open(path) as im:
                if im.mode != _MODES[self.num_channels]:
                    im = im.convert(_MODES[self.num_channels])
                else:
                    im.load()
                a = np.asarray(im)
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
            raise self.bad_file(path, index, e) from e
        return a[:, :, None] if a.ndim == 2 else a

    def load(self, path, index, out):
        """One file decoded and resized into out, a (th, tw, channels) float32 view of its batch row."""
        th, tw = self.image_size
        img = self.decode(path, index)
        if self.crop:
            top, left, ch, cw = crop_box(img.shape[0], img.shape[1], th, tw)
            resize(img[top:top + ch, left:left + cw], th, tw, self.interpolation, out)
        elif self.pad:
            pad_resize(img, th, tw, self.interpolation, out)
        else:
            resize(img, th, tw, self.interpolation, out)

    def read_batch(self, paths, index):
        th, tw = self.image_size
        c = self.num_channels
        shape = (c, th, tw) if self.data_format == "channels_first" else (th, tw, c)
        out = np.empty((len(paths),) + shape, np.float32)
        first = self.data_format == "channels_first"
        kept = self.each_file(paths, index, lambda p, j: self.load(p, index, out[j].transpose(1, 2, 0) if first
                                                                   else out[j]))
        return out[:len(kept)], kept


def _check_image_args(color_mode, image_size, interpolation, crop_to_aspect_ratio, pad_to_aspect_ratio,
                      data_format):
    if color_mode not in _CHANNELS:
        raise ValueError(f"color_mode must be 'rgb', 'rgba' or 'grayscale', got color_mode={color_mode!r}")
    if isinstance(image_size, int) and not isinstance(image_size, bool):
        image_size = (image_size, image_size)
    if (not isinstance(image_size, (list, tuple)) or len(image_size) != 2
            or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0 for v in image_size)):
        raise ValueError(f"image_size must be (height, width), two positive ints, got image_size={image_size!r}")
    interpolation = interpolation.lower() if isinstance(interpolation, str) else interpolation
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"interpolation must be one of {INTERPOLATIONS}, got interpolation={interpolation!r}")
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError("only one of crop_to_aspect_ratio and pad_to_aspect_ratio can be True")
    data_format = data_format or "channels_last"
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"data_format must be 'channels_last' or 'channels_first', got data_format={data_format!r}")
    return _CHANNELS[color_mode], tuple(int(v) for v in image_size), interpolation, data_format


def image_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None, color_mode="rgb",
                                 batch_size=32, image_size=(256, 256), shuffle=True, seed=None, validation_split=None,
                                 subset=None, interpolation="bilinear", follow_links=False,
                                 crop_to_aspect_ratio=False, pad_to_aspect_ratio=False, data_format=None,
                                 format="tf", verbose=True, workers=None, max_queue_size=None, skip_bad_files=False):
    """Keras 3's keras.utils.image_dataset_from_directory: a data set of the
    image files under `directory` (labels from its subfolders, a list, or
    none), read and decoded per batch by `workers` threads (default: up to
    4) at most `max_queue_size` batches ahead (default: 2 per worker), a
    queue the memory plan of fit holds. Returns one data set, or (training,
    validation) for subset='both'; each has class_names and file_paths.
    format: Keras's 'tf' / 'grain' both give boundfit's data set.
    skip_bad_files (boundfit's, not Keras's): a file Pillow cannot decode
    is left out of its batch with a warning naming it (the batch is one
    sample shorter; skipped_files lists them), instead of a DataError."""
    labels, label_mode = folder_data.check_args(labels, label_mode, class_names, validation_split, subset, shuffle,
                                                seed, "image")
    num_channels, image_size, interpolation, data_format = _check_image_args(
        color_mode, image_size, interpolation, crop_to_aspect_ratio, pad_to_aspect_ratio, data_format)
    if format not in ("tf", "grain"):
        raise ValueError(f"format must be 'tf' or 'grain', got format={format!r}")
    batch_size = folder_data.check_batch_size(batch_size)
    skip_bad_files = folder_data.check_skip(skip_bad_files)
    _pil()   # refused now, not in a worker
    if seed is None:
        seed = np.random.randint(1e6)
    paths, labs, class_names = folder_data.index_directory(directory, labels, ALLOWLIST_FORMATS, class_names,
                                                           shuffle, seed, follow_links, verbose)
    folder_data.check_binary(label_mode, class_names)
    out = [ImageFolderDataset(p, lab, label_mode=label_mode, num_classes=len(class_names) if class_names else 0,
                              class_names=class_names, batch_size=batch_size, shuffle=shuffle and training, seed=seed,
                              workers=workers, max_queue_size=max_queue_size, skip_bad_files=skip_bad_files, image_size=image_size,
                              num_channels=num_channels, interpolation=interpolation,
                              crop_to_aspect_ratio=crop_to_aspect_ratio, pad_to_aspect_ratio=pad_to_aspect_ratio,
                              data_format=data_format)
           for p, lab, training in folder_data.subsets(paths, labs, validation_split, subset, directory, "images",
                                                       ALLOWLIST_FORMATS)]
    return tuple(out) if subset == "both" else out[0]

