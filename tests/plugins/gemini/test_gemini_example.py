"""The Gemini example config (quoted in docs/providers.md) loads, validates and composes
into a runtime with a Gemini model, without any network: the key is a fake one from the
environment, and no request is sent."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from support.gr_testutil import EXAMPLES

from greenroom.compose.build import build_runtime, load_runtime_config, plugin_configs
from greenroom_gemini import GeminiModel

GEMINI = EXAMPLES / "real_provider_gemini.toml"


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-example")
    monkeypatch.setenv("GREENROOM_HOME", str(tmp_path))  # learned priors stay in tmp_path


def test_the_gemini_example_extends_the_anthropic_one() -> None:
    cfg, records = load_runtime_config(GEMINI)
    assert plugin_configs(cfg, records)["deferred-tools"].strategy == "dispatch"
    rt = build_runtime(GEMINI)
    model = rt.model
    assert isinstance(model, GeminiModel) and model.native_tool_search is False
    assert model.model == "gemini-2.5-flash" and model.images is False  # images in function responses: Gemini 3
    assert (model.options.api_key_env, model.options.max_tokens, model.retry.max_retries) == ("GEMINI_API_KEY", 4096, 3)
    client = model.client  # reads the key; connects to nothing until a request
    assert client._api_client.api_key == "AIza-example"
    assert client._api_client._http_options.base_url.startswith("https://generativelanguage.googleapis.com")
    anyio.run(model.aclose)
    assert len(rt.tools) == 4 + 187 + 3  # the demo's tools and catalog, ToolSearch, deferred_tool_call, read_result
