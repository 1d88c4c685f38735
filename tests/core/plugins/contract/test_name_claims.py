"""A plugin name two distributions claim is reported on both, and neither is loaded:
which one would win otherwise depends on install order, and nobody would know."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from greenroom.plugins.checks import FailureKind
from greenroom.plugins.discovery import discover

PLUGIN = """
from greenroom import Plugin

class Twin(Plugin):
    name = "twin"
"""


def distribution(site: Path, dist: str, module: str) -> None:
    (site / f"{module}.py").write_text(PLUGIN)
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[greenroom.plugins]\ntwin = {module}:Twin\n")


def test_a_name_two_distributions_claim_is_reported_not_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    distribution(tmp_path, "greenroom-twin-a", "twin_a")
    distribution(tmp_path, "greenroom-twin-b", "twin_b")
    monkeypatch.syspath_prepend(str(tmp_path))
    (record,) = [r for r in discover() if r.name == "twin"]
    assert record.cls is None and record.failure is not None
    assert record.failure.kind is FailureKind.NAME_CLAIMED
    assert "greenroom-twin-a and greenroom-twin-b" in record.failure.message
    assert "twin_a" not in sys.modules and "twin_b" not in sys.modules  # neither was imported
