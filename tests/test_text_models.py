"""Issue 14's end-to-end sequence models, built from the layers of several
files: a text classifier (Embedding -> GlobalAveragePooling1D -> Dense) and a
small Transformer encoder (token + position Embedding, MultiHeadAttention,
LayerNormalization, a Dense feed-forward) train to clearly better than
chance on learnable synthetic token tasks, and their plans equal the arenas."""

import numpy as np

import boundfit as bf
from boundfit import layers as L


def arenas(m):
    stats = m._last_run_stats
    return m._engine.weight_arena_bytes + m._engine.optimizer_arena_bytes + sum(s["run_high_water"] for s in stats)


def planned(plan):
    return sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured"))


def test_bag_of_embeddings_text_classifier_learns_which_words_matter():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 50, (1200, 20))
    y = ((x == 7).sum(1) > (x == 11).sum(1)).astype(np.int64)       # more "good" words than "bad" ones
    tok = bf.Input((20,))
    h = L.GlobalAveragePooling1D()(L.Embedding(50, 16)(tok))
    m = bf.Model(tok, L.Dense(2, activation="softmax")(L.Dense(16, activation="relu")(h)))
    m.compile(optimizer=bf.optimizers.Adam(1e-2), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    plan = m.estimate_memory(batch_size=64)
    m.fit(x[:1000], y[:1000], batch_size=64, epochs=15, verbose=0)
    assert planned(plan) == arenas(m)
    _, acc = m.evaluate(x[1000:], y[1000:], verbose=0)
    assert acc >= 0.85, acc                                           # chance: about 0.6 (the majority class)


def test_transformer_encoder_with_position_embeddings_learns_an_order_task():
    """Label: whether token 1 comes before token 2 in the sequence (each appears
    once): a bag of words cannot tell, attention with positions can."""
    T, V, D = 12, 10, 32
    rng = np.random.default_rng(1)
    n = 1600
    x = rng.integers(3, V, (n, T))
    for i in range(n):
        a, b = rng.choice(T, 2, replace=False)
        x[i, a], x[i, b] = 1, 2
    y = (np.argmax(x == 1, axis=1) < np.argmax(x == 2, axis=1)).astype(np.int64)
    pos = np.broadcast_to(np.arange(T), (n, T))
    tok, where = bf.Input((T,), name="tokens"), bf.Input((T,), name="positions")
    h = L.Add()([L.Embedding(V, D)(tok), L.Embedding(T, D)(where)])
    h = L.LayerNormalization()(L.Add()([h, L.MultiHeadAttention(2, 16)(h, h)]))
    f = L.Dense(D)(L.Dense(64, activation="relu")(h))
    h = L.GlobalAveragePooling1D()(L.LayerNormalization()(L.Add()([h, f])))
    m = bf.Model([tok, where], L.Dense(2, activation="softmax")(h))
    m.compile(optimizer=bf.optimizers.Adam(3e-3), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    plan = m.estimate_memory(batch_size=64)
    m.fit({"tokens": x[:1400], "positions": pos[:1400]}, y[:1400], batch_size=64, epochs=25, verbose=0)
    assert planned(plan) == arenas(m)
    _, acc = m.evaluate([x[1400:], pos[1400:]], y[1400:], verbose=0)
    assert acc >= 0.85, acc                                           # chance: 0.5
