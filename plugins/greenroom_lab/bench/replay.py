"""Replayed sessions: one scripted session on a real catalog, under each configuration.

A policy model works through a session of N steps, discovering a handful of tools spread
over it and calling what it found. The same session is replayed all-eager, with inject
and retention, with dispatch, with names-only dispatch, and with the native strategy as
OpenAI's tool search runs it (``native-openai``); every request is recorded block by
block (the cacheable prefix, then each message) so ``costing`` can bill it as each
provider would.

``native-openai`` records what the OpenAI provider would send (its Responses body,
built by the provider itself with ``tool_search`` on): the prefix counts the loaded
tools in full, the ``tool_search`` tool, and each deferred namespace or tool by the name
and description the model sees of it; the searches' results, which go back as
``tool_search_output`` with the definitions found, are counted like the ``<functions>``
text they carry. It is billed at OpenAI's prices only, and left out when the ``openai``
provider or its SDK is not installed.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from greenroom import (
    AgentConfig,
    Model,
    ModelRequest,
    ModelResponse,
    PolicyModel,
    Runtime,
    Tool,
    count_tokens,
    discover_plugins,
    load_catalog,
    make_plugin_host,
)
from greenroom.kit import compact_json, message_tokens, tool_tokens
from greenroom_deferred import CLIENT_SEARCH_CALL, DISPATCH_TOOL, SEARCH_TOOL, DeferredConfig, DeferredToolsPlugin
from greenroom_lab.costing import DEFAULT_PRICES, Price, Request, StepBill, bill

CONFIGS: dict[str, dict[str, Any]] = {
    "all-eager": {"enabled": False},
    "inject": {"enabled": True, "strategy": "inject"},
    "dispatch": {"enabled": True, "strategy": "dispatch"},
    "dispatch-names": {"enabled": True, "strategy": "dispatch", "listing": "names"},
    "native-openai": {"enabled": True, "strategy": "native"},
}
"""The deferred-tools configurations a session is replayed under, by label."""

NATIVE = "native-openai"
OPENAI_MODEL = ("gpt-5.4", {"api": "responses", "tool_search": True, "api_key_env": ""})
"""The model whose requests ``native-openai`` records (built offline: nothing is sent)."""


def session_policy(targets: Sequence[str], steps: int, discoveries: int) -> Any:
    """Discover ``discoveries`` tools spread over ``steps`` steps, calling what was found
    in between; answer on the last step."""
    every = max(1, (steps - 1) // max(1, discoveries))
    found: list[str] = []

    def policy(request: ModelRequest) -> dict[str, Any]:
        step = request.step
        if step >= steps:
            return {"text": "done"}
        visible = {t.name for t in request.tools}
        if len(found) < discoveries and (step - 1) % every == 0:
            name = targets[len(found)]
            found.append(name)
            # with native search the provider's own search tool asks, as the model would
            search = SEARCH_TOOL if SEARCH_TOOL in visible else CLIENT_SEARCH_CALL
            return {"tool_calls": [{"name": search, "arguments": {"query": f"select:{name}"}}]}
        name = found[(step - 1) % len(found)] if found else targets[0]
        if name in visible or DISPATCH_TOOL not in visible:
            return {"tool_calls": [{"name": name, "arguments": {}}]}
        return {"tool_calls": [{"name": DISPATCH_TOOL, "arguments": {"tool_name": name, "arguments": {}}}]}

    return policy


class Recorder:
    """Wraps a model and keeps each request as cache blocks (prefix, then one block per
    message)."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.blocks: list[Request] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await self.model.complete(request)
        prefix = sum(tool_tokens(t) for t in request.tools) + count_tokens(request.system_text)
        key = "|".join(t.name for t in request.tools) + "\x00" + request.system_text
        self.record(request, response, key, prefix)
        return response

    def record(self, request: ModelRequest, response: ModelResponse, prefix_key: str, prefix_tokens: int) -> None:
        """Keep one request: its prefix (as a hash of ``prefix_key``), and its messages."""
        self.blocks.append(
            Request(
                prefix_hash=str(hash(prefix_key)),
                prefix_tokens=prefix_tokens,
                message_tokens=tuple(message_tokens(m) for m in request.messages),
                message_ids=tuple(str(id(m)) for m in request.messages),
                output_tokens=response.usage.output_tokens,
            )
        )


class OpenAIRecorder(Recorder):
    """A recorder whose model searches natively, counting what the OpenAI provider
    (``renderer``: its Responses model) would send of each request's prefix."""

    native_tool_search = True

    def __init__(self, model: Model, renderer: Any) -> None:
        super().__init__(model)
        self.renderer = renderer

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await self.model.complete(request)
        body = self.renderer.build_body(request)
        prefix = sum(map(_seen_tokens, body.get("tools", ()))) + count_tokens(body.get("instructions", ""))
        key = compact_json(body.get("tools", [])) + "\x00" + str(body.get("instructions", ""))
        self.record(request, response, key, prefix)
        return response


def _seen_tokens(entry: Mapping[str, Any]) -> int:
    """Tokens of one tools-array entry as the model sees it before any search: a loaded
    function in full, a deferred function or a namespace by its name and description."""
    if entry.get("type") == "namespace" or entry.get("defer_loading"):
        return count_tokens(f"{entry.get('name', '')}: {entry.get('description', '')}")
    if entry.get("type") == "function":
        fields = {k: entry[k] for k in ("description", "name", "parameters") if k in entry}
        return count_tokens(compact_json(fields))
    return count_tokens(compact_json(entry))


def openai_renderer() -> Any:
    """The OpenAI provider's Responses model with tool search (nothing is called), or None
    when the provider or its SDK is not installed."""
    for record in discover_plugins():
        if record.cls is None or "greenroom_model_providers" not in record.hooks():
            continue
        factory = record.cls().greenroom_model_providers().get("openai")  # type: ignore[attr-defined]
        if factory is None:
            continue
        name, options = OPENAI_MODEL
        try:
            return factory(name, dict(options))
        except Exception:  # the SDK is not installed: no native-openai row
            return None
    return None


async def replay(
    tools: Sequence[Tool],
    options: Mapping[str, Any],
    targets: Sequence[str],
    steps: int,
    discoveries: int,
    renderer: Any = None,
) -> list[Request]:
    """Run the scripted session once with the plugin configured by ``options`` (and the
    OpenAI provider's requests recorded, given its ``renderer``)."""
    policy = PolicyModel(session_policy(targets, steps, discoveries))
    model = Recorder(policy) if renderer is None else OpenAIRecorder(policy, renderer)
    host = make_plugin_host(records=[], extra=[DeferredToolsPlugin(DeferredConfig(**options))])
    rt = Runtime(model=model, tools=tools, host=host, agent=AgentConfig(max_steps=steps + 1))
    await rt.session().run("work through the task")
    return model.blocks


def load_tools(path: Path, limit: int | None = None) -> list[Tool]:
    return list(load_catalog(path, limit=limit))


def compare(
    tools: Sequence[Tool],
    *,
    steps: int = 30,
    discoveries: int = 5,
    seed: int = 7,
    prices: Mapping[str, Price] = DEFAULT_PRICES,
) -> dict[str, dict[str, Any]]:
    """Replay one session under every configuration and bill it under every price."""
    targets = random.Random(seed).sample([t.descriptor.name for t in tools], discoveries)
    out: dict[str, dict[str, Any]] = {}
    renderer = openai_renderer()
    for name, options in CONFIGS.items():
        if name == NATIVE and renderer is None:
            continue
        requests = anyio.run(replay, tools, options, targets, steps, discoveries, renderer if name == NATIVE else None)
        per_price: dict[str, Any] = {}
        for label, price in prices.items():
            if name == NATIVE and price.cache != "openai":
                continue  # OpenAI's tool search is billed at OpenAI's prices only
            bills: list[StepBill] = bill(requests, price)
            total_in = sum(b.uncached + b.cache_write + b.cache_read for b in bills)
            per_price[label] = {
                "cost": sum(b.cost for b in bills),
                "cumulative": [sum(b.cost for b in bills[: i + 1]) for i in range(len(bills))],
                "input_tokens": total_in,
                "cache_read": sum(b.cache_read for b in bills),
                "cache_write": sum(b.cache_write for b in bills),
                "hit_rate": sum(b.cache_read for b in bills) / max(1, total_in),
            }
        out[name] = {
            "steps": len(requests),
            "input_tokens": sum(r.total for r in requests),
            "prefixes": len({r.prefix_hash for r in requests}),
            "prices": per_price,
        }
    return out
