"""The real-provider example configs (quoted in docs/providers.md) load, validate and
compose into a runtime with the right model, without any network: the key is a fake
one from the environment, and no request is sent."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from support.gr_testutil import EXAMPLES

from greenroom.compose.build import build_runtime, load_runtime_config, plugin_configs
from greenroom_anthropic import AnthropicModel
from greenroom_openai import OpenAIChatModel

ANTHROPIC = EXAMPLES / "real_provider.toml"
OPENAI = EXAMPLES / "real_provider_openai.toml"
LOCAL = EXAMPLES / "real_provider_local.toml"


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-example")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-example")
    monkeypatch.setenv("GREENROOM_HOME", str(tmp_path))  # learned priors stay in tmp_path
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)


@pytest.mark.parametrize("path", [ANTHROPIC, OPENAI, LOCAL], ids=lambda p: p.name)
def test_example_config_validates(path: Path) -> None:
    cfg, records = load_runtime_config(path)
    configs = plugin_configs(cfg, records)
    assert configs["deferred-tools"].strategy == "dispatch"
    assert cfg.model["max_retries"] == 3


def test_anthropic_example_builds_a_caching_claude_model() -> None:
    rt = build_runtime(ANTHROPIC)
    model = rt.model
    assert isinstance(model, AnthropicModel)
    assert model.model == "claude-sonnet-4-5"
    assert model.prompt_cache
    assert (model.options.base_url, model.options.api_key_env) == (None, "ANTHROPIC_API_KEY")
    assert (model.options.max_tokens, model.options.timeout, model.retry.max_retries) == (4096, 120, 3)
    client = model.client  # reads the key; connects to nothing until a request
    assert client.api_key == "sk-ant-example"
    assert str(client.base_url).startswith("https://api.anthropic.com")
    anyio.run(model.aclose)


def test_openai_example_extends_the_anthropic_one() -> None:
    rt = build_runtime(OPENAI)
    model = rt.model
    assert type(model) is OpenAIChatModel
    assert model.model == "gpt-4.1-mini"
    assert (model.options.api_key_env, model.options.max_tokens) == ("OPENAI_API_KEY", 4096)  # inherited
    assert model.client.api_key == "sk-example"
    assert str(model.client.base_url).startswith("https://api.openai.com/v1")
    anyio.run(model.aclose)
    # the demo's tools and catalog (found relative to the base file), ToolSearch, deferred_tool_call, read_result
    assert len(rt.tools) == 4 + 187 + 3


def test_local_example_needs_no_key_and_reads_the_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    model = build_runtime(LOCAL).model
    assert type(model) is OpenAIChatModel
    assert model.model == "qwen2.5:7b"  # the part after the first colon, colons and all
    assert (model.options.base_url, model.options.timeout) == ("http://localhost:11434/v1", 300)
    assert model.client.api_key == "not-needed"
    anyio.run(model.aclose)

    monkeypatch.setenv("OLLAMA_BASE_URL", "http://gpu-box:11434/v1")
    assert build_runtime(LOCAL).model.options.base_url == "http://gpu-box:11434/v1"
