"""The ```python blocks of a Markdown page, and a runner for them:
`python tests/docs_blocks.py PAGE.md` executes the page's blocks in order in
one namespace (as a reader runs them in one fresh kernel) in the current
directory, and on a failure exits 1 naming the page and the block's line."""

import re
import sys
import traceback

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)


def python_blocks(text):
    """[(line, code)] of the ```python blocks of a Markdown text, in order (line: the fence's, 1-based)."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(2)) for m in FENCE.finditer(text) if m.group(1) == "python"]


def run_page(path):
    namespace = {"__name__": "__main__"}
    for line, code in python_blocks(open(path, encoding="utf-8").read()):
        try:
            exec(compile(code, f"{path}:{line}", "exec"), namespace)
        except BaseException:
            traceback.print_exc()
            print(f"{path}: the python block at line {line} failed", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(run_page(sys.argv[1]))
