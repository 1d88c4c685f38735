"""``greenroom eval`` against a real provider client: the OpenAI SDK talking to the fake
OpenAI-compatible server. Two arms run; each arm's tokens are exactly the usage the
server reported for that arm's requests, and its cost is billed from that usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.fake_llm_server import (
    OPENAI_KEY_ENV,
    FakeLLMServer,
    Recorded,
    Reply,
    chat_completion,
    openai_error,
    openai_tool_call,
)

from greenroom_lab.costing import DEFAULT_PRICES
from greenroom_lab.eval.arms import parse_arms
from greenroom_lab.eval.plan import Target, evaluate
from greenroom_lab.eval.tasks import Mix

TOOLS = [
    ("getWeatherForecast", "Get the weather forecast for a city"),
    *[(f"manageInventoryItem{i}", f"Manage warehouse stock record number {i}") for i in range(30)],
]
PRICE = "openai:gpt-5"


def write_files(tmp_path: Path, server: FakeLLMServer) -> tuple[Path, Path]:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    lines = [json.dumps({"name": n, "description": d, "parameters": schema}) for n, d in TOOLS]
    (tmp_path / "tools.jsonl").write_text("\n".join(lines) + "\n")
    config = tmp_path / "agent.toml"
    config.write_text(
        f"""
[agent]
model = "openai:test-model"
max_steps = 6

[model]
base_url = "{server.url}/v1"
api_key_env = "{OPENAI_KEY_ENV}"

[tools]
catalogs = ["tools.jsonl"]
"""
    )
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "w", "query": "Weather in Paris?", "gold": ["getWeatherForecast"]}) + "\n")
    return config, tasks


def run_arms(config: Path, tasks: Path, arms: str, sessions: int, tmp_path: Path, **options: Any) -> dict[str, Any]:
    """``greenroom eval`` of the one task, ``sessions`` times, with the configured model."""
    mix = Mix(sessions=sessions, pool=1, zipf=1.0, seed=1, requests=1)
    return evaluate(
        Target(config=config), tasks, parse_arms(arms), mix, tmp_path / "out", agent="model", price=PRICE, **options
    )


class Model:
    """Finds the weather tool (directly, or by search and dispatch), calls it, answers;
    reports prompt tokens from the size of each request, and remembers them per arm."""

    def __init__(self) -> None:
        self.reported: dict[str, list[tuple[int, int]]] = {"all-eager": [], "dispatch": []}

    def __call__(self, rec: Recorded) -> Reply:
        body = rec.body
        names = {t["function"]["name"] for t in body.get("tools", [])}
        results = [m for m in body["messages"] if m["role"] == "tool"]
        arm = "dispatch" if "ToolSearch" in names else "all-eager"
        prompt, cached = len(rec.raw) // 4, 64 * len(results)
        self.reported[arm].append((prompt, cached))
        step = len(results)
        if arm == "all-eager" and step == 0:
            calls = [openai_tool_call("c0", "getWeatherForecast", '{"city": "Paris"}')]
        elif arm == "dispatch" and step == 0:
            calls = [openai_tool_call("c0", "ToolSearch", '{"query": "weather forecast"}')]
        elif arm == "dispatch" and step == 1:
            args = json.dumps({"tool_name": "getWeatherForecast", "arguments": {"city": "Paris"}})
            calls = [openai_tool_call("c1", "deferred_tool_call", args)]
        else:
            return Reply(body=chat_completion("Sunny.", prompt_tokens=prompt, cached_tokens=cached))
        return Reply(body=chat_completion(None, calls, prompt_tokens=prompt, cached_tokens=cached))


def test_eval_reports_the_usage_the_provider_counted(server: FakeLLMServer, tmp_path: Path) -> None:
    config, tasks = write_files(tmp_path, server)
    model = Model()
    server.responder = model
    report = run_arms(config, tasks, "all-eager,dispatch", 3, tmp_path, concurrency=2)
    arms = {a["name"]: a for a in report["arms"]}
    price = DEFAULT_PRICES[PRICE]
    for name, arm in arms.items():
        reported = model.reported[name]
        assert arm["success"] == 1.0
        assert arm["sessions"] == 3
        assert arm["input_tokens_per_session"] * 3 == sum(p for p, _ in reported)
        # billed from the provider's usage: cached tokens at the cache price, the rest at input
        expected: Any = (
            sum((p - c) * price.input + c * price.cache_read + 10 * price.output for p, c in reported) / 1_000_000
        )
        assert abs(arm["cost_per_session"] * 3 - expected) < 1e-12
    assert len(model.reported["all-eager"]) == 3 * 2  # a call, then the answer
    assert len(model.reported["dispatch"]) == 3 * 3  # a search, a dispatched call, the answer
    assert arms["dispatch"]["searches_per_session"] == 1
    assert arms["dispatch"]["tokens_ratio"] == (
        arms["dispatch"]["input_tokens_per_session"] / arms["all-eager"]["input_tokens_per_session"]
    )


def test_eval_retries_a_rate_limited_call_and_counts_it(server: FakeLLMServer, tmp_path: Path) -> None:
    config, tasks = write_files(tmp_path, server)
    model = Model()
    server.responder = model
    limited = openai_error("Rate limit reached for requests", "requests", "rate_limit_exceeded")
    server.push(Reply(429, limited, headers={"retry-after-ms": "0"}))
    report = run_arms(config, tasks, "all-eager", 2, tmp_path)
    (arm,) = report["arms"]
    assert arm["retries"] == 1 and arm["errors"] == 0 and arm["success"] == 1.0
    assert len(server.requests) == 1 + 2 * 2  # the refused call, then two sessions of two calls
    assert arm["input_tokens_per_session"] * 2 == sum(p for p, _ in model.reported["all-eager"])


def test_a_session_whose_model_fails_for_good_is_an_error_and_the_eval_goes_on(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    config, tasks = write_files(tmp_path, server)
    model = Model()
    server.responder = model
    down = openai_error("The server had an error while processing your request.", "server_error")
    server.push(*[Reply(500, down, headers={"retry-after-ms": "0"})] * 3)  # the first try and both retries
    report = run_arms(config, tasks, "all-eager", 3, tmp_path, concurrency=1)
    (arm,) = report["arms"]
    assert arm["sessions"] == 3 and arm["errors"] == 1 and arm["retries"] == 2
    assert arm["success"] == 2 / 3


class Conversant:
    """Per request of a session: search its words, dispatch the first tool found, answer.
    Reports prompt tokens from each request's size."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.reported: list[int] = []

    def __call__(self, rec: Recorded) -> Reply:
        body = rec.body
        self.bodies.append(body)
        messages = body["messages"]
        last = max(i for i, m in enumerate(messages) if m["role"] == "user")
        step = len([m for m in messages[last + 1 :] if m["role"] == "tool"])
        prompt = len(rec.raw) // 4
        self.reported.append(prompt)
        if step == 0:
            calls = [openai_tool_call("s", "ToolSearch", json.dumps({"query": messages[last]["content"]}))]
        elif step == 1:
            args = json.dumps({"tool_name": "getWeatherForecast", "arguments": {"city": "Paris"}})
            calls = [openai_tool_call("c", "deferred_tool_call", args)]
        else:
            return Reply(body=chat_completion("Sunny.", prompt_tokens=prompt))
        return Reply(body=chat_completion(None, calls, prompt_tokens=prompt))


def test_sessions_of_several_requests_against_a_compatible_server(server: FakeLLMServer, tmp_path: Path) -> None:
    config, tasks = write_files(tmp_path, server)
    config.write_text(config.read_text().replace("openai:test-model", "openai:gpt-4o-mini"))
    model = Conversant()
    server.responder = model
    mix = Mix(sessions=2, pool=1, zipf=1.0, seed=1, requests=2)
    report = evaluate(Target(config=config), tasks, parse_arms("dispatch"), mix, tmp_path / "out", agent="model")
    (arm,) = report["arms"]
    assert arm["success"] == 1.0 and arm["errors"] == 0 and arm["steps_per_session"] == 6
    assert arm["context_window"] == 128_000  # gpt-4o's, from the arm's model
    assert arm["input_tokens_per_session"] * 2 == sum(model.reported)
    price = DEFAULT_PRICES["anthropic:claude-sonnet-4.5"]
    no_cache = (sum(model.reported) * price.input + 6 * 2 * 10 * price.output) / 1e6
    assert abs(arm["cost_no_cache_per_session"] * 2 - no_cache) < 1e-12
    # the second request of a session is sent with the first's conversation before it
    second = [b for b in model.bodies if sum(m["role"] == "user" for m in b["messages"]) == 2]
    assert len(second) == 2 * 3 and all(len(b["messages"]) >= 8 for b in second)


def test_a_request_past_the_context_window_never_reaches_the_server(server: FakeLLMServer, tmp_path: Path) -> None:
    config, tasks = write_files(tmp_path, server)
    server.responder = Conversant()
    mix = Mix(sessions=2, pool=1, zipf=1.0, seed=1, requests=2)
    arms = parse_arms("all-eager")
    report = evaluate(Target(config=config), tasks, arms, mix, tmp_path / "out", agent="model", context_window=300)
    (arm,) = report["arms"]
    assert arm["over_window"] == 2 and arm["success"] == 0 and server.requests == []
