"""16-bit storage of the whole-batch kinds under a mixed policy (docs/mixed-precision.md, BF_LF_WHOLE16):
Embedding, MultiHeadAttention, LayerNormalization, GlobalAveragePooling and the recurrent layers compute in
float32 and store their outputs in the compute dtype, as Keras does; against Keras 3 (JAX) under the same policy
and weights, predictions and two SGD steps within the types' roundings; their outputs' buffers are 2 bytes an
element where that makes the plan smaller, and the plan of a transformer block shrinks. Keras's side is recorded
(tests/helpers/keras_recorded.py).

Tolerance: as tests/test_mixed_precision.py, 4 * 2^-(p-1) relative per layer, and per step of a recurrent layer:
Keras's LSTM rounds its state to the compute dtype at each of T steps, boundfit's keeps it in float32 and rounds
the output once."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from helpers.keras_recorded import case
from keras_ref import load
from test_mixed_precision import REL, _under, _weights_for

T, V = 6, 20


def _attn(K, L):
    x = L.Input((T,))
    e = L.Embedding(V, 8)(x)
    h = L.LayerNormalization()(L.Add()([e, L.MultiHeadAttention(2, 4)(e, e)]))
    return K.Model(x, L.Dense(3)(L.GlobalAveragePooling1D()(h)))


def _lstm(K, L):
    return K.Sequential([L.Input((T,)), L.Embedding(V, 8), L.LSTM(8, return_sequences=True),
                         L.GlobalAveragePooling1D(), L.Dense(3)])


ARCH = {"attention": (_attn, 0), "lstm": (_lstm, T)}


def _data():
    r = np.random.default_rng(3)
    return r.integers(0, V, (16, T)).astype(np.float32), r.standard_normal((16, 3)).astype(np.float32)


def _keras_run(arch, policy):
    keras = load()
    m = _under(keras, policy, ARCH[arch][0], keras, keras.layers)
    w0 = _weights_for(m)
    m.set_weights(w0)
    x, y = _data()
    pred = np.asarray(m.predict(x, verbose=0), np.float32)
    m.compile(optimizer=keras.optimizers.SGD(learning_rate=0.05), loss="mse")
    loss = m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0).history["loss"][0]
    return {"w0": w0, "pred": pred, "loss": loss, "w": m.get_weights()}


# (Keras on JAX's CPU cannot run MultiHeadAttention's einsums in float16: "precision 'F16_F16_F32' is not supported
# by dot_general on CPU")
@pytest.mark.parametrize("arch, policy", [("attention", "mixed_bfloat16"), ("lstm", "mixed_bfloat16"),
                                          ("lstm", "mixed_float16")])
def test_whole_batch_kinds_under_a_policy_match_keras_within_16_bit_roundings(arch, policy):
    ref = case(lambda: _keras_run(arch, policy))
    mb = _under(bf, policy, ARCH[arch][0], bf, layers)
    mb.set_weights(ref["w0"])
    x, y = _data()
    tol = 4 * REL[policy] * (len(mb.layers) + ARCH[arch][1])
    got = mb.predict(x, batch_size=16, verbose=0)
    assert np.abs(ref["pred"] - got).max() <= tol * np.abs(ref["pred"]).max()
    mb.compile(optimizer=bf.optimizers.SGD(learning_rate=0.05), loss="mse")
    loss = mb.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0).history["loss"][0]
    assert abs(ref["loss"] - loss) <= tol * abs(ref["loss"])
    for a, b, w in zip(ref["w"], mb.get_weights(), ref["w0"]):
        assert np.abs(a - b).max() <= tol * max(np.abs(a - w).max(), 1e-3)


def _block(K, L, d=32):
    x = L.Input((16,))
    h = L.Embedding(100, d)(x)
    for _ in range(2):
        h = L.LayerNormalization()(L.Add()([h, L.MultiHeadAttention(2, d // 2)(h, h)]))
        h = L.LayerNormalization()(L.Add()([h, L.Dense(d)(L.Dense(2 * d, activation="relu")(h))]))
    return K.Model(x, L.Dense(3)(L.GlobalAveragePooling1D()(h)))


def test_whole_batch_kinds_store_16_bits_and_a_transformer_blocks_plan_shrinks():
    ms = {}
    for p in ("float32", "mixed_bfloat16"):
        ms[p] = _under(bf, p, _block, bf, layers)
        ms[p].compile(optimizer="sgd", loss="mse")
    for b in (8, 256):   # 4% and 1% smaller: its peak is in attention's float32 kernels' own buffers
        act = {p: sum(e.bytes for e in m.estimate_memory(batch_size=b).breakdown if e.category == "activations")
               for p, m in ms.items()}
        assert act["mixed_bfloat16"] < act["float32"], (b, act)
    sizes = {n: b for n, b, *_ in ms["mixed_bfloat16"]._engine.plan("train", 8)["buffers"]}
    for L in ms["mixed_bfloat16"].layers:
        if type(L).__name__ in ("Embedding", "MultiHeadAttention", "LayerNormalization"):
            assert sizes[f"{L.name} output"] == 8 * 16 * 32 * 2, L.name   # 2 bytes an element
