"""The Python examples in docs/python.md run as they are and do what they say."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.gr_testutil import ROOT


def test_the_embedding_example_runs(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "python" / "embed.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "GREENROOM_HOME": str(tmp_path / "home")},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "tools sent: ['get_weather', 'read_result']"
    assert lines[1] == "answer: final It is sunny in Oslo."
    assert lines[2] == "resumed messages: 4"
    assert (tmp_path / "session.json").exists()


def test_the_streaming_example_runs(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "python" / "stream.py")],
        capture_output=True,
        text=True,
        env={**os.environ, "GREENROOM_HOME": str(tmp_path / "home")},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "Let me look.",
        "[get_weather: sunny in Oslo]",
        "It is sunny in Oslo.",
        "[final after 2 steps]",
        "answer: It is sunny in Oslo.",
    ]
