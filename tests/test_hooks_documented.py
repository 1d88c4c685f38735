"""Every hook is documented and tested (the rule datasette keeps for its plugin hooks).

A hook counts as documented when docs/plugins.md names it in a table row, and as tested
when some test module implements it (``def greenroom_<name>(``), so each hook's contract
is exercised by a plugin written the way a plugin author would write one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pluggy
import pytest

from greenroom import hookspecs
from greenroom.plugins.discovery import discover

ROOT = Path(__file__).resolve().parents[1]


def all_hooks() -> list[str]:
    """Core's hooks and those every installed plugin declares for itself."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for record in discover():
        specs = getattr(record.cls, "hookspecs", None)
        if specs is not None:
            pm.add_hookspecs(specs)
    return sorted(name for name in dir(pm.hook) if name.startswith("greenroom_"))


HOOKS = all_hooks()


def test_the_hook_list_is_the_real_one() -> None:
    assert "greenroom_run_start" in HOOKS and "greenroom_rank_tools" in HOOKS
    assert len(HOOKS) >= 15


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_documented(hook: str) -> None:
    doc = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    assert re.search(rf"^\| `{hook}\(", doc, re.M), f"{hook} has no row in docs/plugins.md's hook tables"


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_has_a_test(hook: str) -> None:
    pattern = re.compile(rf"def {hook}\(")
    tests = [p for p in (ROOT / "tests").rglob("*.py") if p.name != Path(__file__).name]
    assert any(pattern.search(p.read_text(encoding="utf-8")) for p in tests), f"no test implements {hook}"
