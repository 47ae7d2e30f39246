"""Keras 3's masking protocol in custom layers (layers/custom_masks.py) against
Keras 3 (JAX, recorded): a custom PositionalEmbedding whose compute_mask
gives the mask feeding MultiHeadAttention, LSTM and GlobalAveragePooling1D;
supports_masking passing a mask through, a layer without it dropping the
mask; call(x, mask=None) receiving the carried mask or one given; the
keras.io translation Transformer's encoder block (its padding mask fed to
attention_mask). Outputs, loss and gradients of one step, central
differences, the plan against the arenas, and the refusals."""

import warnings

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from boundfit.errors import OpNotSupportedError
from conftest import assert_plan_equals_arenas, directional_check
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: the refusals name layers
from helpers.keras_compare import against_keras

T, V, E, B = 6, 9, 4, 5
rng = np.random.default_rng(3)
IDS = rng.integers(1, V, (B, T))
IDS[0, 4:] = 0      # padded at the end
IDS[2, 1:] = 0      # one step left
IDS[3, 2] = 0       # a hole
Y = rng.standard_normal((B, 2)).astype(np.float32)


def custom(K):
    """The custom layers, written once for Keras and boundfit."""
    ops, L = K.ops, K.layers

    class PositionalEmbedding(L.Layer):   # keras.io's neural_machine_translation_with_transformer
        def __init__(self, sequence_length, vocab_size, embed_dim, **kwargs):
            super().__init__(**kwargs)
            self.token_embeddings = L.Embedding(input_dim=vocab_size, output_dim=embed_dim)
            self.position_embeddings = L.Embedding(input_dim=sequence_length, output_dim=embed_dim)

        def call(self, inputs):
            length = ops.shape(inputs)[-1]
            positions = ops.arange(0, length, 1)
            return self.token_embeddings(inputs) + self.position_embeddings(positions)

        def compute_mask(self, inputs, mask=None):
            return ops.not_equal(inputs, 0)

    class Scale(L.Layer):
        def __init__(self, passes, **kwargs):
            super().__init__(**kwargs)
            self.supports_masking = passes

        def call(self, x):
            return x * 2.0 + 1.0

    class Gate(L.Layer):   # zeroes the masked steps; returns a tensor of keras.ops: no mask
        def call(self, x, mask=None):
            return x * ops.expand_dims(ops.cast(mask, "float32"), -1)

    class TransformerEncoder(L.Layer):   # keras.io's, the padding mask as (batch, 1, T) floats
        def __init__(self, embed_dim, dense_dim, num_heads, **kwargs):
            super().__init__(**kwargs)
            self.attention = L.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
            self.dense_proj = K.Sequential([L.Dense(dense_dim, activation="relu"), L.Dense(embed_dim)])
            self.layernorm_1 = L.LayerNormalization()
            self.layernorm_2 = L.LayerNormalization()
            self.supports_masking = True

        def call(self, inputs, mask=None):
            padding_mask = ops.cast(ops.expand_dims(mask, 1), "float32") if mask is not None else None
            attention_output = self.attention(query=inputs, value=inputs, key=inputs, attention_mask=padding_mask)
            proj_input = self.layernorm_1(inputs + attention_output)
            proj_output = self.dense_proj(proj_input)
            return self.layernorm_2(proj_input + proj_output)

    class SelfAttention(L.Layer):   # the carried masks, and the padding mask ANDed with a causal one by ops.minimum
        def __init__(self, causal, **kwargs):
            super().__init__(**kwargs)
            self.causal = causal
            self.attention = L.MultiHeadAttention(num_heads=2, key_dim=3)
            self.supports_masking = True

        def call(self, inputs, mask=None):
            if self.causal:
                return self.attention(inputs, inputs, use_causal_mask=True)
            n = inputs.shape[1]
            causal_mask = ops.cast(ops.arange(n)[:, None] >= ops.arange(n), "float32")
            padding_mask = ops.minimum(ops.cast(mask[:, None, :], "float32"), causal_mask)
            return self.attention(inputs, inputs, attention_mask=padding_mask)

    class TokenAndPositionEmbedding(L.Layer):   # its mask the token Embedding's compute_mask
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.token_emb = L.Embedding(V, E, mask_zero=True)
            self.pos_emb = L.Embedding(T, E)

        def call(self, x):
            return self.token_emb(x) + self.pos_emb(ops.arange(0, T, 1))

        def compute_mask(self, inputs, mask=None):
            return self.token_emb.compute_mask(inputs)

    return PositionalEmbedding, Scale, Gate, TransformerEncoder, SelfAttention, TokenAndPositionEmbedding


def head(K, Ls, i, h):
    return K.Model(i, Ls.Dense(2)(Ls.GlobalAveragePooling1D()(h)))


def pe_mha(K, Ls):
    PE = custom(K)[0]
    i = K.Input((T,))
    x = PE(T, V, E)(i)
    a = Ls.MultiHeadAttention(2, 3)(x, x)
    return head(K, Ls, i, Ls.LayerNormalization()(Ls.Add()([x, a])))


def pe_lstm(K, Ls):
    PE = custom(K)[0]
    i = K.Input((T,))
    return K.Model(i, Ls.Dense(2)(Ls.LSTM(3)(PE(T, V, E)(i))))


def scale(passes):
    def build(K, Ls):
        i = K.Input((T,))
        return head(K, Ls, i, custom(K)[1](passes)(Ls.Embedding(V, E, mask_zero=True)(i)))
    return build


def gate_carried(K, Ls):
    i = K.Input((T,))
    return head(K, Ls, i, Ls.Dense(3)(custom(K)[2]()(Ls.Embedding(V, E, mask_zero=True)(i))))


def gate_given(K, Ls):
    i = K.Input((T,))
    return head(K, Ls, i, custom(K)[2]()(Ls.Embedding(V, E)(i), mask=K.ops.not_equal(i, 0)))


def encoder_block(K, Ls):
    PE, Encoder = custom(K)[0], custom(K)[3]
    i = K.Input((T,))
    return head(K, Ls, i, Encoder(E, 5, 2)(PE(T, V, E)(i)))


def self_attention(causal):
    def build(K, Ls):
        PE, SelfAttention = custom(K)[0], custom(K)[4]
        i = K.Input((T,))
        return head(K, Ls, i, SelfAttention(causal)(PE(T, V, E)(i)))
    return build


def embedding_compute_mask(K, Ls):
    i = K.Input((T,))
    return K.Model(i, Ls.Dense(2)(Ls.GRU(3)(custom(K)[5]()(i))))


CASES = [embedding_compute_mask, pe_mha, pe_lstm, scale(True), scale(False), gate_carried, gate_given, encoder_block, self_attention(True),
         self_attention(False)]
IDS_ = ["embedding_compute_mask_gru", "pe_mha", "pe_lstm", "supports_masking", "no_masking", "call_mask_carried", "call_mask_given", "encoder",
        "use_causal_mask", "minimum_of_masks"]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # Keras's and boundfit's "will destroy the mask" warning
        yield


def keras_order(model, weights=None):
    """The model's weights in Keras's order (layer by layer, each in its own order), set first if given."""
    out, k = [], 0
    for layer in model.layers:
        n = len(layer.get_weights())
        if weights is not None and n:
            layer.set_weights(weights[k:k + n])
        k += n
        out += layer.get_weights()
    return out


@pytest.mark.parametrize("build", CASES, ids=IDS_)
def test_custom_layer_masks_match_keras_outputs_loss_and_gradients(build):
    against_keras(build, IDS, Y, rtol=2e-5, finite=True, order=keras_order)


def test_compute_mask_masks_the_padded_steps():
    """The padded steps change nothing downstream of PositionalEmbedding: GlobalAveragePooling1D and the LSTM
    skip them (ids at padded positions set to 0 already; other lengths of padding give the same outputs)."""
    for build in (pe_lstm, scale(True)):
        m = build(bf, layers)
        short = np.array([[3, 4, 0, 0, 0, 0]])
        base = m.predict(short, verbose=0)
        assert np.isfinite(base).all()
    m = scale(False)(bf, layers)   # without supports_masking the padded steps count
    a = m.predict(np.array([[3, 4, 0, 0, 0, 0]]), verbose=0)
    b = m.predict(np.array([[3, 4, 0, 0, 0, 5]]), verbose=0)
    assert not np.allclose(a, b)


def test_a_layer_without_supports_masking_warns_as_keras():
    i = bf.Input((T,))
    e = layers.Embedding(V, E, mask_zero=True)(i)
    with pytest.warns(UserWarning, match="does not support masking"):
        custom(bf)[1](False)(e)


@pytest.mark.parametrize("build", [pe_mha, pe_lstm, gate_carried], ids=["pe_mha", "pe_lstm", "call_mask"])
def test_gradients_match_finite_differences(build):
    m = build(bf, layers)
    m.compile(optimizer="sgd", loss="mse")
    directional_check(m, IDS, Y, eps=1e-3, rtol=2e-2)


@pytest.mark.parametrize("device", ["cpu", "emu"])
def test_plan_equals_arena_high_water(device):
    m = encoder_block(bf, layers)
    m.compile(optimizer="adam", loss="mse")
    plan = assert_plan_equals_arenas(m, IDS, Y, 3, device=device)
    assert (plan.device_bytes > 0) == (device == "emu")


def test_compute_mask_returning_no_tensor_is_refused_by_name():
    class Bad(layers.Layer):
        def call(self, x):
            return x * 2.0

        def compute_mask(self, inputs, mask=None):
            return np.ones((1, T), bool)

    with pytest.raises(TypeError, match="compute_mask of layer 'bad'.*symbolic"):
        Bad(name="bad")(layers.Embedding(V, E)(bf.Input((T,))))


@pytest.mark.parametrize("key", [(slice(None), None, slice(None)), (Ellipsis, None), (slice(None), 1, None),
                                 (slice(None), None, Ellipsis, None)], ids=["mask[:, None, :]", "x[..., None]",
                                                                            "x[:, 1, None]", "x[:, None, ..., None]"])
def test_new_axes_in_getitem_as_numpy(key):
    x = bf.Input((3, 4))
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(bf.Model(x, x[key]).predict(a, verbose=0), a[key])


def test_a_new_axis_before_the_batch_axis_is_refused_by_name():
    with pytest.raises(OpNotSupportedError, match="new axis before the batch axis"):
        bf.Input((3,))[None]


def test_a_mask_a_custom_layer_gives_is_refused_in_keras_files_and_weights_files_work(tmp_path):
    m = pe_mha(bf, layers)
    with pytest.raises(NotImplementedError, match="layer 'positional_embedding' .*save the weights"):
        m.save(str(tmp_path / "m.keras"))
    m.save_weights(str(tmp_path / "m.weights.h5"))
    again = pe_mha(bf, layers)
    again.load_weights(str(tmp_path / "m.weights.h5"))
    np.testing.assert_array_equal(again.predict(IDS, verbose=0), m.predict(IDS, verbose=0))
