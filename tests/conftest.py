"""Shared fixtures: a temporary greenroom home for the whole session (deleted at the end,
and swept by the next run when a run was killed before its end), an anyio backend, and a
runtime factory that uses no installed plugins unless asked."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

# pytest-xdist's workers inherit COLUMNS=80; the CLI's console, made when greenroom.cli.app is
# first imported, would keep that width for good, and a test's own COLUMNS could not widen it
os.environ.pop("COLUMNS", None)

from support.gr_testutil import HOME_PREFIX, sweep_stale_homes

from greenroom.plugins.discovery import Plugin, make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom.run.runtime import Runtime
from greenroom.tools import Tool

_HOME: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    # nothing a test does may touch the user's real greenroom state (priors, caches)
    sweep_stale_homes(Path(tempfile.gettempdir()))
    _HOME.append(tempfile.mkdtemp(prefix=f"{HOME_PREFIX}{os.getpid()}-"))
    os.environ["GREENROOM_HOME"] = _HOME[-1]


def pytest_unconfigure(config: pytest.Config) -> None:
    for home in _HOME:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def make_runtime() -> Callable[..., Runtime]:
    """Build a runtime from a script (list of turns) or a model, tools and plugins."""

    def build(
        turns: Sequence[Any] | None = None,
        *,
        model: Any = None,
        tools: Sequence[Tool] = (),
        plugins: Sequence[Plugin] = (),
        **agent: Any,
    ) -> Runtime:
        from greenroom.config import AgentConfig

        host = make_plugin_host(records=[], extra=plugins)
        return Runtime(
            model=model if model is not None else ScriptedModel(turns or []),
            tools=tools,
            host=host,
            agent=AgentConfig(**agent) if agent else None,
        )

    return build
