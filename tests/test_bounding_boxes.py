"""keras.utils.bounding_boxes (python/boundfit/bounding_boxes.py) against
Keras 3 on JAX on the same inputs: every format pair of convert_format (and
a dict's boxes), clip_to_image_size, affine_transform, crop, pad, the delta
encoding and decoding (with a variance, relative formats, levels in dicts),
compute_iou over batched and unbatched ranks and masking, compute_ciou; bad
arguments and symbolic tensors refused by name. Keras's results are recorded
(helpers/keras_recorded.py), all of them in one record."""

import itertools

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from boundfit.errors import OpNotSupportedError
from helpers.keras_recorded import recorded

bb = bf.utils.bounding_boxes
FORMATS = ("xyxy", "yxyx", "xywh", "center_xywh", "center_yxhw", "rel_xyxy", "rel_yxyx", "rel_xywh",
           "rel_center_xywh")
H, W = 60, 80
rng = np.random.default_rng(7)
XY = np.sort(rng.uniform(-10, 90, (2, 3, 2, 2)), axis=2).astype("float32")   # (batch, box, lo/hi, x/y)
BOXES = np.concatenate([XY[:, :, 0], XY[:, :, 1]], axis=-1)                  # (2, 3, 4) xyxy, some outside
LABELS = np.array([[0, 1, 2], [3, 4, 5]], "int32")
ANCHORS = np.array([[0, 0, 20, 30], [10, 5, 50, 45], [30, 20, 70, 60]], "float32")   # xyxy
AFFINE = dict(angle=np.array([15.0, -30.0], "float32"), translate_x=np.array([0.1, -0.05], "float32"),
              translate_y=np.array([0.0, 0.2], "float32"), scale=np.array([1.2, 0.8], "float32"),
              shear_x=np.array([5.0, 0.0], "float32"), shear_y=np.array([0.0, -10.0], "float32"))
VARIANCE = [0.1, 0.1, 0.2, 0.2]
IOU_CASES = {"xyxy_2x2": (0, 0, "xyxy"), "xyxy_3x3": (1, 1, "xyxy"), "yxyx_3x2": (1, 0, "yxyx"),
             "center_xywh_2x3": (0, 1, "center_xywh"), "rel_yxyx_3x3": (1, 1, "rel_yxyx")}


def _in(fmt, boxes=BOXES):
    """BOXES (xyxy) written in fmt"""
    return bb.convert_format(boxes, "xyxy", fmt, height=H, width=W)


def _iou_args(batched1, batched2):
    return (BOXES if batched1 else BOXES[0]), (ANCHORS[None].repeat(2, 0) if batched2 else ANCHORS)


def _keras():
    k = keras_ref.load()
    kb = k.utils.bounding_boxes
    a = np.asarray
    out = {"convert": {f"{s}>{t}": a(kb.convert_format(_in(s), s, t, height=H, width=W))
                       for s, t in itertools.product(FORMATS, FORMATS)}}
    out["dict"] = a(kb.convert_format({"boxes": BOXES, "labels": LABELS}, "xyxy", "center_yxhw")["boxes"])
    for fmt, scale in (("xyxy", 1.0), ("rel_xyxy", 1 / 50)):
        c = kb.clip_to_image_size({"boxes": BOXES * scale, "labels": LABELS}, height=H, width=W,
                                  bounding_box_format=fmt)
        out[f"clip_{fmt}"] = [a(c["boxes"]), a(c["labels"])]
    out["affine"] = a(kb.affine_transform(BOXES, **AFFINE, height=H, width=W))
    out["affine_center"] = a(kb.affine_transform(BOXES, **AFFINE, height=H, width=W, center_x=0.2, center_y=0.7))
    out["crop"] = a(kb.crop(BOXES, top=5, left=10, height=40, width=50))
    out["pad"] = a(kb.pad(BOXES, top=5, left=10))
    for fmt, var in (("xyxy", None), ("center_xywh", VARIANCE), ("rel_xywh", VARIANCE)):
        for enc in ("center_yxhw", "center_xywh"):
            d = kb.encode_box_to_deltas(_in(fmt, ANCHORS), _in(fmt), fmt, fmt, enc, var, (H, W, 3))
            out[f"encode_{fmt}_{enc}"] = a(d)
            out[f"decode_{fmt}_{enc}"] = a(kb.decode_deltas_to_boxes(_in(fmt, ANCHORS), a(d), fmt, fmt, enc, var,
                                                                     (H, W, 3)))
    lv = kb.decode_deltas_to_boxes({"p3": ANCHORS, "p4": ANCHORS * 2}, {"p3": BOXES / 100, "p4": -BOXES / 100},
                                   "xyxy", "yxyx")
    out["decode_levels"] = {k_: a(v) for k_, v in lv.items()}
    for name, (b1, b2, fmt) in IOU_CASES.items():
        x1, x2 = _iou_args(b1, b2)
        out[f"iou_{name}"] = a(kb.compute_iou(_in(fmt, x1), _in(fmt, x2), fmt, image_shape=(H, W, 3)))
    masked = BOXES.copy()
    masked[0, 1] = -1
    out["iou_masked"] = a(kb.compute_iou(masked, masked[:, ::-1], "xyxy", use_masking=True, mask_val=-7))
    for fmt in ("xyxy", "center_yxhw"):
        out[f"ciou_{fmt}"] = a(kb.compute_ciou(_in(fmt), _in(fmt, BOXES[:, ::-1]), fmt))
    return out


@pytest.fixture(scope="module")
def ref():
    return recorded("bounding_boxes", __file__, _keras)


def close(got, want):
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=2e-5)


@pytest.mark.parametrize("source", FORMATS)
def test_convert_format_equals_keras_for_every_target(ref, source):
    for target in FORMATS:
        got = bb.convert_format(_in(source), source, target, height=H, width=W)
        assert got.dtype == np.float32
        close(got, ref["convert"][f"{source}>{target}"])


def test_convert_format_converts_a_dicts_boxes_in_place_as_keras(ref):
    d = {"boxes": BOXES, "labels": LABELS}
    out = bb.convert_format(d, "XYXY", "center_yxhw")
    assert out is d and out["labels"] is LABELS
    close(out["boxes"], ref["dict"])


@pytest.mark.parametrize("fmt,scale", [("xyxy", 1.0), ("rel_xyxy", 1 / 50)])
def test_clip_to_image_size_clips_boxes_and_drops_empty_labels_as_keras(ref, fmt, scale):
    got = bb.clip_to_image_size({"boxes": BOXES * scale, "labels": LABELS}, height=H, width=W,
                                bounding_box_format=fmt)
    close(got["boxes"], ref[f"clip_{fmt}"][0])
    np.testing.assert_array_equal(got["labels"], ref[f"clip_{fmt}"][1])


def test_affine_crop_and_pad_equal_keras(ref):
    close(bb.affine_transform(BOXES, **AFFINE, height=H, width=W), ref["affine"])
    close(bb.affine_transform(BOXES, **AFFINE, height=H, width=W, center_x=0.2, center_y=0.7), ref["affine_center"])
    close(bb.crop(BOXES, top=5, left=10, height=40, width=50), ref["crop"])
    close(bb.pad(BOXES, top=5, left=10), ref["pad"])


@pytest.mark.parametrize("fmt,var", [("xyxy", None), ("center_xywh", VARIANCE), ("rel_xywh", VARIANCE)])
@pytest.mark.parametrize("enc", ["center_yxhw", "center_xywh"])
def test_delta_encoding_and_decoding_equal_keras_and_round_trip(ref, fmt, var, enc):
    d = bb.encode_box_to_deltas(_in(fmt, ANCHORS), _in(fmt), fmt, fmt, enc, var, (H, W, 3))
    close(d, ref[f"encode_{fmt}_{enc}"])
    back = bb.decode_deltas_to_boxes(_in(fmt, ANCHORS), d, fmt, fmt, enc, var, (H, W, 3))
    close(back, ref[f"decode_{fmt}_{enc}"])
    close(bb.convert_format(back, fmt, "xyxy", height=H, width=W), BOXES)


def test_decode_deltas_decodes_dicts_level_by_level_as_keras(ref):
    got = bb.decode_deltas_to_boxes({"p3": ANCHORS, "p4": ANCHORS * 2}, {"p3": BOXES / 100, "p4": -BOXES / 100},
                                    "xyxy", "yxyx")
    assert sorted(got) == ["p3", "p4"]
    for lvl in got:
        close(got[lvl], ref["decode_levels"][lvl])


@pytest.mark.parametrize("name", sorted(IOU_CASES))
def test_compute_iou_equals_keras_over_ranks_and_formats(ref, name):
    b1, b2, fmt = IOU_CASES[name]
    x1, x2 = _iou_args(b1, b2)
    got = bb.compute_iou(_in(fmt, x1), _in(fmt, x2), fmt, image_shape=(H, W, 3))
    assert got.shape == ref[f"iou_{name}"].shape
    close(got, ref[f"iou_{name}"])


def test_compute_iou_masks_background_boxes_and_ciou_equal_keras(ref):
    masked = BOXES.copy()
    masked[0, 1] = -1
    got = bb.compute_iou(masked, masked[:, ::-1], "xyxy", use_masking=True, mask_val=-7)
    close(got, ref["iou_masked"])
    assert (got[0, 1] == -7).all() and (got[0, :, 1] == -7).all()
    for fmt in ("xyxy", "center_yxhw"):
        close(bb.compute_ciou(_in(fmt), _in(fmt, BOXES[:, ::-1]), fmt), ref[f"ciou_{fmt}"])


@pytest.mark.parametrize("call,exc,names", [
    (lambda: bb.convert_format(BOXES, "xyz", "xyxy"), ValueError, "`source`"),
    (lambda: bb.convert_format(BOXES, "xyxy", "rel_center_yxhw"), ValueError, "`target`"),
    (lambda: bb.convert_format(BOXES, "xyxy", "rel_xyxy", height=H), ValueError, "`width`"),
    (lambda: bb.convert_format(BOXES[..., :3], "xyxy", "yxyx"), ValueError, "`boxes`"),
    (lambda: bb.clip_to_image_size({"boxes": BOXES}, bounding_box_format="xyxy"), ValueError, "`height`"),
    (lambda: bb.clip_to_image_size({"boxes": BOXES}, H, W, "xywh"), NotImplementedError, "bounding_box_format"),
    (lambda: bb.crop(BOXES, 0, 0, H, W, bounding_box_format="yxyx"), NotImplementedError, "bounding_box_format"),
    (lambda: bb.affine_transform(BOXES[0], **AFFINE, height=H, width=W), ValueError, "`boxes`"),
    (lambda: bb.encode_box_to_deltas(ANCHORS, BOXES, "xyxy", "xyxy", variance=[1, 1]), ValueError, "`variance`"),
    (lambda: bb.encode_box_to_deltas(ANCHORS, BOXES, "xyxy", "xyxy", "xyxy"), ValueError, "`encoding_format`"),
    (lambda: bb.decode_deltas_to_boxes(ANCHORS, BOXES, "xyxy", "xyxy", "yxyx"), ValueError, "`encoded_format`"),
    (lambda: bb.compute_iou(BOXES[None], BOXES, "xyxy"), ValueError, "boxes1"),
    (lambda: bb.compute_iou(BOXES, BOXES, "rel_xyxy"), ValueError, "`image_shape`"),
    (lambda: bb.compute_ciou(BOXES, BOXES, "rel_xyxy", (H, W, 3)), ValueError, "bounding_box_format"),
])
def test_bad_arguments_raise_naming_the_argument(call, exc, names):
    with pytest.raises(exc, match=names):
        call()


def test_symbolic_tensors_are_refused_by_name():
    x = bf.Input((5, 4))
    with pytest.raises(OpNotSupportedError, match="bounding_boxes.convert_format.*symbolic"):
        bb.convert_format(x, "xyxy", "yxyx")
    with pytest.raises(OpNotSupportedError, match="bounding_boxes.clip_to_image_size"):
        bb.clip_to_image_size({"boxes": x}, H, W)
