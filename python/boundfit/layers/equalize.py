"""Keras 3's Equalization: per-channel histogram equalization, a data-side
layer in NumPy (batch_mix.py's base). Keras's code (JAX backend) counts each
channel's histogram over the whole batch, not per image, so one image's
output depends on the others: a boundfit graph computes each sample from its
own input, and inside a model the layer is refused by name (equalize in the
data). On data it is Keras's formula step by step in float32 / int32: values
to the 0-255 scale, bin int((x - 0) * (bins - 1) / 255) clipped, cdf, the
lookup table round((cdf - cdf_min) * 255 / (cdf[-1] - cdf_min)) clipped to
[0, 255] at bin int(clip(x / 255 * (bins - 1))), a channel with one bin or
none left as it is, then back to value_range."""

import numbers

import numpy as np

from .batch_mix import _DataLayer
from .image_aug import value_range_of
from .layer import keras_config


def _scale(x, src, dst):
    """Keras's _scale_values: x * scale + offset, the two computed in Python, applied in float32"""
    scale = (dst[1] - dst[0]) / (src[1] - src[0])
    return x * np.float32(scale) + np.float32(dst[0] - src[0] * scale)


class Equalization(_DataLayer):
    """Keras 3's `Equalization(value_range=(0, 255), bins=256)` on data: each channel's values mapped through
    the cumulative histogram of that channel over the batch (Keras's JAX code), in fit or on data
    (training=True); the identity with training=False."""
    _base = "equalization"
    _in_model = ("Keras's code counts each channel's histogram over the whole batch, so each image's output "
                 "depends on the other images of the batch, and a boundfit graph computes each sample from its own "
                 "input only")

    def __init__(self, value_range=(0, 255), bins=256, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.value_range = value_range_of("Equalization", value_range)
        if self.value_range[0] == self.value_range[1]:
            raise ValueError(f"Equalization: value_range must be two different numbers, got {value_range!r}")
        if isinstance(bins, bool) or not isinstance(bins, numbers.Integral) or bins < 2:
            raise ValueError(f"Equalization: bins must be an integer of at least 2, got {bins!r}")
        self.bins = int(bins)

    def _channel(self, c):
        """one channel of the batch, any shape, on the 0-255 scale"""
        n = self.bins
        idx = np.clip(((c - np.float32(0)) * np.float32(n - 1) / np.float32(255)).astype(np.int32), 0, n - 1)
        hist = np.bincount(idx.ravel(), minlength=n).astype(np.int32)
        if np.count_nonzero(hist) <= 1:
            return c
        cdf = np.cumsum(hist, dtype=np.int32)
        cdf_min = cdf[np.argmax(cdf > 0)]
        den = cdf[-1] - cdf_min
        den = np.int32(1) if den == 0 else den
        lut = np.clip(np.round(((cdf - cdf_min) * np.int32(255)).astype(np.float32) / np.float32(den)), 0, 255)
        at = np.clip(c / np.float32(255.0) * np.float32(n - 1), 0, n - 1).astype(np.int32)
        return lut.astype(np.float32)[at]

    def transform_images(self, images, transformation=None, training=True):
        x = np.asarray(images, np.float32)
        if not training:
            return x
        vr = tuple(self.value_range)
        planes = [_scale(self._channel(_scale(x[..., i], vr, (0, 255))), (0, 255), vr) for i in range(x.shape[-1])]
        return np.stack(planes, axis=-1).astype(np.float32)

    def transform_segmentation_masks(self, masks, transformation=None, training=True):
        return masks

    def transform_bounding_boxes(self, bounding_boxes, transformation=None, training=True):
        return bounding_boxes


@keras_config(Equalization)
def _equalization_config(l):
    return dict(data_format="channels_last", bins=l.bins, value_range=list(l.value_range))
