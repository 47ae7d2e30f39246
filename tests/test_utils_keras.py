"""keras.utils.pad_sequences, load_img and img_to_array: boundfit's against
Keras 3's on the same inputs (ragged lists, truncation and padding at either
end, steps that are vectors, text; PNG / JPEG files in every colour mode,
resized with each interpolation, with and without keeping the aspect ratio),
and each bad argument's error."""

import io

import numpy as np
import pytest

import boundfit as bf
import keras_ref


@pytest.fixture(scope="module")
def keras():
    return keras_ref.load()


RAGGED = [[1, 2, 3], [4], [], [5, 6, 7, 8, 9], [10, 11]]


@pytest.mark.parametrize("kw", [
    {}, {"maxlen": 3}, {"maxlen": 3, "truncating": "post"}, {"maxlen": 4, "padding": "post"},
    {"maxlen": 2, "padding": "post", "truncating": "post", "value": -1}, {"maxlen": 7},
    {"dtype": "float32", "value": 0.5}, {"maxlen": 1},
])
def test_pad_sequences_matches_keras(keras, kw):
    want = keras.utils.pad_sequences(RAGGED, **kw)
    got = bf.utils.pad_sequences(RAGGED, **kw)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_pad_sequences_of_vectors_and_text_match_keras(keras):
    rng = np.random.default_rng(0)
    seqs = [rng.standard_normal((n, 3)).astype(np.float32) for n in (2, 5, 1)]
    for kw in ({"dtype": "float32"}, {"dtype": "float32", "maxlen": 3, "padding": "post", "truncating": "post"}):
        np.testing.assert_array_equal(bf.utils.pad_sequences(seqs, **kw), keras.utils.pad_sequences(seqs, **kw))
    words = [["a", "bb"], ["ccc"]]
    np.testing.assert_array_equal(bf.utils.pad_sequences(words, dtype=object, value="<pad>"),
                                  keras.utils.pad_sequences(words, dtype=object, value="<pad>"))


def test_pad_sequences_rejects_bad_arguments():
    with pytest.raises(ValueError, match="padding"):
        bf.utils.pad_sequences(RAGGED, padding="middle")
    with pytest.raises(ValueError, match="truncating"):
        bf.utils.pad_sequences(RAGGED, truncating="both")
    with pytest.raises(ValueError, match=r"sequences\[1\]"):
        bf.utils.pad_sequences([[1], 2])
    with pytest.raises(ValueError, match="maxlen"):
        bf.utils.pad_sequences(RAGGED, maxlen=-1)
    with pytest.raises(ValueError, match="string"):
        bf.utils.pad_sequences(RAGGED, value="x")
    with pytest.raises(ValueError, match="shape"):
        bf.utils.pad_sequences([np.zeros((2, 3)), np.zeros((2, 4))], dtype="float32")


def _image_file(tmp_path, fmt, mode, size=(13, 9)):
    PIL = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(1)
    w, h = size
    chans = {"RGB": 3, "RGBA": 4, "L": 1}[mode]
    arr = rng.integers(0, 256, (h, w, chans), dtype=np.uint8)
    img = PIL.fromarray(arr[:, :, 0] if chans == 1 else arr, mode)
    path = tmp_path / f"img_{mode}.{fmt}"
    img.save(path)
    return path


@pytest.mark.parametrize("fmt,mode", [("png", "RGB"), ("png", "RGBA"), ("png", "L"), ("jpeg", "RGB")])
@pytest.mark.parametrize("color_mode", ["rgb", "rgba", "grayscale"])
def test_load_img_and_img_to_array_match_keras(keras, tmp_path, fmt, mode, color_mode):
    path = _image_file(tmp_path, fmt, mode)
    for kw in ({}, {"target_size": (7, 5)}, {"target_size": (20, 11), "interpolation": "bilinear"},
               {"target_size": (6, 6), "interpolation": "bicubic", "keep_aspect_ratio": True},
               {"target_size": (4, 9), "interpolation": "lanczos", "keep_aspect_ratio": True}):
        want = keras.utils.load_img(path, color_mode=color_mode, **kw)
        got = bf.utils.load_img(str(path), color_mode=color_mode, **kw)
        assert got.mode == want.mode and got.size == want.size, kw
        for fmt_kw in ({}, {"data_format": "channels_first"}, {"dtype": "uint8"}):
            a, b = bf.utils.img_to_array(got, **fmt_kw), keras.utils.img_to_array(want, **fmt_kw)
            assert a.dtype == b.dtype and a.shape == b.shape, (kw, fmt_kw)
            np.testing.assert_array_equal(a, b)


def test_load_img_from_bytes_and_its_errors(tmp_path):
    path = _image_file(tmp_path, "png", "RGB")
    img = bf.utils.load_img(io.BytesIO(path.read_bytes()), target_size=(3, 4))
    assert bf.utils.img_to_array(img).shape == (3, 4, 3)
    with pytest.raises(ValueError, match="color_mode"):
        bf.utils.load_img(path, color_mode="cmyk")
    with pytest.raises(ValueError, match="interpolation"):
        bf.utils.load_img(path, target_size=(3, 3), interpolation="area")
    with pytest.raises(TypeError, match="path"):
        bf.utils.load_img(42)
    with pytest.raises(ValueError, match="data_format"):
        bf.utils.img_to_array(img, data_format="nhwc")
