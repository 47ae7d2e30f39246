"""Keras 3's MixUp, CutMix and MaxNumBoundingBoxes: data-side layers, computed
in NumPy on a batch of data (an array of images, or Keras's dict {"images",
"labels", "segmentation_masks", "bounding_boxes"}), as Keras's call() on data
does: get_random_transformation, then transform_images / transform_labels /
... with Keras's keys, so a transformation Keras drew can be applied by
boundfit. MixUp and CutMix mix each sample with another of the batch (a
permutation of it) and a boundfit graph computes each sample from its own
input only: on a model's symbolic tensors they are refused by name (mix the
batches in the data, e.g. a PyDataset's __getitem__). The draws are NumPy's
(seeded by the layer's seed), not JAX's."""

import numbers

import numpy as np

from .args import _data_format, _seed
from .image_aug import factor_pair
from .layer import Layer, keras_config
from .node import KerasTensor

_KEYS = ("images", "labels", "segmentation_masks", "bounding_boxes")


def _symbolic(data):
    vals = data.values() if isinstance(data, dict) else [data]
    return any(isinstance(v, KerasTensor) for v in vals)


class _DataLayer(Layer):
    """the call of Keras's BaseImagePreprocessingLayer on data, in NumPy; training=True unless told"""
    _keras_records_training = True
    _in_model = "it is a data-side layer"   # why it is refused on a model's tensors

    def __init__(self, seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        _data_format(type(self).__name__, data_format)
        self.seed = _seed(type(self).__name__, seed)
        self.data_format = "channels_last"
        self._rng = np.random.default_rng(self.seed)

    def __call__(self, data, training=True):
        if _symbolic(data):
            raise NotImplementedError(
                f"keras.layers.{type(self).__name__} inside a boundfit model is not supported: {self._in_model}. "
                "Call it on the data instead (arrays or Keras's dict {'images', 'labels'}), e.g. in a "
                "PyDataset's __getitem__, before fit")
        if isinstance(data, dict):
            extra = sorted(set(data) - set(_KEYS))
            if extra or "images" not in data:
                raise ValueError(f"{type(self).__name__}: a dict of data takes the keys {list(_KEYS)} (images "
                                 f"required), got {sorted(data)}")
        t = self.get_random_transformation(data, training=training)
        if not isinstance(data, dict):
            return self.transform_images(data, t, training)
        out = dict(data)
        out["images"] = self.transform_images(data["images"], t, training)
        if "labels" in data:
            out["labels"] = self.transform_labels(data["labels"], t, training)
        if "segmentation_masks" in data:
            out["segmentation_masks"] = self.transform_segmentation_masks(data["segmentation_masks"], t, training)
        if "bounding_boxes" in data:
            out["bounding_boxes"] = self.transform_bounding_boxes(data["bounding_boxes"], t, training)
        return out

    def get_random_transformation(self, data, training=True, seed=None):
        return None

    def transform_images(self, images, transformation=None, training=True):
        return np.asarray(images, np.float32)

    def transform_labels(self, labels, transformation=None, training=True):
        return labels

    def transform_segmentation_masks(self, masks, transformation=None, training=True):
        return self.transform_images(masks, transformation, training)

    def transform_bounding_boxes(self, bounding_boxes, transformation=None, training=True):
        raise NotImplementedError(f"keras.layers.{type(self).__name__}: bounding boxes are not supported by "
                                  "boundfit's layer (Keras's JAX backend: "
                                  + ("not implemented either)" if isinstance(self, CutMix) else
                                     "it concatenates each sample's boxes with its partner's); transform them "
                                     "in the data"))

    def _rng_of(self, seed):
        return self._rng if seed is None else np.random.default_rng(_seed(type(self).__name__, seed))


def _images(data):
    return np.asarray(data["images"] if isinstance(data, dict) else data, np.float32)


class _Mix(_DataLayer):
    _in_model = ("it mixes each image with another image of the batch (a permutation of the batch), and a "
                 "boundfit graph computes each sample from its own input only")

    def _labels(self, labels, t, training):
        """Keras's: w * labels + (1 - w) * labels[permutation], w one per sample"""
        labels = np.asarray(labels, np.float32)
        if not training or t is None:
            return labels
        w = np.asarray(t["mix_weight"], np.float32).reshape(-1, 1)
        return (w * labels + (1.0 - w) * np.take(labels, np.asarray(t["permutation_order"]), axis=0)
                ).astype(np.float32)


class MixUp(_Mix):
    """Keras 3's `MixUp(alpha=0.2, seed=None)` on data: images w * x + (1 - w) * x[p] and labels alike, w drawn
    per sample from Beta(alpha, alpha), p a permutation of the batch."""
    _base = "mix_up"

    def __init__(self, alpha=0.2, data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not alpha > 0:
            raise ValueError(f"MixUp: alpha must be a positive number, got {alpha!r}")
        self.alpha = alpha

    def get_random_transformation(self, data, training=True, seed=None):
        """Keras's keys: mix_weight (batch,), permutation_order (batch,) int32"""
        x = _images(data)
        n = 1 if x.ndim == 3 else len(x)
        rng = self._rng_of(seed)
        return {"mix_weight": rng.beta(self.alpha, self.alpha, n).astype(np.float32),
                "permutation_order": rng.permutation(n).astype(np.int32)}

    def transform_images(self, images, transformation=None, training=True):
        x = np.asarray(images, np.float32)
        if not training or transformation is None:
            return x
        w = np.asarray(transformation["mix_weight"], np.float32).reshape(-1, 1, 1, 1)
        one = x.ndim == 3
        x4 = x[None] if one else x
        y = (w * x4 + (1.0 - w) * np.take(x4, np.asarray(transformation["permutation_order"]), axis=0))
        return (y[0] if one else y).astype(np.float32)

    def transform_labels(self, labels, transformation=None, training=True):
        return self._labels(labels, transformation, training)


class CutMix(_Mix):
    """Keras 3's `CutMix(factor=1.0, seed=None)` on data: a rectangle of each image (sides sqrt(1 - w) of the
    image's, at a uniform position; w ~ Beta(a, a), a ~ U[factor] + 1e-6 for the batch) replaced by the same
    rectangle of image p; labels mixed by the area kept."""
    _base = "cut_mix"

    def __init__(self, factor=1.0, seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_pair("CutMix", factor, (0, 1))

    def get_random_transformation(self, data, training=True, seed=None):
        """Keras's keys: permutation_order (batch,) int32, batch_masks (batch, H, W, C) bool, mix_weight
        (batch, 1, 1, 1) (the area kept); None outside training or for one image"""
        x = _images(data)
        if not training or x.ndim == 3:
            return None
        n, h, w, c = x.shape
        rng = self._rng_of(seed)
        a = np.float32(rng.uniform(*self.factor) + 1e-6)
        ratio = np.sqrt(1.0 - rng.beta(a, a, n).astype(np.float32))

        def bounds(length):
            crop = ratio * np.float32(length)
            start = rng.uniform(0, 1, n).astype(np.float32) * (np.float32(length) - crop)
            return start, start + crop
        (x0, x1), (y0, y1) = bounds(w), bounds(h)
        gy, gx = np.meshgrid(np.arange(h, dtype=np.float32), np.arange(w, dtype=np.float32), indexing="ij")
        r = lambda v: v[:, None, None, None]   # noqa: E731
        masks = ((gx[None, :, :, None] >= r(x0)) & (gx[None, :, :, None] < r(x1))
                 & (gy[None, :, :, None] >= r(y0)) & (gy[None, :, :, None] < r(y1)))
        return {"permutation_order": rng.permutation(n).astype(np.int32),
                "batch_masks": np.repeat(masks, c, axis=3),
                "mix_weight": r(1.0 - (x1 - x0) * (y1 - y0) / np.float32(w * h)).astype(np.float32)}

    def transform_images(self, images, transformation=None, training=True):
        x = np.asarray(images, np.float32)
        if not training or transformation is None:
            return x
        t = transformation
        return np.where(np.asarray(t["batch_masks"], bool), np.take(x, np.asarray(t["permutation_order"]), axis=0),
                        x).astype(np.float32)

    def transform_labels(self, labels, transformation=None, training=True):
        return self._labels(labels, transformation, training)


class MaxNumBoundingBoxes(_DataLayer):
    """Keras 3's `MaxNumBoundingBoxes(max_number, fill_value=-1, bounding_box_format=None)` on data: each sample's
    bounding boxes (boxes (batch, n, 4), labels (batch, n)) cut to max_number or padded with fill_value; images,
    labels and masks unchanged. Not random: applied outside training too."""
    _base = "max_num_bounding_boxes"
    _in_model = "boundfit's models take no bounding boxes"

    def __init__(self, max_number, fill_value=-1, bounding_box_format=None, **kwargs):
        super().__init__(**kwargs)
        for v, arg in ((max_number, "max_number"), (fill_value, "fill_value")):
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or v != int(v):
                raise ValueError(f"MaxNumBoundingBoxes: {arg} must be an integer, got {v!r}")
        if int(max_number) < 1:
            raise ValueError(f"MaxNumBoundingBoxes: max_number must be at least 1, got {max_number!r}")
        if bounding_box_format is not None and not isinstance(bounding_box_format, str):
            raise ValueError(f"MaxNumBoundingBoxes: bounding_box_format must be a string, got "
                             f"{bounding_box_format!r}")
        self.max_number, self.fill_value = int(max_number), int(fill_value)
        self.bounding_box_format = bounding_box_format

    def __call__(self, data, training=True):
        if isinstance(data, dict) and "bounding_boxes" in data and not self.bounding_box_format:
            raise ValueError("MaxNumBoundingBoxes: bounding_boxes were given without a bounding_box_format; pass "
                             "bounding_box_format='xyxy' (or the boxes' format) to the layer")
        return super().__call__(data, training)

    def transform_labels(self, labels, transformation=None, training=True):
        return np.asarray(labels)

    def transform_bounding_boxes(self, bounding_boxes, transformation=None, training=True):
        """Keras's: boxes[:, :max_number] and labels[:, :max_number], padded with fill_value to max_number"""
        if not isinstance(bounding_boxes, dict) or set(bounding_boxes) - {"boxes", "labels"} or \
                not {"boxes", "labels"} <= set(bounding_boxes):
            raise ValueError("MaxNumBoundingBoxes: bounding_boxes must be a dict of 'boxes' (batch, n, 4) and "
                             f"'labels' (batch, n), got {bounding_boxes!r:.200}")
        boxes, labels = np.asarray(bounding_boxes["boxes"]), np.asarray(bounding_boxes["labels"])
        if boxes.ndim != 3 or boxes.shape[2] != 4 or labels.shape != boxes.shape[:2]:
            raise ValueError(f"MaxNumBoundingBoxes: bounding_boxes needs dense boxes (batch, n, 4) and labels "
                             f"(batch, n), got {boxes.shape} and {labels.shape}")
        pad = max(self.max_number - boxes.shape[1], 0)
        out = dict(bounding_boxes)
        out["boxes"] = np.pad(boxes[:, :self.max_number], ((0, 0), (0, pad), (0, 0)),
                              constant_values=self.fill_value)
        out["labels"] = np.pad(labels[:, :self.max_number], ((0, 0), (0, pad)), constant_values=self.fill_value)
        return out


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(MixUp)
def _mix_up_config(l):
    return dict(data_format="channels_last", alpha=l.alpha, seed=l.seed)


@keras_config(CutMix)
def _cut_mix_config(l):
    return dict(data_format="channels_last", factor=list(l.factor), seed=l.seed)


@keras_config(MaxNumBoundingBoxes)
def _max_num_bounding_boxes_config(l):
    cfg = dict(data_format="channels_last", max_number=l.max_number)
    if l.bounding_box_format is not None:
        cfg["bounding_box_format"] = l.bounding_box_format
    return cfg
