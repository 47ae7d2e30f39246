"""Custom layers (keras.layers.Layer subclasses with build / call /
get_config), layers.Lambda and keras.ops, run unchanged on Keras 3 and on
boundfit: the same weights give the same predictions and the same training;
files written by boundfit open in Keras without the custom classes (the
traced graph is stored); unsupported ops raise naming the op and the layer."""

import os

import numpy as np
import pytest

import boundfit as bf
from boundfit.layers.node import SymbolicTensorError
from boundfit.ops import OpNotSupportedError

from helpers.keras_recorded import case, keras_file
from keras_ref import load
from boundfit.layers.layer import _counters


@pytest.fixture(autouse=True)
def _names_from_zero():
    """layers named from 0 in each test (as after Keras's clear_session): boundfit's files, whose contents key
    Keras's recorded results, do not depend on the tests run before in the process (pytest-xdist)"""
    _counters.clear()


def transformer_block(M, rate):
    """keras.io's text classification with Transformer: its TransformerBlock."""
    L = M.layers

    class TransformerBlock(L.Layer):
        def __init__(self, embed_dim, num_heads, ff_dim, **kwargs):
            super().__init__(**kwargs)
            self.embed_dim, self.num_heads, self.ff_dim = embed_dim, num_heads, ff_dim
            self.att = L.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
            self.ffn = M.Sequential([L.Dense(ff_dim, activation="relu"), L.Dense(embed_dim)])
            self.layernorm1 = L.LayerNormalization(epsilon=1e-6)
            self.layernorm2 = L.LayerNormalization(epsilon=1e-6)
            self.dropout1 = L.Dropout(rate)
            self.dropout2 = L.Dropout(rate)

        def call(self, inputs, training=False):
            attn_output = self.att(inputs, inputs)
            attn_output = self.dropout1(attn_output, training=training)
            out1 = self.layernorm1(inputs + attn_output)
            ffn_output = self.ffn(out1)
            ffn_output = self.dropout2(ffn_output, training=training)
            return self.layernorm2(out1 + ffn_output)

        def get_config(self):
            config = super().get_config()
            config.update(embed_dim=self.embed_dim, num_heads=self.num_heads, ff_dim=self.ff_dim)
            return config

    return TransformerBlock


def text_classifier(M, rate=0.0):
    L = M.layers
    emb, block, head = L.Embedding(40, 8), transformer_block(M, rate)(8, 2, 16), L.Dense(2, activation="softmax")
    inputs = M.Input(shape=(12,))
    x = block(emb(inputs))
    x = L.GlobalAveragePooling1D()(x)
    x = L.Lambda(lambda t: M.ops.relu(t * 2.0 - 0.5), name="lam")(x)
    return M.Model(inputs, head(x)), (emb, block, head)


def keras_pair(run, rate=0.0):
    """Keras's side (recorded): the classifier's weights per layer ("w") and run(keras, km)'s results; and
    boundfit's classifier with those weights"""
    def compute():
        keras = load()
        km, kl = text_classifier(keras, rate)
        w = [k.get_weights() for k in kl]   # before run() changes them
        return dict(run(keras, km), w=w)
    k = case(compute)
    bm, bl = text_classifier(bf, rate)
    for w, b in zip(k["w"], bl):
        b.set_weights(w)
    return k, bm


def layer_names(m):
    return [type(l).__name__ for l in m.layers]


DATA = np.random.default_rng(0).integers(0, 40, (48, 12))
LABELS = np.random.default_rng(1).integers(0, 2, 48)


def test_a_custom_transformer_block_predicts_and_trains_as_keras():
    def run(keras, km):
        p0 = km.predict(DATA, verbose=0)
        km.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy", metrics=["accuracy"])
        hk = km.fit(DATA, LABELS, batch_size=16, epochs=2, shuffle=False, verbose=0)
        return dict(p0=p0, loss=hk.history["loss"], p1=km.predict(DATA, verbose=0))
    k, bm = keras_pair(run)
    np.testing.assert_allclose(bm.predict(DATA, verbose=0), k["p0"], rtol=1e-5, atol=1e-6)
    bm.compile(bf.optimizers.Adam(0.01), "sparse_categorical_crossentropy", metrics=["accuracy"])
    hb = bm.fit(DATA, LABELS, batch_size=16, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(hb.history["loss"], k["loss"], rtol=1e-4)
    np.testing.assert_allclose(bm.predict(DATA, verbose=0), k["p1"], rtol=1e-3, atol=1e-5)


def test_a_custom_layer_has_keras_weights_config_and_dropout():
    k, bm = keras_pair(lambda keras, km: dict(names=layer_names(km)), rate=0.3)
    assert k["names"][2] == type(bm.layers[2]).__name__ == "TransformerBlock"   # one layer, as in Keras
    block = transformer_block(bf, 0.3)(8, 2, 16, name="blk")
    cfg = block.get_config()
    assert cfg["name"] == "blk" and cfg["embed_dim"] == 8 and cfg["trainable"] is True
    again = type(block).from_config(cfg)
    assert again.name == "blk" and again.ff_dim == 16
    bm.compile("adam", "sparse_categorical_crossentropy")
    bm.fit(DATA, LABELS, batch_size=16, epochs=1, verbose=0)   # dropout active in training
    assert all(np.isfinite(w).all() for w in bm.get_weights())


def test_a_custom_layer_is_one_layer_of_the_model_with_keras_weights():
    def run(keras, km):
        layers = [l.get_weights() for l in km.layers]
        shapes = [[tuple(v.shape) for v in km.layers[2].weights], km.layers[2].count_params()]
        r = np.random.default_rng(7)
        new = [r.standard_normal(w.shape).astype(np.float32) * 0.3 for w in km.layers[2].get_weights()]
        km.layers[2].set_weights(new)
        return dict(names=layer_names(km), layers=layers, block=shapes, new=new, set=km.layers[2].get_weights(),
                    p=km.predict(DATA, verbose=0))
    k, bm = keras_pair(run)
    assert layer_names(bm) == k["names"] == \
        ["InputLayer", "Embedding", "TransformerBlock", "GlobalAveragePooling1D", "Lambda", "Dense"]
    for kw, b in zip(k["layers"], bm.layers):   # per layer, Keras's weights in Keras's order
        assert [w.shape for w in b.get_weights()] == [tuple(w.shape) for w in kw], b.name
        for wk, wb in zip(kw, b.get_weights()):
            np.testing.assert_array_equal(wb, wk)
    block = bm.layers[2]
    assert bm.get_layer(block.name) is block and bm.get_layer(index=2) is block
    (kshapes, kparams) = k["block"]
    assert [w.shape for w in block.weights] == [tuple(s) for s in kshapes]
    # set_weights on the block alone reaches the engine: predictions follow Keras's block with those weights
    new = k["new"]
    block.set_weights(new)
    for wk, wb in zip(k["set"], block.get_weights()):
        np.testing.assert_array_equal(wb, wk)
    np.testing.assert_allclose(bm.predict(DATA, verbose=0), k["p"], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=f"layer '{block.name}' has {len(new)} weights, got 2"):
        block.set_weights(new[:2])
    lines = []
    bm.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert f"{block.name} (TransformerBlock)" in text and "MultiHeadAttention" not in text
    assert f"{block.count_params():,}" in text and block.count_params() == kparams


def keras_predicts(path, x):
    """Keras's predictions of the model in a file (boundfit's), recorded by the file's contents"""
    return case(lambda: load().models.load_model(path).predict(x, verbose=0), label=os.path.basename(path),
                files=[path])


def test_a_model_with_custom_layers_is_saved_as_its_graph_and_opens_in_keras(tmp_path):
    k, bm = keras_pair(lambda keras, km: dict(p=km.predict(DATA, verbose=0)))
    want = k["p"]
    bm.save(tmp_path / "custom.keras")
    theirs = keras_predicts(tmp_path / "custom.keras", DATA)   # no custom class needed
    np.testing.assert_allclose(theirs, want, rtol=1e-5, atol=1e-6)
    ours = bf.models.load_model(tmp_path / "custom.keras")
    np.testing.assert_allclose(ours.predict(DATA, verbose=0), want, rtol=1e-5, atol=1e-6)


def ops_graph(M):
    ops = M.ops
    inp = M.Input(shape=(6, 4))
    a = M.layers.Dense(4)(inp)
    b = ops.concatenate([a - 1.0, 0.5 - a, -a / 4.0, ops.maximum(a, 0.0)], axis=-1)        # (6, 16)
    c = ops.transpose(ops.reshape(b, (-1, 6, 4, 4)), (0, 2, 1, 3))                         # (4, 6, 4)
    d = ops.squeeze(ops.expand_dims(ops.mean(c, axis=(1, 2)), 1), axis=1)                  # (4,)
    e = ops.stack([ops.max(a, axis=1), ops.sum(a, axis=1) * 0.1, ops.mean(a, axis=1, keepdims=True)[:, 0]
                   if M is not bf else ops.squeeze(ops.mean(a, axis=1, keepdims=True), 1)], axis=1)  # (3, 4)
    f = ops.nn.gelu(ops.reshape(e, (-1, 12))) + ops.sigmoid(ops.tanh(ops.reshape(e, (-1, 12))))
    g = ops.softmax(ops.concatenate([f, d, ops.square(d), ops.silu(d)], axis=-1))
    return M.Model(inp, g)


def test_keras_ops_in_a_functional_graph_match_keras():
    bm = ops_graph(bf)
    x = np.random.default_rng(2).standard_normal((5, 6, 4)).astype(np.float32)

    def compute():
        km = ops_graph(load())
        return dict(w=km.get_weights(), p=km.predict(x, verbose=0))
    k = case(compute)
    bm.set_weights(k["w"])
    np.testing.assert_allclose(bm.predict(x, verbose=0), k["p"], rtol=1e-5, atol=1e-6)


def test_keras_ops_on_arrays_compute_eagerly_as_keras():
    x = np.random.default_rng(3).standard_normal((3, 5)).astype(np.float32)
    calls = (("add", (x, 1.0)), ("multiply", (x, x)), ("relu", (x,)), ("sigmoid", (x,)),
             ("softmax", (x,)), ("gelu", (x,)), ("mean", (x,)), ("concatenate", ([x, x],)),
             ("reshape", (x, (5, 3))), ("transpose", (x,)), ("sqrt", (np.abs(x),)))
    k = case(lambda: [np.asarray(getattr(load().ops, name)(*args)) for name, args in calls])
    for (name, args), want in zip(calls, k):
        np.testing.assert_allclose(getattr(bf.ops, name)(*args), want, rtol=2e-5, atol=1e-6, err_msg=name)


def test_what_cannot_be_traced_raises_naming_the_op_and_the_layer():
    class Norm(bf.layers.Layer):
        def call(self, x):
            return x / bf.ops.sqrt(bf.ops.sum(x * x, axis=-1))

    class Branchy(bf.layers.Layer):
        def call(self, x):
            return x if x > 0 else -x

    inp = bf.Input(shape=(4,))
    with pytest.raises(OpNotSupportedError, match=r"divide.*layer 'norm'.*\(None, 4\) and \(None,\).*mixing"):
        Norm(name="norm")(inp)   # x / (B,): NumPy lines the batch axis up with the features
    with pytest.raises(SymbolicTensorError, match="Branchy.call"):
        Branchy()(inp)
    assert bf.layers.Lambda(lambda t: t[:, 0])(inp).shape == (None,)   # one number per sample
    with pytest.raises(OpNotSupportedError, match="batch axis"):
        inp[1:]
    with pytest.raises(OpNotSupportedError, match="do not broadcast"):
        bf.ops.add(inp, bf.Input(shape=(3,)))
    with pytest.raises(OpNotSupportedError, match="matmul"):
        inp @ inp
    with pytest.raises(TypeError, match="symbolic tensors"):   # (arrays compute at once: test_eager_calls.py)
        Norm()("not a tensor")

    class Biased(bf.layers.Layer):   # an own weight used by matmul and elementwise (tests/test_ops_math.py: one)
        def build(self, input_shape):
            self.b = self.add_weight(shape=(input_shape[-1], input_shape[-1]), initializer="zeros", name="b")

        def call(self, x):
            return bf.ops.matmul(x, self.b) + self.b

    with pytest.raises(OpNotSupportedError, match="add.*layer 'biased'"):
        Biased(name="biased")(inp)


def slicing_graph(M):
    inp = M.Input(shape=(7, 6))
    h = M.layers.Dense(6, activation="tanh")(inp)
    last = h[:, -1]                                  # (6,): the last step, as after an RNN
    mid = M.layers.Flatten()(h[:, 1:6:2, ::2])       # (3, 3)
    tail = M.layers.Flatten()(h[..., 4:])            # (7, 2)
    return M.Model(inp, M.layers.Dense(2)(M.layers.Concatenate()([last, mid, tail])))


def keras_fits(graph, x, y, lr, path=None):
    """Keras's graph(keras) model (recorded): its weights ("w"), predictions ("p0"), the losses of two epochs of
    SGD(lr) ("loss"), then its weights ("w1") and predictions ("p1"); saved to path (a recorded Keras file)"""
    def run(p):
        keras = load()
        km = graph(keras)
        w, p0 = km.get_weights(), km.predict(x, verbose=0)
        km.compile(keras.optimizers.SGD(lr), "mse")
        hk = km.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
        if p is not None:
            km.save(p)
        return dict(w=w, p0=p0, loss=hk.history["loss"], w1=km.get_weights(), p1=km.predict(x, verbose=0))
    return keras_file(path, run) if path is not None else case(lambda: run(None))


def test_slicing_symbolic_tensors_predicts_and_trains_as_keras(tmp_path):
    bm = slicing_graph(bf)
    r = np.random.default_rng(4)
    x, y = r.standard_normal((32, 7, 6)).astype(np.float32), r.standard_normal((32, 2)).astype(np.float32)
    k = keras_fits(slicing_graph, x, y, 0.1, tmp_path / "theirs.keras")
    bm.set_weights(k["w"])
    np.testing.assert_allclose(bm.predict(x, verbose=0), k["p0"], rtol=1e-5, atol=1e-6)
    bm.compile(bf.optimizers.SGD(0.1), "mse")
    hb = bm.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)   # gradients scattered back
    np.testing.assert_allclose(hb.history["loss"], k["loss"], rtol=1e-4)
    for a, b in zip(k["w1"], bm.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)
    bm.save(tmp_path / "sliced.keras")   # the slices as Keras's GetItem operations
    np.testing.assert_allclose(keras_predicts(tmp_path / "sliced.keras", x), k["p1"], rtol=1e-5, atol=1e-6)
    ours = bf.models.load_model(tmp_path / "theirs.keras")   # Keras's, trained
    np.testing.assert_allclose(ours.predict(x, verbose=0), k["p1"], rtol=1e-5, atol=1e-6)
    assert [type(n.layer).__name__ for n in ours._nodes].count("Slice") == 3
    bm.save(tmp_path / "sliced.npz")   # boundfit's own graph file keeps it too
    np.testing.assert_allclose(bf.models.load_model(tmp_path / "sliced.npz").predict(x, verbose=0),
                               bm.predict(x, verbose=0), rtol=1e-6)


def test_keras_files_with_op_nodes_load(tmp_path):
    """A Keras-written Functional with operation nodes (x * 2.0, x + y, x - 1.0, x[:, 1:]) loads and predicts alike;
    an operation boundfit does not read is named"""
    x = np.random.default_rng(5).standard_normal((6, 5)).astype(np.float32)

    def save(p, op_nodes):
        keras = load()
        inp = keras.Input((5,))
        h, g = keras.layers.Dense(4)(inp), keras.layers.Dense(4)(inp)
        if not op_nodes:
            keras.Model(inp, keras.layers.Dense(2)(keras.ops.nextafter(h, g))).save(p)
            return {}
        km = keras.Model(inp, keras.layers.Dense(2)((h * 2.0 + g - 1.0)[:, 1:]))
        km.save(p)
        return dict(p=km.predict(x, verbose=0))
    want = keras_file(tmp_path / "ops.keras", lambda p: save(p, True))["p"]
    ours = bf.models.load_model(tmp_path / "ops.keras")
    np.testing.assert_allclose(ours.predict(x, verbose=0), want, rtol=1e-5, atol=1e-6)
    ours.save(tmp_path / "again.keras")   # and back to Keras
    np.testing.assert_allclose(keras_predicts(tmp_path / "again.keras", x), want, rtol=1e-5, atol=1e-6)
    keras_file(tmp_path / "nextafter.keras", lambda p: save(p, False))
    with pytest.raises(ValueError, match="Nextafter"):
        bf.models.load_model(tmp_path / "nextafter.keras")


def broadcast_graph(M):
    ops = M.ops
    inp = M.Input(shape=(5, 4))
    h = M.layers.Dense(4, activation="tanh")(inp)                              # (5, 4)
    row = ops.expand_dims(M.layers.Dense(4)(M.layers.GlobalAveragePooling1D()(h)), 1)   # (1, 4)
    centred = h - ops.mean(h, axis=-1, keepdims=True)                          # (5, 4) - (5, 1)
    scaled = centred * ops.max(h, axis=1, keepdims=True) + row                 # * (1, 4) + (1, 4)
    flat = M.layers.Flatten()(scaled)                                          # (20,)
    s = ops.sum(flat, axis=-1, keepdims=True)                                  # (1,)
    return M.Model(inp, M.layers.Dense(3)(flat / 20.0 - s * 0.01))             # (20,) - (1,)


def test_broadcasting_and_last_axis_reductions_match_keras():
    bm = broadcast_graph(bf)
    r = np.random.default_rng(6)
    x, y = r.standard_normal((24, 5, 4)).astype(np.float32), r.standard_normal((24, 3)).astype(np.float32)
    k = keras_fits(broadcast_graph, x, y, 0.05)
    bm.set_weights(k["w"])
    np.testing.assert_allclose(bm.predict(x, verbose=0), k["p0"], rtol=1e-5, atol=1e-6)
    bm.compile(bf.optimizers.SGD(0.05), "mse")
    hb = bm.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(hb.history["loss"], k["loss"], rtol=1e-4)
    for a, b in zip(k["w1"], bm.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)


def test_a_custom_layers_own_weight_is_named_ordered_and_settable():
    class Scale(bf.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], 3), initializer="ones", name="w")

        def call(self, x):
            return bf.ops.matmul(x, self.w)

    layer = Scale()
    assert layer.name.startswith("scale")
    inp = bf.Input(shape=(2,))
    m = bf.Model(inp, layer(inp))
    np.testing.assert_array_equal(layer.get_weights()[0], np.ones((2, 3), np.float32))
    layer.set_weights([np.arange(6, dtype=np.float32).reshape(2, 3)])
    np.testing.assert_array_equal(m.predict(np.array([[1.0, 1.0]], np.float32), verbose=0), [[3.0, 5.0, 7.0]])
    with pytest.raises(OpNotSupportedError, match="matmul"):
        bf.ops.matmul(bf.Input(shape=(5,)), layer.w)
    with pytest.raises(OpNotSupportedError, match="do not broadcast"):
        bf.Input(shape=(3, 4)) + bf.Input(shape=(2, 4))


def token_and_position_embedding(M):
    """keras.io's text classification with Transformer: its TokenAndPositionEmbedding."""
    L, ops = M.layers, M.ops

    class TokenAndPositionEmbedding(L.Layer):
        def __init__(self, maxlen, vocab_size, embed_dim):
            super().__init__()
            self.token_emb = L.Embedding(input_dim=vocab_size, output_dim=embed_dim)
            self.pos_emb = L.Embedding(input_dim=maxlen, output_dim=embed_dim)

        def call(self, x):
            maxlen = ops.shape(x)[-1]
            positions = ops.arange(start=0, stop=maxlen, step=1)
            positions = self.pos_emb(positions)
            x = self.token_emb(x)
            return x + positions

    return TokenAndPositionEmbedding


def keras_io_text_transformer(M):
    """the whole keras.io model, smaller: positions, a Transformer block, pooling, dropout, two Dense"""
    L = M.layers
    emb = token_and_position_embedding(M)(12, 40, 8)
    block = transformer_block(M, 0.1)(8, 2, 16)
    head1, head2 = L.Dense(8, activation="relu"), L.Dense(2, activation="softmax")
    inputs = L.Input(shape=(12,))
    x = L.GlobalAveragePooling1D()(block(emb(inputs)))
    outputs = head2(L.Dropout(0.1)(head1(L.Dropout(0.1)(x))))
    return M.Model(inputs=inputs, outputs=outputs), (emb, block, head1, head2)


def test_keras_io_text_classification_with_transformer_matches_keras(tmp_path):
    def compute():
        km, kl = keras_io_text_transformer(load())
        return dict(w=[k.get_weights() for k in kl], p=km.predict(DATA, verbose=0), names=layer_names(km))
    k = case(compute)
    bm, bl = keras_io_text_transformer(bf)
    for w, b in zip(k["w"], bl):
        b.set_weights(w)
    np.testing.assert_allclose(bm.predict(DATA, verbose=0), k["p"], rtol=1e-5, atol=1e-6)
    assert layer_names(bm) == k["names"]   # the custom layers as one
    assert [type(n.layer).__name__ for n in bm._nodes].count("Const") == 1   # the positions, a non-trainable constant
    bm.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    h = bm.fit(DATA, LABELS, batch_size=16, epochs=2, validation_split=0.25, verbose=0)
    assert np.isfinite(h.history["loss"]).all() and "val_accuracy" in h.history
    np.testing.assert_array_equal(bl[0].pos_emb.get_weights()[0].shape, (12, 8))
    bm.save(tmp_path / "text.npz")   # boundfit's graph file keeps the constant
    np.testing.assert_allclose(bf.models.load_model(tmp_path / "text.npz").predict(DATA, verbose=0),
                               bm.predict(DATA, verbose=0), rtol=1e-6)
    # a .keras file: the traced graph, the positions as zeros_like(x[:, 0, None]) + arange (Keras operations)
    bm.save(tmp_path / "text.keras")
    theirs = keras_predicts(tmp_path / "text.keras", DATA)   # no custom class needed
    np.testing.assert_allclose(theirs, bm.predict(DATA, verbose=0), rtol=1e-5, atol=1e-6)
    ours = bf.models.load_model(tmp_path / "text.keras")
    assert [type(n.layer).__name__ for n in ours._nodes].count("Const") == 1
    np.testing.assert_allclose(ours.predict(DATA, verbose=0), bm.predict(DATA, verbose=0), rtol=1e-5, atol=1e-6)
    # the file holds the traced graph: its layers are the custom layers' sublayers, Keras's paths without them
    loaded = {v.path: v.numpy() for v in ours.weights}
    assert len(loaded) == len(bm.weights)
    for v in bm.weights:
        np.testing.assert_array_equal(loaded[v.path.split("/", 1)[1] if v.path.startswith(
            ("token_and_position_embedding/", "transformer_block/")) else v.path], v.numpy())



def test_a_sequential_with_a_custom_layer_saves_as_its_graph(tmp_path):
    """a custom layer is no node of the graph, so such a Sequential is written as the Functional its calls
    traced (.keras, opened by Keras without the class) and kept by boundfit's .npz graph file"""
    class Doubler(bf.layers.Layer):
        def call(self, x):
            return bf.ops.relu(x) * 2.0

    m = bf.Sequential([bf.Input((4,)), bf.layers.Dense(3), Doubler(), bf.layers.Dense(2)])
    x = np.random.default_rng(8).standard_normal((5, 4)).astype(np.float32)
    want = m.predict(x, verbose=0)
    m.save(tmp_path / "seq.keras")
    np.testing.assert_allclose(keras_predicts(tmp_path / "seq.keras", x), want, rtol=1e-5, atol=1e-6)
    for name in ("seq.keras", "seq.npz"):
        if name.endswith("npz"):
            m.save(tmp_path / name)
        np.testing.assert_allclose(bf.models.load_model(tmp_path / name).predict(x, verbose=0), want, rtol=1e-6)


def test_build_without_a_shape_and_sublayers_built_in_build_make_their_weights_as_in_keras():
    """build(self) without input_shape (Keras allows it); a custom build() calling sublayer.build(shape): the
    sublayer's weights exist right after it, as in Keras; and layer.input / layer.output for model surgery"""
    def make(K):
        class Scale(K.layers.Layer):
            def build(self):
                self.w = self.add_weight(shape=(4,), initializer="ones", name="w")

            def call(self, x):
                return x * self.w

        class Block(K.layers.Layer):
            def __init__(self, **kw):
                super().__init__(**kw)
                self.d = K.layers.Dense(4)

            def build(self, shape):
                self.d.build(shape)
                self.n_built = len(self.d.weights)

            def call(self, x):
                return self.d(x)
        inp = K.Input((3,))
        blk = Block(name="blk")
        h = blk(inp)
        return K.Model(inp, Scale()(h)), blk
    x = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)

    def compute():
        km, kb = make(load())
        return dict(n_built=kb.n_built, w=km.get_weights(), p=km.predict(x, verbose=0))
    k = case(compute)
    bm, bb = make(bf)
    assert bb.n_built == k["n_built"] == 2
    bm.set_weights(k["w"])
    np.testing.assert_allclose(bm.predict(x, verbose=0), k["p"], rtol=1e-5, atol=1e-6)
    cut = bf.Model(bm.input, bm.get_layer("blk").output)   # surgery: up to the block
    assert bm.get_layer("blk").input is bm.input
    np.testing.assert_allclose(cut.predict(x, verbose=0), bm.get_layer("blk").d(x), rtol=1e-6)
