"""The ``[plugins.code-mode]`` section: where Deno is, and what bounds one script."""

from __future__ import annotations

import attrs

from greenroom_code.sandbox import Limits


@attrs.frozen
class CodeConfig:
    """How ``run_code`` runs scripts. Every key is optional."""

    deno: str | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.min_len(1)),
        metadata={
            "description": (
                "The Deno binary that runs scripts. Default: the one the 'deno' package installs "
                "(pip install 'greenroom[code]'), else deno on PATH."
            )
        },
    )
    timeout: float | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.gt(0)),
        metadata={
            "description": (
                "Seconds one script may run, the tool calls it makes included; its process is killed "
                "then. Default: the agent's tool_timeout."
            )
        },
    )
    memory_mb: int = attrs.field(
        default=256,
        validator=[attrs.validators.ge(32), attrs.validators.le(16384)],
        metadata={"description": "Megabytes a script may allocate (its JavaScript heap, and its buffers beside it)."},
    )
    max_calls: int = attrs.field(
        default=64,
        validator=[attrs.validators.ge(1), attrs.validators.le(10_000)],
        metadata={"description": "Tool calls one script may make; one more ends the script with an error."},
    )
    console_chars: int = attrs.field(
        default=4000,
        validator=[attrs.validators.ge(0), attrs.validators.le(1_000_000)],
        metadata={"description": "Characters of a script's console output kept after its result."},
    )
    max_message_bytes: int = attrs.field(
        default=1 << 20,
        validator=[attrs.validators.ge(1024), attrs.validators.le(1 << 26)],
        metadata={
            "description": (
                "Bytes of one message from a script (a tool call's arguments, or its return value); "
                "a larger one ends the script with an error."
            )
        },
    )
    native: bool = attrs.field(
        default=True,
        metadata={
            "description": (
                "Where the model calls tools from code on its provider's side (Anthropic's and OpenAI's "
                "programmatic tool calling), use that and leave run_code out; greenroom answers the calls "
                "its sandbox makes. False: always run_code."
            )
        },
    )

    @property
    def limits(self) -> Limits:
        return Limits(
            memory_mb=self.memory_mb,
            max_calls=self.max_calls,
            console_chars=self.console_chars,
            max_message_bytes=self.max_message_bytes,
        )
