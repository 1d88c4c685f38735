"""docs/providers.md's "Writing a provider" holds: its Parley provider, taken from the page
as it is, registers by its entry point, builds from its agent.toml and drives a real
run against a Parley stand-in on 127.0.0.1, with a tool call, a retried 429 and usage;
a key a server echoes is masked, and a bad option names its key."""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import tomllib
from support.fake_llm_server import FakeLLMServer, Recorded, Reply
from support.gr_testutil import ROOT

import greenroom
from greenroom import ConfigError, build_runtime, tool
from greenroom.providers import ProviderAuthError

pytestmark = pytest.mark.anyio

DOC = ROOT / "docs" / "providers.md"
EXAMPLE = re.compile(r"<!-- provider example: (?P<path>\S+) -->\n```\w*\n(?P<body>.*?)\n```", re.S)
KEY_ENV = "GREENROOM_TEST_PARLEY_KEY"
KEY = "pk-test-0123456789abcdef"


def examples() -> dict[str, str]:
    found = {m.group("path"): m.group("body") + "\n" for m in EXAMPLE.finditer(DOC.read_text(encoding="utf-8"))}
    assert set(found) == {"greenroom_parley/__init__.py", "pyproject.toml", "agent.toml"}
    return found


@pytest.fixture
def parley(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The page's package, written out and imported like an installed one."""
    package = tmp_path / "site" / "greenroom_parley"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(examples()["greenroom_parley/__init__.py"], encoding="utf-8")
    monkeypatch.syspath_prepend(str(package.parent))
    monkeypatch.setenv(KEY_ENV, KEY)
    try:
        yield importlib.import_module("greenroom_parley")
    finally:
        sys.modules.pop("greenroom_parley", None)


@tool
def get_weather(city: str) -> str:
    """The weather in a city today."""
    return f"sunny in {city}"


def parley_responder(rec: Recorded) -> Reply:
    """Parley as the page describes it: one turn per request, a tool call first."""
    if rec.path != "/v1/reply" or rec.headers.get("authorization") != f"Bearer {KEY}":
        return Reply(404, {"error": {"message": f"no such endpoint {rec.path}"}})
    if not any(t["role"] == "tool" for t in rec.body["turns"]):
        call = {"id": "c1", "name": "get_weather", "input": {"city": "Oslo"}}
        return Reply(body={"text": "", "calls": [call], "tokens": {"in": 40, "out": 7}})
    result = next(t for t in rec.body["turns"] if t["role"] == "tool")
    return Reply(body={"text": f"Parley says: {result['text']}.", "tokens": {"in": 55, "out": 6}})


def test_the_entry_point_names_the_plugin(parley: ModuleType) -> None:
    project = tomllib.loads(examples()["pyproject.toml"])
    (name, value), *more = project["project"]["entry-points"]["greenroom.plugins"].items()
    assert not more and name == parley.ParleyProvider.name == "parley"
    entry_point = importlib.metadata.EntryPoint(name, value, "greenroom.plugins")
    assert entry_point.load() is parley.ParleyProvider
    assert issubclass(parley.ParleyModel, greenroom.ProviderModel)


async def test_the_page_provider_drives_a_run(parley: ModuleType, server: FakeLLMServer, tmp_path: Path) -> None:
    server.push(Reply(429, {"error": {"message": "slow down"}}, headers={"retry-after": "0"}))
    server.responder = parley_responder
    agent = examples()["agent.toml"].replace(
        "[model]\n", f'[model]\nbase_url = "{server.url}"\napi_key_env = "{KEY_ENV}"\n', 1
    )
    config = tmp_path / "agent.toml"
    config.write_text(agent, encoding="utf-8")

    runtime = build_runtime(config, extra_plugins=[parley.ParleyProvider()], extra_tools=[get_weather], records=[])
    try:
        assert isinstance(runtime.model, parley.ParleyModel)
        assert runtime.model.retry.max_retries == 4 and runtime.model.retry.max_delay == 30.0
        outcome = await runtime.run(runtime.session(), "What is the weather in Oslo?")
    finally:
        await runtime.aclose()

    assert (outcome.stop_reason, outcome.text) == ("final", "Parley says: sunny in Oslo.")
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (95, 13)
    first, retried, second = (r.body for r in server.requests)
    assert first == retried  # the 429 was retried with the same body
    assert first["model"] == "parley-large" and first["style"] == "terse"
    assert [t["name"] for t in first["tools"]] == ["get_weather"]
    assert first["turns"] == [{"role": "user", "text": "What is the weather in Oslo?"}]
    call_turn, result_turn = second["turns"][1:]
    assert call_turn["calls"] == [{"id": "c1", "name": "get_weather", "input": {"city": "Oslo"}}]
    assert (result_turn["answers"], result_turn["failed"], result_turn["text"]) == ("c1", False, "sunny in Oslo")


async def test_a_key_the_server_echoes_is_masked(parley: ModuleType, server: FakeLLMServer) -> None:
    server.push(Reply(401, {"error": {"message": f"bad key Bearer {KEY}"}}))
    model = parley.make_parley_model("parley-small", {"base_url": server.url, "api_key_env": KEY_ENV})
    request = greenroom.ModelRequest(system=(), tools=(), messages=(greenroom.Message(role="user", content="hi"),))
    try:
        with pytest.raises(ProviderAuthError) as caught:
            await model.complete(request)
    finally:
        await model.aclose()
    assert KEY not in str(caught.value) and "HTTP 401" in str(caught.value)
    assert len(server.requests) == 1  # a 401 is not retried


@pytest.mark.parametrize(
    ("options", "path"),
    [({"style": "loud"}, "model.style"), ({"timeout": 0}, "model.timeout"), ({"sytle": "terse"}, "model.sytle")],
)
def test_bad_options_name_their_key(parley: ModuleType, options: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parley.make_parley_model("parley-small", options)
    assert caught.value.path == path


def test_no_key_is_reported_before_any_call(parley: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    model = parley.make_parley_model("parley-small", {"api_key_env": KEY_ENV})  # building needs no key
    with pytest.raises(greenroom.ModelError, match=KEY_ENV):
        model.check_ready()
