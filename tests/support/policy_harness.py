"""Runs for the policy matrix: one agent with a tool of each source the policy hides
(Python, catalog, group, MCP server), driven through every path a hidden tool could leak
by, with the policy from the config or from a plugin, in a fresh or a resumed session.

A run's ``Transcript`` keeps what the model was sent, every tool result by call id, the
events, what ran (``POLICY_MARKS``) and what was loaded at each step.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs

from greenroom import Event, ModelRequest, Plugin, RunContext, ToolDescriptor, build_runtime, hookimpl
from greenroom.providers.scripted import ScriptedModel
from greenroom.run.runtime import Runtime

HERE = Path(__file__).resolve().parents[1] / "core" / "run" / "policy"  # the matrix's tools, catalogs and server
MARKER = "XYZZY-SECRET"
SOURCES: dict[str, str] = {
    "python": "py_delete_all",
    "catalog": "cat_delete_all",
    "group": "grp_delete_all",
    "mcp": "srv__delete_all",
}
"""Each source's hidden tool; each also has a ``*_read`` tool the agent may use."""
GROUP_OF = {"group": "grp", "mcp": "mcp:srv"}
VISIBLE = ("py_read", "cat_read", "grp_read", "srv__read")


class DeleteHider(Plugin):
    """Hides every ``*delete_all`` tool from ``greenroom_hidden_tools``, and keeps what
    the hook was given."""

    name = "delete-hider"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[list[str]] = []

    @hookimpl
    def greenroom_hidden_tools(self, ctx: RunContext, tools: Sequence[ToolDescriptor]) -> list[str]:
        self.seen.append([d.name for d in tools])
        return [d.name for d in tools if d.name.endswith("delete_all")]


def call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": args}


def script() -> list[dict[str, Any]]:
    """The turns of the dispatch run: one step per kind of path."""
    hidden = SOURCES.items()
    names = list(SOURCES.values())
    return [
        {"tool_calls": [call(f"direct-{s}", n, q="x") for s, n in hidden]},
        {
            "tool_calls": [
                call(f"dispatch-{s}", "deferred_tool_call", tool_name=n, arguments={"q": "x"}) for s, n in hidden
            ]
        },
        {
            "tool_calls": [
                call("search", "ToolSearch", query="delete all records"),
                call("select", "ToolSearch", query="select:" + ",".join(names)),
                call("required", "ToolSearch", query="+delete records"),
                call("browse", "ToolSearch", query=""),
            ]
        },
        {"tool_calls": [call(f"suggest-{s}", n[:-1], q="x") for s, n in hidden]},
        {
            "tool_calls": [
                call("load-group", "load_tools", group_id="grp"),
                call("load-mcp", "load_tools", group_id="mcp:srv"),
            ]
        },
        {
            "tool_calls": [
                call("load-named-group", "load_tools", group_id="grp", tool_names=["grp_delete_all"]),
                call("load-named-mcp", "load_tools", group_id="mcp:srv", tool_names=["srv__delete_all"]),
            ]
        },
        {
            "tool_calls": [call(f"after-load-{s}", n, q="x") for s, n in hidden]
            + [
                call(f"after-load-dispatch-{s}", "deferred_tool_call", tool_name=n, arguments={"q": "y"})
                for s, n in hidden
            ]
        },
        {"text": "done"},
    ]


class ProbingModel(ScriptedModel):
    """A scripted model that also notes, at each step, which groups are loaded."""

    rt: Runtime | None = None
    native_tool_search = False

    def __init__(self, turns: Sequence[Mapping[str, Any]], *, native: bool = False) -> None:
        super().__init__(turns)
        self.native_tool_search = native
        self.loaded: list[dict[str, bool]] = []

    async def complete(self, request: ModelRequest) -> Any:
        assert self.rt is not None
        self.loaded.append({g.id: g.loaded for g in self.rt.groups.values()})
        return await super().complete(request)


@attrs.define
class Transcript:
    requests: list[ModelRequest]
    results: dict[str, tuple[str, bool]]
    events: list[Event]
    marks: list[str]
    loaded: list[dict[str, bool]]
    hook_saw: list[list[str]]
    inspected: dict[str, Any] | None = None

    def kinds(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]

    def search(self, query_prefix: str) -> Event:
        return next(e for e in self.kinds("search") if str(getattr(e, "query", "")).startswith(query_prefix))

    def model_saw(self) -> str:
        """Everything the model was sent: system prompts, tools and messages."""
        parts = []
        for r in self.requests:
            parts.append(r.system_text)
            parts.extend(json.dumps(d.to_json()) for d in r.tools)
            parts.extend(m.content for m in r.messages)
        return "\n".join(parts)


def write_config(folder: Path, *, policy: bool | str, strategy: str = "dispatch") -> Path:
    """The agent's config: every source, deferral on, and ``[tools.policy]`` if asked
    (``policy`` may be the table's own lines)."""
    server = json.dumps(str(HERE / "policy_server.py"))
    marks = json.dumps(str(folder / "marks.txt"))
    text = f"""
[agent]
id = "policy-matrix"
max_steps = 12

[tools]
python = ["{HERE / "policy_tools.py"}:PYTHON_TOOLS"]
catalogs = ["{HERE / "catalog.jsonl"}"]

[[tools.groups]]
id = "grp"
loader = "{HERE / "policy_tools.py"}:load_group"
catalog = "{HERE / "group_catalog.jsonl"}"
description = "Records of the group."

[[tools.mcp]]
name = "srv"
command = {json.dumps(sys.executable)}
args = [{server}]
env = {{ POLICY_MARKS = {marks} }}
description = "Records behind an MCP server."

[plugins.deferred-tools]
enabled = true
strategy = "{strategy}"
"""
    if policy:
        text += "\n[tools.policy]\n" + (policy if isinstance(policy, str) else 'deny = ["*delete_all"]') + "\n"
    path = folder / f"agent-{strategy}-{'policy' if policy else 'open'}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def marks(folder: Path) -> list[str]:
    path = folder / "marks.txt"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


async def _drive(
    config: Path, turns: list[dict[str, Any]], *, plugin: DeleteHider | None, native: bool, session: Path | None
) -> tuple[Transcript, Runtime]:
    model = ProbingModel(turns, native=native)
    rt = build_runtime(config, model=model, extra_plugins=[plugin] if plugin else [])
    model.rt = rt
    events: list[Event] = []
    rt.events.subscribe(events.append)
    try:
        s = rt.load_session(session) if session is not None and session.exists() else rt.session()
        await rt.run(s, "clean up the records")
        if session is not None:
            s.save(session)
    finally:
        await rt.aclose()
    results: dict[str, tuple[str, bool]] = {}
    for m in s.messages:
        if m.role == "tool" and m.tool_call_id:
            results[m.tool_call_id] = (m.content, bool(m.is_error))
    transcript = Transcript(
        requests=list(model.requests),
        results=results,
        events=events,
        marks=marks(config.parent),
        loaded=model.loaded,
        hook_saw=list(plugin.seen) if plugin else [],
    )
    return transcript, rt


def run_case(folder: Path, origin: str, session: str, strategy: str) -> Transcript:
    """One cell's run. ``resumed``: a session made without the policy, its listing
    frozen with the hidden tools in it, then resumed with the policy."""
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["POLICY_MARKS"] = str(folder / "marks.txt")
    native = strategy == "native"
    turns = [{"text": "done"}] if native else script()
    saved = folder / "session.json" if session == "resumed" else None

    async def go() -> Transcript:
        if saved is not None:
            open_config = write_config(folder, policy=False, strategy=strategy)
            before, _ = await _drive(open_config, [{"text": "first"}], plugin=None, native=native, session=saved)
            listing = before.requests[0].system_text + " ".join(d.name for d in before.requests[0].tools)
            assert "py_delete_all" in listing, "the session made without the policy should list the tool"
            (folder / "marks.txt").unlink(missing_ok=True)
        config = write_config(folder, policy=origin == "config", strategy=strategy)
        plugin = DeleteHider() if origin == "plugin" else None
        transcript, _ = await _drive(config, turns, plugin=plugin, native=native, session=saved)
        if saved is not None:  # a second run of the resumed session: no second rebuild
            again, _ = await _drive(
                config, [{"text": "again"}], plugin=DeleteHider() if plugin else None, native=native, session=saved
            )
            transcript.events += [e for e in again.events if e.kind == "listing_rebuilt"]
            transcript.requests += again.requests
        return transcript

    return anyio.run(go)


def hidden_in(names: Iterable[str]) -> set[str]:
    return set(names) & set(SOURCES.values())
