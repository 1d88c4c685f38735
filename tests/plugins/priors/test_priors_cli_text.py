"""``greenroom priors`` prints text as text: its help keeps the brackets rich would take
for markup, errors keep store URLs and agent ids whole, and an empty store says so."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from support.gr_testutil import plugin_cli
from typer.testing import CliRunner

from greenroom_priors import PriorsPlugin

NARROW = {"COLUMNS": "80"}


@pytest.fixture
def app() -> typer.Typer:
    return plugin_cli(PriorsPlugin())  # type: ignore[no-any-return]


def test_show_help_keeps_the_bracketed_config_table(app: typer.Typer) -> None:
    result = CliRunner().invoke(app, ["priors", "show", "--help"], env=NARROW)
    assert result.exit_code == 0, result.output
    assert "Agent id ([agent] id in the config)." in result.output
    assert "( id in the config)" not in result.output


def test_list_of_an_empty_store_says_which_store_it_read(app: typer.Typer, tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'empty.sqlite3'}"
    result = CliRunner().invoke(app, ["priors", "list", "--store", url], env=NARROW)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # a script reading the list gets an empty one
    said = " ".join(result.stderr.split())
    assert "no agent has priors in" in said and "empty.sqlite3" in said and "--config FILE" in said


def test_an_error_prints_bracketed_text_whole(app: typer.Typer, tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'p.sqlite3'}"
    result = CliRunner().invoke(app, ["priors", "show", "ops[blue]", "--store", url], env={"COLUMNS": "200"})
    assert result.exit_code == 1
    assert "no priors for agent 'ops[blue]'" in result.stderr
