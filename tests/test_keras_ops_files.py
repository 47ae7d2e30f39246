"""keras.ops nodes in .keras files, both ways, against Keras 3 (JAX backend):
a functional model written in Keras with keras.ops on its tensors (Mean,
Sum, Max, Min, Softmax, Relu, Reshape, Stack, Clip, ... with their axis /
keepdims / options in the file) loads into boundfit, predicts and trains
one step as Keras; boundfit writes the same calls as the same Keras nodes,
which Keras opens; what boundfit does not run is refused naming the op,
its argument and the file's layer. Keras's side is recorded
(helpers/keras_recorded.py)."""

import json
import zipfile

import numpy as np
import pytest

import boundfit as bf

import keras_ref
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: files keyed by their names
from helpers.keras_recorded import case, keras_file

R = np.random.default_rng(11)
X = R.standard_normal((6, 4, 3)).astype(np.float32)
IDS = R.integers(0, 5, (6, 4)).astype(np.float32)
Y = R.standard_normal((6, 1)).astype(np.float32)
DENSE = ("d1", "a", "a2", "b", "out")


def ops_graph(M, cast=True):
    """The keras.ops of issue 24 on a functional graph's tensors; branches a -> a2 and b -> mean have Dense
    layers of one shape whose order in Keras's weights file depends on counting mean as one node. cast: with
    casts to float32, which boundfit's graph holds as the tensor itself (Keras as a node)."""
    o, L = M.ops, M.layers
    x, ids = M.Input(shape=(4, 3)), M.Input(shape=(4,), dtype="int32")
    h = L.Dense(3, name="d1")(x)                                                      # (4, 3)
    a, sm = o.mean(h, axis=1), o.softmax(h)                                           # (3,), (4, 3)
    parts = [
        a, o.sum(h, axis=-1, keepdims=True), o.max(h, axis=2), o.min(h, axis=1, keepdims=True),
        o.sum(h, axis=1), o.mean(h, axis=-1),
        sm, o.nn.softmax(h, axis=-1),
        o.relu(h) + o.sigmoid(h) * o.exp(o.clip(h, -2.0, 1.0)),
        o.log(o.abs(h) + 1.0) + o.sqrt(o.square(h) + 0.1),
        o.tanh(h) - o.gelu(h) + o.leaky_relu(h, negative_slope=0.1) * o.elu(h) + o.silu(h) + o.softplus(h),
        o.power(h, 2) + o.reciprocal(o.abs(h) + 1.0) + o.rsqrt(o.square(h) + 1.0) - o.nn.relu6(h),
        o.reshape(h, (-1, 12)), o.transpose(h, (0, 2, 1)),
        o.squeeze(o.expand_dims(a, 1), axis=1), o.stack([a, o.max(h, axis=1)], axis=1),
        o.concatenate([sm, h], axis=-1), o.matmul(o.transpose(h, (0, 2, 1)), h),
        o.where(o.cast(h > 0.0, "float32"), h, 0.1 * h), o.one_hot(ids, 5), h[:, 1], (h + 1.0) * 2.0 - h / 3.0,
        L.Dense(3, name="a2")(L.Dense(3, name="a")(x)), o.mean(L.Dense(3, name="b")(x), axis=1),
    ]
    w = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(3, 2)
    parts += [o.tensordot(h, w, axes=1), o.dot(h, w), o.matmul(h, w), o.take(h, np.array([2, 0]), axis=2),
              o.squeeze(o.expand_dims(a, -1)), h * np.array([1.0, 2.0, 3.0], np.float32)]
    if cast:   # Keras writes these casts as nodes; boundfit's graph holds them as the tensor itself
        parts += [o.where(h > 0, h, o.cast(h, "float32")), o.convert_to_tensor(h)]
    flat = [L.Flatten()(p) if len(p.shape) > 2 else p for p in parts]
    z = L.Concatenate()([L.Concatenate()(flat[k:k + 13]) for k in range(0, len(flat), 13)])   # <= 16 inputs
    return M.Model([x, ids], L.Dense(1, name="out")(z))


def set_dense(m, weights):
    for n in DENSE:
        m.get_layer(n).set_weights(weights[n])


def file_bytes(path):
    return np.frombuffer(open(path, "rb").read(), np.uint8)


def dense_by_name(m):
    return {n: m.get_layer(n).get_weights() for n in DENSE}


def op_nodes(path):
    """(class, module, config without the name, the arguments with tensors as (producer position, shape)) of the
    file's operation nodes, in the file's order"""
    cfg = json.loads(zipfile.ZipFile(path).read("config.json"))["config"]
    pos = {e["name"]: i for i, e in enumerate(cfg["layers"])}

    def arg(a):
        if isinstance(a, dict) and a.get("class_name") == "__keras_tensor__":
            return ("tensor", pos[a["config"]["keras_history"][0]], tuple(a["config"]["shape"]))
        return [arg(v) for v in a] if isinstance(a, list) else a
    return [(e["class_name"], e["module"], {k: v for k, v in e["config"].items() if k != "name"},
             [arg(n["args"]) for n in e["inbound_nodes"]])
            for e in cfg["layers"] if e["module"].startswith("keras.src.ops")]


def compile_fit(m, M):
    m.compile(M.optimizers.SGD(0.05), "mse")
    return m.fit([X, IDS], Y, batch_size=6, epochs=1, shuffle=False, verbose=0).history["loss"]


def test_keras_written_ops_load_predict_and_train_as_keras(tmp_path):
    def save(p):   # Keras's file, its predictions, Dense weights, one step's loss and the weights after it
        keras = keras_ref.load()
        km = ops_graph(keras)
        km.save(p)
        out = {"predict": km.predict([X, IDS], verbose=0), "dense": dense_by_name(km)}
        return dict(out, loss=compile_fit(km, keras), trained=dense_by_name(km))
    k = keras_file(tmp_path / "theirs.keras", save)
    want = k["predict"]
    m = bf.models.load_model(tmp_path / "theirs.keras")
    for n, ws in k["dense"].items():         # every Dense's weights where Keras's file has them
        for a, b in zip(m.get_layer(n).get_weights(), ws):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(m.predict([X, IDS], verbose=0), want, rtol=1e-5, atol=1e-5)
    m.compile(bf.optimizers.SGD(0.05), "mse")
    plan = m.estimate_memory(batch_size=6)                 # the plan of the graph read is exact
    np.testing.assert_allclose(compile_fit(m, bf), k["loss"], rtol=1e-5)
    stats = m._last_run_stats
    arenas = m._engine.weight_arena_bytes + m._engine.optimizer_arena_bytes + sum(s["run_high_water"] for s in stats)
    assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured")) == arenas
    for n, ws in k["trained"].items():
        for a, b in zip(m.get_layer(n).get_weights(), ws):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_boundfit_writes_the_ops_as_keras_nodes_keras_opens(tmp_path):
    def save(p):
        km = ops_graph(keras_ref.load(), cast=False)
        km.save(p)
        return {"dense": dense_by_name(km), "predict": km.predict([X, IDS], verbose=0)}
    k = keras_file(tmp_path / "theirs.keras", save)
    bm = ops_graph(bf, cast=False)
    set_dense(bm, k["dense"])
    want = k["predict"]
    np.testing.assert_allclose(bm.predict([X, IDS], verbose=0), want, rtol=1e-5, atol=1e-5)
    bm.save(tmp_path / "ours.keras")
    assert op_nodes(tmp_path / "ours.keras") == op_nodes(tmp_path / "theirs.keras")

    def opened():   # Keras opens ours, predicts and trains a step
        keras = keras_ref.load()
        theirs = keras.models.load_model(tmp_path / "ours.keras")
        return {"predict": theirs.predict([X, IDS], verbose=0), "loss": compile_fit(theirs, keras)}
    theirs = case(opened, files=[tmp_path / "ours.keras"])
    np.testing.assert_allclose(theirs["predict"], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(theirs["loss"], compile_fit(bm, bf), rtol=1e-5)
    back = bf.models.load_model(tmp_path / "theirs.keras")   # Keras's file read and written again: the same nodes
    back.save(tmp_path / "again.keras")
    assert op_nodes(tmp_path / "again.keras") == op_nodes(tmp_path / "theirs.keras")
    again = lambda: keras_ref.load().models.load_model(tmp_path / "again.keras").predict([X, IDS], verbose=0)
    np.testing.assert_allclose(case(again, files=[tmp_path / "again.keras"]), want, rtol=1e-5, atol=1e-5)


def _edited(src, dst, edit):
    with zipfile.ZipFile(src) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    cfg = json.loads(parts["config.json"])
    edit(cfg["config"]["layers"])
    parts["config.json"] = json.dumps(cfg)
    with zipfile.ZipFile(dst, "w") as z:
        for n, data in parts.items():
            z.writestr(n, data)


REFUSED = ["layer 'nextafter.*' is the keras.ops operation Nextafter",
           "operation 'max.*' \\(Max\\): Max\\(initial=0.5\\) is not supported",
           "operation 'norm.*' \\(Norm\\): keras.ops.linalg.norm .*ord='nuc'",
           "ConvertToTensor\\(sparse=True\\)"]
XS = np.random.default_rng(0).standard_normal((5, 4, 3)).astype(np.float32)
X3S = np.random.default_rng(1).standard_normal((5, 4, 3, 2)).astype(np.float32)


def keras_op_files():
    """Keras's files (recorded, their bytes by name) of ops boundfit refuses (c0..c4, as REFUSED), of
    reductions over any axes and softmax over any axis (ok0..ok2, with Keras's predictions) and of a sum"""
    import tempfile
    keras = keras_ref.load()
    o = keras.ops
    x = keras.Input((4, 3))
    x3 = keras.Input((4, 3, 2))
    models = {f"c{i}": keras.Model(x, y) for i, y in enumerate([
        o.nextafter(x, x), o.max(x, axis=1, initial=0.5), o.linalg.norm(x, ord="nuc", axis=(1, 2)),
        o.convert_to_tensor(x, sparse=True)])}
    predict = {}
    for i, (inp, y, data) in enumerate(((x, o.mean(x, axis=(1, 2)), XS), (x3, o.mean(x3, axis=(1, 3)), X3S),
                                        (x, o.softmax(x, axis=1), XS), (x, o.cast(x * 100.0, "int8"), XS))):
        models[f"ok{i}"] = keras.Model(inp, y)
        predict[f"ok{i}"] = models[f"ok{i}"].predict(data, verbose=0)
    models["sum"] = keras.Model(x, o.sum(x, axis=1))
    with tempfile.TemporaryDirectory() as d:
        files = {}
        for name, km in models.items():
            km.save(f"{d}/{name}.keras")
            files[name] = file_bytes(f"{d}/{name}.keras")
    return {"files": files, "predict": predict}


def test_ops_boundfit_does_not_run_are_named_with_the_files_layer(tmp_path):
    k = case(keras_op_files)
    for name, data in k["files"].items():
        (tmp_path / f"{name}.keras").write_bytes(data.tobytes())
    for i, match in enumerate(REFUSED):
        with pytest.raises(ValueError, match=match):
            bf.models.load_model(tmp_path / f"c{i}.keras")
    # reductions over any axes, softmax over any axis and a cast to an integer (once refused here) load as Keras's
    for i, data in enumerate((XS, X3S, XS, XS)):
        np.testing.assert_allclose(bf.models.load_model(tmp_path / f"ok{i}.keras").predict(data, verbose=0),
                                   k["predict"][f"ok{i}"], rtol=1e-5, atol=1e-6)

    def extra(layers):
        next(e for e in layers if e["class_name"] == "Sum")["config"]["where"] = [1, 2]
    _edited(tmp_path / "sum.keras", tmp_path / "sum2.keras", extra)
    with pytest.raises(ValueError, match="operation 'sum.*' \\(Sum\\): the argument where=\\[1, 2\\] of Sum"):
        bf.models.load_model(tmp_path / "sum2.keras")


def test_reductions_of_a_masked_sequence_ignore_the_mask_as_keras(tmp_path):
    """keras.ops.mean / sum over the steps of an Embedding(mask_zero=True) average every step (Keras's ops take
    no mask); the GlobalAveragePooling1D layer beside them averages the steps the mask keeps; in .keras and
    .npz files alike"""
    def build(M):
        ids = M.Input((5,), dtype="int32")
        e = M.layers.Embedding(10, 3, mask_zero=True, name="emb")(ids)
        z = M.layers.Concatenate()([M.ops.mean(e, axis=1), M.ops.sum(e, axis=1), M.ops.max(e, axis=1),
                                    M.layers.GlobalAveragePooling1D()(e)])
        return M.Model(ids, M.layers.Dense(1, name="out")(z))
    x = np.array([[1, 2, 0, 0, 0], [3, 4, 5, 6, 7], [8, 0, 0, 0, 0]], np.int32)
    y = np.array([[0.5], [-1.0], [2.0]], np.float32)

    def fit(m, M):
        m.compile(M.optimizers.SGD(0.1), "mse")
        m.fit(x, y, batch_size=3, epochs=1, verbose=0)

    def keras_side():   # Keras's initial weights, predictions, and weights after a step
        keras = keras_ref.load()
        km = build(keras)
        out = {"w0": km.get_weights(), "predict": km.predict(x, verbose=0)}
        fit(km, keras)
        return dict(out, trained=km.get_weights())
    k = case(keras_side)
    bm = build(bf)
    bm.set_weights(k["w0"])
    want = k["predict"]
    np.testing.assert_allclose(bm.predict(x, verbose=0), want, rtol=1e-5, atol=1e-6)
    bm.save(tmp_path / "m.keras")
    bm.save(tmp_path / "m.npz")
    opened = lambda: keras_ref.load().models.load_model(tmp_path / "m.keras").predict(x, verbose=0)
    np.testing.assert_allclose(case(opened, files=[tmp_path / "m.keras"]), want, rtol=1e-5, atol=1e-6)
    for name in ("m.keras", "m.npz"):
        np.testing.assert_allclose(bf.models.load_model(tmp_path / name).predict(x, verbose=0), want,
                                   rtol=1e-5, atol=1e-6)
    fit(bm, bf)
    for a, b in zip(bm.get_weights(), k["trained"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
