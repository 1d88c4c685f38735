"""Shared fixtures: an anyio backend, a runtime factory that uses no installed plugins
unless asked, and a helper that pip-installs a fixture distribution for one test module."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from gr_testutil import FIXTURES

from greenroom.plugins import Plugin, make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom.runtime import Runtime
from greenroom.tools import Tool


def pytest_configure(config: pytest.Config) -> None:
    # nothing a test does may touch the user's real greenroom state (priors, caches)
    import os
    import tempfile

    os.environ["GREENROOM_HOME"] = tempfile.mkdtemp(prefix="greenroom-test-home-")


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


def pip(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check", *args], check=True, capture_output=True
    )


@pytest.fixture(scope="module")
def installed_fixture_plugins() -> Iterator[None]:
    """Install the example and broken plugin distributions for one test module, then remove
    them (both are opt-in, so tests running meanwhile are not affected)."""
    dists = {
        "greenroom-example-plugin": FIXTURES / "example_plugin",
        "greenroom-broken-plugin": FIXTURES / "broken_plugin",
    }
    for path in dists.values():
        pip("install", "--no-deps", "--no-build-isolation", str(path))
    try:
        yield
    finally:
        pip("uninstall", "-y", *dists)
