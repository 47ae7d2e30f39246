"""Keras's losses called as functions (issue 33): a loss object computed by
the engine in compile() (MeanSquaredError, the cross-entropies, Huber,
LogCosh) is also called on arrays or, inside a custom loss or
compute_loss(), on symbolic tensors, through its keras.ops formula, with
reduction=None giving the values unreduced (keras.io's NER loss); an array
tiled by the traced batch size inside a call() is a per-sample constant
(keras.io's causal mask). Against Keras 3 (recorded)."""

import numpy as np
import pytest

import boundfit as bf
from helpers.keras_recorded import case

import keras_ref

rng = np.random.default_rng(7)
PROBS = rng.dirichlet(np.ones(4), (3, 5)).astype(np.float32)
IDS = rng.integers(0, 4, (3, 5))
Y = rng.random((6, 4)).astype(np.float32)
P = rng.standard_normal((6, 4)).astype(np.float32)
CALLS = [   # (class, its arguments, y_true, y_pred)
    ("SparseCategoricalCrossentropy", {"reduction": None}, IDS, PROBS),
    ("SparseCategoricalCrossentropy", {}, IDS, PROBS),
    ("SparseCategoricalCrossentropy", {"from_logits": True}, IDS[:, 0], P[:3]),
    ("MeanSquaredError", {}, Y, P),
    ("MeanAbsoluteError", {"reduction": None}, Y, P),
    ("Huber", {"delta": 0.5}, Y, P),
    ("LogCosh", {}, Y, P),
    ("BinaryCrossentropy", {"from_logits": True, "label_smoothing": 0.1}, Y, P),
    ("CategoricalCrossentropy", {}, Y, np.abs(P)),
]


def test_engine_losses_called_on_arrays_give_keras_values():
    def compute():
        keras = keras_ref.load()
        return [np.asarray(getattr(keras.losses, c)(**kw)(t, p)) for c, kw, t, p in CALLS]
    want = case(compute)
    for (c, kw, t, p), w in zip(CALLS, want):
        got = getattr(bf.losses, c)(**kw)(t, p)
        assert np.shape(got) == np.shape(w), c
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6, err_msg=c)


def test_a_one_row_array_tiled_by_the_traced_batch_size_is_the_row_for_every_sample():
    class Masked(bf.layers.Layer):
        def call(self, x):
            mask = np.tril(np.ones((1, 3, 3), np.float32))
            return x * bf.ops.tile(mask, [bf.ops.shape(x)[0], 1, 1])

    inp = bf.Input((3, 3))
    m = bf.Model(inp, Masked()(inp))
    x = rng.random((4, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(m.predict(x, verbose=0), x * np.tril(np.ones((3, 3))), rtol=1e-6)
    with pytest.raises(bf.ops.OpNotSupportedError, match="keras.ops.tile.*batch size \\(None\\) repeats only an array "
                                                         "of one row"):
        bf.ops.tile(np.ones((2, 3)), [None, 1])
