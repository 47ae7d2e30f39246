"""Keras 3 files of graphs, both ways with Keras 3 itself (JAX, CPU): a
residual model with a merge, two inputs / two outputs with per-output losses,
loss weights and metrics, a layer called twice, a frozen nested Sequential and
a nested functional model, a subclassed model. Files written here have
Keras's Functional config (same layer order, inbound_nodes, input_layers /
output_layers) and Keras's weights paths; Keras opens them with the same
predictions and the same compile config; files Keras writes load here with
the same predictions and train on from Keras's optimizer state as Keras does.
Checkpoint callbacks save and resume graphs. Keras's side is recorded
(helpers/keras_recorded.py): what it computes from a file written here is
keyed by the file's contents."""

import json
import zipfile

import h5py
import numpy as np
import pytest

import boundfit as bf
from boundfit.saving import keras_file as keras_format

import keras_ref
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: files keyed by their names
from helpers.keras_recorded import case, keras_file

rng = np.random.default_rng(5)
N = 16
XA = rng.standard_normal((N, 6)).astype(np.float32)
XB = rng.standard_normal((N, 3)).astype(np.float32)
YC = np.eye(3, dtype=np.float32)[rng.integers(0, 3, N)]
YR = rng.standard_normal((N, 2)).astype(np.float32)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def residual(lib):
    L = lib.layers
    x = lib.Input((6,), name="x")
    h = L.Dense(6, activation="tanh", name="h")(x)
    r = L.Add(name="skip")([x, L.Dense(6, name="branch")(h)])
    m = lib.Model(x, L.Dense(3, activation="softmax", name="out")(L.Concatenate(name="cat")([r, h])), name="res")
    m.compile(optimizer=lib.optimizers.Adam(0.01), loss="categorical_crossentropy", metrics=["accuracy"])
    return m


def two_heads(lib):
    """Two inputs, two outputs (dicts), a Dense called twice, per-output losses / weights / metrics."""
    L = lib.layers
    a, b = lib.Input((6,), name="a"), lib.Input((3,), name="b")
    shared = L.Dense(4, activation="relu", name="shared")
    t = L.Multiply(name="mul")([shared(L.Dense(6, name="pa")(a)), shared(L.Dense(6, name="pb")(b))])
    m = lib.Model({"a": a, "b": b}, {"cls": L.Dense(3, activation="softmax", name="cls")(t),
                                     "reg": L.Dense(2, name="reg")(L.Average(name="avg")([t, t]))}, name="heads")
    m.compile(optimizer=lib.optimizers.SGD(0.05, momentum=0.9),
              loss={"cls": lib.losses.CategoricalCrossentropy(label_smoothing=0.1), "reg": "mse"},
              loss_weights={"cls": 1.0, "reg": 0.5},
              metrics={"cls": ["accuracy"], "reg": [lib.metrics.MeanAbsoluteError(name="mae")]})
    return m


def nested(lib):
    """A frozen nested Sequential at the base, a nested functional model on top."""
    L = lib.layers
    base = lib.Sequential([lib.Input((6,)), L.Dense(5, activation="relu", name="b1"), L.Dense(5, name="b2")],
                          name="base")
    base.trainable = False
    i = lib.Input((5,), name="top_in")
    top = lib.Model(i, L.Dense(3, activation="softmax", name="top_out")(L.Dense(4, name="top_h")(i)), name="top")
    x = lib.Input((6,), name="x")
    h = base(x)
    m = lib.Model(x, top(L.Subtract(name="sub")([h, L.Dense(5, name="side")(x)])), name="outer")
    m.compile(optimizer=lib.optimizers.Adam(0.01), loss="categorical_crossentropy")
    return m


def inputs(m):
    return {"a": XA, "b": XB} if len(m.inputs) == 2 else XA


def targets(m):
    return {"cls": YC, "reg": YR} if len(m.outputs) == 2 else YC


def as_list(p, names):
    return [p[n] for n in names] if isinstance(p, dict) else [p]


def file_parts(path):
    """(config.json, {weights path: shape} without boundfit's extras) of a .keras file."""
    with zipfile.ZipFile(path) as z:
        cfg = json.loads(z.read("config.json"))
        h5 = h5py.File(__import__("io").BytesIO(z.read("model.weights.h5")), "r")
    paths = {}
    h5.visititems(lambda n, o: paths.__setitem__(n, getattr(o, "shape", None)) if not n.startswith("boundfit") else None)
    return cfg, paths


def file_bytes(path):
    return np.frombuffer(open(path, "rb").read(), np.uint8)


def write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(np.asarray(data, np.uint8).tobytes())


def keras_predict(k, x, names):
    return as_list(k.predict(x, verbose=0), names)


def graph_shape(cfg):
    """The parts of a Functional config that make the graph: layer order, classes, calls, inputs and outputs."""
    c = cfg["config"]
    out = {"input_layers": c["input_layers"], "output_layers": c["output_layers"], "layers": []}
    for e in c["layers"]:
        sub = graph_shape(e) if e["class_name"] == "Functional" else \
            [x["config"]["name"] if x["class_name"] != "InputLayer" else "input" for x in e["config"]["layers"]] \
            if e["class_name"] == "Sequential" else None
        out["layers"].append((e["class_name"], e["name"], e["inbound_nodes"], e.get("build_config"),
                              e["config"].get("trainable"), sub))
    return out


@pytest.mark.parametrize("make", [residual, two_heads, nested], ids=["residual-merge", "two-in-two-out-shared",
                                                                      "nested-frozen"])
def test_graph_file_written_here_is_what_keras_writes_and_opens_with_the_same_predictions(tmp_path, make):
    m = make(bf)
    x, y = inputs(m), targets(m)
    m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)

    def theirs(p):
        k = make(keras_ref.load())
        k.optimizer.build(k.trainable_variables)   # Keras's optimizer variables, without a (slow) Keras step
        k.save(p)
        return {}
    keras_file(tmp_path / "theirs.keras", theirs)
    m.save(tmp_path / "ours.keras")
    (ours, our_paths), (theirs, their_paths) = file_parts(tmp_path / "ours.keras"), file_parts(tmp_path / "theirs.keras")
    assert ours["class_name"] == theirs["class_name"] == "Functional"
    assert graph_shape(ours) == graph_shape(theirs)
    for key in ("loss", "loss_weights", "metrics", "weighted_metrics"):
        assert ours["compile_config"][key] == theirs["compile_config"][key], key
    assert our_paths == their_paths   # same groups, variables and optimizer slots (a shared layer once)
    names = m.output_names

    def opened():   # Keras opens the file written here, then trains on from its state
        loaded = keras_ref.load().saving.load_model(tmp_path / "ours.keras")
        out = {"predict": keras_predict(loaded, x, names), "optimizer": type(loaded.optimizer).__name__,
               "iterations": int(loaded.optimizer.iterations)}
        out["history"] = loaded.fit(x, y, batch_size=N, epochs=1, shuffle=False, verbose=0).history
        return dict(out, trained=keras_predict(loaded, x, names))
    k = case(opened, files=[tmp_path / "ours.keras"])
    for a, b in zip(k["predict"], as_list(m.predict(x, verbose=0), names)):
        close(a, b)
    assert k["optimizer"] == type(m.optimizer).__name__
    assert k["iterations"] == m.optimizer.iterations == 2
    # Keras trains on from the state written here exactly as boundfit does
    hk = k["history"]
    hb = m.fit(x, y, batch_size=N, epochs=1, shuffle=False, verbose=0).history
    assert sorted(hk) == sorted(hb)
    for key in hb:
        close(hk[key], hb[key], 1e-5)
    for a, b in zip(k["trained"], as_list(m.predict(x, verbose=0), names)):
        close(a, b, 1e-5)


@pytest.mark.parametrize("make", [residual, two_heads, nested], ids=["residual-merge", "two-in-two-out-shared",
                                                                      "nested-frozen"])
def test_graph_file_written_by_keras_loads_here_and_trains_on(tmp_path, make):
    def trained(p):   # Keras's model after a step: its .keras file, its weights file alone, then a step more
        k = make(keras_ref.load())
        x, y, names = inputs(k), targets(k), k.output_names if len(k.outputs) == 1 else ["cls", "reg"]
        k.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
        k.save(p)
        k.save_weights(p + ".weights.h5")
        out = {"names": names, "layers": [l.name for l in k.layers], "iterations": int(k.optimizer.iterations),
               "trainable": sum(int(np.prod(v.shape)) for v in k.trainable_variables),
               "predict": keras_predict(k, x, names), "weights_file": file_bytes(p + ".weights.h5")}
        out["history"] = k.fit(x, y, batch_size=N, epochs=1, shuffle=False, verbose=0).history
        return dict(out, trained=keras_predict(k, x, names))
    k = keras_file(tmp_path / "k.keras", trained)
    m = bf.models.load_model(tmp_path / "k.keras")
    x, y, names = inputs(m), targets(m), k["names"]
    for a, b in zip(as_list(m.predict(x, verbose=0), names), k["predict"]):
        close(a, b)
    assert [l.name for l in m.layers] == k["layers"]
    assert m.optimizer.iterations == k["iterations"] == 2
    assert m._engine.n_trainable == k["trainable"]
    write_bytes(tmp_path / "k.weights.h5", k["weights_file"])   # and the weights file alone, into a model built here
    fresh = make(bf)
    fresh.load_weights(tmp_path / "k.weights.h5")
    assert fresh.optimizer.iterations == 2
    for a, b in zip(as_list(fresh.predict(x, verbose=0), names), k["predict"]):
        close(a, b)
    hk = k["history"]
    hb = m.fit(x, y, batch_size=N, epochs=1, shuffle=False, verbose=0).history
    assert sorted(hk) == sorted(hb)
    for key in hb:
        close(hk[key], hb[key], 1e-5)
    for a, b in zip(as_list(m.predict(x, verbose=0), names), k["trained"]):
        close(a, b, 1e-5)


def test_nested_frozen_model_stays_frozen_through_files_both_ways(tmp_path):
    m = nested(bf)
    m.save(tmp_path / "m.keras")

    def opened():   # Keras opens it, and saves it again
        k = keras_ref.load().saving.load_model(tmp_path / "m.keras")
        k.save(tmp_path / "k.keras")
        return {"frozen": [l.trainable for l in k.get_layer("base").layers], "file": file_bytes(tmp_path / "k.keras"),
                "trainable": sum(int(np.prod(v.shape)) for v in k.trainable_variables)}
    k = case(opened, files=[tmp_path / "m.keras"])
    # (Keras's Sequential.from_config leaves the model's own flag True; its layers are frozen, as in Keras's files)
    assert k["frozen"] == [False, False]
    assert k["trainable"] == m._engine.n_trainable == 5 * 4 + 4 + 4 * 3 + 3 + 6 * 5 + 5
    write_bytes(tmp_path / "k.keras", k["file"])
    m2 = bf.models.load_model(tmp_path / "k.keras")
    assert [l.trainable for l in m2.get_layer("base").layers] == [False, False]
    assert m2._engine.n_trainable == m._engine.n_trainable
    before = m2.get_layer("base").get_weights()
    m2.fit(XA, YC, batch_size=8, epochs=1, verbose=0)
    for a, b in zip(m2.get_layer("base").get_weights(), before):
        np.testing.assert_array_equal(a, b)


def test_get_config_of_a_graph_is_keras_functional_config(tmp_path):
    ours = two_heads(bf).get_config()
    with open(tmp_path / "ours.json", "w") as f:
        json.dump(ours, f)

    def keras_side():   # Keras's config of the same model, and its model from ours
        keras = keras_ref.load()
        return {"config": json.dumps(two_heads(keras).get_config()),
                "outputs": keras.Model.from_config(json.loads((tmp_path / "ours.json").read_text())).output_names}
    k = case(keras_side, files=[tmp_path / "ours.json"])
    assert graph_shape({"config": ours}) == graph_shape({"config": json.loads(k["config"])})
    assert k["outputs"] == ["cls", "reg"]


def subclassed(lib):
    L = lib.layers

    class Net(lib.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.stem = L.Dense(5, activation="relu")
            self.blocks = [L.Dense(5, activation="tanh"), L.Dense(5)]
            self.head = L.Dense(2)

        def call(self, x, training=None):
            h = self.stem(x)
            for b in self.blocks:
                h = h + b(h)
            return self.head(h)
    return Net(name="net")


def test_subclassed_model_keras_file_opens_in_keras_as_its_traced_graph(tmp_path):
    m = subclassed(bf)
    m.compile(bf.optimizers.Adam(0.01), "mse")
    m.fit(XA, YR, batch_size=8, epochs=1, shuffle=False, verbose=0)
    m.save(tmp_path / "net.keras")

    def opened():
        k = keras_ref.load().saving.load_model(tmp_path / "net.keras")   # no custom_objects: a Functional graph
        out = {"type": type(k).__name__, "predict": k.predict(XA, verbose=0), "iterations": int(k.optimizer.iterations)}
        k.fit(XA, YR, batch_size=N, epochs=1, shuffle=False, verbose=0)
        return dict(out, trained=k.predict(XA, verbose=0))
    k = case(opened, files=[tmp_path / "net.keras"])
    assert k["type"] == "Functional"
    close(k["predict"], m.predict(XA, verbose=0))
    assert k["iterations"] == 2
    m.fit(XA, YR, batch_size=N, epochs=1, shuffle=False, verbose=0)
    close(k["trained"], m.predict(XA, verbose=0), 1e-5)
    back = bf.models.load_model(tmp_path / "net.keras")
    assert type(back) is bf.Model and back.optimizer.iterations == 2
    m.load_weights(tmp_path / "net.keras")   # the .keras file's graph layout read into the subclassed model
    close(back.predict(XA, verbose=0), m.predict(XA, verbose=0), 1e-6)


def test_subclassed_weights_file_both_ways_with_keras_subclass_layout(tmp_path):
    m = subclassed(bf)
    m.compile(bf.optimizers.Adam(0.01), "mse")
    m.fit(XA, YR, batch_size=8, epochs=1, shuffle=False, verbose=0)
    m.save_weights(tmp_path / "m.weights.h5")

    def paths(p):
        out = set()
        with h5py.File(p, "r") as h5:
            h5.visititems(lambda n, o: out.add((n, getattr(o, "shape", None))) if not n.startswith("boundfit") else None)
        return out

    def keras_side():   # Keras's own weights file after a step, then ours read in, a step on, its file again
        keras = keras_ref.load()
        k = subclassed(keras)
        k.compile(keras.optimizers.Adam(0.01), "mse")
        k.fit(XA, YR, batch_size=8, epochs=1, shuffle=False, verbose=0)
        k.save_weights(tmp_path / "k.weights.h5")
        k.load_weights(tmp_path / "m.weights.h5")
        out = {"paths": sorted(paths(tmp_path / "k.weights.h5")), "predict": k.predict(XA, verbose=0),
               "iterations": int(k.optimizer.iterations)}
        k.fit(XA, YR, batch_size=N, epochs=1, shuffle=False, verbose=0)
        k.save_weights(tmp_path / "k2.weights.h5")
        return dict(out, trained=k.predict(XA, verbose=0), file=file_bytes(tmp_path / "k2.weights.h5"))
    k = case(keras_side, files=[tmp_path / "m.weights.h5"])
    assert paths(tmp_path / "m.weights.h5") == set(k["paths"])   # stem under layers/, blocks/, head/
    close(k["predict"], m.predict(XA, verbose=0))
    m2 = subclassed(bf)
    m2.build((None, 6))
    m2.compile(bf.optimizers.Adam(0.01), "mse")
    m2.load_weights(tmp_path / "m.weights.h5")
    assert m2.optimizer.iterations == k["iterations"] == 2
    m2.fit(XA, YR, batch_size=N, epochs=1, shuffle=False, verbose=0)
    close(k["trained"], m2.predict(XA, verbose=0), 1e-5)
    write_bytes(tmp_path / "k2.weights.h5", k["file"])
    m.load_weights(tmp_path / "k2.weights.h5")
    close(m.predict(XA, verbose=0), k["trained"])
    assert m.optimizer.iterations == 3


def test_functional_checkpoint_and_backup_resume_match_an_uninterrupted_run(tmp_path):
    x, y = inputs(two_heads(bf)), targets(two_heads(bf))
    ref = two_heads(bf)
    start = ref.get_weights()
    ref.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)

    class Stop(bf.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise KeyboardInterrupt

    m = two_heads(bf)
    m.set_weights(start)
    backup = bf.callbacks.BackupAndRestore(str(tmp_path / "backup"))
    ckpt = bf.callbacks.ModelCheckpoint(str(tmp_path / "c{epoch}.keras"))
    with pytest.raises(KeyboardInterrupt):
        m.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0, callbacks=[backup, ckpt, Stop()])
    assert (tmp_path / "c2.keras").exists() and not (tmp_path / "c3.keras").exists()
    resumed = two_heads(bf)      # a fresh model, as in a restarted kernel
    h = resumed.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0,
                    callbacks=[bf.callbacks.BackupAndRestore(str(tmp_path / "backup"))])
    assert len(h.history["loss"]) == 1 and resumed.optimizer.iterations == ref.optimizer.iterations == 6
    for a, b in zip(resumed.get_weights(), ref.get_weights()):
        close(a, b, 1e-6)
    opened = lambda: {"iterations": int(keras_ref.load().saving.load_model(tmp_path / "c2.keras").optimizer.iterations)}
    assert case(opened, files=[tmp_path / "c2.keras"])["iterations"] == 4


def test_keras_subclassed_file_is_refused_naming_the_class(tmp_path):
    def save(p):
        k = subclassed(keras_ref.load())
        k(XA[:1])
        k.save(p)
        return {}
    keras_file(tmp_path / "k.keras", save)
    with pytest.raises(ValueError, match="'Net', a subclassed model"):
        bf.models.load_model(tmp_path / "k.keras")


def test_graph_weights_of_another_shape_are_refused_before_anything_changes(tmp_path):
    def save(p):
        keras = keras_ref.load()
        k = keras.Model(*(lambda x: (x, keras.layers.Dense(3, name="out")(keras.layers.Dense(7, name="h")(x))))(
            keras.Input((6,), name="x")))
        k.save_weights(p)
        return {}
    keras_file(tmp_path / "k.weights.h5", save)
    m = residual(bf)
    before = m.get_weights()
    with pytest.raises(ValueError, match=r"layer 'h' \(Dense\) expects weights \[\(6, 6\), \(6,\)\].*\(6, 7\)"):
        m.load_weights(tmp_path / "k.weights.h5")
    for a, b in zip(m.get_weights(), before):
        np.testing.assert_array_equal(a, b)


def test_functional_config_with_an_unsupported_call_is_named(tmp_path):
    m = residual(bf)
    m.save(tmp_path / "m.keras")
    with zipfile.ZipFile(tmp_path / "m.keras") as z:
        parts = {n: z.read(n) for n in z.namelist()}
    cfg = json.loads(parts["config.json"])
    cfg["config"]["layers"][1]["inbound_nodes"][0]["kwargs"] = {"mask": [1]}
    parts["config.json"] = json.dumps(cfg)
    keras_format.atomic_write(tmp_path / "bad.keras", lambda f: _zip(f, parts))
    with pytest.raises(ValueError, match=r"layer 'h': the call argument mask=\[1\] is not supported"):
        bf.models.load_model(tmp_path / "bad.keras")


def _zip(f, parts):
    with zipfile.ZipFile(f, "w") as z:
        for n, data in parts.items():
            z.writestr(n, data)


def test_functional_config_with_a_loop_is_refused():
    cfg = residual(bf).get_config()
    assert bf.Model.from_config(cfg).output_names == ["out"]
    h = next(e for e in cfg["layers"] if e["name"] == "h")
    h["inbound_nodes"][0]["args"][0]["config"]["keras_history"] = ["out", 0, 0]
    with pytest.raises(ValueError, match=r"graph has loops or disconnected nodes \(\['branch', 'cat', 'h', 'out', "
                                         r"'skip'\]\)"):
        bf.Model.from_config(cfg)


@pytest.mark.parametrize("device", ["cpu", "emu"])
def test_frozen_nested_model_between_trainable_layers_passes_gradients_as_keras(tmp_path, device):
    """A frozen block in the middle has no weight gradients but passes the input
    gradient on to the trainable layer below it (it used to crash the CPU kernel)."""

    def build(lib):
        L = lib.layers
        block = lib.Sequential([lib.Input((5,)), L.Dense(5, activation="tanh", name="f1"), L.Dense(4, name="f2")],
                               name="block")
        block.trainable = False
        x = lib.Input((6,), name="x")
        m = lib.Model(x, L.Dense(3, activation="softmax", name="out")(block(L.Dense(5, name="below")(x))))
        m.compile(optimizer=lib.optimizers.SGD(0.1), loss="categorical_crossentropy")
        return m
    m = build(bf)
    m.save_weights(tmp_path / "m.weights.h5")

    def trained():   # Keras from the same weights, one epoch
        k = build(keras_ref.load())
        k.load_weights(tmp_path / "m.weights.h5")
        return {"loss": k.fit(XA, YC, batch_size=8, epochs=1, shuffle=False, verbose=0).history["loss"],
                "weights": {name: k.get_layer(name).get_weights() for name in ("below", "out")}}
    k = case(trained, files=[tmp_path / "m.weights.h5"])
    frozen = m.get_layer("block").get_weights()
    hb = m.fit(XA, YC, batch_size=8, epochs=1, shuffle=False, verbose=0, device=device).history["loss"]
    close(hb, k["loss"])
    for name in ("below", "out"):
        for a, b in zip(m.get_layer(name).get_weights(), k["weights"][name], strict=True):
            close(a, b)
    for a, b in zip(m.get_layer("block").get_weights(), frozen):
        np.testing.assert_array_equal(a, b)


def test_one_loss_name_for_several_outputs_keeps_its_loss_weights(tmp_path):
    m = two_heads(bf)
    m.compile("sgd", loss="mse", loss_weights=[2.0, 0.5])
    m.save(tmp_path / "m.keras")
    cc = file_parts(tmp_path / "m.keras")[0]["compile_config"]
    assert cc["loss"] == "mse" and cc["loss_weights"] == [2.0, 0.5]
    m2 = bf.models.load_model(tmp_path / "m.keras")
    assert m2._loss_weights == [2.0, 0.5]
    x, y = inputs(m), targets(m)
    close(m2.evaluate(x, y, verbose=0), m.evaluate(x, y, verbose=0), 1e-6)


def test_nested_model_called_twice_both_ways(tmp_path):
    """Calls of a nested Functional count from 0 in inbound_nodes and from 1 in output_layers, as Keras writes."""
    def build(lib):
        L = lib.layers
        i = lib.Input((6,), name="bi")
        blk = lib.Model(i, L.Add(name="res")([L.Dense(6, activation="tanh", name="bd")(i), i]), name="blk")
        x = lib.Input((6,), name="x")
        return lib.Model(x, [L.Dense(2, name="o")(blk(x)), blk(blk(x))], name="twice")

    def save(p):
        k = build(keras_ref.load())
        k.save(p)
        return {"predict": k.predict(XA, verbose=0)}
    m, k = build(bf), keras_file(tmp_path / "theirs.keras", save)
    m.save(tmp_path / "ours.keras")
    (ours, our_paths), (theirs, their_paths) = file_parts(tmp_path / "ours.keras"), file_parts(tmp_path / "theirs.keras")
    assert graph_shape(ours) == graph_shape(theirs) and our_paths == their_paths
    assert ours["config"]["output_layers"] == [["o", 0, 0], ["blk", 3, 0]]
    opened = lambda: {"predict": keras_ref.load().saving.load_model(tmp_path / "ours.keras").predict(XA, verbose=0)}
    for a, b in zip(case(opened, files=[tmp_path / "ours.keras"])["predict"], m.predict(XA, verbose=0)):
        close(a, b)
    back = bf.models.load_model(tmp_path / "theirs.keras")
    for a, b in zip(back.predict(XA, verbose=0), k["predict"]):
        close(a, b)
