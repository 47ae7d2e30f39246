"""keras.io's English-to-Spanish translation Transformer
(examples/nlp/neural_machine_translation_with_transformer.py), its
PositionalEmbedding / TransformerEncoder / TransformerDecoder classes as
written for Keras 3, scaled down (vocabulary 9, length 6, embed_dim 4) on
synthetic padded token ids: Keras's masks flow through them (PositionalEmbedding's
compute_mask, the encoder's call(mask=) turned into a padding attention_mask,
the decoder's causal mask tiled by the batch size, supports_masking passing
the mask on to the loss and the accuracy). Against Keras 3 (JAX, recorded):
predictions, two epochs of RMSprop (losses, accuracies, weights), and the
plan against the arenas.

Differences from the example: `ops.cast(mask[:, None, :], dtype="int32")` is
cast to "float32" (boundfit refuses a cast of a symbolic tensor to int32 by
name today), and Dropout(0.5) is Dropout(0.0) (the draws differ). Keras 3 on JAX
cannot tile by a symbolic batch size, so its run passes the untiled causal
mask (as for the miniature GPT)."""

import warnings

import numpy as np

import boundfit as bf
from conftest import assert_plan_equals_arenas
from helpers.keras_compare import close
from helpers.keras_recorded import case
from keras_ref import load

SEQ, VOCAB, EMBED, LATENT, HEADS, B = 6, 9, 4, 5, 2, 5
rng = np.random.default_rng(7)
ENC = rng.integers(1, VOCAB, (B, SEQ))
DEC = rng.integers(1, VOCAB, (B, SEQ))
for r, n in enumerate((6, 3, 5, 1, 4)):   # each sentence padded after n tokens
    ENC[r, n:] = 0
for r, n in enumerate((4, 6, 2, 3, 5)):
    DEC[r, n:] = 0
TARGET = np.where(DEC > 0, np.roll(DEC, -1, axis=1), 0)
TARGET[:, -1] = 0


def program(keras, tiled=True):
    """The example's classes and model, for `keras` (boundfit or Keras 3)."""
    from_ops, layers = keras.ops, keras.layers
    ops = from_ops

    class TransformerEncoder(layers.Layer):
        def __init__(self, embed_dim, dense_dim, num_heads, **kwargs):
            super().__init__(**kwargs)
            self.embed_dim = embed_dim
            self.dense_dim = dense_dim
            self.num_heads = num_heads
            self.attention = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
            self.dense_proj = keras.Sequential([layers.Dense(dense_dim, activation="relu"), layers.Dense(embed_dim)])
            self.layernorm_1 = layers.LayerNormalization()
            self.layernorm_2 = layers.LayerNormalization()
            self.supports_masking = True

        def call(self, inputs, mask=None):
            if mask is not None:
                padding_mask = ops.cast(mask[:, None, :], dtype="float32")
            else:
                padding_mask = None
            attention_output = self.attention(query=inputs, value=inputs, key=inputs, attention_mask=padding_mask)
            proj_input = self.layernorm_1(inputs + attention_output)
            proj_output = self.dense_proj(proj_input)
            return self.layernorm_2(proj_input + proj_output)

    class PositionalEmbedding(layers.Layer):
        def __init__(self, sequence_length, vocab_size, embed_dim, **kwargs):
            super().__init__(**kwargs)
            self.token_embeddings = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
            self.position_embeddings = layers.Embedding(input_dim=sequence_length, output_dim=embed_dim)
            self.sequence_length = sequence_length
            self.vocab_size = vocab_size
            self.embed_dim = embed_dim

        def call(self, inputs):
            length = ops.shape(inputs)[-1]
            positions = ops.arange(0, length, 1)
            embedded_tokens = self.token_embeddings(inputs)
            embedded_positions = self.position_embeddings(positions)
            return embedded_tokens + embedded_positions

        def compute_mask(self, inputs, mask=None):
            return ops.not_equal(inputs, 0)

    class TransformerDecoder(layers.Layer):
        def __init__(self, embed_dim, latent_dim, num_heads, **kwargs):
            super().__init__(**kwargs)
            self.embed_dim = embed_dim
            self.latent_dim = latent_dim
            self.num_heads = num_heads
            self.attention_1 = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
            self.attention_2 = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
            self.dense_proj = keras.Sequential([layers.Dense(latent_dim, activation="relu"), layers.Dense(embed_dim)])
            self.layernorm_1 = layers.LayerNormalization()
            self.layernorm_2 = layers.LayerNormalization()
            self.layernorm_3 = layers.LayerNormalization()
            self.supports_masking = True

        def call(self, inputs, encoder_outputs, mask=None):
            causal_mask = self.get_causal_attention_mask(inputs)
            if mask is not None:
                padding_mask = ops.cast(mask[:, None, :], dtype="float32")
                padding_mask = ops.minimum(padding_mask, causal_mask)
            else:
                padding_mask = None
            attention_output_1 = self.attention_1(query=inputs, value=inputs, key=inputs, attention_mask=causal_mask)
            out_1 = self.layernorm_1(inputs + attention_output_1)
            attention_output_2 = self.attention_2(query=out_1, value=encoder_outputs, key=encoder_outputs,
                                                  attention_mask=padding_mask)
            out_2 = self.layernorm_2(out_1 + attention_output_2)
            proj_output = self.dense_proj(out_2)
            return self.layernorm_3(out_2 + proj_output)

        def get_causal_attention_mask(self, inputs):
            input_shape = ops.shape(inputs)
            batch_size, sequence_length = input_shape[0], input_shape[1]
            i = ops.arange(sequence_length)[:, None]
            j = ops.arange(sequence_length)
            mask = ops.cast(i >= j, dtype="int32")
            mask = ops.reshape(mask, (1, input_shape[1], input_shape[1]))
            if not tiled:   # Keras 3 on JAX: no tile by a symbolic batch size; MultiHeadAttention broadcasts
                return mask
            mult = ops.concatenate([ops.expand_dims(batch_size, -1), ops.convert_to_tensor([1, 1])], axis=0)
            return ops.tile(mask, mult)

    encoder_inputs = keras.Input(shape=(SEQ,), dtype="int64", name="encoder_inputs")
    x = PositionalEmbedding(SEQ, VOCAB, EMBED)(encoder_inputs)
    encoder_outputs = TransformerEncoder(EMBED, LATENT, HEADS)(x)
    decoder_inputs = keras.Input(shape=(SEQ,), dtype="int64", name="decoder_inputs")
    encoded_seq_inputs = keras.Input(shape=(SEQ, EMBED), name="decoder_state_inputs")
    x = PositionalEmbedding(SEQ, VOCAB, EMBED)(decoder_inputs)
    x = TransformerDecoder(EMBED, LATENT, HEADS)(x, encoded_seq_inputs)
    x = layers.Dropout(0.0)(x)
    decoder_outputs = layers.Dense(VOCAB, activation="softmax")(x)
    decoder = keras.Model([decoder_inputs, encoded_seq_inputs], decoder_outputs)
    decoder_outputs = decoder([decoder_inputs, encoder_outputs])
    transformer = keras.Model([encoder_inputs, decoder_inputs], decoder_outputs, name="transformer")
    transformer.compile("rmsprop", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return transformer


def weights(model, values=None):
    """Every layer's weights in Keras's order, nested models walked (set first if given)."""
    out, k = [], 0
    for layer in model.layers:
        if hasattr(layer, "layers") and hasattr(layer, "compile"):   # a nested model
            ws = weights(layer, None if values is None else values[k:])
        else:
            n = len(layer.get_weights())
            if values is not None and n:
                layer.set_weights(values[k:k + n])
            ws = layer.get_weights()
        k += len(ws)
        out += ws
    return out


def _keras():
    keras = load()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = program(keras, tiled=False)
        w0 = [(np.random.default_rng(2).standard_normal(w.shape) * 0.4).astype(np.float32) for w in weights(m)]
        weights(m, w0)
        pred = m.predict([ENC, DEC], verbose=0)
        h = m.fit([ENC, DEC], TARGET, batch_size=3, epochs=2, shuffle=False, verbose=0)
        ev = m.evaluate([ENC, DEC], TARGET, batch_size=B, verbose=0)
    return {"w0": w0, "pred": pred, "loss": h.history["loss"], "w": weights(m), "eval": ev}


def test_translation_transformer_predicts_and_trains_as_keras():
    k = case(_keras)
    m = program(bf)
    weights(m, k["w0"])
    close(k["pred"], m.predict([ENC, DEC], verbose=0), 1e-5)
    h = m.fit([ENC, DEC], TARGET, batch_size=3, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(h.history["loss"], k["loss"], rtol=1e-5)
    for a, b in zip(k["w"], weights(m)):
        close(a, b, 1e-4)
    # evaluate: the loss and the accuracy over the unmasked positions, as Keras's
    np.testing.assert_allclose(m.evaluate([ENC, DEC], TARGET, batch_size=B, verbose=0), k["eval"], rtol=1e-5)
    # not compared: fit's accuracy. Keras 3 on JAX loses the output's mask between its loss and its metrics
    # (y_pred comes back from jax.value_and_grad as a new array), so its training accuracy counts every position
    # (here 2/30); boundfit's, as Keras's evaluate, the unmasked ones (2/20)


def test_translation_transformer_plan_equals_arenas():
    m = program(bf)
    assert_plan_equals_arenas(m, [ENC, DEC], TARGET, 3)
