"""GroupQueryAttention, ReversibleEmbedding, SpectralNormalization, Wrapper,
InputSpec and keras.layers.serialize / deserialize (issue 34).

Against Keras 3 (JAX), recorded (tests/helpers/keras_recorded.py): one
Functional model holds every case as a branch (grouped-query attention with
a key, an attention mask and the causal mask; multi-query attention with a
gate, a sliding window and its scores; tied and untied reversible embeddings
with a soft cap; spectral normalization of a Dense and a Conv1D); the same
weights give the same predictions, two epochs of SGD with momentum the same
losses and weights (SpectralNormalization's vector_u included: the power
iteration in training, the raw kernel outside it, as Keras's JAX backend).
Central differences check the new math's gradients; the plan holds to the
arenas; .keras files and layer dicts go both ways; bad arguments raise
naming the argument."""

import json

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from conftest import assert_plan_equals_arenas, directional_check
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: names counted from the start
from helpers.keras_compare import close
from helpers.keras_recorded import case, keras_file

KERAS_EXPORTED = {"GroupedQueryAttention": "GroupQueryAttention"}
LAYERS = ["gqa", "mqa", "tied", "untied", "sn_dense", "sn_conv", "mid"]


def branches(M):
    """every case as a branch of one model (M: keras or boundfit): the outputs flattened and concatenated"""
    L = M.layers
    q, v, k = M.Input((4, 6), name="q"), M.Input((5, 6), name="v"), M.Input((5, 6), name="k")
    am, ids = M.Input((4, 5), name="attention_mask"), M.Input((4,), name="ids")
    tied = L.ReversibleEmbedding(11, 6, logit_soft_cap=2.0, name="tied")
    untied = L.ReversibleEmbedding(11, 6, tie_weights=False, name="untied")
    h = tied(ids)
    mqa, scores = L.GroupQueryAttention(3, 4, 1, use_gate=True, sliding_window=2, name="mqa")(
        q, v, return_attention_scores=True)
    outs = [
        L.GroupQueryAttention(2, 4, 2, name="gqa")(q, v, key=k, attention_mask=am, use_causal_mask=True),
        mqa, scores,
        tied(L.Dense(6, activation="tanh", name="mid")(h), reverse=True),
        untied(untied(ids), reverse=True),
        L.SpectralNormalization(L.Dense(3, activation="tanh", name="sn_dense_inner"), name="sn_dense")(q),
        L.SpectralNormalization(L.Conv1D(2, 2, name="sn_conv_inner"), power_iterations=2, name="sn_conv")(v),
    ]
    return M.Model([q, v, k, am, ids], L.Concatenate()([L.Flatten()(o) for o in outs]))


def data(n=8, seed=0):
    r = np.random.default_rng(seed)
    x = [r.standard_normal((n, 4, 6)), r.standard_normal((n, 5, 6)), r.standard_normal((n, 5, 6)),
         r.random((n, 4, 5)) > 0.3, r.integers(0, 11, (n, 4))]
    x[3][:, :, 0] = True   # each query sees its first key through the causal mask
    return [a.astype(np.float32) for a in x]


def initial(km):
    """{layer: its weights drawn again} (each layer's in Keras's order: boundfit's model-level get_weights()
    follows its engine's node order, which for a layer called twice or with parallel sublayers is not Keras's)"""
    r = np.random.default_rng(1)
    return {n: [(r.standard_normal(w.shape) * 0.5).astype(np.float32) for w in km.get_layer(n).get_weights()]
            for n in LAYERS}


def set_initial(m, w0):
    for n, ws in w0.items():
        m.get_layer(n).set_weights(ws)


def _keras_side():
    keras = keras_ref.load()
    km = branches(keras)
    w0 = initial(km)
    set_initial(km, w0)
    x = data()
    y = np.random.default_rng(5).standard_normal((len(x[0]), km.output_shape[-1])).astype(np.float32)
    out = km.predict(x, verbose=0)
    km.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss="mse")
    loss = km.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    return dict(w0=w0, y=y, out=out, loss=loss, after=km.predict(x, verbose=0),
                layers={n: km.get_layer(n).get_weights() for n in LAYERS})


def test_layers_match_keras_in_predictions_and_two_epochs_of_sgd():
    ref = case(_keras_side)
    bm = branches(bf)
    for n in LAYERS:   # each layer's weights in Keras's order and shapes
        assert [w.shape for w in bm.get_layer(n).get_weights()] == [w.shape for w in ref["w0"][n]], n
    set_initial(bm, ref["w0"])
    x = data()
    close(ref["out"], bm.predict(x, verbose=0), 2e-5)
    bm.compile(optimizer=bf.optimizers.SGD(0.05, momentum=0.9), loss="mse")
    loss = bm.fit(x, ref["y"], batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(loss, ref["loss"], rtol=1e-5)
    close(ref["after"], bm.predict(x, verbose=0), 1e-4)
    for name in LAYERS:
        got = bm.get_layer(name).get_weights()
        assert [w.shape for w in got] == [w.shape for w in ref["layers"][name]], name
        for a, b in zip(got, ref["layers"][name]):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-5, err_msg=name)


@pytest.mark.parametrize("make, used", [
    (lambda L, q, v, m: L.GroupQueryAttention(2, 4, 2)(q, v, attention_mask=m, use_causal_mask=True), (0, 1, 3)),
    (lambda L, q, v, m: L.GroupQueryAttention(3, 2, 1, use_gate=True, sliding_window=2)(q, v), (0, 1)),
    (lambda L, q, v, m: L.ReversibleEmbedding(7, 6, logit_soft_cap=1.5)(q, reverse=True), (0,)),
], ids=["gqa_masked_causal", "mqa_gate_window", "reverse_soft_cap"])
def test_new_math_matches_central_differences(make, used):
    L = bf.layers
    ins = {0: bf.Input((4, 6)), 1: bf.Input((5, 6)), 3: bf.Input((4, 5))}
    out = make(L, L.Dense(6)(ins[0]), ins.get(1), ins.get(3))
    m_ = bf.Model([ins[k] for k in used], L.Flatten()(out))
    m_.compile(optimizer="sgd", loss="mse")
    x = [data(6)[k] for k in used]
    y = np.random.default_rng(4).standard_normal((6, m_.output_shape[-1])).astype(np.float32)
    directional_check(m_, x, y)


def _normalize(a):
    return a / np.sqrt(np.sum(a * a))


def test_spectral_normalization_step_matches_float64_central_differences():
    """One SGD step (learning rate 1) of a normalized Dense: the kernel's gradient, through sigma, and vector_u's
    power iteration against float64 NumPy (sigma = (v W) . u with v, u held, as Keras stops their gradients); the
    loss's own central differences can't be asked of evaluate(), which reads the raw kernel as Keras does."""
    r = np.random.default_rng(7)
    W0, u0, b0 = r.standard_normal((4, 3)), r.standard_normal((1, 3)), r.standard_normal(3)
    x, y = r.standard_normal((8, 4)).astype(np.float32), r.standard_normal((8, 3)).astype(np.float32)
    sn = bf.layers.SpectralNormalization(bf.layers.Dense(3))
    m = bf.Sequential([bf.Input((4,)), sn])
    m.compile(optimizer=bf.optimizers.SGD(1.0), loss="mse")
    sn.set_weights([a.astype(np.float32) for a in (W0, u0, b0)])
    W0, u0, b0 = (a.astype(np.float64) for a in sn.get_weights())
    m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    W1, u1, b1 = sn.get_weights()
    v = _normalize(u0 @ W0.T)
    u = _normalize(v @ W0)
    np.testing.assert_allclose(u1, u, rtol=1e-5, atol=1e-7)

    def loss(W, b):
        return np.mean((x @ W / (v @ W @ u.T).item() + b - y) ** 2)
    eps, num = 1e-6, np.zeros_like(W0)
    for i in np.ndindex(W0.shape):
        d = np.zeros_like(W0)
        d[i] = eps
        num[i] = (loss(W0 + d, b0) - loss(W0 - d, b0)) / (2 * eps)
    np.testing.assert_allclose(W0 - W1, num, rtol=1e-3, atol=1e-5)
    num_b = np.array([(loss(W0, b0 + e) - loss(W0, b0 - e)) / (2 * eps) for e in np.eye(3) * eps])
    np.testing.assert_allclose(b0 - b1, num_b, rtol=1e-3, atol=1e-5)


def test_plan_holds_to_the_arenas():
    bm = branches(bf)
    bm.compile(optimizer="adam", loss="mse")
    x = data()
    assert_plan_equals_arenas(bm, x, np.zeros((8, bm.output_shape[-1]), np.float32), batch_size=4)


def test_spectral_normalization_moves_vector_u_in_fit_only():
    sn = bf.layers.SpectralNormalization(bf.layers.Dense(3))
    m = bf.Sequential([bf.Input((4,)), sn])
    m.compile(optimizer="sgd", loss="mse")
    x, y = data()[0][:, 0, :4], np.zeros((8, 3), np.float32)
    u0 = sn.get_weights()[1]
    m.predict(x, verbose=0)
    m.evaluate(x, y, verbose=0)
    np.testing.assert_array_equal(sn.get_weights()[1], u0)
    m.fit(x, y, epochs=1, verbose=0)
    u1 = sn.get_weights()[1]
    kernel = sn.get_weights()[0]
    assert not np.allclose(u1, u0)
    np.testing.assert_allclose(np.linalg.norm(u1), 1.0, rtol=1e-5)   # normalized, as Keras's power iteration
    s = np.linalg.svd(kernel, compute_uv=False)[0]
    assert abs(float((u1 @ kernel.T @ kernel @ u1.T).item()) ** 0.5 - s) < 0.5 * s   # u leans to the top singular vector


def test_spectral_normalization_refuses_micro_batches():
    m = bf.Sequential([bf.Input((4,)), bf.layers.SpectralNormalization(bf.layers.Dense(3))])
    m.compile(optimizer="sgd", loss="mse")
    with pytest.raises(Exception, match="(?i)micro"):
        m.fit(np.zeros((8, 4), np.float32), np.zeros((8, 3), np.float32), batch_size=8, micro_batch=4, verbose=0)


def _normalized(cfg):
    """tuples as lists, as a file holds them; None entries dropped (Keras 3.15 writes quantization_config=None and
    initializers' input_axes=None, which boundfit's configs leave out)"""
    def drop(v):
        return {k: drop(x) for k, x in v.items() if x is not None} if isinstance(v, dict) else \
            [drop(x) for x in v] if isinstance(v, list) else v
    return drop(json.loads(json.dumps(cfg)))


def test_keras_files_hold_the_layers_both_ways(tmp_path):
    bm = branches(bf)
    x = data(4)
    ours, theirs = tmp_path / "ours.keras", tmp_path / "theirs.keras"

    def keras_writes(path):
        km = branches(keras_ref.load())
        w0 = initial(km)
        set_initial(km, w0)
        km.save(path)
        return dict(w0=w0, configs={n: km.get_layer(n).get_config() for n in LAYERS},
                    classes={n: type(km.get_layer(n)).__name__ for n in LAYERS})
    ref = keras_file(theirs, keras_writes)
    set_initial(bm, ref["w0"])
    bm.save(ours)

    def keras_reads():
        back = keras_ref.load().models.load_model(ours)
        return dict(out=back.predict(x, verbose=0), configs={n: back.get_layer(n).get_config() for n in LAYERS})
    read = case(keras_reads, files=[ours])
    want = bm.predict(x, verbose=0)
    close(want, read["out"], 2e-5)
    close(want, bf.models.load_model(theirs).predict(x, verbose=0), 2e-5)
    loaded = bf.models.load_model(theirs)
    for name in LAYERS:
        assert _normalized(read["configs"][name]) == _normalized(ref["configs"][name])
        keras_class = ref["classes"][name]   # Keras's GroupedQueryAttention is exported as GroupQueryAttention
        assert type(loaded.get_layer(name)).__name__ == KERAS_EXPORTED.get(keras_class, keras_class)


@pytest.mark.parametrize("make", [
    lambda L: L.GroupQueryAttention(4, 4, 2, dropout=0.1, use_bias=False),
    lambda L: L.ReversibleEmbedding(9, 3, tie_weights=False, logit_soft_cap=30.0, mask_zero=True),
    lambda L: L.SpectralNormalization(L.Conv2D(2, 3, activation="relu"), power_iterations=3),
    lambda L: L.Dense(3, activation="relu"),
], ids=["gqa", "reversible_embedding", "spectral_conv", "dense"])
def test_layer_dicts_go_both_ways_with_keras(make):
    ours = make(bf.layers)
    mine = bf.layers.serialize(ours)

    def keras_side():
        keras = keras_ref.load()
        return dict(read=keras.layers.deserialize(mine).get_config(), wrote=keras.layers.serialize(make(keras.layers)))
    ref = case(keras_side)
    assert _normalized(ref["read"]) == _normalized(ours.get_config())
    back = bf.layers.deserialize(ref["wrote"])
    assert type(back) is type(ours)
    cfg = {k: v for k, v in back.get_config().items() if k != "name"}
    assert _normalized(cfg) == _normalized({k: v for k, v in ours.get_config().items() if k != "name"})


class _Gated(bf.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.input_spec = bf.InputSpec(ndim=3, axes={-1: 4})

    def call(self, x):
        return x * 2.0


@pytest.mark.parametrize("shape, says", [
    ((5,), "expected ndim=3, found ndim=2"),
    ((5, 3), "expected axis -1 of input shape to have value 4"),
])
def test_input_spec_of_a_custom_layer_is_checked_as_keras(shape, says):
    with pytest.raises(ValueError, match=f"Input 0 .*'{_Gated().name}'|{says}") as e:
        _Gated(name="gated")(bf.Input(shape))
    assert says in str(e.value) and "'gated'" in str(e.value)
    assert _Gated()(bf.Input((5, 4))).shape == (None, 5, 4)


@pytest.mark.parametrize("spec, shape, dtype, says", [
    (dict(min_ndim=3), (None, 4), "float32", "min_ndim=3"),
    (dict(max_ndim=2), (None, 4, 4), "float32", "max_ndim=2"),
    (dict(shape=(None, 3)), (None, 4), "float32", "expected shape=(None, 3)"),
    (dict(dtype="int32"), (None, 4), "float32", "expected dtype=int32"),
])
def test_input_spec_checks_match_keras(spec, shape, dtype, says):
    def keras_side():
        keras = keras_ref.load()
        try:
            keras.src.layers.input_spec.assert_input_compatibility(keras.InputSpec(**spec),
                                                                   keras.KerasTensor(shape, dtype=dtype), "probe")
        except ValueError as e:
            return dict(message=str(e), config=keras.InputSpec(**spec).get_config())
        return dict(message="", config=None)
    ref = case(keras_side)
    assert says in ref["message"]   # the expectation as Keras words it
    with pytest.raises(ValueError, match=says.replace("(", r"\(").replace(")", r"\)")):
        bf.layers.input_spec.check(bf.InputSpec(**spec), bf.layers.node.KerasTensor(shape[1:], dtype=dtype), "probe")
    assert _normalized(bf.InputSpec(**spec).get_config()) == _normalized(ref["config"])


@bf.saving.register_keras_serializable(package="tests")
class Doubled(bf.layers.Wrapper):
    def call(self, x):
        return self.layer(x) * 2.0


def test_a_user_subclass_of_wrapper_trains_and_round_trips(tmp_path):
    x = bf.Input((3,))
    m = bf.Model(x, Doubled(bf.layers.Dense(2, name="inner"), name="doubled")(x))
    m.compile(optimizer="sgd", loss="mse")
    xs = data()[0][:, 0, :3]
    m.fit(xs, np.zeros((8, 2), np.float32), verbose=0)
    w, b = m.get_layer("doubled").get_weights()
    np.testing.assert_allclose(m.predict(xs, verbose=0), 2 * (xs @ w + b), rtol=1e-5, atol=1e-6)
    assert m.get_layer("doubled").get_config()["layer"]["class_name"] == "Dense"
    m.save(tmp_path / "w.keras")
    back = bf.models.load_model(tmp_path / "w.keras")
    np.testing.assert_allclose(back.predict(xs, verbose=0), m.predict(xs, verbose=0), rtol=1e-6)


@pytest.mark.parametrize("make, match", [
    (lambda L: L.GroupQueryAttention(4, 3, 2), "num_query_heads must be divisible"),
    (lambda L: L.GroupQueryAttention(0, 2, 2), "head_dim"),
    (lambda L: L.GroupQueryAttention(4, 2, 2, dropout=1.0), "dropout"),
    (lambda L: L.GroupQueryAttention(4, 2, 2, sliding_window=0), "sliding_window"),
    (lambda L: L.GroupQueryAttention(4, 2, 2, dropout=0.1, flash_attention=True), "flash"),
    (lambda L: L.ReversibleEmbedding(5, 2, reverse_dtype="bfloat16"), "reverse_dtype"),
    (lambda L: L.ReversibleEmbedding(5, 2, logit_soft_cap=-1), "logit_soft_cap"),
    (lambda L: L.ReversibleEmbedding(5, 2, tie_weights="yes"), "tie_weights"),
    (lambda L: L.SpectralNormalization(L.Dense(2), power_iterations=0), "power_iterations"),
    (lambda L: L.SpectralNormalization(L.LayerNormalization()), "layer=LayerNormalization"),
    (lambda L: L.SpectralNormalization("dense"), "layer"),
    (lambda L: L.Wrapper(3), "layer"),
    (lambda L: L.InputSpec(ndim=-1), "ndim"),
    (lambda L: L.InputSpec(axes={"a": 1}), "axes"),
    (lambda L: L.deserialize("Dense"), "config"),
])
def test_bad_arguments_raise_naming_the_argument(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make(bf.layers)


def test_gqa_query_mask_is_refused_by_name():
    q = bf.Input((4, 6))
    with pytest.raises(ValueError, match="query_mask"):
        bf.layers.GroupQueryAttention(2, 2, 1)(q, q, query_mask=q)
