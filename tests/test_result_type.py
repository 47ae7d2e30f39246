"""keras.backend.result_type equals Keras 3's (JAX backend) for every pair of dtypes and Python's weak int /
float, None and no argument; keras.preprocessing.image.smart_resize equals Keras's crop-and-resize."""

import itertools

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from helpers import keras_recorded

DTYPES = ["bool", "uint8", "uint16", "uint32", "int8", "int16", "int32", "int64", "bfloat16", "float16", "float32",
          "float64", "complex64", "complex128"]
ARGS = DTYPES + [int, float, None]


def _name(a):
    return a.__name__ if isinstance(a, type) else str(a)


def outcome(f, *args):
    try:
        return f(*args)
    except ValueError:
        return "ValueError"


def test_result_type_of_every_pair_equals_keras():
    pairs = list(itertools.combinations_with_replacement(range(len(ARGS)), 2))
    theirs = keras_recorded.case(lambda: [outcome(keras_ref.load().backend.result_type, ARGS[i], ARGS[j])
                                          for i, j in pairs])
    ours = [outcome(bf.backend.result_type, ARGS[i], ARGS[j]) for i, j in pairs]
    diff = [(_name(ARGS[i]), _name(ARGS[j]), o, t) for (i, j), o, t in zip(pairs, ours, theirs) if o != t]
    assert not diff and len(ours) == 17 * 18 // 2


def test_result_type_of_one_three_and_none():
    cases = [(), ("uint8",), (int,), ("int8", "uint8", float), ("bool", int, "float16"), ("float8_e4m3fn", "int8"),
             ("uint64", "int64")]
    theirs = keras_recorded.case(lambda: [outcome(keras_ref.load().backend.result_type, *c) for c in cases])
    assert [outcome(bf.backend.result_type, *c) for c in cases] == theirs
    with pytest.raises(ValueError, match="float8"):
        bf.backend.result_type("float8_e5m2", "float32")
    with pytest.raises(ValueError, match="Invalid dtype"):
        bf.backend.result_type("float31")


@pytest.mark.parametrize("shape, size, interpolation", [((30, 50, 3), (20, 20), "bilinear"),
                                                        ((2, 41, 17, 1), (8, 12), "nearest"),
                                                        ((16, 16, 2), (32, 8), "bilinear")])
def test_smart_resize_equals_keras(shape, size, interpolation):
    x = np.random.default_rng(len(shape)).random(shape).astype(np.float32) * 255
    theirs = keras_recorded.case(lambda: np.asarray(keras_ref.load().preprocessing.image.smart_resize(
        x, size, interpolation=interpolation)))
    ours = bf.preprocessing.image.smart_resize(x, size, interpolation=interpolation)
    assert isinstance(ours, np.ndarray) and ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-3)


def test_smart_resize_bad_arguments():
    for size in ((2,), (0, 5), (2.5, 3), (-1, 2)):
        with pytest.raises(ValueError, match="tuple of 2 integers"):
            bf.preprocessing.image.smart_resize(np.zeros((4, 4, 1)), size)
    with pytest.raises(ValueError, match="incorrect rank"):
        bf.preprocessing.image.smart_resize(np.zeros((4, 4)), (2, 2))
    with pytest.raises(TypeError, match="unexpected keyword"):
        bf.preprocessing.image.smart_resize(np.zeros((4, 4, 1)), (2, 2), antialias=True)
