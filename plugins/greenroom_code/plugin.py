"""The code-mode plugin's hooks.

- Contributions: the ``run_code`` tool, the state types (``NativeCalls`` per run,
  ``Warned`` per session); ``greenroom config check`` says whether Deno is there.
- RunStart: where the model calls tools from code on its provider's side
  (``RunContext.hosted_programmatic_calls``) and ``native`` is on, that is used and
  ``run_code`` left out; elsewhere the run's ``Scripting`` names ``run_code``, so a tool
  search answers with the signatures a script calls (deferred-tools does) and its listing
  says so, and a model run says once per session which models have their own.
- BeforeInference (last, once the other plugins have shaped the tools): with the
  provider's calling, ``run_code`` leaves the request and every tool sent may be called
  from the model's code (``RequestDraft.programmatic``).

Opt-in: ``[plugins] enable = ["code-mode"]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from greenroom import (
    ConfigError,
    Plugin,
    PluginWarning,
    RequestDraft,
    RunContext,
    RunKind,
    Scope,
    Scripting,
    StateRegistry,
    Tool,
    ToolGroup,
    ToolSet,
    hookimpl,
)
from greenroom_code.config import CodeConfig
from greenroom_code.sandbox import DenoMissing, find_deno
from greenroom_code.tool import RUN_CODE, RunCode

NATIVE_MODELS = (
    "Anthropic's Claude Opus and Sonnet 4.5 and later (code execution with allowed_callers), and OpenAI "
    'models with programmatic tool calling through the Responses API ([model] api = "responses", '
    "programmatic = true)"
)
"""The models whose provider runs their code and its tool calls, as the warning names them."""


@attrs.define
class NativeCalls:
    """This run's model calls tools from its own code (run scope): what it may call, as last sent."""

    on: bool = False
    names: frozenset[str] = frozenset()


@attrs.define
class Warned:
    """Whether this session was told that run_code stands in for the provider's calling."""

    done: bool = False


class CodeModePlugin(Plugin):
    """Lets the model write one script that calls its tools, instead of one call per step."""

    name = "code-mode"
    config_class = CodeConfig
    default_enabled = False
    nonblocking = True
    """Its hooks compute and never wait."""

    config: CodeConfig

    @hookimpl
    def greenroom_register_state(self, registry: StateRegistry) -> None:
        registry.register(NativeCalls, Scope.RUN, owner=self.name)
        registry.register(Warned, Scope.SESSION, owner=self.name)

    @hookimpl
    def greenroom_tools(self, tools: ToolSet, groups: Mapping[str, ToolGroup]) -> Iterable[Tool]:
        return [RunCode(self.config)]

    @hookimpl
    def greenroom_run_start(self, ctx: RunContext) -> None:
        if self.config.native and ctx.hosted_programmatic_calls:
            ctx.state[NativeCalls].on = True
            return
        ctx.state[Scripting].tool = RUN_CODE
        warned = ctx.session_state[Warned]
        if self.config.native and ctx.kind is RunKind.AGENT and not warned.done:
            warned.done = True
            ctx.emit(
                PluginWarning(
                    plugin=self.name,
                    hook="greenroom_run_start",
                    message=(
                        f"{RUN_CODE} stands in (greenroom's sandbox) for the provider's programmatic tool calling, "
                        f"which {ctx.model_name} has not; models that have it: {NATIVE_MODELS}"
                    ),
                )
            )

    @hookimpl(trylast=True)
    def greenroom_before_inference(self, ctx: RunContext, request: RequestDraft) -> None:
        native = ctx.state[NativeCalls]
        if not native.on:
            return
        request.tools = [d for d in request.base_tools if d.name != RUN_CODE]
        names = frozenset(d.name for d in request.tools)
        if names != native.names:
            native.names = names  # the same set object while the tools stay: the provider's memo holds
        request.programmatic = native.names

    @hookimpl
    def greenroom_check_config(self, config: Any, runtime: Any) -> Iterable[ConfigError] | None:
        try:
            find_deno(self.config.deno)
        except DenoMissing as exc:
            return [ConfigError(str(exc), path="plugins.code-mode.deno" if self.config.deno else "plugins.code-mode")]
        return None
