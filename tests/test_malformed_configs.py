"""A .keras file whose config.json is malformed (another JSON type where an
object or a list belongs, references that go round in a cycle or to no
layer, nesting deeper than a parser follows) raises ValueError naming the
file and the field, before any model is built (saving/config_check.py).
(Keras 3 raises ValueError for a config.json that is no object, and
TypeError for a string compile_config.)"""

import json
import zipfile

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers as L


def _sequential_file(path):
    m = bf.Sequential([L.Dense(4, activation="relu", input_shape=(3,)), L.Dense(2)])
    m.compile(optimizer="adam", loss="mse")
    m.save(path)
    return m


def _functional_file(path):
    x = bf.Input((3,), name="x")
    y = L.Dense(2, name="d2")(L.Dense(4, name="d1")(x))
    m = bf.Model(x, y)
    m.save(path)
    return m


def _rewrite(src, dst, edit):
    """dst: src with config.json replaced by edit(its config) (a JSON value, or the bytes to write)."""
    with zipfile.ZipFile(src) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    cfg = edit(json.loads(parts["config.json"]))
    parts["config.json"] = cfg if isinstance(cfg, bytes) else json.dumps(cfg)
    with zipfile.ZipFile(dst, "w") as z:
        for n, b in parts.items():
            z.writestr(n, b)
    return dst


def _layer(cfg, name):
    return next(e for e in cfg["config"]["layers"] if e["name"] == name)


def _set(path, value):
    def edit(cfg):
        d = cfg
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
        return cfg
    return edit


@pytest.fixture
def files(tmp_path):
    return _sequential_file(tmp_path / "seq.keras"), _functional_file(tmp_path / "fn.keras")


@pytest.mark.parametrize("value, got", [([], "got list"), (None, "got null"), (42, "got int 42"),
                                        ("m", "got str 'm'")])
def test_config_json_of_another_json_type_is_refused_naming_the_file(tmp_path, files, value, got):
    bad = _rewrite(tmp_path / "seq.keras", tmp_path / "bad.keras", lambda c: value)
    with pytest.raises(ValueError, match=f"bad.keras: config.json must be an object, {got}$"):
        bf.models.load_model(bad)


@pytest.mark.parametrize("src, path, value, message", [
    ("seq.keras", ("config", "layers"), "abc", "config.layers must be a list, got str 'abc'"),
    ("seq.keras", ("compile_config",), "adam", "compile_config must be null or an object, got str 'adam'"),
    ("seq.keras", ("config", "layers", 0, "config", "batch_shape"), 3,
     r"config.layers\[0\].config.batch_shape must be a list, got int 3"),
    ("seq.keras", ("compile_config", "loss"), 7, "compile_config.loss must be null, a string, a list or an object, "
                                                 "got int 7"),
    ("fn.keras", ("config", "input_layers"), "x", "config.input_layers must be a list or an object, got str 'x'"),
    ("fn.keras", ("config", "input_layers"), [["x", 0]],
     r"config.input_layers\[0\] must be a list of 3 items, got list"),
    ("fn.keras", ("config", "layers", 1, "inbound_nodes", 0, "args", 0, "config", "keras_history"), ["x", "0", 0],
     r"config.layers\[1\].inbound_nodes\[0\].args\[0\].config.keras_history\[1\] must be an integer, got str '0'"),
])
def test_a_field_of_another_json_type_is_refused_naming_the_field(tmp_path, files, src, path, value, message):
    bad = _rewrite(tmp_path / src, tmp_path / "bad.keras", _set(path, value))
    with pytest.raises(ValueError, match=f"bad.keras: config.json: {message}$"):
        bf.models.load_model(bad)


def test_a_missing_field_is_refused_naming_it(tmp_path, files):
    def drop(cfg):
        del cfg["config"]["output_layers"]
        return cfg
    bad = _rewrite(tmp_path / "fn.keras", tmp_path / "bad.keras", drop)
    with pytest.raises(ValueError, match="bad.keras: config.json: config.output_layers is missing"):
        bf.models.load_model(bad)


def test_layer_calls_in_a_cycle_are_refused_naming_the_cycle(tmp_path, files):
    def loop(cfg):
        d1 = _layer(cfg, "d1")
        d1["inbound_nodes"][0]["args"][0]["config"]["keras_history"] = ["d2", 0, 0]
        return cfg
    bad = _rewrite(tmp_path / "fn.keras", tmp_path / "bad.keras", loop)
    with pytest.raises(ValueError, match=r"bad.keras: config.json: config.layers\[1\].inbound_nodes: the layer "
                                         r"calls' inputs go round in a cycle: d1\[0\] -> d2\[0\] -> d1\[0\]$"):
        bf.models.load_model(bad)


def test_a_layer_applied_to_its_own_output_is_no_cycle(tmp_path):
    x = bf.Input((3,), name="x")
    d = L.Dense(3, name="twice")
    m = bf.Model(x, d(d(x)))
    m.save(tmp_path / "twice.keras")
    r = bf.models.load_model(tmp_path / "twice.keras")
    r.save(tmp_path / "again.keras")
    with zipfile.ZipFile(tmp_path / "twice.keras") as a, zipfile.ZipFile(tmp_path / "again.keras") as b:
        assert json.loads(a.read("config.json")) == json.loads(b.read("config.json"))   # the layer, called twice
    for w, v in zip(r.get_weights(), m.get_weights(), strict=True):
        np.testing.assert_array_equal(w, v)


@pytest.mark.parametrize("path, value, message", [
    (("config", "layers", 1, "inbound_nodes", 0, "args", 0, "config", "keras_history"), ["nowhere", 0, 0],
     r"config.layers\[1\].inbound_nodes\[0\] names the layer 'nowhere', which the config lacks"),
    (("config", "output_layers"), ["gone", 0, 0], "config.output_layers names the layer 'gone', which the config "
                                                  "lacks"),
    (("config", "input_layers"), ["d1", 0, 0], "config.input_layers names the layer 'd1', a Dense: a model's inputs "
                                               "are InputLayers"),
    (("config", "layers", 2, "name"), "d1", r"config.layers\[2\] is a second layer named 'd1'"),
])
def test_a_reference_to_no_layer_or_the_wrong_one_is_refused(tmp_path, files, path, value, message):
    bad = _rewrite(tmp_path / "fn.keras", tmp_path / "bad.keras", _set(path, value))
    with pytest.raises(ValueError, match=f"bad.keras: config.json: {message}$"):
        bf.models.load_model(bad)


def test_config_json_nested_too_deep_is_refused(tmp_path, files):
    deep = _rewrite(tmp_path / "seq.keras", tmp_path / "deep.keras", lambda c: b"[" * 100000 + b"]" * 100000)
    with pytest.raises(ValueError, match="deep.keras: config.json nests deeper than the JSON parser can follow"):
        bf.models.load_model(deep)

    def nest(cfg):
        v = 0
        for _ in range(150):
            v = [v]
        cfg["config"]["layers"][1]["config"]["units"] = v
        return cfg
    deep = _rewrite(tmp_path / "seq.keras", tmp_path / "deep2.keras", nest)
    with pytest.raises(ValueError, match=r"deep2.keras: config.json: config.layers\[1\].config.units(\[0\])+ nests "
                                         "deeper than 100 levels"):
        bf.models.load_model(deep)


def test_config_json_that_is_not_json_is_refused(tmp_path, files):
    bad = _rewrite(tmp_path / "seq.keras", tmp_path / "bad.keras", lambda c: b'{"class_name": "Sequ')
    with pytest.raises(ValueError, match="bad.keras: config.json is not valid JSON: Unterminated string"):
        bf.models.load_model(bad)
