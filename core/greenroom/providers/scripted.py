"""The offline ``scripted`` model: plays a JSONL script, or follows a Python policy.

``scripted:PATH`` reads one model turn per line: ``{"text": "..."}`` or
``{"tool_calls": [{"name": "...", "arguments": {...}}]}`` (optionally with ``"text"``).
It needs no network and no key, so every example and test runs anywhere.

With ``[model] stream = true`` it streams (``StreamedModel``): each turn's text comes in
pieces, a word at a time, ``pace`` seconds apart (0 by default), as a real model's does.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from greenroom._support.arguments import parse_json_object, within_bounds
from greenroom._support.compact import compact_json
from greenroom.models import (
    Message,
    Model,
    ModelError,
    ModelRequest,
    ModelResponse,
    StreamItem,
    TextDelta,
    ToolCall,
    Usage,
)
from greenroom.plugins.discovery import Plugin, hookimpl
from greenroom.tokens.counting import count_tokens
from greenroom.tokens.media import media_tokens


class ScriptError(ModelError):
    pass


def turn_from_record(record: Any, where: str, step: int) -> Message:
    """One script line -> the assistant message it stands for."""
    if not isinstance(record, dict):
        raise ScriptError(f"{where}: expected an object, got {type(record).__name__}")
    unknown = set(record) - {"text", "tool_calls"}
    if unknown:
        raise ScriptError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; expected text, tool_calls")
    text = record.get("text", "")
    if not isinstance(text, str):
        raise ScriptError(f"{where}: 'text' must be a string")
    calls = []
    raw_calls = record.get("tool_calls", [])
    if not isinstance(raw_calls, list):
        raise ScriptError(f"{where}: 'tool_calls' must be a list")
    for i, c in enumerate(raw_calls):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise ScriptError(f"{where}: tool_calls[{i}] needs a 'name' string")
        args = c.get("arguments", {})
        call_id = str(c.get("id") or f"call_{step}_{i}")
        if isinstance(args, str):  # a script may replay a model's raw (maybe broken, maybe too deep) JSON
            calls.append(ToolCall(call_id, c["name"], parse_json_object(args), args))
        elif isinstance(args, dict):
            calls.append(within_bounds(ToolCall(call_id, c["name"], args)))
        else:
            raise ScriptError(f"{where}: tool_calls[{i}].arguments must be an object or a JSON string")
    if not text and not calls:
        raise ScriptError(f"{where}: a turn needs 'text' or 'tool_calls'")
    return Message(role="assistant", content=text, tool_calls=tuple(calls))


def estimate_usage(request: ModelRequest, reply: Message) -> Usage:
    """Exact o200k counts of what was sent and said, as a real provider would report."""
    from greenroom.tokens.tool_costs import tool_costs  # kept per catalog: a step tokenizes no definition again

    sent = count_tokens(request.system_text)
    sent += sum(tool_costs(request.tools, "definition_tokens"))
    sent += sum(count_tokens(m.content) for m in request.messages)
    sent += sum(media_tokens(p) for m in request.messages for p in m.parts)  # images and sounds, estimated
    out = count_tokens(reply.content) + sum(
        count_tokens(compact_json(c.arguments or {})) + count_tokens(c.name) for c in reply.tool_calls
    )
    return Usage(input_tokens=sent, output_tokens=out)


class ScriptedModel:
    """Plays a list of turns in order; fails clearly when the script runs out."""

    def __init__(
        self, turns: Sequence[Mapping[str, Any] | Message], source: str = "<script>", count_usage: bool = False
    ) -> None:
        self.source = source
        self.turns: list[Message] = []
        for i, t in enumerate(turns):
            self.turns.append(t if isinstance(t, Message) else turn_from_record(t, f"{source}: turn {i + 1}", i + 1))
        self.position = 0
        self.requests: list[ModelRequest] = []
        self.count_usage = count_usage

    @classmethod
    def from_file(cls, path: str | Path, **kw: Any) -> ScriptedModel:
        p = Path(path)
        try:
            lines = p.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            raise ScriptError(f"{p}: script file not found") from None
        turns: list[Message] = []
        for lineno, line in enumerate(lines, 1):
            if not line.strip() or line.lstrip().startswith("//"):
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ScriptError(f"{p}:{lineno}: not valid JSON: {exc.msg}") from None
            except RecursionError:
                raise ScriptError(
                    f"{p}:{lineno}: nested too deeply to read; give deeply nested tool-call arguments as a JSON string"
                ) from None
            turns.append(turn_from_record(record, f"{p}:{lineno}", len(turns) + 1))
        return cls(turns, str(p), **kw)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if self.position >= len(self.turns):
            raise ScriptError(
                f"{self.source}: the script has {len(self.turns)} turn(s) and the run asked for "
                f"turn {self.position + 1}"
            )
        msg = self.turns[self.position]
        self.position += 1
        usage = estimate_usage(request, msg) if self.count_usage else Usage()
        return ModelResponse(message=msg, usage=usage, stop_reason="tool_use" if msg.tool_calls else "end")


class PolicyModel:
    """A model driven by a Python function of the request (for tests and simulations).

    The policy returns a ``Message``, a script-style dict, or a string (final text).
    """

    def __init__(self, policy: Callable[[ModelRequest], Message | Mapping[str, Any] | str]) -> None:
        self.policy = policy
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        out = self.policy(request)
        if isinstance(out, str):
            out = {"text": out}
        msg = out if isinstance(out, Message) else turn_from_record(out, "policy", len(self.requests))
        return ModelResponse(message=msg, usage=estimate_usage(request, msg))


_PIECE = re.compile(r"\s+|\S+\s*")


def text_pieces(text: str) -> list[str]:
    """``text`` as a stream would bring it: word by word, each word with the blanks after
    it (leading blanks a piece of their own); joined, the pieces are ``text``."""
    return _PIECE.findall(text)


class StreamedModel:
    """Streams what another model answers whole (a ``StreamingModel``): the text of each
    response word by word, ``pace`` seconds apart, then the response itself.

    For tests, showcases and benchmarks; every other attribute is the wrapped model's
    (``requests``, ``position`` of a scripted one).
    """

    def __init__(self, model: Model, *, pace: float = 0.0) -> None:
        self.model = model
        self.pace = pace

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self.model.complete(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        response = await self.model.complete(request)
        for i, piece in enumerate(text_pieces(response.message.content)):
            if i and self.pace:
                await anyio.sleep(self.pace)
            yield TextDelta(piece)
        yield response

    def __getattr__(self, name: str) -> Any:
        if name == "model":  # not set yet (a copy being made): never look for it in itself
            raise AttributeError(name)
        return getattr(self.model, name)

    def __repr__(self) -> str:
        return f"StreamedModel({self.model!r}, pace={self.pace:g})"


def echo_policy(request: ModelRequest) -> str:
    last = next((m for m in reversed(request.messages) if m.role == "user"), None)
    return f"(scripted) You said: {last.content if last else ''}"


class ScriptedProvider(Plugin):
    """Provides the offline ``scripted`` model (built in, registered by entry point)."""

    name = "scripted"

    @hookimpl
    def greenroom_model_providers(self) -> dict[str, Any]:
        return {"scripted": make_scripted}


def make_scripted(spec: str, options: Mapping[str, Any]) -> Any:
    """``scripted`` (echo), ``scripted:PATH.jsonl`` (a script) or ``scripted:FILE.py:NAME``
    / ``scripted:package.module:NAME`` (a policy function of the request). ``[model]
    stream = true`` makes it stream its text, ``pace`` seconds between words."""
    stream, pace = _stream_options(options)
    model: Model
    if not spec:
        model = PolicyModel(echo_policy)
    elif ":" in spec and not spec.endswith(".jsonl"):
        from greenroom.compose.build import import_ref

        model = PolicyModel(import_ref(spec, options.get("base_dir", ".")))
    else:
        path = Path(spec)
        if not path.is_absolute():
            path = Path(options.get("base_dir", ".")) / path
        model = ScriptedModel.from_file(path, count_usage=True)
    return StreamedModel(model, pace=pace) if stream else model


def _stream_options(options: Mapping[str, Any]) -> tuple[bool, float]:
    from greenroom.config import ConfigError

    stream, pace = options.get("stream", False), options.get("pace", 0.0)
    if not isinstance(stream, bool):
        raise ConfigError(f"expected true or false, got {stream!r}", path="model.stream")
    if isinstance(pace, bool) or not isinstance(pace, (int, float)) or not 0 <= pace <= 3600:
        raise ConfigError(f"expected seconds between 0 and 3600, got {pace!r}", path="model.pace")
    return stream, float(pace)
