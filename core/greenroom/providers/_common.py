"""What the OpenAI and Anthropic providers share: options, keys, the lazy SDK import,
SDK-error translation, tool-argument parsing and the retrying, cancellable call.

Nothing here imports an SDK at module level, so ``greenroom plugins`` lists the
providers on a machine without the ``openai`` / ``anthropic`` extras.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, ClassVar

import anyio
import anyio.lowlevel
import attrs

from greenroom.config import ConfigError
from greenroom.models import Message, ModelRequest, ModelResponse, SystemSection
from greenroom.providers._retry import RetryPolicy, call_with_retries, parse_retry_after
from greenroom.providers.errors import (
    MissingApiKeyError,
    MissingExtraError,
    ProviderConnectionError,
    ProviderError,
    ProviderResponseError,
    ProviderTimeoutError,
    error_for_status,
)
from greenroom.redact import public_url

DEFAULT_TIMEOUT = 120.0
"""Seconds one attempt may take. The SDKs default to 600 s, far too long for an agent
step to hang silently; a long generation can raise it with ``[model] timeout``."""

NO_KEY_PLACEHOLDER = "not-needed"
"""Sent as the key when ``api_key_env = ""`` (local servers that check no key); the SDK
refuses to start without some key."""


@attrs.frozen
class ProviderOptions:
    """The ``[model]`` table, checked. Provider-specific keys are in ``extra``."""

    base_url: str | None = None
    api_key_env: str = ""
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = 2
    temperature: float | None = None
    max_tokens: int | None = None
    extra_body: Mapping[str, Any] = attrs.field(factory=dict)
    extra: Mapping[str, Any] = attrs.field(factory=dict)


def _number(key: str, value: Any, *, minimum: float, integer: bool = False, exclusive: bool = False) -> Any:
    kind = "an integer" if integer else "a number"
    ok_type = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok_type or not math.isfinite(value):
        raise ConfigError(f"expected {kind}, got {value!r}", path=f"model.{key}")
    if value < minimum or (exclusive and value == minimum):
        bound = f"> {minimum:g}" if exclusive else f">= {minimum:g}"
        raise ConfigError(f"expected {kind} {bound}, got {value!r}", path=f"model.{key}")
    return value


def parse_options(
    provider: str,
    options: Mapping[str, Any],
    *,
    default_key_env: str,
    extra_keys: Mapping[str, Any] | None = None,
) -> ProviderOptions:
    """Check the ``[model]`` options; every problem names the key and what was expected.

    ``extra_keys`` are the provider-specific keys with their defaults (their values are
    checked by the provider).
    """
    extra_keys = extra_keys or {}
    known = {
        "base_dir",  # added by greenroom.compose, not a user key
        "base_url",
        "api_key_env",
        "timeout",
        "max_retries",
        "temperature",
        "max_tokens",
        "extra_body",
        *extra_keys,
    }
    if "api_key" in options:
        # keys in config files end up in version control; DESIGN.md section 8
        raise ConfigError(
            "API keys are never read from config files; put the key in an environment variable "
            f'(default {default_key_env}) and, for another name, set api_key_env = "NAME"',
            path="model.api_key",
        )
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(
            f"unknown option(s) for the {provider} provider: {', '.join(unknown)} "
            f"(known: {', '.join(sorted(known - {'base_dir'}))})",
            path=f"model.{unknown[0]}",
        )
    base_url = options.get("base_url")
    if base_url is not None and (not isinstance(base_url, str) or not base_url.strip()):
        raise ConfigError(f"expected a URL string, got {base_url!r}", path="model.base_url")
    key_env = options.get("api_key_env", default_key_env)
    if not isinstance(key_env, str):
        raise ConfigError(f"expected the name of an environment variable, got {key_env!r}", path="model.api_key_env")
    extra_body = options.get("extra_body", {})
    if not isinstance(extra_body, Mapping):
        raise ConfigError(f"expected a table, got {extra_body!r}", path="model.extra_body")
    temperature = options.get("temperature")
    max_tokens = options.get("max_tokens")
    return ProviderOptions(
        base_url=base_url,
        api_key_env=key_env,
        timeout=float(_number("timeout", options.get("timeout", DEFAULT_TIMEOUT), minimum=0, exclusive=True)),
        max_retries=_number("max_retries", options.get("max_retries", 2), minimum=0, integer=True),
        temperature=None if temperature is None else float(_number("temperature", temperature, minimum=0)),
        max_tokens=None if max_tokens is None else _number("max_tokens", max_tokens, minimum=1, integer=True),
        extra_body=dict(extra_body),
        extra={k: options.get(k, default) for k, default in extra_keys.items()},
    )


def import_sdk(module: str, extra: str, provider: str) -> ModuleType:
    """Import a provider SDK, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"the {provider} provider needs the {module!r} package, which is not installed "
            f"({exc}); install it with: pip install 'greenroom[{extra}]'"
        ) from None


def api_key(provider: str, env_name: str) -> str:
    """The key from the environment (never from a file); a clear error when missing."""
    if env_name == "":
        return NO_KEY_PLACEHOLDER
    value = os.environ.get(env_name, "").strip()
    if not value:
        raise MissingApiKeyError(
            f"{provider}: no API key: the environment variable {env_name} is not set (or empty). "
            f"Set it, e.g. export {env_name}=..., or name another variable with "
            # no "[model]" here: the CLI prints through rich, which takes it for markup
            'api_key_env = "NAME" in the model table (api_key_env = "" for a local server that needs no key)'
        )
    return value


def ordered_system(sections: Sequence[SystemSection]) -> tuple[list[SystemSection], list[SystemSection]]:
    """Stable sections, then the others, both in their given order, empty ones dropped.

    Stable sections go first so that the cacheable prefix ends before anything that
    changes from step to step.
    """
    stable = [s for s in sections if s.stable and s.text]
    volatile = [s for s in sections if not s.stable and s.text]
    return stable, volatile


UNANSWERED_CALL = "the call did not complete: the run stopped before it returned a result"
"""The result sent for a tool call that has none in the history (a run cancelled while
its tools ran leaves the assistant's calls unanswered)."""


def paired_messages(messages: Sequence[Message]) -> list[Message]:
    """The history with every tool call answered exactly once, right after its turn.

    All three APIs reject a request in which an assistant's tool call has no result
    before the next user or assistant turn, or a result answers no call of the turn
    before it. A run cancelled while its tools ran leaves such calls in the session, and
    every later run on it would fail; here each unanswered call gets an error result
    and a result that answers nothing is dropped.
    """
    out: list[Message] = []
    pending: dict[str, None] = {}  # ids of the last assistant turn's unanswered calls, in order

    def answer_pending() -> None:
        for call_id in pending:
            out.append(Message(role="tool", content=UNANSWERED_CALL, tool_call_id=call_id, is_error=True))
        pending.clear()

    for m in messages:
        if m.role == "tool":
            if m.tool_call_id in pending:
                del pending[m.tool_call_id]
                out.append(m)
            continue
        answer_pending()
        out.append(m)
        if m.role == "assistant":
            pending.update((c.id, None) for c in m.tool_calls)
    answer_pending()
    return out


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str]:
    """A model's tool-call arguments -> (object or None when malformed, the raw text).

    The raw text is kept so the next request replays exactly what the model wrote, and
    so the runtime's error result can quote it.
    """
    if isinstance(raw, Mapping):  # some compatible servers send an object, not a string
        return dict(raw), json.dumps(raw, ensure_ascii=False)
    text = "" if raw is None else str(raw)
    if not text.strip():
        return {}, text  # vLLM / Ollama send "" for tools without parameters
    try:
        value = json.loads(text)
    except ValueError:
        return None, text
    return (value, text) if isinstance(value, dict) else (None, text)


def error_detail(body: Any, fallback: str) -> str:
    """The provider's own message from an error body.

    OpenAI and Anthropic both send ``{"error": {"message": ..., "type": ...}}``; some
    compatible servers send ``{"error": "..."}`` or ``{"message": "..."}``.
    """
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping):
            message = err.get("message")
            kind = err.get("type") or err.get("code")
            if isinstance(message, str) and message:
                return f"{message} ({kind})" if isinstance(kind, str) and kind else message
        elif isinstance(err, str) and err:
            return err
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return fallback


def _event_loop() -> object:
    """Something that identifies the running event loop (compared with ``==``)."""
    current_token = getattr(anyio.lowlevel, "current_token", None)  # anyio >= 4.11
    if current_token is not None:
        return current_token()
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # not asyncio: the only other anyio backend is trio
        import trio

        return trio.lowlevel.current_trio_token()


def _excerpt(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def _endpoint(exc: Any) -> str:
    try:
        return public_url(str(exc.request.url))
    except Exception:
        return ""


class SDKModel:
    """The part of a provider model that is the same for every SDK.

    Subclasses set ``provider``, ``sdk_module``, ``extra`` and ``client_class``, and
    implement ``build_body``, ``sdk_method`` and ``parse``. ``complete`` builds the body once, then sends
    it with retries, each attempt under a deadline, and parses the answer.
    """

    provider: ClassVar[str] = ""
    sdk_module: ClassVar[str] = ""
    extra: ClassVar[str] = ""
    client_class: ClassVar[str] = ""
    """The SDK's async client class (``AsyncOpenAI``, ``AsyncAnthropic``)."""

    def __init__(self, model: str, options: ProviderOptions, sdk: ModuleType | None = None) -> None:
        if not model:
            raise ConfigError(f"name the model after the prefix, e.g. {self.provider}:MODEL_NAME", path="agent.model")
        self.model = model
        self.options = options
        self.sdk = sdk if sdk is not None else import_sdk(self.sdk_module, self.extra, self.provider)
        self.retry = RetryPolicy(max_retries=options.max_retries)
        self._client: Any = None
        self._client_loop: object = None

    # ------------------------------------------------------------------ subclass API
    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    required: ClassVar[tuple[str, ...]] = ("model",)
    """Body keys passed to the SDK method as keyword arguments; the rest go in
    ``extra_body``. The body is already the exact wire JSON, and SDK releases add and
    drop keyword arguments (anthropic 2.x has no ``temperature``), so only the keys
    every release takes are given by name."""

    def sdk_method(self, client: Any) -> Any:
        """The SDK's create method for this API."""
        raise NotImplementedError

    async def send(self, client: Any, body: dict[str, Any]) -> Any:
        """One HTTP call through the SDK; returns the SDK's response object."""
        named = {k: v for k, v in body.items() if k in self.required}
        extra = {k: v for k, v in body.items() if k not in self.required}
        extra.update(self.options.extra_body)  # the config's extra_body wins: it is the escape hatch
        if extra:
            named["extra_body"] = extra
        headers = self.request_headers()
        if headers:
            named["extra_headers"] = headers
        return await self.sdk_method(client)(**named)

    def request_headers(self) -> dict[str, str]:
        """HTTP headers added to every call (none by default)."""
        return {}

    def parse(self, data: Mapping[str, Any], request: ModelRequest) -> ModelResponse:
        raise NotImplementedError

    def make_client(self, key: str) -> Any:
        return getattr(self.sdk, self.client_class)(
            api_key=key,
            base_url=self.options.base_url,
            timeout=self.options.timeout,
            max_retries=0,  # greenroom's own loop retries (see _retry.py)
        )

    # ------------------------------------------------------------------ shared
    @property
    def client(self) -> Any:
        """The SDK client, made on first use: the key is read then, so building a
        runtime (``greenroom inspect``) needs no key, and the client's connection pool
        belongs to the event loop that uses it."""
        if self._client is None:
            self._client = self.make_client(api_key(self.provider, self.options.api_key_env))
        return self._client

    async def complete(self, request: ModelRequest) -> ModelResponse:
        body = self.build_body(request)
        raw = await call_with_retries(lambda: self._attempt(body), self.retry)
        # warnings off: the SDK's models warn when the server sent something other than
        # the documented type (a string tool input); parse() copes, the data is kept as sent
        data = raw.to_dict(warnings=False) if hasattr(raw, "to_dict") else raw
        if isinstance(data, str):
            # the SDKs hand back the text of a non-JSON answer: usually a base_url that
            # points at a web page or a proxy's error page rather than at the API
            raise ProviderResponseError(
                self.provider, f"expected JSON, got text: {_excerpt(data)!r} (check base_url)", model=self.model
            )
        if not isinstance(data, Mapping):
            raise ProviderResponseError(
                self.provider, f"expected a JSON object, got {type(data).__name__}", model=self.model
            )
        return self.parse(data, request)

    async def _client_for_this_loop(self) -> Any:
        loop = _event_loop()
        if self._client is not None and self._client_loop != loop:
            # The pooled connections belong to the loop that opened them, which is gone
            # (an earlier anyio.run); reusing them fails with "Event loop is closed".
            # Closing marks the client closed before it touches a connection, which is
            # what matters: otherwise the SDK's finalizer schedules the same failing
            # close on whatever loop runs when it is collected.
            stale, self._client = self._client, None
            try:
                await stale.close()
            except RuntimeError:
                pass  # the dead loop's sockets are left to the garbage collector
        client = self.client
        self._client_loop = loop
        return client

    async def _attempt(self, body: dict[str, Any]) -> Any:
        client = await self._client_for_this_loop()
        # The SDK's own timeout bounds each read; this deadline bounds the whole attempt
        # (a server that trickles bytes never trips a read timeout), and it cancels the
        # HTTP call through the anyio scope. The second of grace lets the SDK report
        # first when it can.
        try:
            with anyio.fail_after(self.options.timeout + 1.0):
                return await self.send(client, body)
        except TimeoutError:
            raise ProviderTimeoutError(
                self.provider, f"no answer within {self.options.timeout:g} s", model=self.model
            ) from None
        except self.sdk.APIError as exc:
            raise self.translate(exc) from exc
        except json.JSONDecodeError as exc:
            # a body labelled JSON that is not: the SDKs let the decoder's error through
            raise ProviderResponseError(
                self.provider, f"the response body is not valid JSON ({exc})", model=self.model
            ) from None

    def translate(self, exc: Any) -> ProviderError:
        """An SDK exception -> the matching ``ProviderError``."""
        sdk = self.sdk
        where = _endpoint(exc)
        if isinstance(exc, sdk.APITimeoutError):
            return ProviderTimeoutError(
                self.provider, f"no answer within {self.options.timeout:g} s", model=self.model, endpoint=where
            )
        if isinstance(exc, sdk.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f"{exc.message} ({type(cause).__name__}: {cause})" if cause else str(exc.message)
            return ProviderConnectionError(self.provider, detail, model=self.model, endpoint=where)
        if isinstance(exc, sdk.APIStatusError):
            response = exc.response
            return error_for_status(
                self.provider,
                exc.status_code,
                error_detail(exc.body, str(exc.message)),
                retry_after=parse_retry_after(response.headers),
                model=self.model,
                endpoint=where,
            )
        return ProviderResponseError(self.provider, str(getattr(exc, "message", exc)), model=self.model, endpoint=where)

    async def aclose(self) -> None:
        """Close the SDK client's connections (safe to call twice)."""
        client, loop = self._client, self._client_loop
        self._client = self._client_loop = None
        # connections opened on another (finished) loop cannot be closed from this one
        if client is not None and loop in (None, _event_loop()):
            await client.close()

    def __repr__(self) -> str:
        where = f" at {public_url(self.options.base_url)}" if self.options.base_url else ""
        return f"<{type(self).__name__} {self.provider}:{self.model}{where}>"
