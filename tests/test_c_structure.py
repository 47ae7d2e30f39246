"""The shape of the C core: no include cycles between its modules, and one
home per layer kind. A module is a .c file and its .h (model.c + model.h);
module A depends on B when a file of A has #include "B.h". A cycle means two
files that cannot be understood (or built and tested) one without the other.
Layer kinds are handled in csrc/core/layers/ (one file per kind or family,
registered in layers/registry.c); the rest of the core reaches them through
the registry's vtables, so BF_L_ names barely appear outside it."""

import os
import re

from graph_cycles import cycles

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = os.path.join(ROOT, "csrc", "core")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)

# BF_L_ outside csrc/core/layers/ (before the registry: 242 lines over 10
# files, model.c 78, run.c 53, program.c 44, ...): what the engine needs of a
# kind is a vtable hook or a flag (layers/registry.h), never the kind's name
MAX_KIND_NAMES_OUTSIDE_LAYERS = 0


def _c_files(root):
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith((".c", ".h")):
                yield os.path.join(dirpath, f)


def _module_graph():
    graph = {}
    for path in _c_files(CORE):
        mod = os.path.splitext(os.path.relpath(path, CORE))[0]
        deps = graph.setdefault(mod, set())
        with open(path, encoding="utf-8") as f:
            for inc in INCLUDE.findall(f.read()):
                target = os.path.normpath(os.path.join(os.path.dirname(path), inc))
                dep = os.path.splitext(os.path.relpath(target, CORE))[0]
                if dep != mod:
                    deps.add(dep)
    return graph


def test_core_modules_include_each_other_without_cycles():
    assert cycles(_module_graph()) == []


def test_cycle_finder_sees_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_core_never_includes_a_backend_header():
    for path in _c_files(CORE):
        with open(path, encoding="utf-8") as f:
            for inc in INCLUDE.findall(f.read()):
                assert not re.search(r"(^|/)(cpu|cuda)/", inc), f"{os.path.relpath(path, ROOT)} includes {inc}"


def test_layer_kinds_are_named_only_in_their_home():
    counts = {}
    for path in _c_files(CORE):
        rel = os.path.relpath(path, CORE)
        if rel.startswith("layers" + os.sep):
            continue
        with open(path, encoding="utf-8") as f:
            n = sum(1 for line in f if "BF_L_" in line)
        if n:
            counts[rel] = n
    assert sum(counts.values()) <= MAX_KIND_NAMES_OUTSIDE_LAYERS, counts


def test_every_layer_kind_has_a_vtable_in_the_registry():
    with open(os.path.join(CORE, "layers", "kinds.h"), encoding="utf-8") as f:
        kinds = re.findall(r"\bX\((\w+)\)", re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S))
    defined = set()
    for path in _c_files(os.path.join(CORE, "layers")):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        defined.update(re.findall(r"const bf_layer_ops bf_ops_(\w+) =", text))
        for macro_kind in re.findall(r"^(?:EWISE|RNN)_OPS\((\w+)", text, re.M):
            defined.add(macro_kind)
    assert kinds and set(kinds) <= defined, sorted(set(kinds) - defined)
