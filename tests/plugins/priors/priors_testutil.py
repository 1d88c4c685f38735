"""Helpers shared by the priors test modules (conftest puts this folder on sys.path)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from greenroom import tool
from greenroom.events import Event

HERE = Path(__file__).resolve().parent
PG_ENV = "GREENROOM_TEST_POSTGRES_URL"


def postgres_url() -> str:
    url = os.environ.get(PG_ENV, "")
    if not url:
        pytest.skip(
            f"{PG_ENV} is not set: start a throwaway server with "
            f'eval "$(bash .ci/postgres.sh)" to run the PostgreSQL tests'
        )
    return url


@tool
def alpha(x: int) -> int:
    """Return x."""
    return x


@tool
def beta(text: str) -> str:
    """Echo text."""
    return text


@tool
def gamma() -> str:
    """Say hi."""
    return "hi"


TOOLS = [alpha, beta, gamma]


def call(*names: str) -> dict[str, Any]:
    """A scripted model turn calling the named tools."""
    args = {"alpha": {"x": 1}, "beta": {"text": "t"}, "gamma": {}}
    return {"tool_calls": [{"name": n, "arguments": args[n]} for n in names]}


SCRIPT_3_STEPS = [call("alpha"), call("alpha", "beta"), {"text": "done"}]


class Events:
    """Collects every event of a runtime."""

    def __init__(self) -> None:
        self.items: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.items.append(event)

    def of(self, cls: type) -> list[Any]:
        return [e for e in self.items if isinstance(e, cls)]


def run_script(script: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HERE / script), *args], capture_output=True, text=True, timeout=timeout, check=False
    )
