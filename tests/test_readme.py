"""README's Python snippets run in order and print the privacy totals they state.

The snippets share one namespace, as a reader pasting them into one session
would (the third reuses the second's ``model``). Scores vary with fresh noise
and are not compared; a ledger's total is exact arithmetic and is.
"""

import contextlib
import io
import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
if not README.exists():  # a copy of the tests without the project around them
    pytest.skip("README.md is not beside the tests", allow_module_level=True)
#: A ledger total as printed, e.g. ``(1, 1e-05)-DP, mu=0.268051``.
TOTAL = re.compile(r"\([0-9.e+-]+, [0-9.e+-]+\)-DP, mu=[0-9.]+")


def python_snippets():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def stated_totals(snippet):
    """The totals a snippet's comments promise, in order."""
    return [
        match
        for line in snippet.splitlines()
        if "#" in line
        for match in TOTAL.findall(line.split("#", 1)[1])
    ]


def test_readme_has_python_snippets_with_stated_totals():
    snippets = python_snippets()
    assert len(snippets) >= 3
    assert sum(len(stated_totals(s)) for s in snippets) >= 3


@pytest.mark.filterwarnings("ignore::skdp.PrivacyLeakWarning")
def test_readme_snippets_print_the_totals_they_state():
    namespace = {}
    for snippet in python_snippets():
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(snippet, str(README), "exec"), namespace)
        assert TOTAL.findall(printed.getvalue()) == stated_totals(snippet), snippet
