"""Lists the public top-level definitions (module-level classes and functions
whose names do not start with "_") under python/boundfit that have no
docstring, and counts them, and the public methods of those classes:
`python tools/missing_docstrings.py [--list]`."""

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "python" / "boundfit"


DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def definitions(methods=False):
    """(path, name, has_docstring) of every public top-level def / class (methods: of their public methods)."""
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            if not isinstance(node, DEFS) or node.name.startswith("_"):
                continue
            if not methods:
                yield path.relative_to(ROOT.parent), node.name, ast.get_docstring(node) is not None
            elif isinstance(node, ast.ClassDef):
                seen = set()   # a property's setter is the same name
                for m in node.body:
                    if isinstance(m, DEFS) and not m.name.startswith("_") and m.name not in seen:
                        seen.add(m.name)
                        yield path.relative_to(ROOT.parent), f"{node.name}.{m.name}", ast.get_docstring(m) is not None


def main(argv):
    for methods, what in ((False, "public top-level definitions"), (True, "public methods of those classes")):
        defs = list(definitions(methods))
        missing = [(p, n) for p, n, ok in defs if not ok]
        if "--list" in argv:
            for p, n in missing:
                print(f"{p}: {n}")
        print(f"{len(missing)} of {len(defs)} {what} have no docstring")


if __name__ == "__main__":
    main(sys.argv[1:])
