"""The ```python blocks of Markdown pages, and a runner for them:
`python tests/docs_blocks.py WORKDIR PAGE.md...` executes each page's blocks
in order in one namespace of its own (as a reader runs them in one kernel),
in a folder of its own under WORKDIR, and resets boundfit's process-wide
settings (default device, memory limits, distribution) between pages. It
prints each failure naming the page and the block's line, and exits 1 if
any page failed."""

import os
import re
import sys
import traceback

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


def python_blocks(text):
    """[(line, code)] of the ```python blocks of a Markdown text, in order (line: the fence's, 1-based)."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(2)) for m in FENCE.finditer(text) if m.group(1) == "python"]


def run_page(path):
    """Run one page's blocks; True if all ran."""
    namespace = {"__name__": "__main__"}
    with open(path, encoding="utf-8") as f:
        blocks = python_blocks(f.read())
    for line, code in blocks:
        try:
            exec(compile(code, f"{path}, block at line {line}", "exec"), namespace)
        except BaseException:
            traceback.print_exc()
            print(f"FAILED: {path}: the python block at line {line}", file=sys.stderr)
            return False
    return True


def reset():
    import boundfit as bf
    bf.set_default_device(None)
    bf.set_memory_limit(host="auto", device="auto")
    bf.distribution.set_distribution(None)


def main(workdir, pages):
    failed = 0
    for page in pages:
        folder = os.path.join(workdir, os.path.splitext(os.path.basename(page))[0])
        os.makedirs(folder, exist_ok=True)
        os.chdir(folder)
        failed += not run_page(os.path.abspath(page) if not os.path.isabs(page) else page)
        reset()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], [os.path.abspath(p) for p in sys.argv[2:]]))
