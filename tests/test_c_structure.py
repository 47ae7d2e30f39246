"""The shape of the C core: no include cycles between its modules, one home
per layer kind, one home per layer configuration, short functions. A module
is a .c file and its .h (model.c + model.h); module A depends on B when a
file of A has #include "B.h". A cycle means two files that cannot be
understood (or built and tested) one without the other. Layer kinds are
handled in csrc/core/layers/ (one file per kind or family, registered in
layers/registry.c); the rest of the core reaches them through the registry's
vtables (layer_registry.h), so BF_L_ names barely appear outside it, and
includes nothing under layers/. A family's configuration is its own struct
in bf_layer.cfg (layer_config.h), read from the spec by the family's parse
hook: bf_layer holds only what the engine reads of every node, and
csrc/python/spec_py.c names no family's field. Backend ops are listed once
(csrc/core/backend_ops.h): the vtable's members, both backends' prototypes
and tables are generated from that list."""

import os
import re

from graph_cycles import cycles

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = os.path.join(ROOT, "csrc", "core")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)

LAYERS = os.path.join(CORE, "layers")
# BF_L_ outside csrc/core/layers/ (before the registry: 242 lines over 10
# files, model.c 78, run.c 53, program.c 44, ...): what the engine needs of a
# kind is a vtable hook or a flag (layer_registry.h), never the kind's name
MAX_KIND_NAMES_OUTSIDE_LAYERS = 0

# what the engine reads of every node (before the per-family configurations:
# 68 fields, 46 of them one family's, several reused across families)
GENERIC_LAYER_FIELDS = {
    "kind", "name", "act", "actp", "nin", "in_ids", "share", "frozen", "mask_off", "in_rank", "in_shape", "out_rank",
    "out_shape", "in_size", "out_size", "nparam", "params", "inits", "reg", "cons", "modes", "train_mode", "half", "cfg",
}

# the longest a function of csrc/core may be
MAX_FUNCTION_LINES = 150


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
        if rel.startswith("layers" + os.sep) or rel == "layer_kinds.h":  # used there; made there (BF_L_##NAME)
            continue
        with open(path, encoding="utf-8") as f:
            n = sum(1 for line in f if "BF_L_" in line)
        if n:
            counts[rel] = n
    assert sum(counts.values()) <= MAX_KIND_NAMES_OUTSIDE_LAYERS, counts


def test_every_layer_kind_has_a_vtable_in_the_registry():
    with open(os.path.join(CORE, "layer_kinds.h"), encoding="utf-8") as f:
        kinds = re.findall(r"\bX\((\w+)\)", re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S))
    defined = set()
    for path in _c_files(os.path.join(CORE, "layers")):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        defined.update(re.findall(r"const bf_layer_ops bf_ops_(\w+) =", text))
        for macro_kind in re.findall(r"^(?:EWISE|RNN)_OPS\((\w+)", text, re.M):
            defined.add(macro_kind)
    assert kinds and set(kinds) <= defined, sorted(set(kinds) - defined)


# ---- backend ops: one list (csrc/core/backend_ops.h) ----
OP_LIST = os.path.join(CORE, "backend_ops.h")
OP_ENTRY = re.compile(r"^BF_OP\(\s*(\w+)\s*,\s*(\w+)\s*,\s*\((.*?)\)\s*,\s*(\w+)\s*\)", re.M | re.S)
# the hand-written members of bf_backend: its name, state, memory and device services
NON_OP_MEMBERS = {"reserve", "release", "to_device", "to_host", "fill_zero", "sync", "run_workspace_bytes",
                  "bind_workspace", "host_pin", "host_unpin", "upload", "batch_consumed", "batch_wait"}
# the files that expand the list: the vtable, each backend's prototypes and table
OP_LIST_USERS = {"csrc/core/backend.h", "csrc/cpu/cpu_ops.h", "csrc/cpu/cpu_backend.c", "csrc/cuda/cuda_ops.h",
                 "csrc/cuda/backend.cu"}


def _strip_comments(text):
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def _ops():
    with open(OP_LIST, encoding="utf-8") as f:
        return OP_ENTRY.findall(_strip_comments(f.read()))


def test_backend_ops_are_listed_once_with_who_implements_them():
    ops = _ops()
    names = [op for _, op, _, _ in ops]
    assert len(names) > 60 and len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert {on for *_, on in ops} <= {"ALL", "CPU", "CUDA"}
    for ret, op, params, _ in ops:
        assert ret in ("bf_status", "size_t", "void") and params.startswith("bf_backend *be"), op


def test_the_vtable_declares_only_its_services_by_hand():
    with open(os.path.join(CORE, "backend.h"), encoding="utf-8") as f:
        text = _strip_comments(f.read())
    struct = text[text.index("struct bf_backend {"):]
    members = re.findall(r"\(\*(\w+)\)", re.sub(r"^\s*#.*$", "", struct, flags=re.M))
    assert set(members) == NON_OP_MEMBERS
    assert '#include "backend_ops.h"' in struct


def test_no_backend_header_declares_an_op_by_hand():
    ops = "|".join(op for _, op, _, _ in _ops())
    proto = re.compile(r"^\s*(?:bf_status|size_t|void)\s+bf_(?:cpu|cuda)_(?:%s)\s*\(" % ops, re.M)
    for sub in ("cpu", "cuda"):
        folder = os.path.join(ROOT, "csrc", sub)
        for f in os.listdir(folder):
            if f.endswith((".h", ".cuh")):
                with open(os.path.join(folder, f), encoding="utf-8") as fh:
                    found = proto.findall(_strip_comments(fh.read()))
                assert not found, f"csrc/{sub}/{f} declares {found} (they come from csrc/core/backend_ops.h)"


def test_backend_tables_are_generated_from_the_op_list():
    users = set()
    for folder in ("core", "cpu", "cuda"):
        for f in os.listdir(os.path.join(ROOT, "csrc", folder)):
            path = os.path.join(ROOT, "csrc", folder, f)
            if os.path.isfile(path):
                with open(path, encoding="utf-8", errors="replace") as fh:
                    if '#include "backend_ops.h"' in fh.read():
                        users.add(f"csrc/{folder}/{f}")
    assert users == OP_LIST_USERS
    ops = "|".join(op for _, op, _, _ in _ops())
    by_hand = re.compile(r"(?:\.|->)(%s)\s*=\s*bf_" % ops)
    for table in ("csrc/cpu/cpu_backend.c", "csrc/cpu/emu_backend.c", "csrc/cuda/backend.cu"):
        with open(os.path.join(ROOT, table), encoding="utf-8") as f:
            assert not by_hand.findall(_strip_comments(f.read())), table


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _strip_c(src):
    """src without comments, string and character literals and preprocessor
    lines, each replaced by blanks of its length (lines keep their numbers)."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731
    src = re.sub(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", blank, src, flags=re.S)
    return re.sub(r"^[ \t]*#(?:\\\n|[^\n])*", blank, src, flags=re.M)


def _functions(src):
    """(name, first line, lines) of each function defined in C source src."""
    s = _strip_c(src)
    out, depth, last, head = [], 0, 0, None
    for i, c in enumerate(s):
        if c == "{":
            if depth == 0:
                text = s[last:i]
                m = re.search(r"(\w+)\s*\([^;{}]*\)\s*$", text)
                first = last + len(text) - len(text.lstrip())
                head = (m.group(1), s.count("\n", 0, first)) if m and "=" not in text else None
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if head:
                    out.append((head[0], head[1] + 1, s.count("\n", 0, i) - head[1] + 1))
                last = i + 1
        elif c == ";" and depth == 0:
            last = i + 1
    return out


def test_function_finder_counts_a_multiline_signature_and_skips_initializers():
    src = ('static const int t[] = {1, 2};\n'
           'static bf_status f(int a,\n'
           '                   int b) { /* { */\n'
           '    if (a) { return b; }\n'
           '    return "}" [0];\n'
           '}\n'
           '#define M(x) do { x; } while (0)\n'
           'int g(void) { return 0; }\n')
    assert _functions(src) == [("f", 2, 5), ("g", 8, 1)]


def test_no_function_in_the_core_is_longer_than_the_limit():
    over = set()
    for path in _c_files(CORE):
        for name, _, n in _functions(_read(path)):
            if n > MAX_FUNCTION_LINES:
                over.add(f"{os.path.relpath(path, CORE)}:{name} ({n} lines)")
    assert not over, sorted(over)


def test_the_engine_includes_no_header_of_the_layer_files():
    """layers/ includes the engine (layer.h: step_bufs.h, bufs.h, masks.h, layer_registry.h); the engine and the
    CPython glue reach the layer files through layer_registry.h and layer_kinds.h only: no include climbs back."""
    for root in (CORE, os.path.join(ROOT, "csrc", "python")):
        for path in _c_files(root):
            if os.path.commonpath([path, LAYERS]) == LAYERS:
                continue
            for inc in INCLUDE.findall(_read(path)):
                assert not re.match(r"(\.\./)*layers/", inc), f"{os.path.relpath(path, ROOT)} includes {inc}"


def _bf_layer_fields():
    body = re.search(r"typedef struct bf_layer \{(.*?)\} bf_layer;", _strip_c(_read(os.path.join(CORE, "model.h"))),
                     re.S).group(1)
    fields = set()
    for decl in body.split(";"):
        decl = re.sub(r"\[[^\]]*\]", "", decl).strip()
        if decl:
            fields.update(re.findall(r"(\w+)\s*(?:,|$)", re.sub(r"^[\w\s]*?\b\w+\s+\**(?=\w+\s*(,|$))", "", decl)))
    return fields


def test_bf_layer_holds_no_family_configuration():
    assert _bf_layer_fields() == GENERIC_LAYER_FIELDS


def _family_spec_keys():
    """the spec keys the layer families' parse hooks read (bf_spec_*(s, "key", ...), s->get_*(s, "key", ...))"""
    keys = set()
    for path in _c_files(LAYERS):
        keys.update(re.findall(r'(?:bf_spec_\w+|s->get_\w+)\(\s*s\s*,\s*"(\w+)"', _read(path)))
        keys.update(re.findall(r'\{"(\w+)", &a->\w+', _read(path)))  # preprocess.c's tables of aug_* keys
    return keys


def test_spec_py_reads_no_family_field():
    family = _family_spec_keys()
    assert {"units", "filters", "kh", "rate", "heads", "eop", "sl_begin", "aug_flip", "aug_zh_lo"} <= family
    src = _read(os.path.join(ROOT, "csrc", "python", "spec_py.c"))
    named = set(re.findall(r'"(\w+)"', src))
    assert not (named & family), sorted(named & family)
    assert not re.search(r"\bcfg\b", _strip_c(src)), "spec_py.c reaches into bf_layer.cfg"
