"""The documentation: the MkDocs site builds with warnings as errors, every
internal link of the docs, README.md and the CONTRIBUTING files resolves (files
and #anchors), every ```python block of the pages and the README runs
(tests/docs_blocks.py, in a child process), and the Keras coverage page is
tools/keras_coverage.py's output for the installed Keras."""

import glob
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys

import pytest

import boundfit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
PAGES = sorted(glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True))
LINKED = PAGES + [os.path.join(ROOT, f) for f in ("README.md", "CONTRIBUTING.md", "CONTRIBUTING_python.md")]
RUN = [os.path.join(ROOT, "README.md")] + PAGES

FENCED = re.compile(r"^ *```.*?^ *```", re.M | re.S)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _child_env():
    """The environment of a child that imports this boundfit, not another one on the path."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(boundfit.__file__)))
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p))


def _slug(heading):
    """The anchor Python-Markdown's toc extension gives a heading (and GitHub, for these headings)."""
    text = re.sub(r"[`*]", "", heading).strip().lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"[\s]+", "-", text)


def _anchors(path):
    with open(path, encoding="utf-8") as f:
        text = FENCED.sub("", f.read())
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} +(.+?) *$", text, re.M)}


def _links(path):
    """The relative link targets of a Markdown file (code blocks and inline code left out)."""
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"`[^`\n]*`", "", FENCED.sub("", f.read()))
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def test_docs_site_builds_with_warnings_as_errors(tmp_path):
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module.split(".")[0]) is None or importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (pip install \".[test]\" brings MkDocs and its plugins)")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", os.path.join(ROOT, "mkdocs.yml"),
                        "-d", str(tmp_path / "site")], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    for page in ("index.html", "memory-plans/index.html", "api/boundfit/index.html"):
        assert (tmp_path / "site" / page).exists(), page
    with open(tmp_path / "site" / "api" / "boundfit" / "index.html", encoding="utf-8") as f:
        reference = f.read()
    for name in ("Sequential", "MemoryPlan", "MemoryBudgetError", "set_memory_limit", "diagnose.diagnose"):
        assert f'id="boundfit.{name}"' in reference, name


def test_every_internal_link_of_the_docs_readme_and_contributing_resolves():
    broken = []
    for path in LINKED:
        for target in _links(path):
            file, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            if not os.path.exists(dest):
                broken.append(f"{os.path.relpath(path, ROOT)}: {target} (no such file)")
            elif anchor and dest.endswith(".md") and anchor not in _anchors(dest):
                broken.append(f"{os.path.relpath(path, ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_link_checker_finds_a_missing_file_and_a_missing_heading(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[a](other.md) [b](#nowhere) [c](#title) [d](https://example.com) `[e](no.md)`\n")
    assert _links(str(page)) == ["other.md", "#nowhere", "#title"]
    assert _anchors(str(page)) == {"title"}


def test_every_python_block_of_the_docs_and_the_readme_runs(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "docs_blocks.py"), str(tmp_path)] + RUN,
                       capture_output=True, text=True, timeout=600, env=_child_env())
    assert r.returncode == 0, r.stderr[-6000:]


def test_python_blocks_are_extracted_and_other_blocks_are_not():
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from docs_blocks import python_blocks
    with_code = [p for p in RUN if python_blocks(open(p, encoding="utf-8").read())]
    assert os.path.join(ROOT, "README.md") in with_code and os.path.join(DOCS, "memory-plans.md") in with_code
    assert python_blocks("text\n```python\nx = 1\n```\n```bash\nls\n```\n") == [(2, "x = 1\n")]


def test_keras_coverage_page_is_the_generator_output_for_the_installed_keras():
    if importlib.util.find_spec("keras") is None:
        pytest.skip("keras is not installed: the coverage page is generated from it")
    version = importlib.metadata.version("keras")
    with open(os.path.join(DOCS, "keras-coverage.md"), encoding="utf-8") as f:
        committed = f.read()
    if f"from Keras {version} " not in committed:
        pytest.skip(f"the page was generated from another Keras than the installed {version}")
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import keras_coverage
    assert keras_coverage.page(boundfit, version) == committed, "run: python tools/keras_coverage.py"
