"""keras.visualization (python/boundfit/visualization.py): the segmentation
masks drawn and the galleries plotted (their saved PNG pixels) equal Keras 3's
on the same inputs (recorded, helpers/keras_recorded.py); the bounding boxes,
which Keras draws with OpenCV (not installed, so Keras cannot run them here),
checked on their drawn pixels; bad arguments raise naming the argument.
matplotlib runs headless (Agg)."""

import os

import matplotlib
import numpy as np
import pytest

import boundfit as bf
import keras_ref
from helpers.keras_recorded import recorded

matplotlib.use("Agg")
os.environ["MPLBACKEND"] = "Agg"
vis = bf.visualization
rng = np.random.default_rng(3)
IMAGES = rng.integers(0, 256, (2, 12, 16, 3)).astype("float32")
MASKS = rng.integers(0, 4, (2, 12, 16, 1)).astype("int32")
MASK_CASES = {"default": {}, "no_blend": {"blend": False}, "alpha_ignore": {"alpha": 0.3, "ignore_index": 2},
              "mapping": {"num_classes": 3, "color_mapping": {0: (255, 0, 0), 1: (0, 255, 0), 2: (0, 0, 255)}}}


def _png(path):
    return (matplotlib.image.imread(path) * 255).round().astype("uint8")


def _galleries(v, d):
    """each gallery saved by module v (Keras's or boundfit's) into folder d, read back as pixels"""
    paths = {}
    for name, call in {
        "images": lambda p: v.plot_image_gallery(IMAGES, path=p, dpi=20),
        "labelled": lambda p: v.plot_image_gallery(IMAGES / 255, y_true=np.array([0, 1]), y_pred=np.array([1, 1]),
                                                   label_map={0: "cat", 1: "dog"}, value_range=(0, 1), rows=1,
                                                   cols=2, path=p, dpi=20),
        "masks": lambda p: v.plot_segmentation_mask_gallery(IMAGES, num_classes=4, y_true=MASKS, y_pred=MASKS[::-1],
                                                            path=p, dpi=20),
    }.items():
        paths[name] = os.path.join(d, name + ".png")
        call(paths[name])
    return {k: _png(p) for k, p in paths.items()}


def _keras(tmp):
    def compute():
        k = keras_ref.load()
        out = {name: np.asarray(k.visualization.draw_segmentation_masks(IMAGES, MASKS, **kw))
               for name, kw in MASK_CASES.items()}
        out["channels_first"] = np.asarray(k.visualization.draw_segmentation_masks(
            IMAGES.transpose(0, 3, 1, 2), MASKS.transpose(0, 3, 1, 2), data_format="channels_first"))
        out["galleries"] = _galleries(k.visualization, tmp)
        return out
    return compute


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    return recorded("visualization", __file__, _keras(str(tmp_path_factory.mktemp("keras"))))


@pytest.mark.parametrize("name", sorted(MASK_CASES))
def test_draw_segmentation_masks_equals_keras(ref, name):
    got = vis.draw_segmentation_masks(IMAGES, MASKS, **MASK_CASES[name])
    assert got.dtype == ref[name].dtype and got.shape == ref[name].shape
    np.testing.assert_allclose(got.astype("float32"), ref[name].astype("float32"), atol=1)


def test_draw_segmentation_masks_channels_first_and_unbatched_channel_as_keras(ref):
    got = vis.draw_segmentation_masks(IMAGES.transpose(0, 3, 1, 2), MASKS.transpose(0, 3, 1, 2),
                                      data_format="channels_first")
    np.testing.assert_allclose(got.astype("float32"), ref["channels_first"].astype("float32"), atol=1)
    np.testing.assert_array_equal(vis.draw_segmentation_masks(IMAGES, MASKS[..., 0]),
                                  vis.draw_segmentation_masks(IMAGES, MASKS))


def test_galleries_save_the_pixels_keras_saves(ref, tmp_path):
    got = _galleries(vis, str(tmp_path))
    for name, want in ref["galleries"].items():
        assert got[name].shape == want.shape, name
        np.testing.assert_array_equal(got[name], want, err_msg=name)


def test_plot_returns_the_figure_of_rows_by_cols_images():
    fig = vis.plot_image_gallery(IMAGES, rows=1, cols=2, show=False)
    assert len([ax for ax in fig.axes if ax.images]) == 2
    matplotlib.pyplot.close(fig)


def _box_image(boxes, labels, fmt="xyxy", **kw):
    img = np.zeros((1, 40, 50, 3), "uint8")
    return img, vis.draw_bounding_boxes(img, {"boxes": np.array([boxes], "float32"), "labels": np.array([labels])},
                                        fmt, color=(255, 0, 0), **kw)


def test_draw_bounding_boxes_draws_a_one_pixel_outline_and_skips_label_minus_one():
    img, out = _box_image([[5, 6, 20, 30], [1, 1, 9, 9]], [1, -1], line_thickness=1)
    want = np.zeros((40, 50), bool)
    want[6:31, 5] = want[6:31, 20] = want[6, 5:21] = want[30, 5:21] = True
    np.testing.assert_array_equal(out[0, :, :, 0] == 255, want)
    assert (out[0, :, :, 1:] == 0).all() and (img == 0).all()   # the colour's channels; the input untouched


def test_draw_bounding_boxes_thick_lines_cover_thickness_over_two_either_side():
    _, out = _box_image([[10, 10, 30, 30]], [0], line_thickness=3)
    drawn = out[0, :, :, 0] == 255
    assert drawn[9:12, 20].all() and not drawn[8, 20] and not drawn[12, 20]   # a 3-pixel band about y = 10
    assert not drawn[13:28, 13:28].any()   # the inside untouched


@pytest.mark.parametrize("fmt", ["center_xywh", "rel_yxyx"])
def test_draw_bounding_boxes_converts_the_format(fmt):
    xyxy = np.array([[[5, 6, 20, 30]]], "float32")
    boxes = bf.utils.bounding_boxes.convert_format(xyxy, "xyxy", fmt, height=40, width=50)
    _, want = _box_image(xyxy[0], [0])
    _, got = _box_image(boxes[0], [0], fmt=fmt)
    np.testing.assert_array_equal(got, want)


def test_draw_bounding_boxes_writes_the_class_name_above_the_box_and_scales_float_images():
    img = np.full((1, 60, 80, 3), 0.5, "float32")
    out = vis.draw_bounding_boxes(img, {"boxes": np.array([[[10, 40, 70, 55]]]), "labels": np.array([[2]]),
                                        "confidences": np.array([[0.9]])}, "xyxy", class_mapping={2: "cat"},
                                  color=(255, 0, 0), line_thickness=1)
    assert out.dtype == np.uint8 and out[0, 0, 0, 1] == 127
    text = (out[0, :32, 10:, 0] == 255) & (out[0, :32, 10:, 1] == 0)   # the label sits above y = 40 - 8
    assert text.sum() > 30


def test_draw_bounding_boxes_keeps_the_channels_first_layout():
    img = np.zeros((1, 3, 20, 30), "uint8")
    out = vis.draw_bounding_boxes(img, {"boxes": np.array([[[2, 3, 10, 12]]]), "labels": np.array([[0]])}, "xyxy",
                                  color=(0, 0, 200), line_thickness=1, data_format="channels_first")
    assert out.shape == img.shape and out[0, 2, 3, 5] == 200 and out[0, 0].max() == 0


def test_plot_bounding_box_gallery_draws_true_and_predicted_colours_and_a_legend():
    boxes = {"boxes": np.array([[[2, 2, 10, 10]], [[3, 3, 12, 9]]]), "labels": np.array([[0], [0]])}
    fig = vis.plot_bounding_box_gallery(IMAGES * 0, "xyxy", y_true=boxes, y_pred=boxes, legend=True, show=False,
                                        true_color=(0, 188, 212), pred_color=(255, 235, 59))
    shown = [ax.images[0].get_array() for ax in fig.axes if ax.images]
    assert len(shown) == 2 and (np.asarray(shown[0])[2, 5] == (255, 235, 59)).all()   # predicted drawn last
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["Ground Truth", "Prediction"]
    matplotlib.pyplot.close(fig)


BOXES = {"boxes": np.zeros((2, 1, 4)), "labels": np.zeros((2, 1))}


@pytest.mark.parametrize("call,exc,names", [
    (lambda: vis.draw_bounding_boxes(IMAGES[0], BOXES, "xyxy"), ValueError, "`images`"),
    (lambda: vis.draw_bounding_boxes(IMAGES, [BOXES], "xyxy"), TypeError, "`bounding_boxes`"),
    (lambda: vis.draw_bounding_boxes(IMAGES, {"boxes": BOXES["boxes"]}, "xyxy"), ValueError, "'labels'"),
    (lambda: vis.draw_bounding_boxes(IMAGES, BOXES, "xyz"), ValueError, "`source`"),
    (lambda: vis.draw_bounding_boxes(IMAGES, BOXES, "xyxy", line_thickness=0), ValueError, "`line_thickness`"),
    (lambda: vis.draw_segmentation_masks(IMAGES, MASKS.astype("float32")), TypeError, "`segmentation_masks`"),
    (lambda: vis.draw_segmentation_masks(IMAGES, MASKS[:, :4]), ValueError, "`segmentation_masks`"),
    (lambda: vis.draw_segmentation_masks(IMAGES, MASKS, num_classes=2, color_mapping={0: (1, 1, 1)}),
     ValueError, "`color_mapping`"),
    (lambda: vis.plot_image_gallery(IMAGES, path="x.png", show=True), ValueError, "`path`"),
    (lambda: vis.plot_image_gallery(IMAGES, y_true=[0, 1]), ValueError, "`label_map`"),
    (lambda: vis.plot_bounding_box_gallery(IMAGES, "xyxy", legend=True, legend_handles=[1]), ValueError, "`legend"),
    (lambda: vis.plot_segmentation_mask_gallery(IMAGES[0], 3), ValueError, "`images`"),
])
def test_bad_arguments_raise_naming_the_argument(call, exc, names):
    with pytest.raises(exc, match=names):
        call()


@pytest.mark.parametrize("fn", ["draw_segmentation_masks", "plot_image_gallery"])
def test_symbolic_tensors_are_refused_by_name(fn):
    with pytest.raises(bf.errors.OpNotSupportedError, match=f"keras.visualization.{fn}.*symbolic"):
        getattr(vis, fn)(bf.Input((12, 16, 3)), MASKS) if fn.startswith("draw") else vis.plot_image_gallery(
            bf.Input((12, 16, 3)))
