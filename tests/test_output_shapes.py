"""compute_output_shape is the engine's shape inference (_core.output_shape, the
kind's infer in csrc/core/layers/): for every layer class the engine infers,
it gives Keras 3's shapes, the batch axis passed through, a variable length
(None) kept where the output depends on it."""

import pytest

import boundfit as bf
from boundfit import layers

import keras_ref

# (class, args, kwargs, input shapes with the batch axis): every layer class with an engine kind
CASES = [
    ("Dense", (5,), {}, [(None, 7), (None, 3, 7), (4, None, 7)]),
    ("Activation", ("relu",), {}, [(None, 3, 4)]),
    ("ReLU", (), {}, [(None, 6)]), ("LeakyReLU", (), {}, [(None, 6)]), ("ELU", (), {}, [(None, 2, 6)]),
    ("Softmax", (), {}, [(None, 6)]), ("PReLU", (), {}, [(None, 3, 4, 2)]),
    ("PReLU", (), {"shared_axes": [1]}, [(None, 5, 4), (None, None, 4)]),
    ("Dropout", (0.3,), {}, [(None, 3, 4)]), ("GaussianNoise", (0.1,), {}, [(None, 5)]),
    ("GaussianDropout", (0.1,), {}, [(None, 5)]),
    ("Flatten", (), {}, [(None, 3, 4), (None, 2, 3, 4)]),
    ("Reshape", ((-1, 2),), {}, [(None, 12)]), ("Reshape", ((4, 3),), {}, [(None, 2, 6)]),
    ("Permute", ((2, 1),), {}, [(None, 3, 5), (None, None, 5)]), ("RepeatVector", (3,), {}, [(None, 4)]),
    ("ZeroPadding2D", (1,), {}, [(None, 5, 6, 3)]), ("UpSampling2D", (), {}, [(None, 5, 6, 3)]),
    ("Conv2D", (4, 3), {}, [(None, 8, 9, 3)]), ("Conv2D", (4, 3), {"strides": 2, "padding": "same"},
                                                 [(None, 8, 9, 3), (None, None, 9, 3)]),
    ("Conv1D", (4, 3), {"padding": "causal", "dilation_rate": 2}, [(None, 10, 3), (None, None, 3)]),
    ("Conv1D", (4, 3), {"strides": 2}, [(None, 11, 3)]),
    ("Conv2DTranspose", (4, 3), {"strides": 2}, [(None, 5, 6, 3)]),
    ("Conv1DTranspose", (4, 3), {"strides": 2, "padding": "same"}, [(None, 7, 3)]),
    ("DepthwiseConv2D", (3,), {"depth_multiplier": 2}, [(None, 7, 8, 3)]),
    ("MaxPooling2D", (), {}, [(None, 8, 9, 3)]), ("AveragePooling2D", (3,), {"padding": "same"}, [(None, 8, 9, 3)]),
    ("MaxPooling2D", (), {"data_format": "channels_first"}, [(None, 3, 8, 9)]),
    ("MaxPooling1D", (2,), {}, [(None, 9, 3)]), ("AveragePooling1D", (2,), {"data_format": "channels_first"},
                                                  [(None, 3, 9)]),
    ("GlobalAveragePooling1D", (), {}, [(None, 9, 3)]), ("GlobalMaxPooling2D", (), {"keepdims": True},
                                                         [(None, 5, 6, 3)]),
    ("GlobalAveragePooling2D", (), {"data_format": "channels_first"}, [(None, 3, 5, 6)]),
    ("BatchNormalization", (), {}, [(None, 6), (None, 4, 6)]), ("LayerNormalization", (), {}, [(None, 3, 6)]),
    ("Embedding", (10, 4), {}, [(None, 7), (None, None)]),
    ("LSTM", (3,), {}, [(None, 5, 2)]), ("GRU", (3,), {"return_sequences": True}, [(None, 5, 2), (None, None, 2)]),
    ("SimpleRNN", (2,), {}, [(None, 5, 4)]),
    ("Rescaling", (0.5,), {}, [(None, 4, 4, 3)]), ("RandomFlip", (), {}, [(None, 6, 6, 3)]),
    ("RandomCrop", (4, 3), {}, [(None, 6, 6, 3)]), ("RandomTranslation", (0.1, 0.1), {}, [(None, 6, 6, 3)]),
    ("RandomRotation", (0.1,), {}, [(None, 6, 6, 3)]), ("RandomZoom", (0.1,), {}, [(None, 6, 6, 3)]),
    ("RandomContrast", (0.1,), {}, [(None, 6, 6, 3)]),
]
MERGES = [("Add", {}, [(None, 4), (None, 4)]), ("Subtract", {}, [(None, 3, 4), (None, 3, 4)]),
          ("Multiply", {}, [(None, 4), (None, 4), (None, 4)]), ("Average", {}, [(None, 4), (None, 4)]),
          ("Maximum", {}, [(None, 4), (None, 4)]), ("Minimum", {}, [(None, 4), (None, 4)]),
          ("Concatenate", {}, [(None, 3, 4), (None, 3, 5)]), ("Concatenate", {"axis": 1}, [(None, 3, 4), (None, 2, 4)])]


@pytest.mark.parametrize("name,args,kwargs,shapes", CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(CASES)])
def test_compute_output_shape_is_keras_for_each_layer_the_engine_infers(name, args, kwargs, shapes):
    keras = keras_ref.load()
    for shape in shapes:
        want = tuple(getattr(keras.layers, name)(*args, **kwargs).compute_output_shape(shape))
        assert getattr(layers, name)(*args, **kwargs).compute_output_shape(shape) == want, (name, shape)


@pytest.mark.parametrize("name,kwargs,shapes", MERGES, ids=[f"{c[0]}{i}" for i, c in enumerate(MERGES)])
def test_compute_output_shape_of_merge_layers_is_keras(name, kwargs, shapes):
    keras = keras_ref.load()
    want = tuple(getattr(keras.layers, name)(**kwargs).compute_output_shape(shapes))
    assert getattr(layers, name)(**kwargs).compute_output_shape(shapes) == want


def test_compute_output_shape_of_bidirectional_and_attention_is_keras():
    keras = keras_ref.load()
    for merge_mode in ("concat", "sum"):
        want = keras.layers.Bidirectional(keras.layers.LSTM(3, return_sequences=True), merge_mode=merge_mode)
        got = layers.Bidirectional(layers.LSTM(3, return_sequences=True), merge_mode=merge_mode)
        assert got.compute_output_shape((None, 5, 2)) == tuple(want.compute_output_shape((None, 5, 2)))
    want = keras.layers.MultiHeadAttention(2, 3).compute_output_shape((None, 4, 6), (None, 5, 6))
    # boundfit's takes the query, value and key shapes as one list, as every layer of several inputs
    assert layers.MultiHeadAttention(2, 3).compute_output_shape([(None, 4, 6), (None, 5, 6), (None, 5, 6)]) == \
        tuple(want)


def test_compute_output_shape_raises_the_engines_shape_errors_naming_the_call():
    with pytest.raises(ValueError, match=r"window 3x3 does not fit input 2x2.*\(None, 2, 2, 1\)"):
        layers.Conv2D(4, 3).compute_output_shape((None, 2, 2, 1))
    with pytest.raises(ValueError, match="rank 2"):
        layers.MaxPooling1D(2).compute_output_shape((None, 4, 4, 1))
    with pytest.raises(ValueError, match="does not fit"):   # C's truncating division once let a 2-window fit 1
        bf.Sequential([layers.Input((1, 1, 1)), layers.MaxPooling2D()])
