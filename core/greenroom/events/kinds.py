"""Every event a run emits, as typed records: what the trace writes and the live view shows."""

from __future__ import annotations

import enum
import json
import traceback
from typing import Any

import attrs

from greenroom.failures import PluginHookError, RunFailure


@attrs.frozen
class Event:
    """Base of every event; ``kind`` names it in traces."""

    kind: str = attrs.field(init=False, default="event")

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self, recurse=True)

    def describe(self) -> str | None:
        """One line of plain text for the live view; None keeps the event out of it."""
        return None

    @property
    def style(self) -> str:
        """The rich style of the live-view line (``"red"``, ``"dim"`` ...)."""
        return ""


@attrs.frozen
class RunStarted(Event):
    kind: str = attrs.field(init=False, default="run_start")
    run_id: str = ""
    session_id: str = ""
    agent_id: str = ""
    input: str = ""
    run_kind: str = "agent"
    """Who takes the turns: ``agent`` (a model), ``client`` (an MCP client of ``greenroom serve``), ``preview``."""


@attrs.frozen
class RequestSent(Event):
    kind: str = attrs.field(init=False, default="request")
    step: int = 0
    system_tokens: int = 0
    tools_tokens: int = 0
    messages_tokens: int = 0
    prefix_hash: str = ""
    tool_names: tuple[str, ...] = ()
    deferred_tools: tuple[str, ...] = ()
    """Tools sent for the provider's hosted search to load (not counted in ``tools_tokens``)."""

    @property
    def total_tokens(self) -> int:
        return self.system_tokens + self.tools_tokens + self.messages_tokens

    def describe(self) -> str:
        # the total first and the prefix hash last: a narrow console cuts the hash, not a number
        return (
            f"step {self.step}: {self.total_tokens:,} tokens = sys {self.system_tokens:,} "
            f"+ tools {self.tools_tokens:,} ({len(self.tool_names)}) + msgs {self.messages_tokens:,}  "
            f"prefix {self.prefix_hash[:8]}"
        )

    @property
    def style(self) -> str:
        return "cyan"


@attrs.frozen
class ResponseReceived(Event):
    kind: str = attrs.field(init=False, default="response")
    step: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    text: str = ""
    tool_calls: tuple[dict[str, Any], ...] = ()

    def describe(self) -> str | None:
        if self.tool_calls:
            return "\n".join(f"  calls {c['name']} {short(c['arguments'])}" for c in self.tool_calls)
        return f"  answer: {self.text}" if self.text else None

    @property
    def style(self) -> str:
        return "" if self.tool_calls else "green"


@attrs.frozen
class ToolCallResolved(Event):
    kind: str = attrs.field(init=False, default="resolve")
    step: int = 0
    call_id: str = ""
    requested: str = ""
    resolved: str = ""

    def describe(self) -> str:
        return f"  resolved {self.requested} -> {self.resolved}"


@attrs.frozen
class ClientCalled(Event):
    """A client's turn (``greenroom serve``): the client called a tool itself, with no model
    response before it (so no ``response`` event and no AfterInference)."""

    kind: str = attrs.field(init=False, default="client_call")
    step: int = 0
    call_id: str = ""
    tool: str = ""

    def describe(self) -> str:
        return f"client calls {self.tool}"


class Rejection(enum.Enum):
    """Why a call was refused before any gate saw it."""

    UNKNOWN_TOOL = "unknown_tool"
    UNUSABLE_TOOL = "unusable_tool"
    MALFORMED_ARGUMENTS = "malformed_arguments"
    INVALID_ARGUMENTS = "invalid_arguments"
    PLUGIN_FAILED = "plugin_failed"
    INTERNAL_ERROR = "internal_error"


@attrs.frozen
class ToolCallRejected(Event):
    """A call refused before BeforeToolExecute (unknown tool, invalid arguments, a resolve
    hook that failed): no gate saw it and AfterToolExecute is not called for it. Its error
    result follows as ``tool_result``."""

    kind: str = attrs.field(init=False, default="tool_rejected")
    step: int = 0
    call_id: str = ""
    tool: str = ""
    reason: str = ""

    def describe(self) -> str:
        return f"  rejected {self.tool}: {self.reason}"

    @property
    def style(self) -> str:
        return "red"


@attrs.frozen
class GroupLoaded(Event):
    kind: str = attrs.field(init=False, default="group_load")
    step: int = 0
    group: str = ""
    tools: tuple[str, ...] = ()
    error: str | None = None

    def describe(self) -> str:
        return f"  group load {self.group}: {self.error or f'{len(self.tools)} tools'}"

    @property
    def style(self) -> str:
        return "red" if self.error else "magenta"


@attrs.frozen
class ToolsRelisted(Event):
    """A tool source listed its tools again and they changed (an MCP server that sent
    ``notifications/tools/list_changed``): what it added and what it took away."""

    kind: str = attrs.field(init=False, default="tools_relisted")
    group: str = ""
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"  tools changed in {self.group}: +{len(self.added)} -{len(self.removed)}"

    @property
    def style(self) -> str:
        return "magenta"


@attrs.frozen
class PluginError(Event):
    """A plugin's hook raised, named by plugin, distribution and hook."""

    kind: str = attrs.field(init=False, default="error")
    plugin: str = ""
    distribution: str = ""
    hook: str = ""
    message: str = ""
    step: int | None = None
    call_id: str | None = None
    """The tool call a per-call hook failed on (its call alone failed); None for a phase hook."""

    @classmethod
    def of(cls, error: PluginHookError, step: int | None = None, call_id: str | None = None) -> PluginError:
        return cls(
            plugin=error.plugin,
            distribution=error.distribution,
            hook=error.hook,
            message=error.reason,
            step=step,
            call_id=call_id,
        )

    def describe(self) -> str:
        # worded as the error a failed run ends with (``PluginHookError``): one line, whatever the hook
        dist = f" (distribution {self.distribution})" if self.distribution else ""
        return f"plugin {self.plugin!r}{dist} failed in hook {self.hook}: {self.message}"

    @property
    def style(self) -> str:
        return "red"


@attrs.frozen
class PluginWarning(Event):
    """A plugin carried on without something it wanted (a store that is down, say)."""

    kind: str = attrs.field(init=False, default="warning")
    plugin: str = ""
    hook: str = ""
    message: str = ""

    def describe(self) -> str:
        return f"plugin {self.plugin} ({self.hook}): {self.message}"

    @property
    def style(self) -> str:
        return "yellow"


@attrs.frozen
class StableSectionChanged(Event):
    """A system section marked ``stable`` changed on several steps in a row: the
    provider's cached prompt prefix is rebuilt every time. A section that changes on
    purpose every step should be ``stable=False`` (it is then placed after the cached
    prefix)."""

    kind: str = attrs.field(init=False, default="stable_section_changed")
    step: int = 0
    key: str = ""

    def describe(self) -> str:
        return f"  stable section {self.key!r} changes every step: mark it stable=False"

    @property
    def style(self) -> str:
        return "yellow"


@attrs.frozen
class ToolUnusable(Event):
    """A tool's parameter schema is invalid: the tool is left out of every list the model
    sees, and a call to it gets ``problem`` as an error result. Emitted when the tool loads
    (or its group's catalog is read), or at its first call for what only the meta-schema
    check finds."""

    kind: str = attrs.field(init=False, default="tool_unusable")
    tool: str = ""
    fault: str = ""
    """What kind of problem (``greenroom.tools.schema.problem.SchemaFault`` values: ``unknown_type``,
    ``bad_pattern``, ``dangling_ref`` ...)."""
    where: str = ""
    """A JSON pointer into the schema (``#/properties/q/type``)."""
    problem: str = ""

    def describe(self) -> str:
        return f"tool {self.tool} is unusable: its parameter schema is invalid ({self.where}: {self.problem})"

    @property
    def style(self) -> str:
        return "yellow"


_MESSAGE_CHARS = 2_000
_TRACEBACK_CHARS = 20_000


def short_text(text: str, limit: int) -> str:
    """``text`` with its middle left out when it is over ``limit`` characters."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half:,} characters left out ...]\n{text[-half:]}"


@attrs.frozen
class InternalError(Event):
    """greenroom itself failed on a tool call (a bug, or a value it could not handle): the
    call got an error result and the run went on. For the trace only: the traceback never
    reaches the model."""

    kind: str = attrs.field(init=False, default="internal_error")
    step: int = 0
    call_id: str = ""
    tool: str = ""
    error_type: str = ""
    message: str = ""
    traceback: str = ""

    @classmethod
    def of(cls, error: BaseException, step: int, call_id: str, tool: str) -> InternalError:
        # an exception's own text may fail (a broken __str__) or be huge: neither may stop the report
        try:
            message = str(error)
        except Exception:
            message = "<the exception's text could not be read>"
        trace = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        return cls(
            step=step,
            call_id=call_id,
            tool=tool,
            error_type=type(error).__name__,
            message=short_text(message, _MESSAGE_CHARS),
            traceback=short_text(trace, _TRACEBACK_CHARS),
        )

    def describe(self) -> str:
        return f"  internal error running {self.tool}: {self.error_type}: {short(self.message, 200)}"

    @property
    def style(self) -> str:
        return "red"


@attrs.frozen
class RunFinished(Event):
    kind: str = attrs.field(init=False, default="run_end")
    run_id: str = ""
    steps: int = 0
    stop_reason: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    error: str | None = None
    failure: RunFailure | None = None
    """What ended the run when ``stop_reason`` is ``error``, as data."""


def short(value: Any, width: int = 90) -> str:
    """``value`` as one line of at most ``width`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."
