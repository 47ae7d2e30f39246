"""The Python package's shape: its modules import one another in one direction
(no import cycles), and imports sit at the top of modules, except where a
function imports a truly optional dependency (matplotlib, IPython,
pyarrow for the streamed files) so that `import boundfit` works without it.

The graph is read from the source with `ast`: an edge for every import that
runs when a module is imported (module level, inside `if` / `try` too), and,
as Python runs a package's __init__ before any module in it, an edge to every
package above the imported module that is not above the importer."""

import ast
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
    ("boundfit.utils", "from PIL import Image"),
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


def import_graph():
    """({module: set of modules its import runs}, [(module, function-level import)])."""
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
