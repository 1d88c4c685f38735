"""The command line's conventions, every command's help (the plugins' too) rendered at 80
columns as a user reads it: ``--version`` and ``-h``; text kept as written (``[[tools.mcp]]``
is not eaten as markup); each paragraph wrapped once, so no line ends early and leaves a
word alone on the next; a flag shows no type (no ``<bool>``)."""

from __future__ import annotations

import itertools

import pytest
from support.cli_reference import WIDTH, markdown, render_helps
from support.gr_testutil import ROOT
from typer.testing import CliRunner

from greenroom import __version__
from greenroom.cli import app

WRAP = WIDTH - 2  # click wraps help two columns short of the terminal's width


@pytest.fixture(scope="module")
def helps() -> dict[str, str]:
    return render_helps()


def test_version_and_h() -> None:
    runner = CliRunner()
    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.output == f"greenroom {__version__}\n"
    for args in ([], ["run"], ["config", "check"]):
        short, long = runner.invoke(app, [*args, "-h"]), runner.invoke(app, [*args, "--help"])
        assert short.exit_code == long.exit_code == 0 and short.output == long.output
        assert long.output.startswith("Usage: greenroom")


def test_every_command_has_help_and_the_plugins_commands_are_among_them(helps: dict[str, str]) -> None:
    assert {"", "run", "mcp login", "priors sweep", "eval", "rank eval"} <= set(helps)
    for path, text in helps.items():
        assert text.startswith(f"Usage: greenroom {path}".rstrip()), (path, text)


def test_text_is_kept_as_written(helps: dict[str, str]) -> None:
    assert "The [[tools.mcp]] server's name." in helps["mcp login"]
    assert "[tools.mcp.oauth] table" in " ".join(helps["mcp login"].split())
    assert "a bare file name lives in [session] dir" in " ".join(helps["run"].split())
    for path, text in helps.items():
        assert "\\[" not in text, (path, text)  # an escape meant for markup, shown as typed


def test_help_fits_80_columns_and_each_paragraph_is_wrapped_once(helps: dict[str, str]) -> None:
    for path, text in helps.items():
        lines = text.splitlines()
        assert all(len(line) <= WRAP for line in lines), (path, text)
        described = True  # before the first section ("Arguments:", "Options:", "Commands:")
        for before, line in itertools.pairwise(lines):
            described = described and not (line.endswith(":") and not line.startswith(" "))
            # a line that goes on the text of the one before: in the description, a
            # paragraph's next line; in a section, a line indented to the text's column
            indent = len(line) - len(line.lstrip())
            goes_on = 2 < indent < len(before) and before[indent - 1] == " " and before[indent] != " "
            in_a_paragraph = described and indent == 2 and before.startswith("  ") and before[2] != " "
            if line.strip() and (goes_on or in_a_paragraph):
                # its first word did not fit on the line before; else the text was wrapped
                # twice (click sets "[default: ...]" two spaces after an option's help)
                word = line.split()[0]
                assert len(before) + (2 if word.startswith("[") else 1) + len(word) > WRAP, (path, before, line)


def test_a_flag_shows_no_type(helps: dict[str, str]) -> None:
    for path, text in helps.items():
        assert "<bool>" not in text, (path, text)
    options = helps["run"].split("Options:")[1]
    assert "  -q, --quiet      Print only the final answer." in options
    assert "  -h, --help       Show this message and exit." in options


def test_the_deprecated_sweep_argument_is_not_shown(helps: dict[str, str]) -> None:
    sweep = helps["priors sweep"]
    assert sweep.startswith("Usage: greenroom priors sweep [OPTIONS]\n") and "--config <path>" in sweep


def test_docs_show_the_help_of_today(helps: dict[str, str]) -> None:
    page = ROOT / "docs" / "cli.md"
    assert page.read_text(encoding="utf-8") == markdown(helps), (
        "run: python tests/support/cli_reference.py > docs/cli.md"
    )
