"""config.json of a .keras file, checked before a model is built from it.

The shape of every part of it that boundfit reads (keras_graph.py,
config.py, keras_ops.py) is declared once, below, as a schema; a
Functional config's references are checked too (each names a layer of it,
and no layer's inputs lead back to it). A file that breaks either raises
ValueError naming the file, the field and what it holds:
"m.keras: config.json: config.layers must be a list, got str 'abc'".
What a field's value means (a layer's units, an unknown class) is left to
the code that reads it, which names it as well."""

import json

MAX_DEPTH = 100   # nesting of a config.json: ~11 for a Functional model, ~4 more per nested model

_KINDS = {type(None): "null", bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "object"}
_A = {"null": "null", "bool": "a boolean", "int": "an integer", "float": "a number", "str": "a string",
      "list": "a list", "object": "an object"}


def _kind(v):
    return _KINDS.get(type(v), type(v).__name__)


class _Bad(Exception):
    def __init__(self, path, want, value):
        got = _kind(value)
        if got not in ("null", "list", "object"):
            got += " " + (repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "...")
        super().__init__(f"{path or 'config.json'} must be {want}, got {got}")


def _at(path, key):
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else key


# ---- the schema's pieces: each check(v, path) raises _Bad ----

class T:
    """One of the JSON kinds ('null', 'bool', 'int', 'float' (any number), 'str', 'list', 'object');
    then, by kind, the schema the value meets (None: any)."""

    def __init__(self, *kinds, **then):
        self.kinds, self.then = set(kinds) | set(then), then
        wants = [_A[k] for k in _A if k in self.kinds]
        self.want = " or ".join(filter(None, [", ".join(wants[:-1]), wants[-1]]))

    def check(self, v, path):
        k = _kind(v)
        if k == "int" and "float" in self.kinds and k not in self.kinds:
            k = "float"
        if k not in self.kinds:
            raise _Bad(path, self.want, v)
        if self.then.get(k) is not None:
            self.then[k].check(v, path)


class Each:
    """Every item of a list, or every value of an object, meets the schema."""

    def __init__(self, schema):
        self.schema = schema

    def check(self, v, path):
        for key, x in (v.items() if isinstance(v, dict) else enumerate(v)):
            self.schema.check(x, _at(path, key))


class Items:
    """A list of these items in order, the last `optional` of which may be left out."""

    def __init__(self, *schemas, optional=0):
        self.schemas, self.optional = schemas, optional

    def check(self, v, path):
        n = len(self.schemas)
        if not (isinstance(v, list) and n - self.optional <= len(v) <= n):
            raise _Bad(path, f"a list of {n - self.optional}{f' to {n}' if self.optional else ''} items", v)
        for i, (s, x) in enumerate(zip(self.schemas, v)):
            s.check(x, _at(path, i))


class Fields:
    """An object's fields; required: keys that must be there (a tuple: one of these keys)."""

    def __init__(self, fields, required=()):
        self.fields, self.required = fields, required

    def check(self, v, path):
        for r in self.required:
            if not any(k in v for k in (r if isinstance(r, tuple) else (r,))):
                raise ValueError(f"{_at(path, r if isinstance(r, str) else ' or '.join(r))} is missing")
        for key, schema in self.fields.items():
            if key in v:
                schema.check(v[key], _at(path, key))


class Case:
    """The schema chosen by the value (pick(v) -> a key of cases, or another key for the default)."""

    def __init__(self, pick, cases, default=None):
        self.pick, self.cases, self.default = pick, cases, default

    def check(self, v, path):
        schema = self.cases.get(self.pick(v), self.default)
        if schema is not None:
            schema.check(v, path)


class All:
    def __init__(self, *schemas):
        self.schemas = schemas

    def check(self, v, path):
        for s in self.schemas:
            s.check(v, path)


class NonEmpty:
    def check(self, v, path):
        if not v:
            raise _Bad(path, "a non-empty " + ("list" if isinstance(v, list) else "object"), v)


class Later:
    """A schema defined further down (the schema is recursive: models nest)."""

    def __init__(self, name):
        self.name = name

    def check(self, v, path):
        globals()[self.name].check(v, path)


class Graph:
    """A Functional config's references: every layer named once, each tensor reference and input /
    output naming one of its layers, and no call whose inputs lead back to itself."""

    def check(self, c, path):
        where, kinds, deps = {}, {}, {}
        for i, e in enumerate(c["layers"]):
            at = _at(_at(path, "layers"), i)
            name = e.get("name") or (e.get("config") or {}).get("name")
            if not isinstance(name, str):
                raise _Bad(_at(at, "name"), "a string (the layer's name)", name)
            if name in where:
                raise ValueError(f"{at} is a second layer named {name!r}")
            where[name], kinds[name] = at, e["class_name"]
            for k, node in enumerate(e.get("inbound_nodes") or []):
                deps[(name, k)] = [(r[0], r[1]) for r in _refs(node)]
        for (name, k), rs in deps.items():
            for r, _ in rs:
                if r not in where:
                    raise ValueError(f"{where[name]}.inbound_nodes[{k}] names the layer {r!r}, which the config "
                                     "lacks")
        for key in ("input_layers", "output_layers"):
            for r in _ios(c[key]):
                if r not in where:
                    raise ValueError(f"{_at(path, key)} names the layer {r!r}, which the config lacks")
                if key == "input_layers" and kinds[r] != "InputLayer":
                    raise ValueError(f"{_at(path, key)} names the layer {r!r}, a {kinds[r]}: a model's inputs are "
                                     "InputLayers")
        cycle = _cycle(deps)
        if cycle:
            raise ValueError(f"{where[cycle[0][0]]}.inbound_nodes: the layer calls' inputs go round in a cycle: "
                             + " -> ".join(f"{n}[{k}]" for n, k in cycle))


def _refs(node):
    """The [layer name, node index, tensor index] references of a call: the legacy form's items, or the
    keras_history of every __keras_tensor__ in its args and kwargs."""
    if isinstance(node, list):
        return node
    out, stack = [], [node]
    while stack:
        x = stack.pop()
        if isinstance(x, dict) and x.get("class_name") == "__keras_tensor__":
            out.append(x["config"]["keras_history"])
        elif isinstance(x, (dict, list)):
            stack.extend(x.values() if isinstance(x, dict) else x)
    return out


def _ios(v):
    """The layer names in input_layers / output_layers (references, lists and objects of them)."""
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, list) and x and isinstance(x[0], str):
            yield x[0]
        else:
            stack.extend(x.values() if isinstance(x, dict) else x)


def _cycle(deps):
    """A cycle of the calls' graph {(layer, node): [the calls it reads]}, as [a, b, ..., a]; None for none."""
    state = {}   # 1: on the walk's path, 2: done
    for start in deps:
        if start in state:
            continue
        path, stack = [start], [iter(deps[start])]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(deps.get(nxt, ())))
    return None


# ---- the schema of config.json ----

INT, STR, OBJ = T("int"), T("str"), T("object")
NUMBER = T("float")
REF = Items(STR, INT, INT)                                   # [layer name, node index, tensor index]
SHAPE = T("list", list=Each(T("null", "int")))             # [null, 28, 28, 1]
BUILD = T("null", object=Fields({"input_shape": T("null", "list")}))   # as a Sequential reads it

# the Keras objects every part may hold, by class_name (keras/src/saving/serialization_lib.py)
NUMBERS = T("float", "bool", list=Each(Later("NUMBERS")))
DTYPES = {"float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64", "bool"}


class Dtype:
    want = "null or a NumPy dtype name (" + ", ".join(sorted(DTYPES)) + ")"

    def check(self, v, path):
        if not (v is None or isinstance(v, str) and v in DTYPES):
            raise _Bad(path, self.want, v)


SPECIAL = {
    "__keras_tensor__": Fields({"config": T("object", object=Fields({"keras_history": REF}, ["keras_history"]))},
                               ["config"]),
    "__numpy__": Fields({"config": T("object", object=Fields({"value": NUMBERS, "dtype": Dtype()}, ["value"]))},
                        ["config"]),
    "__slice__": Fields({"config": T("null", object=Fields({k: T("null", "int") for k in ("start", "stop", "step")}))}),
}
SPECIAL["__tensor__"] = SPECIAL["__numpy__"]
KERAS_OBJECT = All(Fields({"class_name": STR, "module": T("null", "str"), "registered_name": T("null", "str")}),
                   Case(lambda v: v.get("class_name"), SPECIAL))

# a layer's call in a Functional config: {args, kwargs}, or the legacy [[name, node, tensor, kwargs], ...]
CALL = Fields({"args": T("null", "list"), "kwargs": T("null", "object")})
NODE = T("object", list=Each(T("list", list=Items(STR, INT, INT, OBJ, optional=1))), object=CALL)
OP_NODE = T("object", object=CALL)                           # a keras.ops operation's: {args, kwargs} only


def _module(e):
    return "op" if str(e.get("module") or "").startswith("keras.src.ops") else "layer"


LAYER = Fields({"class_name": STR, "name": T("null", "str"), "build_config": T("null", "object"),
                "config": T("null", object=Fields({"name": T("null", "str"),
                                                   "activation": T("null", "str", "object")}))},
               ["class_name"])
INBOUND = Case(_module, {"op": Fields({"inbound_nodes": T("null", list=Each(OP_NODE))})},
               default=Fields({"inbound_nodes": T("null", list=Each(NODE))}))
INPUT_LAYER = Fields({"config": T("object", object=Fields({"batch_shape": SHAPE, "batch_input_shape": SHAPE},
                                                          [("batch_shape", "batch_input_shape")]))},
                     ["config"])
SUBLAYER = Case(lambda v: isinstance(v, dict), {True: Later("ENTRY")})   # (another value: the layer refuses it)
BIDIRECTIONAL = Fields({"config": T("object", object=Fields({"layer": SUBLAYER, "backward_layer": SUBLAYER}))})

# compile_config (config.py compile_from_config)
OBJECT_ENTRY = All(Fields({"class_name": STR}, ["class_name"]),   # a function by name: {"class_name": "function",
                   Case(lambda v: v["class_name"] == "function",     # "config": its name}
                        {True: Fields({"config": STR})}, default=Fields({"config": T("null", "object")})))
LOSS = T("null", "str", list=Each(Later("LOSS")),
         object=Case(lambda v: "class_name" in v, {True: OBJECT_ENTRY}, default=Each(Later("LOSS"))))
METRIC = T("str", object=OBJECT_ENTRY)
METRICS = T("null", list=Each(T("str", object=OBJECT_ENTRY, list=Each(METRIC))),
            object=Case(lambda v: "class_name" in v, {True: OBJECT_ENTRY},
                        default=Each(T("str", object=OBJECT_ENTRY, list=Each(METRIC)))))
OPTIMIZER = T("str", object=Fields({"class_name": STR, "config": T("null", object=Fields({
    "learning_rate": T("float", object=OBJECT_ENTRY)}))}, ["class_name"]))
COMPILE = T("null", object=Fields({"optimizer": OPTIMIZER, "loss": LOSS, "metrics": METRICS,
                                   "weighted_metrics": METRICS,
                                   "loss_weights": T("null", "float", list=Each(NUMBER), object=Each(NUMBER))}))

# models (keras_graph.py sequential_from_config / functional_from_config)
IOS = All(NonEmpty(), Each(Later("IO")))
IO = T("list", "object", list=Case(lambda v: len(v) > 0 and isinstance(v[0], str), {True: REF}, default=IOS),
       object=IOS)   # a reference, or a list or an object of them
SEQUENTIAL = Fields({"build_config": BUILD, "config": T("object", object=Fields({
    "layers": T("list", list=Each(T("object", object=All(Later("ENTRY"), Fields({"build_config": BUILD}))))),
    "name": T("null", "str"), "build_input_shape": T("null", "list")}, ["layers"]))}, ["config"])
FUNCTIONAL = Fields({"config": T("object", object=All(Fields({
    "layers": T("list", list=Each(T("object", object=All(Later("ENTRY"), INBOUND)))),
    "input_layers": IO, "output_layers": IO, "name": T("null", "str")},
    ["layers", "input_layers", "output_layers"]), Graph()))}, ["config"])
MODEL_FIELDS = Fields({"class_name": STR, "config": OBJ, "compile_config": COMPILE,
                       "build_config": T("null", "object")}, ["class_name", "config"])


def _model_kind(e):
    c = e.get("class_name")
    if c == "Model":   # Keras's Functional under its base class's name; without layers: a subclassed model
        return "Functional" if isinstance(e.get("config"), dict) and "layers" in e["config"] else None
    return c


ENTRY = Case(_model_kind, {"Sequential": All(MODEL_FIELDS, SEQUENTIAL), "Functional": All(MODEL_FIELDS, FUNCTIONAL),
                           "InputLayer": All(LAYER, INPUT_LAYER), "Bidirectional": All(LAYER, BIDIRECTIONAL)},
             default=LAYER)
CONFIG = T("object", object=All(MODEL_FIELDS, ENTRY))


def _walk(cfg):
    """Every object with a class_name meets KERAS_OBJECT, and nothing nests deeper than MAX_DEPTH."""
    stack = [(cfg, "", 0)]
    while stack:
        v, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"{path} nests deeper than {MAX_DEPTH} levels")
        if isinstance(v, dict):
            if "class_name" in v:
                KERAS_OBJECT.check(v, path)
            stack.extend((x, _at(path, k), depth + 1) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((x, _at(path, i), depth + 1) for i, x in enumerate(v))


def check_config(cfg, where):
    """Raise ValueError("<where>: config.json: <field> ...") if cfg breaks the schema; else return cfg."""
    try:
        _walk(cfg)
        CONFIG.check(cfg, "")
    except (_Bad, ValueError) as e:
        raise ValueError(f"{where}: {'' if str(e).startswith('config.json') else 'config.json: '}{e}") from None
    return cfg


def load_config(data, where):
    """config.json's bytes, parsed and checked (check_config)."""
    try:
        cfg = json.loads(data)
    except RecursionError:
        raise ValueError(f"{where}: config.json nests deeper than the JSON parser can follow") from None
    except ValueError as e:   # JSONDecodeError, UnicodeDecodeError, an integer of too many digits
        raise ValueError(f"{where}: config.json is not valid JSON: {e}") from None
    return check_config(cfg, where)
