"""Attention, AdditiveAttention, EinsumDense, TimeDistributed and
keras.ops.einsum (issue 34), composed from the engine's primitives
(layers/dot_attention.py, einsum_dense.py, einsum_map.py, time_distributed.py,
ops_einsum.py).

Against Keras 3 (JAX), recorded (tests/helpers/keras_recorded.py): one
Functional model holds every case as a branch; the same weights give the same
predictions, two epochs of SGD with momentum the same losses and weights
(the gradients through each layer). keras.ops.einsum's mapped cases give
Keras's values. Central differences check the new math (concat scores with
masks and the causal mask, additive scores, an einsum with a broadcast bias).
.keras files both ways need Keras live: the same model, saved by each and
opened by the other. What boundfit cannot map is refused by name."""

import json

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from conftest import directional_check
from helpers.keras_compare import close
from helpers.keras_recorded import case

B = 4


def branches(M):
    """every case as a branch of one model (M: keras or boundfit): the outputs flattened and concatenated"""
    L = M.layers
    q, v = M.Input((4, 3), name="q"), M.Input((5, 3), name="v")
    qm, vm = M.Input((4,), name="q_mask"), M.Input((5,), name="v_mask")
    img, seq = M.Input((3, 5, 5, 2), name="frames"), M.Input((4, 2, 3), name="seq")
    bn = L.BatchNormalization(name="frozen_bn")
    bn.trainable = False
    outs = [
        L.Attention(use_scale=True, name="dot_attention")([q, v]),
        L.Attention(score_mode="concat", use_scale=True, name="concat_attention")(
            [q, v, L.Dense(3, name="key")(v)], mask=[qm, vm], use_causal_mask=True),
        *L.AdditiveAttention(name="additive_attention")([q, v], return_attention_scores=True),
        L.EinsumDense("abc,cd->abd", (4, 5), bias_axes="d", activation="relu", name="einsum_abd")(q),
        L.EinsumDense("abc,cde->abde", (4, 2, 5), bias_axes="de", name="einsum_abde")(q),
        L.EinsumDense("...b,bc->...c", 4, activation="tanh", name="einsum_ellipsis")(seq),
        L.EinsumDense("abcd,cde->abe", (4, 3), bias_axes="e", name="einsum_heads_out")(seq),
        L.EinsumDense("abc,bd->adc", (5, 3), bias_axes="d", name="einsum_permuted")(q),
        L.TimeDistributed(L.Dense(2, activation="tanh", name="td_inner_dense"), name="td_dense")(q),
        L.TimeDistributed(L.Flatten(name="td_inner_flatten"), name="td_flatten")(L.TimeDistributed(bn, name="td_bn")(
            L.TimeDistributed(L.MaxPooling2D(name="td_inner_pool"), name="td_pool")(L.TimeDistributed(
                L.Conv2D(3, 3, activation="relu", name="td_inner_conv"), name="td_conv")(img)))),
    ]
    return M.Model([q, v, qm, vm, img, seq], L.Concatenate()([L.Flatten()(o) for o in outs]))


LAYERS = ["dot_attention", "concat_attention", "key", "additive_attention", "einsum_abd", "einsum_abde",
          "einsum_ellipsis", "einsum_heads_out", "einsum_permuted", "td_dense", "td_conv", "td_bn"]


def data(n=8, seed=0):
    r = np.random.default_rng(seed)
    x = [r.standard_normal((n, 4, 3)), r.standard_normal((n, 5, 3)), r.random((n, 4)) > 0.3, r.random((n, 5)) > 0.3,
         r.standard_normal((n, 3, 5, 5, 2)), r.standard_normal((n, 4, 2, 3))]
    x[3][:, 0] = True   # each query sees at least its first key through the causal mask
    return [a.astype(np.float32) for a in x]


def initial(km):
    """Keras model km's weights drawn again (the frozen BatchNormalization's moving variance > 0)"""
    r = np.random.default_rng(1)
    return [(np.abs(r.standard_normal(v.shape)) + 0.5 if "moving_variance" in v.path else
             r.standard_normal(v.shape) * 0.5).astype(np.float32) for v in km.weights]


def _keras_side():
    keras = keras_ref.load()
    km = branches(keras)
    w0 = initial(km)
    km.set_weights(w0)
    x = data()
    y = np.random.default_rng(5).standard_normal((len(x[0]), km.output_shape[-1])).astype(np.float32)
    out = km.predict(x, verbose=0)
    km.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss="mse")
    loss = km.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    return dict(w0=w0, y=y, out=out, loss=loss, layers={n: km.get_layer(n).get_weights() for n in LAYERS})


def test_layers_match_keras_in_predictions_and_two_epochs_of_sgd():
    ref = case(_keras_side)
    bm = branches(bf)
    assert [w.shape for w in bm.get_weights()] == [w.shape for w in ref["w0"]]   # Keras's order and shapes
    bm.set_weights(ref["w0"])
    x = data()
    close(ref["out"], bm.predict(x, verbose=0), 2e-5)
    bm.compile(optimizer=bf.optimizers.SGD(0.05, momentum=0.9), loss="mse")
    loss = bm.fit(x, ref["y"], batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(loss, ref["loss"], rtol=1e-5)
    for name in LAYERS:
        got = bm.get_layer(name).get_weights()
        assert [w.shape for w in got] == [w.shape for w in ref["layers"][name]], name
        for a, b in zip(got, ref["layers"][name]):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-5, err_msg=name)


def _einsum_model(M, kernel):
    x, y, z = M.Input((4, 3)), M.Input((5, 3)), M.Input((3, 5))
    return M.Model([x, y, z], [M.ops.einsum("abc,cde->abde", x, kernel), M.ops.einsum("bij,bkj->bik", x, y),
                               M.ops.einsum("bij,bjk->bki", x, z), M.ops.einsum("...c,dc->...d", x, kernel[:, 0].T)])


def test_ops_einsum_of_symbolic_tensors_gives_keras_values():
    kernel = np.random.default_rng(2).standard_normal((3, 2, 5)).astype(np.float32)
    r = np.random.default_rng(3)
    x = [r.standard_normal((2,) + s).astype(np.float32) for s in ((4, 3), (5, 3), (3, 5))]
    want = case(lambda: [np.asarray(a) for a in _einsum_model(keras_ref.load(), kernel).predict(x, verbose=0)])
    for a, b in zip(want, _einsum_model(bf, kernel).predict(x, verbose=0)):
        close(a, b, 1e-5)


@pytest.mark.parametrize("make, used", [
    (lambda L, q, v, m: L.Attention(score_mode="concat", use_scale=True)([q, v], mask=[m[0], m[1]],
                                                                          use_causal_mask=True), (0, 1, 2, 3)),
    (lambda L, q, v, m: L.AdditiveAttention()([q, v], mask=[None, m[1]]), (0, 1, 3)),
    (lambda L, q, v, m: L.EinsumDense("abc,cde->abde", (4, 2, 5), bias_axes="d", activation="tanh")(q), (0,)),
], ids=["concat_masked_causal", "additive_value_mask", "einsum_broadcast_bias"])
def test_new_math_matches_central_differences(make, used):
    L = bf.layers
    ins = [bf.Input((4, 3)), bf.Input((5, 3)), bf.Input((4,)), bf.Input((5,))]
    out = make(L, L.Dense(3)(ins[0]), ins[1], ins[2:])
    m = bf.Model([ins[k] for k in used], L.Flatten()(out))
    m.compile(optimizer="sgd", loss="mse")
    x = [data(6)[k] for k in used]
    y = np.random.default_rng(4).standard_normal((6, m.output_shape[-1])).astype(np.float32)
    directional_check(m, x, y)


def _normalized(cfg):
    return json.loads(json.dumps(cfg))   # tuples as lists, as a file holds them


def test_keras_files_hold_the_layers_both_ways(tmp_path):
    keras = keras_ref.load()
    km, bm = branches(keras), branches(bf)
    w = initial(km)
    km.set_weights(w)
    bm.set_weights(w)
    x = data(4)
    bm.save(tmp_path / "ours.keras")
    km.save(tmp_path / "theirs.keras")
    theirs, ours = keras.models.load_model(tmp_path / "ours.keras"), bf.models.load_model(tmp_path / "theirs.keras")
    want = bm.predict(x, verbose=0)   # Keras's predictions (the test above), one Keras compile less
    close(want, theirs.predict(x, verbose=0), 2e-5)
    close(want, ours.predict(x, verbose=0), 2e-5)
    for name in LAYERS:
        assert _normalized(theirs.get_layer(name).get_config()) == _normalized(km.get_layer(name).get_config())
        assert type(ours.get_layer(name)).__name__ == type(km.get_layer(name)).__name__


def test_attention_dropout_is_the_identity_in_predict():
    q, v = bf.Input((4, 3)), bf.Input((5, 3))
    plain, dropped = (bf.Model([q, v], bf.layers.Attention(dropout=d, seed=3)([q, v])) for d in (0.0, 0.5))
    x = data(4)[:2]
    np.testing.assert_array_equal(plain.predict(x, verbose=0), dropped.predict(x, verbose=0))


def _call(make, shape=(4, 3)):
    return make(bf.layers, bf.Input(shape))


@pytest.mark.parametrize("make, shape, error, says", [
    (lambda L, x: L.EinsumDense("abc,dc->abd", (4, 5))(x), (4, 3), NotImplementedError, "before a contracted"),
    (lambda L, x: L.EinsumDense("abc,cd->abcd", (4, 3, 5))(x), (4, 3), bf.errors.OpNotSupportedError,
     "keeps axis 'c'"),
    (lambda L, x: L.EinsumDense("abc,cd->abd", (4, 5), lora_rank=2)(x), (4, 3), NotImplementedError, "lora_rank"),
    (lambda L, x: L.TimeDistributed(L.BatchNormalization(name="bn_in_td"))(x), (3, 4, 4, 2), NotImplementedError,
     "'bn_in_td'"),
    (lambda L, x: L.TimeDistributed(L.Conv1D(2, 2, name="conv_in_td"))(x), (65, 4, 2), NotImplementedError,
     "'conv_in_td'.*at most 64"),
    (lambda L, x: bf.ops.einsum("abc,abc,cd->abd", x, x, np.ones((3, 2))), (4, 3), bf.errors.OpNotSupportedError,
     "3 operands"),
    (lambda L, x: L.Attention()([x, x], mask=[x]), (4, 3), ValueError, "mask must be a list"),
    (lambda L, x: L.AdditiveAttention()([L.Dense(3)(L.Embedding(9, 3, mask_zero=True, name="padded")(x))] * 2),
     (4,), NotImplementedError, "query comes from Embedding 'padded' with mask_zero=True.*mask="),
], ids=["einsum_kernel_order", "einsum_per_axis_kernel", "einsum_lora", "td_batchnorm_training", "td_too_many_steps",
        "ops_einsum_three_operands", "attention_bad_mask", "attention_carried_mask"])
def test_what_boundfit_cannot_map_is_refused_by_name(make, shape, error, says):
    with pytest.raises(error, match=says):
        _call(make, shape)


@pytest.mark.parametrize("make, match", [
    (lambda L: L.Attention(score_mode="general"), "score_mode"),
    (lambda L: L.Attention(dropout=1.5), "dropout"),
    (lambda L: L.AdditiveAttention(use_scale="yes"), "use_scale"),
    (lambda L: L.EinsumDense(3, 4), "equation"),
    (lambda L: L.EinsumDense("ab,bc->ac", (0,)), "output_shape"),
    (lambda L: L.TimeDistributed("dense"), "layer"),
])
def test_bad_arguments_raise_naming_the_argument(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make(bf.layers)
