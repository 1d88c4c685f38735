"""A replica of deploy/local/fleet.py is greenroom whatever folder the fleet is started
from: a folder named ``greenroom`` in the current directory does not shadow the package
(``python -m`` would import it first)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from support.fleet_testutil import load_fleet

pytestmark = pytest.mark.slow

TOOLS = 'def ping() -> str:\n    """Answer pong."""\n    return "pong"\n\n\nTOOLS = [ping]\n'


def test_a_folder_named_greenroom_where_the_fleet_starts_does_not_shadow_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shadow = tmp_path / "greenroom"
    shadow.mkdir()
    (shadow / "__init__.py").write_text('raise SystemExit("this folder is not greenroom")\n')
    (tmp_path / "tools.py").write_text(TOOLS)
    config = tmp_path / "gateway.toml"
    config.write_text('[agent]\nid = "replica"\n[tools]\npython = ["tools.py:TOOLS"]\n')
    logs = tmp_path / "logs"
    logs.mkdir()
    monkeypatch.chdir(tmp_path)
    env = {**os.environ, "GREENROOM_HOME": str(tmp_path / "home")}
    replica = load_fleet().Replica(1, config, logs, env, ())
    try:
        replica.wait_listening(time.monotonic() + 60)  # raises, with the replica's stderr, if it exited
    finally:
        assert replica.stop() == 0, replica.tail()
