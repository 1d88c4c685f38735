"""What the OpenAI and Anthropic providers share: the SDK model (client, the retrying,
cancellable call) and SDK-error translation. Options, keys and the lazy SDK import are
``_options``; message shaping and tool-argument parsing are ``_messages``.

Nothing here imports an SDK at module level, so ``greenroom plugins`` lists the
providers on a machine without the ``openai`` / ``anthropic`` extras.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from types import ModuleType
from typing import Any, ClassVar

import anyio
import anyio.lowlevel

from greenroom._support.redact import Redactor, public_url, remember_secrets
from greenroom.config import ConfigError
from greenroom.models import ModelError, ModelRequest, ModelResponse
from greenroom.providers._options import (
    NO_KEY_PLACEHOLDER,
    ProviderOptions,
    api_key,
    import_sdk,
)
from greenroom.providers._retry import RetryPolicy, call_with_retries, parse_retry_after
from greenroom.providers.errors import (
    ProviderConnectionError,
    ProviderError,
    ProviderResponseError,
    ProviderTimeoutError,
    error_for_status,
)


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


async def _close_from_another_loop(client: Any) -> None:
    """Mark an SDK client whose connections belong to another, finished event loop closed.
    Its connections cannot be closed from this loop, but closing marks the client closed
    before it touches one, which is what matters: otherwise the SDK's finalizer schedules
    the same failing close on whatever loop runs when it is collected."""
    try:
        await client.close()
    except RuntimeError:
        pass  # the dead loop's sockets are left to the garbage collector


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
        # What a server sends back can echo the key (a compatible server quoting the
        # Authorization header in a 401): every error is cleaned before anyone sees it.
        self._redact = Redactor(())

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
    def check_ready(self) -> None:
        """Raise what the first call would raise before reaching the network (no API key):
        ``greenroom config check`` asks, without making a client or calling anything."""
        api_key(self.provider, self.options.api_key_env)

    @property
    def client(self) -> Any:
        """The SDK client, made on first use: the key is read then, so building a
        runtime (``greenroom inspect``) needs no key, and the client's connection pool
        belongs to the event loop that uses it."""
        if self._client is None:
            key = api_key(self.provider, self.options.api_key_env)
            if key != NO_KEY_PLACEHOLDER:
                self._redact = Redactor([key])
                remember_secrets([key])  # a key is secret in any text, not only this provider's
            self._client = self.make_client(key)
        return self._client

    async def complete(self, request: ModelRequest) -> ModelResponse:
        body = self.build_body(request)
        raw = await call_with_retries(lambda: self._attempt(body), self.retry)
        try:
            return self._read(raw, request)
        except ProviderError as exc:
            raise exc.redacted(self._redact) from None

    def _read(self, raw: Any, request: ModelRequest) -> ModelResponse:
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
            # (an earlier anyio.run); reusing them fails with "Event loop is closed"
            stale, self._client = self._client, None
            await _close_from_another_loop(stale)
        client = self.client
        self._client_loop = loop
        return client

    async def _attempt(self, body: dict[str, Any]) -> Any:
        """One attempt; its error is already clean of secrets when the retry loop logs it."""
        try:
            return await self._send_once(body)
        except ProviderError as exc:
            raise exc.redacted(self._redact) from None

    async def _send_once(self, body: dict[str, Any]) -> Any:
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
            # not chained: the SDK's own message quotes the body, which may hold the key
            raise self.translate(exc) from None
        except json.JSONDecodeError as exc:
            # a body labelled JSON that is not: the SDKs let the decoder's error through
            raise ProviderResponseError(
                self.provider, f"the response body is not valid JSON ({exc})", model=self.model
            ) from None
        except ModelError:
            raise
        except Exception as exc:
            # anything else the SDK raises (a rejected option, a transport it does not
            # wrap) still leaves as a provider error, cleaned like the others
            raise ProviderError(self.provider, f"{type(exc).__name__}: {exc}", model=self.model) from None

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
        if client is None:
            return
        if loop in (None, _event_loop()):
            await client.close()
        else:
            await _close_from_another_loop(client)

    def __repr__(self) -> str:
        where = f" at {public_url(self.options.base_url)}" if self.options.base_url else ""
        return f"<{type(self).__name__} {self.provider}:{self.model}{where}>"
