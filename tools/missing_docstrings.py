"""Lists the public top-level definitions (module-level classes and functions
whose names do not start with "_") under python/boundfit that have no
docstring, and counts them: `python tools/missing_docstrings.py [--list]`."""

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "python" / "boundfit"


def definitions():
    """(path, name, has_docstring) of every public top-level def / class."""
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                yield path.relative_to(ROOT.parent), node.name, ast.get_docstring(node) is not None


def main(argv):
    defs = list(definitions())
    missing = [(p, n) for p, n, ok in defs if not ok]
    if "--list" in argv:
        for p, n in missing:
            print(f"{p}: {n}")
    print(f"{len(missing)} of {len(defs)} public top-level definitions have no docstring")


if __name__ == "__main__":
    main(sys.argv[1:])
