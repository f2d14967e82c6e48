"""``python -m skdp --help``: plain text, every command listed, one example each."""

import re
import subprocess
import sys

import pytest

from skdp.__main__ import build_parser
from skdp.audit._cli import ESTIMATORS

# reST roles (:mod:`x`), inline literals (``x``) and directives (.. note::).
REST_MARKUP = re.compile(r"``|:[a-z]+:`|^\s*\.\. ", re.MULTILINE)


def help_text(*argv):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([*argv, "--help"])
    assert exit_info.value.code == 0
    return exit_info


@pytest.mark.parametrize("argv", [(), ("demo",), ("audit",)])
def test_help_is_plain_text_with_an_example(argv, capsys):
    help_text(*argv)
    text = capsys.readouterr().out
    assert not REST_MARKUP.search(text), text
    assert re.search(r"^examples?:\n  python -m skdp ", text, re.MULTILINE), text
    # Every example runs through the parser as written.
    for line in re.findall(r"^  (python -m skdp .*)$", text, re.MULTILINE):
        args = build_parser().parse_args(line.split()[3:])
        assert args.command == line.split()[3]


def test_top_level_help_lists_every_command(capsys):
    help_text()
    text = capsys.readouterr().out
    commands = build_parser()._subparsers._group_actions[0].choices
    assert sorted(commands) == ["audit", "demo"]
    for name in commands:
        assert re.search(rf"^  {name} ", text, re.MULTILINE), (name, text)


def test_audit_help_lists_the_estimators(capsys):
    help_text("audit")
    text = " ".join(capsys.readouterr().out.split())
    for name in ESTIMATORS:
        assert name in text


def test_module_entry_point_prints_the_same_help():
    result = subprocess.run(
        [sys.executable, "-m", "skdp", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.startswith("usage: python -m skdp")
    assert not REST_MARKUP.search(result.stdout)


def test_demo_prints_each_row_as_it_finishes(monkeypatch):
    # Each row must be in the output before the next fit starts: the fake
    # row builders check what has been printed when they are resumed.
    import io

    import skdp.__main__ as cli

    out = io.StringIO()
    seen = []

    def fake(name):
        def rows(seed):
            for i in range(2):
                seen.append(out.getvalue().count(f"fake-{name}"))
                yield (f"fake-{name}", "task", "1", "1", "", "0.5", str(i))

        return rows

    names = [
        "_logistic_rows",
        "_sparse_glm_rows",
        "_linear_regression_rows",
        "_pca_rows",
        "_random_features_rows",
        "_bradley_terry_rows",
        "_gaussian_sampler_rows",
        "_fedrep_rows",
        "_private_search_rows",
        "_naive_bayes_rows",
        "_preprocessing_rows",
    ]
    for name in names:
        monkeypatch.setattr(cli, name, fake(name))
    rows = cli.demo(file=out)
    assert len(rows) == 2 * len(names)
    assert seen == [0, 1] * len(names)  # the first row was out before the second
    lines = out.getvalue().splitlines()
    assert len({len(line) for line in lines[1:]}) == 1  # one aligned table


def test_demo_withholds_the_search_run_time():
    from skdp.__main__ import _dp_row
    from skdp.accounting import PrivacyCost

    class Fitted:
        privacy_spent_ = PrivacyCost.from_gdp(0.5, delta=1e-5)

    assert _dp_row("t", 1.0, Fitted(), 0.5, None)[-1] == "(secret)"
    assert _dp_row("t", 1.0, Fitted(), 0.5, 0.25)[-1] == "250"
