"""Masks from Embedding(mask_zero=True) reaching GlobalAveragePooling1D (an
average over the unmasked steps) and MultiHeadAttention (query, value and key
masks ANDed with attention_mask and the causal mask; the output carries the
query's mask) against Keras 3: outputs, loss and gradients (one SGD step),
finite differences, plans equal to the arenas on cpu and emu, Keras files
both ways, and the refusals still in force."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from conftest import assert_plan_equals_arenas, directional_check, engine_gradient
from helpers.keras_compare import against_keras as compare, close
from keras_ref import load

T, T2, V, E, B = 6, 4, 11, 4, 5
rng = np.random.default_rng(0)
IDS = rng.integers(1, V, (B, T))
IDS[0, 4:] = 0      # padded at the end
IDS[1, :2] = 0      # padded at the start
IDS[3, 2] = 0       # a hole
IDS[4, 1:] = 0      # one step left
IDS2 = rng.integers(1, V, (B, T2))
IDS2[0, 1:] = 0
IDS2[2, :2] = 0
Y = rng.standard_normal((B, 2)).astype(np.float32)




def gap(K, Ls):
    """Embedding(mask_zero) -> GlobalAveragePooling1D -> Dense."""
    return K.Sequential([K.Input((T,)), Ls.Embedding(V, E, mask_zero=True), Ls.GlobalAveragePooling1D(), Ls.Dense(2)])


def encoder(K, Ls, causal=False):
    """Embedding(mask_zero) -> MHA(x, x) + x -> LayerNormalization (passes the
    mask) -> GlobalAveragePooling1D (uses it) -> Dense."""
    i = K.Input((T,))
    e = Ls.Embedding(V, E, mask_zero=True)(i)
    a = Ls.MultiHeadAttention(2, 3)(e, e, use_causal_mask=causal)
    h = Ls.LayerNormalization()(Ls.Add()([e, a]))
    return K.Model(i, Ls.Dense(2)(Ls.GlobalAveragePooling1D()(h)))


def causal_encoder(K, Ls):
    return encoder(K, Ls, causal=True)


def cross(K, Ls):
    """Two masked sequences of different lengths: query mask from one, value and
    key masks from the other, ANDed with an explicit attention_mask."""
    q, v, am = K.Input((T,)), K.Input((T2,)), K.Input((T, T2))
    eq = Ls.Embedding(V, E, mask_zero=True)(q)
    ev = Ls.Embedding(V, 3, mask_zero=True)(v)
    ek = Ls.Embedding(V, 2, mask_zero=True)(v)
    a = Ls.MultiHeadAttention(2, 3)(eq, ev, key=ek, attention_mask=am)
    return K.Model([q, v, am], Ls.Dense(2)(Ls.GlobalAveragePooling1D()(a)))


AM = (rng.random((B, T, T2)) > 0.3).astype(np.float32)
CROSS_X = [IDS, IDS2, AM]




def against_keras(build, x):
    """Outputs (finite), loss and gradients against Keras 3 (helpers/keras_compare.py)."""
    return compare(build, x, Y, finite=True)


@pytest.mark.parametrize("build,x", [(gap, IDS), (encoder, IDS), (causal_encoder, IDS), (cross, CROSS_X)],
                         ids=["gap", "encoder", "causal", "cross"])
def test_masked_models_match_keras_outputs_loss_and_updated_weights(build, x):
    against_keras(build, x)


@pytest.mark.parametrize("rate", [0.0, 0.1])
def test_padded_queries_attend_as_in_keras(rate):
    """A padded query has no key left: Keras gives it uniform weights on JAX's
    dot_product_attention (dropout 0) and zero weights on its Softmax path
    (dropout > 0, in predict too); Flatten keeps those positions in the output."""
    keras = load()

    def flat(K, Ls):
        i = K.Input((T,))
        e = Ls.Embedding(V, E, mask_zero=True)(i)
        return K.Model(i, Ls.Flatten()(Ls.MultiHeadAttention(2, 3, dropout=rate)(e, e)))

    mk, mb = flat(keras, keras.layers), flat(bf, layers)
    mb.set_weights(mk.get_weights())
    close(np.asarray(mk.predict(IDS, verbose=0)), mb.predict(IDS, verbose=0))


def test_masked_average_ignores_the_padded_steps():
    """The masked steps' values and gradients play no part: changing the table
    row of id 0 changes nothing, and its gradient is zero."""
    m = gap(bf, layers)
    m.compile(optimizer="sgd", loss="mse")
    p0 = m.predict(IDS, verbose=0)
    w = m.get_weights()
    w[0][0] += 100.0
    m.set_weights(w)
    np.testing.assert_array_equal(p0, m.predict(IDS, verbose=0))
    assert np.all(engine_gradient(m, IDS, Y)[0][0] == 0)


def test_an_all_masked_row_averages_to_nan_as_keras():
    keras = load()
    x = IDS.copy()
    x[2] = 0
    mk, mb = gap(keras, keras.layers), gap(bf, layers)
    mb.set_weights(mk.get_weights())
    pk, pb = np.asarray(mk.predict(x, verbose=0)), mb.predict(x, verbose=0)
    np.testing.assert_array_equal(np.isnan(pk), np.isnan(pb))
    assert np.isnan(pb[2]).all() and not np.isnan(np.delete(pb, 2, 0)).any()
    close(np.delete(pk, 2, 0), np.delete(pb, 2, 0))



@pytest.mark.parametrize("build,x", [(gap, IDS), (encoder, IDS), (cross, CROSS_X)], ids=["gap", "encoder", "cross"])
def test_gradients_match_finite_differences(build, x):
    m = build(bf, layers)
    m.compile(optimizer="sgd", loss="mse")
    directional_check(m, x, Y, eps=1e-3, rtol=2e-2)   # LayerNormalization's and the softmax's curvature


@pytest.mark.parametrize("device", ["cpu", "emu"])
@pytest.mark.parametrize("build,x", [(encoder, IDS), (cross, CROSS_X)], ids=["encoder", "cross"])
def test_plan_equals_arena_high_water(build, x, device):
    m = build(bf, layers)
    m.compile(optimizer="adam", loss="mse")
    plan = assert_plan_equals_arenas(m, x, Y, 3, device=device)
    assert (plan.device_bytes > 0) == (device == "emu")


def test_emu_device_path_trains_as_the_cpu():
    a, b = encoder(bf, layers), encoder(bf, layers)
    b.set_weights(a.get_weights())
    for m, dev in ((a, "cpu"), (b, "emu")):
        m.compile(optimizer="adam", loss="mse")
        m.fit(IDS, Y, batch_size=2, epochs=2, verbose=0, shuffle=False, device=dev)
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_array_equal(a.predict(IDS, verbose=0), b.predict(IDS, verbose=0, device="emu"))


@pytest.mark.parametrize("build,x", [(encoder, IDS), (cross, CROSS_X)], ids=["encoder", "cross"])
def test_keras_files_both_ways(tmp_path, build, x):
    """Keras writes the masks it propagates as op nodes (not_equal, logical_or) and
    `mask=` call arguments; boundfit reads them as the masks its graph carries."""
    keras = load()
    mb = build(bf, layers)
    mb.compile(optimizer="adam", loss="mse")
    mb.save(tmp_path / "bf.keras")
    mk = keras.saving.load_model(tmp_path / "bf.keras")
    close(np.asarray(mk.predict(x, verbose=0)), mb.predict(x, verbose=0))
    mk2 = build(keras, keras.layers)
    mk2.compile(optimizer="adam", loss="mse")
    mk2.save(tmp_path / "k.keras")
    mb2 = bf.models.load_model(tmp_path / "k.keras")
    close(np.asarray(mk2.predict(x, verbose=0)), mb2.predict(x, verbose=0))


def test_a_keras_mask_op_used_as_data_is_refused_by_name(tmp_path):
    import json
    import zipfile
    from boundfit.saving import keras_graph
    keras = load()
    encoder(keras, keras.layers).save(tmp_path / "k.keras")
    cfg = json.loads(zipfile.ZipFile(tmp_path / "k.keras").read("config.json"))
    dense = [e for e in cfg["config"]["layers"] if e["class_name"] == "Dense"][0]
    op = [e["name"] for e in cfg["config"]["layers"] if e["class_name"] == "NotEqual"][0]
    dense["inbound_nodes"][0]["args"][0]["config"]["keras_history"] = [op, 0, 0]
    with pytest.raises(ValueError, match=f"'{op}'.* only as a mask"):
        keras_graph.model_from_config(cfg)


def test_attention_output_carries_the_query_mask():
    """MHA's output keeps the query's mask: an LSTM after it skips the padded
    steps (as Keras), and training on it directly masks the loss as Keras
    does (the mean over the unmasked positions)."""
    keras = load()

    def att(K, Ls):
        i = K.Input((T,))
        e = Ls.Embedding(V, E, mask_zero=True)(i)
        return K.Model(i, Ls.MultiHeadAttention(2, 3)(e, e))

    mk, mb = att(keras, keras.layers), att(bf, layers)
    mb.set_weights(mk.get_weights())
    y = np.random.default_rng(2).standard_normal((B, T, E)).astype(np.float32)
    for m in (mk, mb):
        m.compile(optimizer="sgd", loss="mse")
    lk = mk.evaluate(IDS, y, batch_size=B, verbose=0)
    assert abs(lk - mb.evaluate(IDS, y, batch_size=B, verbose=0)) <= 1e-5 * lk


    def rnn(K, Ls):
        i = K.Input((T,))
        e = Ls.Embedding(V, E, mask_zero=True)(i)
        return K.Model(i, Ls.Dense(2)(Ls.SimpleRNN(3)(Ls.MultiHeadAttention(2, 3)(e, e))))

    mk, mb = rnn(keras, keras.layers), rnn(bf, layers)
    mb.set_weights(mk.get_weights())
    close(np.asarray(mk.predict(IDS, verbose=0)), mb.predict(IDS, verbose=0))


def test_masks_of_two_embeddings_still_cannot_be_added():
    q, v = bf.Input((T,)), bf.Input((T,))
    eq, ev = layers.Embedding(V, E, mask_zero=True)(q), layers.Embedding(V, E, mask_zero=True)(v)
    a = layers.MultiHeadAttention(2, 3)(eq, ev)   # carries eq's mask
    with pytest.raises(ValueError, match="masks of two Embedding layers"):
        bf.Model([q, v], layers.GlobalAveragePooling1D()(layers.Add()([a, ev]))).build()
