"""keras.utils.bounding_boxes on NumPy arrays, as Keras computes them
(keras/src/layers/preprocessing/image_preprocessing/bounding_boxes/): format
conversion through xyxy, clipping, crop / pad, the affine transform of
boxes, anchor delta encoding / decoding, IoU and CIoU. Boxes are (N, 4) or
(batch, N, 4); a dict {"boxes", "labels"} where Keras takes one. Symbolic
tensors are refused by name (these are data-pipeline helpers, not graph ops)."""

import functools
import math

import numpy as np

from .backend import epsilon
from .errors import OpNotSupportedError
from .layers.node import KerasTensor

SUPPORTED_FORMATS = ("xyxy", "yxyx", "xywh", "center_xywh", "center_yxhw",
                     "rel_xyxy", "rel_yxyx", "rel_xywh", "rel_center_xywh")


def _arrays_only(fn):
    """fn on arrays; a symbolic tensor among its arguments (or in a dict of them) refused by name"""
    where = "keras.utils.bounding_boxes" if fn.__module__.endswith("bounding_boxes") else "keras.visualization"

    @functools.wraps(fn)
    def call(*args, **kwargs):
        for v in (*args, *kwargs.values()):
            for x in (v.values() if isinstance(v, dict) else [v]):
                if isinstance(x, KerasTensor):
                    raise OpNotSupportedError(
                        f"{where}.{fn.__name__} computes on arrays (NumPy), not on symbolic "
                        "tensors: call it on the data (in the input pipeline), not inside a model")
        return fn(*args, **kwargs)
    call._boundfit_arrays_only = True
    return call


def _split(b):
    return [b[..., i:i + 1] for i in range(4)]


def _cat(*parts):
    return np.concatenate(parts, axis=-1)


def _to_xyxy(b, source, h, w):
    """boxes of format source (rel_ stripped where both ends are relative) to absolute xyxy"""
    a0, a1, a2, a3 = _split(b)
    rel = source.startswith("rel_")
    base = source[4:] if rel else source
    sx, sy = (w, h) if rel else (1, 1)
    if base == "xyxy":
        out = (a0, a1, a2, a3)
    elif base == "yxyx":
        out = (a1, a0, a3, a2)
    elif base == "xywh":
        out = (a0, a1, a0 + a2, a1 + a3)
    elif base == "center_xywh":
        out = (a0 - a2 / 2.0, a1 - a3 / 2.0, a0 + a2 / 2.0, a1 + a3 / 2.0)
    else:   # center_yxhw
        out = (a1 - a3 / 2.0, a0 - a2 / 2.0, a1 + a3 / 2.0, a0 + a2 / 2.0)
    if not rel:
        return _cat(*out)
    return _cat(out[0] * sx, out[1] * sy, out[2] * sx, out[3] * sy)


def _from_xyxy(b, target, h, w):
    x1, y1, x2, y2 = _split(b)
    if target == "xyxy":
        return b
    if target == "yxyx":
        return _cat(y1, x1, y2, x2)
    if target == "xywh":
        return _cat(x1, y1, x2 - x1, y2 - y1)
    if target in ("center_xywh", "center_yxhw"):
        cx, cy = x1 + (x2 - x1) / 2.0, y1 + (y2 - y1) / 2.0
        return _cat(cx, cy, x2 - x1, y2 - y1) if target == "center_xywh" else _cat(cy, cx, y2 - y1, x2 - x1)
    if target == "rel_xyxy":
        return _cat(x1 / w, y1 / h, x2 / w, y2 / h)
    if target == "rel_yxyx":
        return _cat(y1 / h, x1 / w, y2 / h, x2 / w)
    if target == "rel_xywh":
        return _cat(x1 / w, y1 / h, (x2 - x1) / w, (y2 - y1) / h)
    return _cat((x1 + (x2 - x1) / 2.0) / w, (y1 + (y2 - y1) / 2.0) / h, (x2 - x1) / w, (y2 - y1) / h)


@_arrays_only
def convert_format(boxes, source, target, height=None, width=None, dtype="float32"):
    """Keras's convert_format: boxes (..., 4) from format `source` to `target` (case-insensitive, one of
    SUPPORTED_FORMATS); a dict's "boxes" converted in place and the dict returned, as Keras does"""
    if isinstance(boxes, dict):
        boxes["boxes"] = convert_format(boxes["boxes"], source=source, target=target, height=height, width=width,
                                        dtype=dtype)
        return boxes
    b = np.asarray(boxes)
    if b.ndim == 0 or b.shape[-1] != 4:
        raise ValueError(f"`boxes` must be a tensor with the last dimension of 4. Received: boxes.shape={b.shape}")
    for name, fmt in (("source", source), ("target", target)):
        if not isinstance(fmt, str) or fmt.lower() not in SUPPORTED_FORMATS:
            raise ValueError(f"Invalid `{name}` format {fmt!r}. Supported formats: {SUPPORTED_FORMATS}")
    source, target = source.lower(), target.lower()
    if (source.startswith("rel_") or target.startswith("rel_")) and (width is None or height is None):
        raise ValueError(f"convert_format() must receive `height` and `width` transforming between relative and "
                         f"absolute formats: source={source!r}, target={target!r}, height={height}, width={width}")
    b = b.astype(dtype)
    if source == target:
        return b
    h = None if height is None else np.asarray(height).astype(dtype)
    w = None if width is None else np.asarray(width).astype(dtype)
    if source.startswith("rel_") and target.startswith("rel_"):
        source, target = source[4:], target[4:]
    return _from_xyxy(_to_xyxy(b, source, h, w), target, h, w)


def _xyxy_only(fn, fmt):
    if fmt != "xyxy":
        raise NotImplementedError(f"keras.utils.bounding_boxes.{fn}: bounding_box_format={fmt!r}: Keras takes "
                                  "'xyxy' only here; convert with convert_format(boxes, fmt, 'xyxy') first")


@_arrays_only
def clip_to_image_size(bounding_boxes, height=None, width=None, bounding_box_format="xyxy"):
    """Keras's clip_to_image_size: a dict's boxes (xyxy: to [0, width] x [0, height]; rel_xyxy: to [0, 1]);
    labels of boxes left with no area become -1. A new dict is returned."""
    if bounding_box_format not in ("xyxy", "rel_xyxy"):
        raise NotImplementedError(f"clip_to_image_size: bounding_box_format={bounding_box_format!r}: Keras takes "
                                  "'xyxy' or 'rel_xyxy'; convert with convert_format first")
    if not isinstance(bounding_boxes, dict) or "boxes" not in bounding_boxes:
        raise ValueError(f"`bounding_boxes` must be a dict with a 'boxes' key, got {type(bounding_boxes).__name__}")
    if bounding_box_format == "xyxy" and (height is None or width is None):
        raise ValueError("`height` and `width` must be set if `format='xyxy'`.")
    boxes = np.asarray(bounding_boxes["boxes"])
    labels = bounding_boxes.get("labels", None)
    hi_x, hi_y = ((np.asarray(width).astype(boxes.dtype), np.asarray(height).astype(boxes.dtype))
                  if bounding_box_format == "xyxy" else (1.0, 1.0))
    x1, y1, x2, y2 = _split(boxes)
    boxes = _cat(np.clip(x1, 0, hi_x), np.clip(y1, 0, hi_y), np.clip(x2, 0, hi_x), np.clip(y2, 0, hi_y))
    if labels is not None:
        x1, y1, x2, y2 = _split(boxes)
        areas = np.squeeze((x2 - x1) * (y2 - y1), axis=-1)
        labels = np.where(areas > 0, np.asarray(labels), -1)
    result = bounding_boxes.copy()
    result["boxes"] = boxes
    if labels is not None:
        result["labels"] = labels
    return result


def _inverse_affine_matrix(cx, cy, angle, tx, ty, scale, shear_x, shear_y, height, width):
    """(batch, 3, 3): the inverse of the affine transform, as Keras (TF's _get_inverse_affine_matrix)"""
    dt = angle.dtype
    angle, shear_x, shear_y = -angle, -shear_x, -shear_y
    cx = np.multiply(cx, width - 1, dtype=dt)
    cy = np.multiply(cy, height - 1, dtype=dt)
    rot = angle * dt.type(1.0 / 180.0 * math.pi)
    tx = np.multiply(-tx, width - 1, dtype=dt)
    ty = np.multiply(-ty, height - 1, dtype=dt)
    sx = shear_x * dt.type(1.0 / 180.0 * math.pi)
    sy = shear_y * dt.type(1.0 / 180.0 * math.pi)
    cos_sy, tan_sx = np.cos(sy), np.tan(sx)
    a = np.cos(rot - sy) / cos_sy
    b = a * tan_sx + np.sin(rot)
    c = -np.sin(rot - sy) / cos_sy
    d = np.cos(rot) - c * tan_sx
    a0, a1, b0, b1 = d * scale, -b * scale, -c * scale, a * scale
    a2 = cx - a0 * (cx + tx) - a1 * (cy + ty)
    b2 = cy - b0 * (cx + tx) - b1 * (cy + ty)
    n = angle.shape[0]
    m = np.stack([a0, a1, a2, b0, b1, b2, np.zeros(n, dt), np.zeros(n, dt), np.ones(n, dt)], axis=-1)
    return m.reshape(n, 3, 3).astype(dt)


@_arrays_only
def affine_transform(boxes, angle, translate_x, translate_y, scale, shear_x, shear_y, height, width,
                     center_x=None, center_y=None, bounding_box_format="xyxy"):
    """Keras's affine_transform: batched xyxy boxes (batch, N, 4) moved by the per-image transform (each of
    angle ... shear_y of shape (batch,), angles in degrees, translations and centre fractions of the image), each
    box the bounds of its four transformed corners"""
    _xyxy_only("affine_transform", bounding_box_format)
    angle = np.asarray(angle)
    if angle.ndim != 1:
        raise ValueError(f"`angle` must have shape (batch,), one per image, got shape {angle.shape}")
    if angle.dtype.kind != "f":
        angle = angle.astype("float32")
    dt = angle.dtype
    params = [np.asarray(v, dt) for v in (translate_x, translate_y, scale, shear_x, shear_y)]
    b = np.asarray(boxes)
    if b.ndim != 3 or b.shape[-1] != 4:
        raise ValueError(f"`boxes` must be batched, of shape (batch, N, 4), got shape {b.shape}")
    m = _inverse_affine_matrix(0.5 if center_x is None else center_x, 0.5 if center_y is None else center_y,
                               angle, *params, height, width)
    bsz, n = b.shape[:2]
    b = b.astype(dt)
    pts = np.stack([b[..., 0], b[..., 1], b[..., 2], b[..., 1], b[..., 2], b[..., 3], b[..., 0], b[..., 3]], axis=-1)
    pts = np.concatenate([pts.reshape(bsz, n, 4, 2), np.ones((bsz, n, 4, 1), dt)], axis=-1)
    moved = np.einsum("bnxy,byz->bnxz", pts, np.transpose(m[:, :2, :], (0, 2, 1)))
    return np.concatenate([moved.min(axis=2), moved.max(axis=2)], axis=-1)


@_arrays_only
def crop(boxes, top, left, height, width, bounding_box_format="xyxy"):
    """Keras's crop: xyxy boxes shifted by (-left, -top) and clipped to [0, width] x [0, height]"""
    _xyxy_only("crop", bounding_box_format)
    x1, y1, x2, y2 = _split(np.asarray(boxes))
    return _cat(np.clip(x1 - left, 0, width), np.clip(y1 - top, 0, height),
                np.clip(x2 - left, 0, width), np.clip(y2 - top, 0, height))


@_arrays_only
def pad(boxes, top, left, height=None, width=None, bounding_box_format="xyxy"):
    """Keras's pad: xyxy boxes shifted by (left, top) (height and width unused, as in Keras)"""
    _xyxy_only("pad", bounding_box_format)
    x1, y1, x2, y2 = _split(np.asarray(boxes))
    return _cat(x1 + left, y1 + top, x2 + left, y2 + top)


def _variance(variance):
    if variance is None:
        return None
    v = np.asarray(variance, "float32")
    if v.ndim == 0 or v.shape[-1] != 4:
        raise ValueError(f"`variance` must be length 4, got {variance}")
    return v


def _hw(image_shape):
    if image_shape is None:
        return None, None
    if len(image_shape) != 3:
        raise ValueError(f"`image_shape` must be (height, width, channels), got {image_shape!r}")
    return image_shape[0], image_shape[1]


def _encoding(name, fmt):
    if fmt not in ("center_xywh", "center_yxhw"):
        raise ValueError(f"`{name}` should be one of 'center_xywh' or 'center_yxhw', got {fmt!r}")


@_arrays_only
def encode_box_to_deltas(anchors, boxes, anchor_format, box_format, encoding_format="center_yxhw", variance=None,
                         image_shape=None):
    """Keras's encode_box_to_deltas: boxes (N, 4) or (B, N, 4) as offsets of anchors (N, 4), both converted to
    encoding_format: centre offsets over the anchor's size, log of the size ratios, over the variance if given"""
    variance = _variance(variance)
    _encoding("encoding_format", encoding_format)
    h, w = _hw(image_shape)
    a = convert_format(anchors, source=anchor_format, target=encoding_format, height=h, width=w)
    b = convert_format(boxes, source=box_format, target=encoding_format, height=h, width=w)
    a_dim = np.maximum(a[..., 2:], np.float32(epsilon()))
    b_dim = np.maximum(b[..., 2:], np.float32(epsilon()))
    delta = np.concatenate([(b[..., :2] - a[..., :2]) / a_dim, np.log(b_dim / a_dim)], axis=-1)
    return delta / variance if variance is not None else delta


@_arrays_only
def decode_deltas_to_boxes(anchors, boxes_delta, anchor_format, box_format, encoded_format="center_yxhw",
                           variance=None, image_shape=None):
    """Keras's decode_deltas_to_boxes, the inverse of encode_box_to_deltas; anchors and boxes_delta arrays, or
    dicts of them by level (decoded level by level)"""
    variance = _variance(variance)
    _encoding("encoded_format", encoded_format)
    h, w = _hw(image_shape)

    def level(anchor, delta):
        a = convert_format(anchor, source=anchor_format, target=encoded_format, height=h, width=w)
        delta = np.asarray(delta)
        if variance is not None:
            delta = delta * variance
        box = np.concatenate([delta[..., :2] * a[..., 2:] + a[..., :2], np.exp(delta[..., 2:]) * a[..., 2:]], axis=-1)
        return convert_format(box, source=encoded_format, target=box_format, height=h, width=w)

    if isinstance(anchors, dict) and isinstance(boxes_delta, dict):
        return {lvl: level(anchor, boxes_delta[lvl]) for lvl, anchor in anchors.items()}
    return level(anchors, boxes_delta)


@_arrays_only
def compute_iou(boxes1, boxes2, bounding_box_format, use_masking=False, mask_val=-1, image_shape=None):
    """Keras's compute_iou: the pairwise IoU table, (M, N) of unbatched boxes, (batch, M, N) when either is
    batched; with use_masking, pairs with a box all of whose coordinates are negative get mask_val"""
    b1, b2 = np.asarray(boxes1), np.asarray(boxes2)
    for name, b in (("boxes1", b1), ("boxes2", b2)):
        if b.ndim not in (2, 3):
            raise ValueError(f"compute_iou() expects {name} to be batched or unbatched: rank 2 or 3, "
                             f"received len({name}.shape)={b.ndim}")
    if "rel" in bounding_box_format and image_shape is None:
        raise ValueError("When using relative bounding box formats (e.g. `rel_yxyx`) the `image_shape` argument "
                         f"must be provided. Received `image_shape`: {image_shape}")
    h, w = _hw(image_shape)
    rank1 = b1.ndim
    b1 = convert_format(b1, source=bounding_box_format, target="yxyx", height=h, width=w)
    b2 = convert_format(b2, source=bounding_box_format, target="yxyx", height=h, width=w)
    ymin1, xmin1, ymax1, xmax1 = _split(b1)
    ymin2, xmin2, ymax2, xmax2 = (np.swapaxes(v, -1, -2) for v in _split(b2))
    ih = np.maximum(np.float32(0), np.minimum(ymax1, ymax2) - np.maximum(ymin1, ymin2))
    iw = np.maximum(np.float32(0), np.minimum(xmax1, xmax2) - np.maximum(xmin1, xmin2))
    inter = ih * iw
    area1 = ((b1[..., 2] - b1[..., 0]) * (b1[..., 3] - b1[..., 1]))[..., None]
    area2 = (b2[..., 2] - b2[..., 0]) * (b2[..., 3] - b2[..., 1])
    area2 = np.expand_dims(area2, axis=1 if area2.ndim == 2 else 0)
    res = inter / (area1 + area2 - inter + np.float32(epsilon()))
    if not use_masking:
        return res
    perm = [1, 0] if rank1 == 2 else [0, 2, 1]
    mask1 = b1.max(axis=-1, keepdims=True) < 0
    mask2 = np.transpose(b2.max(axis=-1, keepdims=True), perm) < 0
    return np.where(mask1 | mask2, np.asarray(mask_val, res.dtype), res)


@_arrays_only
def compute_ciou(boxes1, boxes2, bounding_box_format, image_shape=None):
    """Keras's compute_ciou: the complete IoU of matching boxes (..., 4) -> (...): IoU less the centres'
    squared distance over the enclosing box's squared diagonal and the aspect-ratio term"""
    if "rel" in bounding_box_format:
        raise ValueError("compute_ciou: relative bounding box formats (e.g. `rel_yxyx`) are refused, as in Keras; "
                         f"convert to an absolute format first. Received bounding_box_format={bounding_box_format!r}")
    h, w = _hw(image_shape)
    b1 = convert_format(boxes1, source=bounding_box_format, target="xyxy", height=h, width=w)
    b2 = convert_format(boxes2, source=bounding_box_format, target="xyxy", height=h, width=w)
    x_min1, y_min1, x_max1, y_max1 = _split(b1)
    x_min2, y_min2, x_max2, y_max2 = _split(b2)
    eps = np.float32(epsilon())
    w1, h1 = x_max1 - x_min1, y_max1 - y_min1 + eps
    w2, h2 = x_max2 - x_min2, y_max2 - y_min2 + eps
    inter = (np.maximum(np.minimum(x_max1, x_max2) - np.maximum(x_min1, x_min2), 0)
             * np.maximum(np.minimum(y_max1, y_max2) - np.maximum(y_min1, y_min2), 0))
    union = w1 * h1 + w2 * h2 - inter + eps
    iou = np.squeeze(inter / (union + eps), axis=-1)
    cw = np.maximum(x_max1, x_max2) - np.minimum(x_min1, x_min2)
    ch = np.maximum(y_max1, y_max2) - np.minimum(y_min1, y_min2)
    diag = np.squeeze(cw ** 2 + ch ** 2 + eps, axis=-1)
    dist = np.squeeze(((x_min1 + x_max1) / 2 - (x_min2 + x_max2) / 2) ** 2
                      + ((y_min1 + y_max1) / 2 - (y_min2 + y_max2) / 2) ** 2, axis=-1)
    v = np.squeeze(np.float32(4 / math.pi ** 2) * (np.arctan(w2 / h2) - np.arctan(w1 / h1)) ** 2, axis=-1)
    alpha = v / (v - iou + (1 + eps))
    return iou - (dist / diag + v * alpha)
