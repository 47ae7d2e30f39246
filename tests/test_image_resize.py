"""_core.image_resize (csrc/cpu/image_resize.c), the C resize of the image
folder data sets for 'bilinear' and 'nearest', against a NumPy reference of
TensorFlow's half-pixel float32 arithmetic (the NumPy code image_folder.py
used before; tests/test_directory_datasets.py checks both against Keras's
recorded pixels): bit-equal for odd sizes, up- and down-scaling, 1 / 3 / 4
channels and strided views; bad arguments are refused naming the fault."""

import numpy as np
import pytest

from boundfit import _core


def _axis(n_in, n_out):
    scale = np.float32(n_in / n_out)
    x = (np.arange(n_out, dtype=np.float32) + np.float32(0.5)) * scale - np.float32(0.5)
    f = np.floor(x)
    lo = np.maximum(f, 0).astype(np.intp)
    hi = np.minimum(np.ceil(x), n_in - 1).astype(np.intp)
    return lo, hi, (x - f).astype(np.float32)


def bilinear_reference(img, h, w):
    ylo, yhi, wy = _axis(img.shape[0], h)
    xlo, xhi, wx = _axis(img.shape[1], w)
    wx = wx[None, :, None]
    top_rows, bottom_rows = img[ylo].astype(np.float32), img[yhi].astype(np.float32)
    top = top_rows[:, xlo] + (top_rows[:, xhi] - top_rows[:, xlo]) * wx
    bottom = bottom_rows[:, xlo] + (bottom_rows[:, xhi] - bottom_rows[:, xlo]) * wx
    return top + (bottom - top) * wy[:, None, None]


def nearest_reference(img, h, w):
    def idx(n_in, n_out):
        scale = np.float32(n_in / n_out)
        return np.minimum(np.floor((np.arange(n_out, dtype=np.float32) + np.float32(0.5)) * scale),
                          n_in - 1).astype(np.intp)
    return img[idx(img.shape[0], h)][:, idx(img.shape[1], w)].astype(np.float32)


REFERENCE = {"bilinear": bilinear_reference, "nearest": nearest_reference}
SIZES = [((31, 17), (9, 13)), ((5, 7), (23, 11)), ((13, 13), (13, 13)), ((1, 1), (3, 5)), ((256, 200), (180, 181)),
         ((3, 40), (7, 2))]   # down, up, same, from one pixel, the benchmark's scale, up one axis and down the other


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
@pytest.mark.parametrize("channels", [1, 3, 4])
def test_c_resize_equals_the_numpy_reference(method, channels):
    rng = np.random.default_rng(channels)
    for (H, W), (h, w) in SIZES:
        img = rng.integers(0, 256, (H, W, channels), dtype=np.uint8)
        out = np.full((h, w, channels), np.nan, np.float32)
        _core.image_resize(img, out, method)
        np.testing.assert_array_equal(out, REFERENCE[method](img, h, w), err_msg=f"{(H, W)} -> {(h, w)}")


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_c_resize_reads_a_crop_and_writes_a_channels_first_row_in_place(method):
    rng = np.random.default_rng(0)
    big = rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)
    crop = big[3:30, 7:44]                                   # strided source
    batch = np.zeros((2, 3, 11, 9), np.float32)              # channels-first batch: row 1 as (h, w, c)
    _core.image_resize(crop, batch[1].transpose(1, 2, 0), method)
    np.testing.assert_array_equal(batch[1].transpose(1, 2, 0), REFERENCE[method](crop, 11, 9))
    assert not batch[0].any()


@pytest.mark.parametrize("src, dst, method, error, match", [
    (np.zeros((4, 4, 3), np.float32), np.zeros((2, 2, 3), np.float32), "bilinear", TypeError, "src must be uint8"),
    (np.zeros((4, 4, 3), np.uint8), np.zeros((2, 2, 3), np.float64), "bilinear", TypeError, "dst must be float32"),
    ([[[0]]], np.zeros((2, 2, 1), np.float32), "bilinear", TypeError, "src must be a NumPy array"),
    (np.zeros((4, 4), np.uint8), np.zeros((2, 2, 1), np.float32), "bilinear", ValueError, "got 2 dimensions"),
    (np.zeros((4, 4, 3), np.uint8), np.zeros((2, 2, 1), np.float32), "nearest", ValueError, "src has 3 channels"),
    (np.zeros((0, 4, 3), np.uint8), np.zeros((2, 2, 3), np.float32), "bilinear", ValueError, "must be positive"),
    (np.zeros((4, 4, 3), np.uint8), np.zeros((2, 0, 3), np.float32), "nearest", ValueError, "must be positive"),
    (np.zeros((4, 4, 3), np.uint8), np.zeros((2, 2, 3), np.float32), "area", ValueError, "'bilinear' or 'nearest'"),
])
def test_c_resize_refuses_bad_arguments(src, dst, method, error, match):
    with pytest.raises(error, match=match):
        _core.image_resize(src, dst, method)


def test_c_resize_refuses_a_read_only_destination():
    dst = np.zeros((2, 2, 3), np.float32)
    dst.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        _core.image_resize(np.zeros((4, 4, 3), np.uint8), dst, "bilinear")


def test_padded_channels_first_batches_hold_the_resized_images(tmp_path):
    """pad_to_aspect_ratio writes the resize into a window of the batch row, channels_first into a transposed
    view of it: the same pixels as the reference resize, zeros around."""
    from PIL import Image

    import boundfit as bf
    rng = np.random.default_rng(3)
    folder = tmp_path / "a"
    folder.mkdir()
    images = [rng.integers(0, 256, s, dtype=np.uint8) for s in ((9, 31, 3), (40, 17, 3))]
    for i, a in enumerate(images):
        Image.fromarray(a).save(folder / f"{i}.png")
    args = dict(image_size=(12, 15), batch_size=2, shuffle=False, verbose=False, labels=None,
                pad_to_aspect_ratio=True)
    last = next(iter(bf.utils.image_dataset_from_directory(str(tmp_path), **args)))
    first = next(iter(bf.utils.image_dataset_from_directory(str(tmp_path), data_format="channels_first", **args)))
    np.testing.assert_array_equal(first, last.transpose(0, 3, 1, 2))
    for a, row in zip(images, last):
        h, w = np.float32(a.shape[0]), np.float32(a.shape[1])
        ratio = max(w / np.float32(15), h / np.float32(12))
        ih, iw = int(np.floor(h / ratio)), int(np.floor(w / ratio))
        top, left = int(np.floor((np.float32(12) - h / ratio) / 2)), int(np.floor((np.float32(15) - w / ratio) / 2))
        expected = np.zeros((12, 15, 3), np.float32)
        expected[top:top + ih, left:left + iw] = bilinear_reference(a, ih, iw)
        np.testing.assert_array_equal(row, expected)
