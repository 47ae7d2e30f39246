"""The Python package's shape: its modules import one another in one direction
(no import cycles), and imports sit at the top of modules, except where a
function imports a truly optional dependency (matplotlib, IPython,
pyarrow for the streamed files) so that `import boundfit` works without it.
The driver (engine/, models/) has no file over 500 lines and no function
over 150; fit runs a FitLoop of named phases under a Strategy, with no
data-parallel branch of its own.

The graph is read from the source with `ast`: an edge for every import that
runs when a module is imported (module level, inside `if` / `try` too), and,
as Python runs a package's __init__ before any module in it, an edge to every
package above the imported module that is not above the importer."""

import ast
import functools
import os

import pytest

from graph_cycles import cycles

PKG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python", "boundfit")
PKG = "boundfit"
EXTENSIONS = ("boundfit._core",)   # built from csrc/python; import nothing of the package's Python

# (module, the import statement) of every import inside a function: only optional dependencies
ALLOWED_FUNCTION_IMPORTS = sorted([
    ("boundfit.callbacks.progbar", "from IPython.display import display"),
    ("boundfit.engine.adapters.columns", "import pyarrow"),
    ("boundfit.engine.adapters.csv_stream", "import pyarrow.csv"),
    ("boundfit.engine.adapters.parquet", "import pyarrow.parquet"),
    ("boundfit.engine.plan_plot", "from matplotlib.backends.backend_agg import FigureCanvasAgg"),
    ("boundfit.engine.plan_plot", "from matplotlib.figure import Figure"),
    ("boundfit.image_folder", "from PIL import Image"),
    ("boundfit.image_io", "from PIL import Image"),
    ("boundfit.model_plot", "from IPython import display"),
    ("boundfit.model_plot", "import pydot"),
    ("boundfit.visualization", "from matplotlib import font_manager"),
    ("boundfit.visualization", "from matplotlib import patches"),
    ("boundfit.visualization", "from matplotlib.ft2font import FT2Font"),
    ("boundfit.visualization", "import matplotlib.pyplot as plt"),
    ("boundfit.wrappers", "from sklearn.utils.validation import validate_data"),
])


def _modules():
    mods = {}
    for d, _, files in os.walk(PKG_DIR):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                name = os.path.relpath(path, os.path.dirname(PKG_DIR))[:-3].replace(os.sep, ".")
                mods[name.removesuffix(".__init__")] = path
    return mods


def _targets(mods, module, is_pkg, node):
    """The package's modules an import statement names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name == PKG or a.name.startswith(PKG + ".")]
    if node.level:
        base = module if is_pkg else module.rsplit(".", 1)[0]
        base = ".".join(base.split(".")[:len(base.split(".")) - (node.level - 1)])
        target = base + ("." + node.module if node.module else "")
    elif node.module == PKG or (node.module or "").startswith(PKG + "."):
        target = node.module
    else:
        return []
    known = set(mods) | set(EXTENSIONS)
    return [target + "." + a.name if target + "." + a.name in known else target for a in node.names]


def _function_nodes(tree):
    inside = set()
    for f in ast.walk(tree):
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(id(x) for x in ast.walk(f) if x is not f)
    return inside


@functools.lru_cache(maxsize=None)
def import_graph():
    """({module: set of modules its import runs}, [(module, function-level import)]); parsed once per process
    (every test here reads it)."""
    mods = _modules()
    edges = {m: set() for m in mods}
    in_functions = []
    for m, path in mods.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        is_pkg = path.endswith("__init__.py")
        inside = _function_nodes(tree)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if id(node) in inside:
                in_functions.append((m, ast.unparse(node)))
                continue
            for t in _targets(mods, m, is_pkg, node):
                parts = t.split(".")
                for k in range(2, len(parts) + 1):   # the packages above t run first (boundfit itself excepted)
                    p = ".".join(parts[:k])
                    if p != m and not m.startswith(p + ".") and p in mods:
                        edges[m].add(p)
    return edges, sorted(in_functions)


def test_the_package_is_found():
    mods = _modules()
    assert "boundfit" in mods and "boundfit.layers.core" in mods and "boundfit.engine.training" in mods


def test_module_imports_have_no_cycles():
    edges, _ = import_graph()
    assert cycles(edges) == []


def test_the_cycle_finder_sees_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_functions_import_only_optional_dependencies():
    _, in_functions = import_graph()
    assert in_functions == ALLOWED_FUNCTION_IMPORTS


@pytest.mark.parametrize("package", ["layers", "saving", "engine", "runtime", "models", "callbacks"])
def test_packages_import_nothing_above_them(package):
    """The layers go one way: leaves < runtime < layers < graph < saving < callbacks < engine < models."""
    order = ["runtime", "layers", "graph", "saving", "callbacks", "engine", "models"]
    above = set(order[order.index(package) + 1:]) | {"diagnose", "demo", "__main__"}
    edges, _ = import_graph()
    bad = sorted((m, t) for m, ts in edges.items() if m.startswith(f"{PKG}.{package}") for t in ts
                 if t.split(".")[1] in above)
    assert bad == []


def test_no_layer_with_an_engine_kind_infers_its_shape_in_python():
    """Shapes are inferred once, by the engine (_core.output_shape, the kind's infer in csrc/core/layers/): only
    the Layer base defines compute_output_shape, and host-side layers (_host_side = True), which the engine
    never sees."""
    found = []
    for name, path in sorted(_modules().items()):
        if not name.startswith(PKG + ".layers."):
            continue
        for cls in ast.walk(ast.parse(open(path).read())):
            if not isinstance(cls, ast.ClassDef) or (name, cls.name) == (PKG + ".layers.layer", "Layer"):
                continue
            defines = any(isinstance(b, ast.FunctionDef) and b.name == "compute_output_shape" for b in cls.body)
            host = any(isinstance(b, ast.Assign) and any(getattr(t, "id", None) == "_host_side" for t in b.targets)
                       and getattr(b.value, "value", None) is True for b in cls.body)
            if defines and not host:
                found.append(f"{name}.{cls.name}")
    assert not found, f"compute_output_shape in Python on layers the engine infers: {found}"


# ---- the driver's shape (issue 32): small functions, fit as a loop of phases under a Strategy ----

MAX_FUNCTION_LINES = 150
MAX_FILE_LINES = 500
DRIVER = ("engine", "models")


def _driver_files():
    for name, path in sorted(_modules().items()):
        if name.split(".")[1:2] and name.split(".")[1] in DRIVER:
            yield name, path


def _tree(module):
    with open(_modules()[module], encoding="utf-8") as fh:
        return ast.parse(fh.read())


def test_no_function_in_engine_or_models_is_over_150_lines():
    long = []
    for name, path in _driver_files():
        with open(path, encoding="utf-8") as fh:
            for f in ast.walk(ast.parse(fh.read())):
                if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES:
                    long.append((name, f.name, f.end_lineno - f.lineno + 1))
    assert long == []


def test_no_file_in_engine_or_models_is_over_500_lines():
    big = []
    for name, path in _driver_files():
        with open(path, encoding="utf-8") as fh:
            n = len(fh.read().splitlines())
        if n > MAX_FILE_LINES:
            big.append((name, n))
    assert big == []


def _function(module, name, cls=None):
    tree = _tree(module)
    scope = tree.body if cls is None else next(c for c in tree.body if isinstance(c, ast.ClassDef)
                                               and c.name == cls).body
    return next(f for f in scope if isinstance(f, ast.FunctionDef) and f.name == name)


def _calls(node):
    return {ast.unparse(c.func) for c in ast.walk(node) if isinstance(c, ast.Call)}


def test_fit_runs_the_fit_loop_under_the_strategy_it_is_given():
    """Model.fit picks the strategy and hands it to engine/training.py's fit, which runs a FitLoop."""
    model_fit = _calls(_function("boundfit.models.fitting", "fit", "Fitting"))
    assert {"dist_fit.strategy", "strategy.guard", "training.fit"} <= model_fit
    assert _calls(_function("boundfit.engine.training", "fit")) == {"FitLoop", "FitLoop(model, strategy, x, y, "
                                                                                "**kwargs).run"}


def test_fit_evaluate_and_predict_have_no_inline_data_parallel_branches():
    """What depends on the ranks is a Strategy's method (engine/strategy.py, engine/dist_fit.py): the loops and
    the model name no process group."""
    loops = ["boundfit.engine.fit_loop", "boundfit.engine.training", "boundfit.models.fitting"]
    names = {"dist_group", "active", "is_chief", "rank", "num_processes", "DataParallel"}
    found = []
    for m in loops:
        tree = _tree(m)
        for n in ast.walk(tree):
            ident = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
            if ident in names:
                found.append((m, ident))
        with open(_modules()[m], encoding="utf-8") as fh:
            if "[dist hook]" in fh.read():
                found.append((m, "[dist hook]"))
    assert found == []
    edges, _ = import_graph()
    assert [m for m in loops[:2] if "boundfit.engine.dist_fit" in edges[m]] == []   # the loops get a Strategy


def test_the_fit_loop_has_its_named_phases():
    tree = _tree("boundfit.engine.fit_loop")
    loop = next(c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == "FitLoop")
    methods = {f.name for f in loop.body if isinstance(f, ast.FunctionDef)}
    assert {"check_arguments", "prepare_data", "plan_and_admit", "set_up", "open_train_run", "begin", "train_epoch",
            "validate", "end_epoch", "end", "close"} <= methods
    run = _calls(_function("boundfit.engine.fit_loop", "run", "FitLoop"))
    assert {"self.check_arguments", "self.prepare_data", "self.plan_and_admit", "self.train_epoch", "self.validate",
            "self.end_epoch", "self.close"} <= run
