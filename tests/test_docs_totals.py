"""The user guide's Python blocks print the privacy totals they state.

As ``test_readme.py`` for README: each page's ``.. code-block:: python``
blocks run in order in one namespace (a reader pasting them into one
session), and every ledger total or privacy report a block's comments state
is compared with what it prints (ε, δ and μ as printed; a μ the page
shortens, ``0.2367`` or ``0.268...``, as a prefix). Scores vary with fresh
noise and are not compared. Three totals had drifted from the code's
(review): nothing ran these blocks.
"""

import contextlib
import io
import re
import textwrap
import warnings
from pathlib import Path

import pytest
import sklearn

DOCS = Path(__file__).resolve().parents[1] / "docs"
if not DOCS.exists():  # a copy of the tests without the project around them
    pytest.skip("docs/ is not beside the tests", allow_module_level=True)
TOTAL = re.compile(r"\(([0-9.e+-]+), ([0-9.e+-]+)\)-DP, mu=([0-9.]+)")
#: Blocks that use data a page leaves to the reader (X, X_train): not run.
#: Named by a line of their code, which edits elsewhere on the page keep.
NEEDS_READER_DATA = {
    ("fedrep.rst", "est.fit(X, y, groups)                  # random_state=None"),
    ("pipelines.rst", "delta=1e-5),      # bounds found privately"),
}


def python_blocks(page):
    """``(line, code)`` of each ``.. code-block:: python`` of a page."""
    lines, out, i = page.read_text().splitlines(), [], 0
    while i < len(lines):
        if lines[i].strip() == ".. code-block:: python":
            j, body = i + 1, []
            while j < len(lines) and (not lines[j].strip() or lines[j][:3] == "   "):
                body.append(lines[j])
                j += 1
            out.append((i + 1, textwrap.dedent("\n".join(body))))
            i = j
        else:
            i += 1
    return out


def pages_with_totals():
    pages = [DOCS / "index.rst", *sorted((DOCS / "user_guide").glob("*.rst"))]
    return [p for p in pages if any(TOTAL.search(c) for _, c in python_blocks(p))]


def _same(stated, printed):
    (eps, delta, mu), (eps_p, delta_p, mu_p) = stated, printed
    return (eps, delta) == (eps_p, delta_p) and mu_p.startswith(mu.rstrip("."))


@pytest.mark.parametrize("page", pages_with_totals(), ids=lambda p: p.name)
def test_a_pages_blocks_print_the_totals_they_state(page):
    namespace, checked = {}, 0
    for line, code in python_blocks(page):
        stated = TOTAL.findall(code)
        if any(page.name == name and text in code for name, text in NEEDS_READER_DATA):
            continue
        out = io.StringIO()
        try:
            # config_context: a page's set_config (metadata routing) must not
            # outlive it, nor reach the other tests of this process.
            with (
                warnings.catch_warnings(),
                contextlib.redirect_stdout(out),
                sklearn.config_context(),
            ):
                warnings.simplefilter("ignore")
                exec(compile(code, f"{page.name}:{line}", "exec"), namespace)
        except (NameError, SyntaxError):
            # A block that states no total may use data the page leaves to
            # the reader, or be written as a doctest: it only sets context.
            if stated:
                raise
            continue
        printed = TOTAL.findall(out.getvalue())
        assert len(printed) >= len(stated), (page.name, line, out.getvalue())
        for want, got in zip(stated, printed, strict=False):
            assert _same(want, got), (page.name, line, want, got)
        checked += len(stated)
    reader = sum(1 for name, _ in NEEDS_READER_DATA if name == page.name)
    assert checked or reader, page.name
