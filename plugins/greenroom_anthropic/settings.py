"""The Anthropic provider's own ``[model]`` keys, checked into ``AnthropicSettings``.

``prompt_cache`` (breakpoints on or off), ``tool_search`` (the hosted search tool, the
client-side mode where greenroom's own search answers with ``tool_reference`` blocks,
or none), ``betas`` (the ``anthropic-beta`` header), ``images`` (whether tool results'
images are sent), ``thinking`` (extended thinking) and ``programmatic`` (tools called
from the model's code in Anthropic's container, ``programmatic``; ``"auto"``: Claude Opus
and Sonnet 4.5 and later). Every bad value is a ``ConfigError`` naming its key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from greenroom import ConfigError, ProviderOptions
from greenroom_anthropic.programmatic import supported

DEFAULT_MAX_TOKENS = 4096
"""The Messages API requires ``max_tokens``; this is the default when the config has none."""

HOSTED_SEARCH = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}
"""The hosted search tool per ``[model] tool_search``."""

CLIENT_SEARCH = "client"
"""``tool_search = "client"``: greenroom's own search tool answers, and its results name
the tools it found as ``tool_reference`` blocks, which the API loads."""

SEARCH_MODES = (*HOSTED_SEARCH, CLIENT_SEARCH, "off")

EXTRA_KEYS: dict[str, Any] = {
    "prompt_cache": True,
    "tool_search": "bm25",
    "betas": (),
    "images": "auto",
    "thinking": False,
    "programmatic": "auto",
}
"""The provider's own keys and their defaults (``parse_provider_options``' ``extra_keys``)."""

IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The image types the Messages API accepts in a base64 source."""

MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The API's limit for one image; a larger one is sent as its placeholder text."""

NO_IMAGES = ("claude-2", "claude-instant")
"""Name prefixes of the models that take no images (every Claude 3 and later does)."""

MIN_THINKING_BUDGET = 1024
THINKING_TYPES = ("enabled", "adaptive")
THINKING_DISPLAYS = ("summarized", "omitted")


@attrs.frozen
class AnthropicSettings:
    """What the provider's own keys decided, for one model."""

    prompt_cache: bool = True
    tool_search: str = "bm25"
    betas: tuple[str, ...] = ()
    images: bool = True
    thinking: Mapping[str, Any] | None = None
    """The request's ``thinking`` object, or None to send none."""
    programmatic: bool = False
    """Whether the tools of ``ModelRequest.programmatic`` may be called from the model's code."""

    @property
    def hosted_search(self) -> dict[str, str] | None:
        """The hosted search tool's definition, when the API searches."""
        tool = HOSTED_SEARCH.get(self.tool_search)
        return dict(tool) if tool is not None else None

    @property
    def client_search(self) -> bool:
        """Whether deferred tools are loaded by ``tool_reference`` blocks in greenroom's
        own search results."""
        return self.tool_search == CLIENT_SEARCH

    @property
    def defers(self) -> bool:
        """Whether tools in ``ModelRequest.deferred`` are sent with ``defer_loading``."""
        return self.tool_search != "off"


def read_settings(model: str, options: ProviderOptions) -> AnthropicSettings:
    """Check the provider's own keys (``options.extra``) for ``model``."""
    extra = options.extra
    prompt_cache = extra["prompt_cache"]
    if not isinstance(prompt_cache, bool):
        raise ConfigError(f"expected true or false, got {prompt_cache!r}", path="model.prompt_cache")
    search = extra["tool_search"]
    if search not in SEARCH_MODES:
        raise ConfigError(f"expected one of {', '.join(SEARCH_MODES)}, got {search!r}", path="model.tool_search")
    betas = extra["betas"]
    if isinstance(betas, str) or not isinstance(betas, Sequence) or not all(isinstance(b, str) and b for b in betas):
        raise ConfigError(f"expected a list of beta names, got {betas!r}", path="model.betas")
    return AnthropicSettings(
        prompt_cache=prompt_cache,
        tool_search=search,
        betas=tuple(betas),
        images=_images(model, extra["images"]),
        thinking=_thinking(extra["thinking"], options),
        programmatic=_programmatic(model, extra["programmatic"]),
    )


def _programmatic(model: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value != "auto":
        raise ConfigError(f'expected "auto", true or false, got {value!r}', path="model.programmatic")
    return supported(model)


def _images(model: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value != "auto":
        raise ConfigError(f'expected "auto", true or false, got {value!r}', path="model.images")
    return not model.startswith(NO_IMAGES)


def _thinking(value: Any, options: ProviderOptions) -> dict[str, Any] | None:
    """``thinking = false`` (default), ``"adaptive"``, or a table: ``{ budget_tokens = N }``
    (extended thinking with that budget), ``{ type = "adaptive" }``, and ``display``."""
    if value is False:
        return None
    if value == "adaptive":
        value = {"type": "adaptive"}
    if not isinstance(value, Mapping):
        raise ConfigError(
            f'expected false, "adaptive" or a table such as {{ budget_tokens = 4096 }}, got {value!r}',
            path="model.thinking",
        )
    unknown = sorted(set(value) - {"type", "budget_tokens", "display"})
    if unknown:
        raise ConfigError(
            f"unknown key {unknown[0]!r} (known: budget_tokens, display, type)", path=f"model.thinking.{unknown[0]}"
        )
    kind = value.get("type", "enabled" if "budget_tokens" in value else "adaptive")
    if kind not in THINKING_TYPES:
        raise ConfigError(f"expected one of {', '.join(THINKING_TYPES)}, got {kind!r}", path="model.thinking.type")
    out: dict[str, Any] = {"type": kind}
    if kind == "enabled":
        out["budget_tokens"] = _budget(value.get("budget_tokens"), options.max_tokens or DEFAULT_MAX_TOKENS)
    elif "budget_tokens" in value:
        raise ConfigError("adaptive thinking takes no budget", path="model.thinking.budget_tokens")
    display = value.get("display")
    if display is not None:
        if display not in THINKING_DISPLAYS:
            raise ConfigError(
                f"expected one of {', '.join(THINKING_DISPLAYS)}, got {display!r}", path="model.thinking.display"
            )
        out["display"] = display
    if options.temperature is not None:
        # the API takes no temperature with thinking on; better said here than by a 400
        raise ConfigError("thinking cannot be combined with a temperature; remove one", path="model.temperature")
    return out


def _budget(value: Any, max_tokens: int) -> int:
    path = "model.thinking.budget_tokens"
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"expected an integer, got {value!r}", path=path)
    if value < MIN_THINKING_BUDGET:
        raise ConfigError(f"expected at least {MIN_THINKING_BUDGET}, got {value}", path=path)
    if value >= max_tokens:
        raise ConfigError(
            f"must be less than max_tokens ({max_tokens}), which counts thinking too; raise max_tokens", path=path
        )
    return value


__all__ = ["AnthropicSettings", "read_settings"]
