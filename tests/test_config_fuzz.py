"""config.json of a .keras file, fuzzed: any node of a valid Sequential's or
Functional model's config.json replaced by a value of another JSON type, a
key dropped, a tensor reference pointed at another layer (loops included).
Every outcome is a model that loads or one of boundfit's documented
exceptions (ValueError, BoundfitError, and Keras's TypeError for a custom
loss the file names but custom_objects lacks); never AttributeError,
TypeError, KeyError, IndexError or RecursionError. Derandomized: the same
examples on every run, a few seconds in all."""

import copy
import json
import warnings
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import boundfit as bf
from boundfit import layers as L

EXAMPLES = 60
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _sequential():
    m = bf.Sequential([L.Dense(4, activation="relu", input_shape=(3,)), L.Dropout(0.1), L.Dense(2)])
    m.compile(optimizer=bf.optimizers.Adam(learning_rate=1e-3), loss=bf.losses.MeanSquaredError(),
              metrics=["mae"])
    return m


def _functional():
    a, b = bf.Input((3,), name="a"), bf.Input((2,), name="b")
    h = L.Dense(4, activation="tanh", name="da")(a)
    c = L.Concatenate(name="cat")([h, b])
    y = L.Dense(2, name="out")(L.Dropout(0.2, name="drop")(c[:, 1:5]))
    m = bf.Model([a, b], y)
    m.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    return m


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """{kind: (the zip's members, config.json parsed)} of the two models, saved once."""
    d = tmp_path_factory.mktemp("fuzz")
    out = {}
    for name, make in (("sequential", _sequential), ("functional", _functional)):
        make().save(d / f"{name}.keras")
        with zipfile.ZipFile(d / f"{name}.keras") as z:
            parts = {n: z.read(n) for n in z.namelist()}
        out[name] = (parts, json.loads(parts["config.json"]))
    return out


def _nodes(v, path=()):
    """Every (path, value) of a JSON tree, the root included."""
    yield path, v
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
    for k, x in items:
        yield from _nodes(x, path + (k,))


def _set(cfg, path, value):
    if not path:
        return value
    parent = cfg
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = value
    return cfg


def _kind(v):
    return type(v).__name__ if not isinstance(v, bool) else "bool"


def _json_values(strings):
    scalar = st.one_of(st.none(), st.booleans(), st.integers(-2, 6), st.floats(-2, 6), st.text(max_size=4),
                       st.sampled_from(strings))
    return st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(st.sampled_from(strings), inner, max_size=3)),
                        max_leaves=6)


@st.composite
def _mutation(draw, cfg):
    """(description, the mutated config: a JSON value)."""
    cfg = copy.deepcopy(cfg)
    nodes = list(_nodes(cfg))
    strings = sorted({v for _, v in nodes if isinstance(v, str)} | {k for _, v in nodes if isinstance(v, dict)
                                                                  for k in v})
    refs = [p for p, v in nodes if isinstance(v, list) and len(v) == 3 and isinstance(v[0], str)
            and p and p[-1] == "keras_history"]
    names = sorted({v["name"] for _, v in nodes if isinstance(v, dict) and isinstance(v.get("name"), str)})
    how = draw(st.sampled_from(["replace", "drop"] + (["rewire"] if refs else [])))
    if how == "replace":
        path, old = draw(st.sampled_from(nodes))
        new = draw(_json_values(strings).filter(lambda v: _kind(v) != _kind(old)))
        return f"replace {path} ({_kind(old)}) by {new!r}", _set(cfg, path, new)
    if how == "drop":
        path, obj = draw(st.sampled_from([(p, v) for p, v in nodes if isinstance(v, dict) and v]))
        key = draw(st.sampled_from(sorted(obj)))
        del obj[key]
        return f"drop {path + (key,)}", cfg
    path = draw(st.sampled_from(refs))
    name = draw(st.sampled_from(names))
    _set(cfg, path + (0,), name)
    return f"point {path} at {name!r}", cfg


def _documented(e):
    if isinstance(e, (ValueError, bf.BoundfitError)):
        return True
    return isinstance(e, TypeError) and str(e).startswith("Could not locate")   # a custom loss (as Keras)


def _load(tmp_path, parts, cfg):
    path = tmp_path / "fuzzed.keras"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in parts.items():
            z.writestr(name, json.dumps(cfg) if name == "config.json" else data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bf.models.load_model(path)


@pytest.mark.parametrize("kind", ["sequential", "functional"])
def test_a_fuzzed_config_json_loads_or_raises_a_documented_exception(tmp_path, saved, kind):
    parts, cfg = saved[kind]
    _load(tmp_path, parts, cfg)   # the unmutated file loads

    @FUZZ
    @given(_mutation(cfg))
    def one(mutation):
        what, mutated = mutation
        try:
            _load(tmp_path, parts, mutated)
        except Exception as e:
            if not _documented(e):
                raise AssertionError(f"{what}: {type(e).__name__}: {e}") from e
    one()
