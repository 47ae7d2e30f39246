"""Graphs: the functional API, merge layers, shared / nested / frozen layers,
subclassed models, several inputs and outputs; Keras 3 (JAX, CPU) as the
reference for outputs, losses and updated weights."""

import zlib

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from helpers.keras_recorded import case
from keras_ref import load

rng = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _own_data(request):
    """each test draws its data from its own seed: Keras's results are recorded per test, whichever ran before"""
    global rng
    rng = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def keras_from(tmp_path, weights, compute):
    """compute() of Keras from boundfit's weights (a list, or a dict by layer name), recorded by their values"""
    groups = weights.items() if isinstance(weights, dict) else [("w", weights)]
    np.savez(tmp_path / "weights.npz", **{f"{k}_{i}": w for k, ws in groups for i, w in enumerate(ws)})
    return case(compute, files=[tmp_path / "weights.npz"])


def graph(lib):
    """Skip (Add), merge of two branches (Concatenate, Multiply, Maximum), a
    Dense called twice, a nested Sequential."""
    L = lib.layers
    inp = lib.Input(shape=(6,), name="x")
    a = L.Dense(8, activation="relu", name="d1")(inp)
    shared = L.Dense(8, activation="tanh", name="shared")
    b = shared(a)
    c = shared(b)                                   # called twice: one kernel, gradients add
    s = L.Add(name="skip")([a, c])
    sub = lib.Sequential([L.Dense(8, activation="sigmoid", name="n1"), L.Dense(8, name="n2")], name="inner")
    n = sub(s)
    m = L.Multiply(name="mul")([n, b])
    mx = L.Maximum(name="max")([m, a])
    cat = L.Concatenate(name="cat")([mx, L.Subtract(name="sub")([s, b]), L.Average(name="avg")([a, b, c])])
    out = L.Dense(3, activation="softmax", name="out")(cat)
    return lib.Model(inp, out)


def copy_weights(src_bf, dst_keras):
    names = ["d1", "shared", "n1", "n2", "out"]
    by = {}
    for l in src_bf._own_layers():
        by[l.name] = l.get_weights()
    for lk in dst_keras.layers:
        if lk.name == "inner":
            for li in lk.layers:
                li.set_weights(by[li.name])
        elif lk.name in names:
            lk.set_weights(by[lk.name])


def test_graph_matches_keras_outputs_loss_and_updated_weights(tmp_path):
    m = graph(bf)
    x = rng.standard_normal((16, 6)).astype(np.float32)
    y = rng.integers(0, 3, 16)

    def compute():
        keras = load()
        k = graph(keras)
        copy_weights(m, k)
        p = k.predict(x, verbose=0)
        k.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
        losses = [k.fit(x, y, batch_size=16, shuffle=False, verbose=0).history["loss"][0] for _ in range(3)]
        kw = {l.name: l.get_weights() for l in k.layers if l.name != "inner"}
        kw.update({l.name: l.get_weights() for l in k.get_layer("inner").layers})
        return p, losses, kw
    p, losses, kw = keras_from(tmp_path, {l.name: l.get_weights() for l in m._own_layers()}, compute)
    np.testing.assert_allclose(m.predict(x, verbose=0), p, rtol=1e-5, atol=1e-6)
    m.compile(optimizer=bf.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    for hk in losses:
        hb = m.fit(x, y, batch_size=16, shuffle=False, verbose=0).history["loss"][0]
        assert abs(hb - hk) <= 1e-5 * max(1.0, abs(hk))
    for l in m._own_layers():
        for a, b in zip(l.get_weights(), kw[l.name]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def ordering_graph(lib):
    """Layers built in another order than called, a branch called before the
    one listed first, an Input used only near the output, a Dense shared at
    two depths, a nested Sequential and two outputs."""
    L = lib.layers
    a, b, c = lib.Input((4,), name="a"), lib.Input((3,), name="b"), lib.Input((2,), name="late")
    d3, d1, d2 = L.Dense(4, name="d3"), L.Dense(5, name="d1"), L.Dense(4, name="d2")
    shared = L.Dense(4, activation="tanh", name="shared")
    y = d2(b)
    z = d3(a)
    x = d1(a)
    deep = shared(L.Add(name="join")([shared(z), y]))
    inner = lib.Sequential([L.Dense(6, name="n1"), L.Dense(4, name="n2")], name="inner")
    cat = L.Concatenate(name="cat")([x, inner(deep), c])
    h = L.Dense(6, name="ff")(cat)
    out1 = L.Dense(2, name="out1")(L.Add(name="res")([L.Dense(6, name="skip")(cat), h]))
    return lib.Model([a, b, c], [out1, L.Dense(1, name="out2")(deep)])


def test_layers_and_get_weights_come_in_keras_order():
    """model.layers and get_weights() in Keras 3's order (by depth, then a
    walk from the outputs), not in call order: Keras's weights load as they are."""
    def compute():   # Keras's layer names; its weights moved, the batch and its predictions
        km = ordering_graph(load())
        w = [np.asarray(v) + rng.standard_normal(v.shape).astype(np.float32) for v in km.get_weights()]
        km.set_weights(w)
        x = [rng.standard_normal((5, n)).astype(np.float32) for n in (4, 3, 2)]
        return [l.name for l in km.layers], km.get_weights(), w, x, km.predict(x, verbose=0)
    names, kw, w, x, predicted = case(compute)
    bm = ordering_graph(bf)
    assert [l.name for l in bm.layers] == names
    bm.set_weights(kw)
    for p, q in zip(bm.predict(x, verbose=0), predicted):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)
    for p, q in zip(bm.get_weights(), w):
        np.testing.assert_array_equal(p, q)


def test_merge_layer_gradients_match_finite_differences():
    for cls in (layers.Add, layers.Subtract, layers.Multiply, layers.Average, layers.Maximum, layers.Minimum,
                layers.Concatenate):
        a_in, b_in = bf.Input((3,)), bf.Input((3,))
        a = layers.Dense(4, activation="tanh")(a_in)
        b = layers.Dense(4, activation="tanh")(b_in)
        out = layers.Dense(2)(cls()([a, b]))
        m = bf.Model([a_in, b_in], out)
        m.compile(optimizer=bf.optimizers.SGD(1.0), loss="mse")
        xa = rng.standard_normal((8, 3)).astype(np.float32)
        xb = rng.standard_normal((8, 3)).astype(np.float32)
        y = rng.standard_normal((8, 2)).astype(np.float32)
        w0 = m.get_weights()
        m.fit([xa, xb], y, batch_size=8, shuffle=False, verbose=0)
        g = [a - b for a, b in zip(w0, m.get_weights())]    # SGD(1.0): the gradient
        for wi in (0, 2):                                    # both branches' kernels
            for idx in [(0, 0), (2, 3)]:
                w = [v.copy() for v in w0]
                eps = 1e-2
                w[wi][idx] += eps
                m.set_weights(w)
                lp = m.evaluate([xa, xb], y, verbose=0)
                w[wi][idx] -= 2 * eps
                m.set_weights(w)
                lm = m.evaluate([xa, xb], y, verbose=0)
                num = (lp - lm) / (2 * eps)
                assert abs(num - g[wi][idx]) <= 2e-3 + 2e-2 * abs(num), (cls.__name__, wi, idx, num, g[wi][idx])


def digits():
    (xtr, ytr), (xte, yte) = bf.datasets.digits.load_data()
    xtr, xte = [(x / 16.0).astype(np.float32)[..., None] for x in (xtr, xte)]
    return xtr, ytr, xte, yte


def resnet():
    L = layers
    inp = bf.Input((8, 8, 1))
    x = inp
    for f in (8, 16, 16):
        h = L.Conv2D(f, 3, padding="same")(x)
        h = L.BatchNormalization(momentum=0.9)(h)
        h = L.Activation("relu")(h)
        h = L.Conv2D(f, 3, padding="same")(h)
        h = L.BatchNormalization(momentum=0.9)(h)
        short = L.Conv2D(f, 1)(x)                    # projection shortcut
        x = L.Activation("relu")(L.Add()([h, short]))
    x = L.GlobalAveragePooling2D()(x)
    return bf.Model(inp, L.Dense(10, activation="softmax")(x))


def test_small_resnet_reaches_97_percent_on_digits_and_its_plan_equals_the_arenas():
    xtr, ytr, xte, yte = digits()
    m = resnet()
    m.compile(optimizer=bf.optimizers.Adam(3e-3), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    plan = m.estimate_memory(batch_size=64)
    m.fit(xtr, ytr, batch_size=64, epochs=12, verbose=0)
    stats = m._last_run_stats
    arenas = m._engine.weight_arena_bytes + m._engine.optimizer_arena_bytes + sum(s["run_high_water"] for s in stats)
    assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured")) == arenas
    _, acc = m.evaluate(xte, yte, verbose=0)
    assert acc >= 0.97, acc


def test_two_input_model_image_and_tabular_branches_trains():
    xtr, ytr, xte, yte = digits()
    img, tab = bf.Input((8, 8, 1), name="image"), bf.Input((4,), name="tabular")
    a = layers.Flatten()(layers.Conv2D(8, 3, activation="relu")(img))
    b = layers.Dense(8, activation="relu")(tab)
    out = layers.Dense(10, activation="softmax")(layers.concatenate([a, b]))
    m = bf.Model({"image": img, "tabular": tab}, out)
    m.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    ttr = np.random.default_rng(0).standard_normal((len(xtr), 4)).astype(np.float32)
    tte = np.random.default_rng(1).standard_normal((len(xte), 4)).astype(np.float32)
    h = m.fit({"image": xtr, "tabular": ttr}, ytr, batch_size=32, epochs=5, verbose=0,
              validation_data=({"image": xte, "tabular": tte}, yte))
    assert h.history["loss"][-1] < h.history["loss"][0]
    assert h.history["val_accuracy"][-1] > 0.85
    p = m.predict([xte, tte], verbose=0)
    assert p.shape == (len(xte), 10)
    with pytest.raises(bf.DataError, match="tabular"):
        m.fit({"image": xtr}, ytr, verbose=0)


def test_two_output_model_per_output_losses_weights_and_history_keys(tmp_path):
    def build(lib):
        inp = lib.Input((5,))
        h = lib.layers.Dense(8, activation="relu", name="h")(inp)
        return lib.Model(inp, [lib.layers.Dense(3, activation="softmax", name="cls")(h),
                               lib.layers.Dense(2, name="reg")(h)])
    m = build(bf)
    x = rng.standard_normal((32, 5)).astype(np.float32)
    yc, yr = rng.integers(0, 3, 32), rng.standard_normal((32, 2)).astype(np.float32)
    kw = dict(loss={"cls": "sparse_categorical_crossentropy", "reg": "mse"}, loss_weights={"cls": 1.0, "reg": 0.5})
    names = ("h", "cls", "reg")

    def compute():
        keras = load()
        k = build(keras)
        for l in names:
            k.get_layer(l).set_weights(m.get_layer(l).get_weights())
        k.compile(optimizer=keras.optimizers.SGD(0.05), **kw)
        hk = k.fit(x, [yc, yr], batch_size=32, shuffle=False, verbose=0, epochs=2).history
        return {key: hk[key] for key in ("loss", "cls_loss", "reg_loss")}, {l: k.get_layer(l).get_weights()
                                                                             for l in names}
    hk, kw_after = keras_from(tmp_path, {l: m.get_layer(l).get_weights() for l in names}, compute)
    m.compile(optimizer=bf.optimizers.SGD(0.05), metrics={"cls": ["accuracy"]}, **kw)
    h = m.fit(x, [yc, yr], batch_size=32, shuffle=False, verbose=0, epochs=2)
    assert set(h.history) == {"loss", "cls_loss", "reg_loss", "cls_accuracy"}
    for key in ("loss", "cls_loss", "reg_loss"):
        np.testing.assert_allclose(h.history[key], hk[key], rtol=1e-5)
    for l in names:
        for a, b in zip(m.get_layer(l).get_weights(), kw_after[l]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    pc, pr = m.predict(x, verbose=0)
    assert pc.shape == (32, 3) and pr.shape == (32, 2)
    res = m.evaluate(x, {"cls": yc, "reg": yr}, verbose=0, return_dict=True)
    assert set(res) == {"loss", "cls_loss", "reg_loss", "cls_accuracy"}


def test_frozen_nested_model_gets_no_gradients_or_optimizer_state():
    base = bf.Sequential([layers.Dense(64, activation="relu", input_shape=(20,)), layers.Dense(64, activation="relu")])
    inp = bf.Input((20,))
    out = layers.Dense(3, activation="softmax")(base(inp))
    m = bf.Model(inp, out)
    m.compile("adam", "sparse_categorical_crossentropy")
    full = m.estimate_memory(batch_size=32)
    base.trainable = False
    m.compile("adam", "sparse_categorical_crossentropy")
    frozen = m.estimate_memory(batch_size=32)
    assert m._engine.n_trainable == 3 * 64 + 3
    grads = lambda p: sum(e.bytes for e in p.breakdown if e.category == "gradients")
    assert grads(frozen) < grads(full) and frozen.host_bytes < full.host_bytes
    before = base.get_weights()
    x, y = rng.standard_normal((64, 20)).astype(np.float32), rng.integers(0, 3, 64)
    m.fit(x, y, epochs=2, verbose=0)
    for a, b in zip(base.get_weights(), before):
        np.testing.assert_array_equal(a, b)
    # the nested model sees the outer model's weights (one set, as in Keras)
    np.testing.assert_array_equal(base.predict(x, verbose=0).shape, (64, 64))


def test_shared_layer_weights_follow_the_layer_between_models():
    d = layers.Dense(4)
    i1 = bf.Input((3,))
    m1 = bf.Model(i1, d(d(layers.Dense(4)(i1))))
    assert len(m1.get_weights()) == 4            # one kernel and bias for the two calls
    i2 = bf.Input((4,))
    m2 = bf.Model(i2, d(i2))
    w = [np.ones((4, 4), np.float32), np.zeros(4, np.float32)]
    d.set_weights(w)
    np.testing.assert_allclose(m1.predict(np.ones((1, 3), np.float32), verbose=0).shape, (1, 4))
    np.testing.assert_array_equal(m2.predict(np.ones((1, 4), np.float32), verbose=0), [[4, 4, 4, 4]])


class Residual(bf.Model):
    def __init__(self):
        super().__init__()
        self.d1 = layers.Dense(16, activation="relu")
        self.d2 = layers.Dense(16)
        self.out = layers.Dense(3, activation="softmax")

    def call(self, x, training=None):
        h = self.d1(x)
        return self.out(h + self.d2(h))


class Branchy(bf.Model):
    def __init__(self):
        super().__init__()
        self.d = layers.Dense(3)

    def call(self, x, training=None):
        if x > 0:
            return self.d(x)
        return x


def test_subclassed_model_is_traced_once_and_trains():
    m = Residual()
    m.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    x, y = rng.standard_normal((64, 5)).astype(np.float32), rng.integers(0, 3, 64)
    h = m.fit(x, y, epochs=3, verbose=0)
    assert h.history["loss"][-1] < h.history["loss"][0]
    assert [l.name for l in m.layers][1:] == [m.d1.name, m.d2.name, "add", m.out.name] or len(m.layers) == 5
    assert m.predict(x, verbose=0).shape == (64, 3)


def test_tensor_valued_control_flow_raises_a_clear_error():
    m = Branchy()
    with pytest.raises(TypeError, match="symbolic tensor has no value.*Branchy.call|Branchy.call.*no value"):
        m.predict(np.ones((2, 3), np.float32), verbose=0)
    with pytest.raises(TypeError, match="layers instead"):
        bool(bf.Input((3,)))


def test_bad_graphs_raise_where_they_are_written():
    a, b = bf.Input((4,)), bf.Input((5,))
    with pytest.raises(ValueError, match="same shape.*input 1 has \\(5,\\) \\(called on \\(None, 4\\), \\(None, 5\\)\\)"):
        layers.Add()([a, b])
    with pytest.raises(ValueError, match="except on the concatenation axis"):
        layers.Concatenate(axis=1)([bf.Input((2, 3)), bf.Input((2, 4))])
    h = layers.Dense(3)(b)
    with pytest.raises(ValueError, match="Graph disconnected.*" + b._input_layer.name):
        bf.Model(a, layers.Add()([layers.Dense(3)(a), h]))
    with pytest.raises(ValueError, match="not connected to any output"):
        bf.Model([a, b], layers.Dense(2)(a))
    d = layers.Dense(2)
    d(a)
    with pytest.raises(ValueError, match="shares its weights"):
        d(b)
    with pytest.raises(TypeError, match="symbolic tensors"):   # (arrays compute at once: test_eager_calls.py)
        layers.Dense(2)("not a tensor")
    with pytest.raises(ValueError, match="merge layer is called on a list"):
        layers.Add()(a)


def test_summary_connected_to_get_layer_and_save_load(tmp_path):
    m = graph(bf)
    lines = []
    m.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "Connected to" in text and "d1[0][0], shared[1][0]" in text
    assert m.get_layer("skip").name == "skip" and m.get_layer("inner").name == "inner"
    with pytest.raises(ValueError, match="no layer named"):
        m.get_layer("nope")
    m.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    x, y = rng.standard_normal((32, 6)).astype(np.float32), rng.integers(0, 3, 32)
    m.fit(x, y, epochs=1, verbose=0)
    m.save(tmp_path / "g.npz")
    m2 = bf.models.load_model(tmp_path / "g.npz")
    np.testing.assert_allclose(m2.predict(x, verbose=0), m.predict(x, verbose=0), rtol=1e-6)
    assert m2.optimizer.iterations == m.optimizer.iterations


def test_graph_on_the_emu_device_and_micro_batches_give_the_same_updates():
    x, y = rng.standard_normal((48, 6)).astype(np.float32), rng.integers(0, 3, 48)
    m = graph(bf)
    w0 = m.get_weights()
    m.compile("sgd", "sparse_categorical_crossentropy")
    m.fit(x, y, batch_size=24, shuffle=False, verbose=0)
    ref = m.get_weights()
    for kw in (dict(device="emu"), dict(micro_batch=5)):
        m.set_weights(w0)
        m.compile("sgd", "sparse_categorical_crossentropy")
        m.fit(x, y, batch_size=24, shuffle=False, verbose=0, **kw)
        for a, b in zip(m.get_weights(), ref):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_wrong_loss_list_and_label_shapes_of_a_two_output_model_raise():
    inp = bf.Input((3,))
    m = bf.Model(inp, [layers.Dense(2, name="p")(inp), layers.Dense(1, name="q")(inp)])
    with pytest.raises(ValueError, match="2 outputs"):
        m.compile("sgd", loss=["mse"])
    m.compile("sgd", loss="mse")
    with pytest.raises(bf.DataError, match="'q'"):
        m.fit(np.ones((4, 3), np.float32), [np.ones((4, 2)), np.ones((4, 3))], verbose=0)


def test_every_engine_layer_kind_has_a_name_and_python_uses_the_engines_numbers():
    kinds = bf._core.LAYER_KINDS
    assert sorted(kinds.values()) == list(range(len(kinds)))          # no kind without a name
    assert layers.DENSE == kinds["DENSE"] and layers.CONCAT == kinds["CONCAT"]


@pytest.mark.parametrize("frozen", ["Conv2D", "Dense"])
def test_a_frozen_kernel_between_trainable_layers_passes_its_gradient_as_keras(frozen, tmp_path):
    """A frozen Conv2D / Dense gets no kernel gradient (it was a NULL-pointer error / crash), but the
    layers before it still learn through it: the same updates as Keras 3."""

    def build(L, inp):
        x = L.Conv2D(4, 3, activation="relu")(inp)
        mid = L.Conv2D(3, 3, activation="tanh") if frozen == "Conv2D" else L.Dense(5, activation="tanh")
        mid.trainable = False
        return L.Dense(2)(L.Flatten()(mid(x)))

    bi = bf.Input((7, 7, 2))
    bm = bf.Model(bi, build(layers, bi))
    w0 = bm.get_weights()
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((8, 7, 7, 2)).astype(np.float32), rng.standard_normal((8, 2)).astype(np.float32)

    def compute():
        keras = load()
        ki = keras.Input((7, 7, 2))
        km = keras.Model(ki, build(keras.layers, ki))
        km.set_weights(w0)
        km.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        km.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
        return km.get_weights()
    kw = keras_from(tmp_path, w0, compute)
    bm.compile(optimizer=bf.optimizers.SGD(0.1), loss="mse")
    bm.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    for i, (a, b) in enumerate(zip(kw, bm.get_weights())):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=f"weights[{i}]")
    assert not np.array_equal(w0[0], bm.get_weights()[0])                  # upstream kernel learned
    np.testing.assert_array_equal(w0[2], bm.get_weights()[2])              # frozen kernel kept


def test_an_input_one_size_1_axis_short_or_long_takes_the_inputs_shape_as_in_keras():
    """Keras 3 adjusts an input's rank by one trailing axis of size 1 (functional._adjust_input_rank): (N, T)
    data for an Input (T, 1), (N, D, 1) for an Input (D,); the same predictions and a fit, a view (no copy)"""
    a = np.random.default_rng(2).standard_normal((4, 5)).astype(np.float32)
    cases = (((5, 1), a), ((5,), a[..., None]))

    def compute():   # Keras's weights and predictions per case
        keras, out = load(), []
        for shape, data in cases:
            km = keras.Sequential([keras.Input(shape), keras.layers.Flatten(), keras.layers.Dense(2)])
            out.append((km.get_weights(), km.predict(data, verbose=0)))
        return out
    for (shape, data), (w, want) in zip(cases, case(compute)):
        bm = bf.Sequential([bf.Input(shape), bf.layers.Flatten(), bf.layers.Dense(2)])
        bm.set_weights(w)
        np.testing.assert_allclose(bm.predict(data, verbose=0), want, rtol=1e-5, atol=1e-6)
        bm.compile("sgd", "mse")
        assert np.isfinite(bm.fit(data, np.zeros((4, 2), np.float32), verbose=0).history["loss"][0])
    with pytest.raises(bf.DataError, match=r"per-sample shape \(5, 2\)"):
        bm.predict(np.ones((4, 5, 2), np.float32), verbose=0)
