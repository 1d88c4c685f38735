"""Docs stay true: snippets match the code they quote, the config reference matches
the schemas, and the README's quick start names the commands CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.gr_testutil import ROOT

DOCS = ROOT / "docs"
SNIPPET = re.compile(r"<!-- snippet: (?P<path>\S+) -->\n```\w*\n(?P<body>.*?)\n```", re.S)


def snippets() -> list[tuple[Path, str, str]]:
    out = []
    for doc in sorted(DOCS.glob("*.md")):
        for m in SNIPPET.finditer(doc.read_text()):
            out.append((doc, m.group("path"), m.group("body")))
    return out


@pytest.mark.parametrize(("doc", "path", "body"), snippets(), ids=lambda v: str(v)[-40:])
def test_doc_snippets_match_the_code_they_quote(doc: Path, path: str, body: str) -> None:
    assert (ROOT / path).read_text().rstrip() == body.rstrip(), f"{doc.name} quotes {path}, which has changed"


def test_config_reference_is_generated_from_the_schemas() -> None:
    from greenroom.config.reference import render_reference
    from greenroom.plugins.discovery import discover

    expected = render_reference([r for r in discover() if r.distribution == "greenroom"])
    assert (DOCS / "config.md").read_text() == expected, "run: greenroom config reference > docs/config.md"


def test_readme_quick_start_matches_ci() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "greenroom demo" in readme
    test_command = ".venv/bin/python -m pytest -q -n auto --dist loadfile"
    assert test_command in readme and test_command in ci
