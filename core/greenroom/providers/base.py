"""``ProviderModel``: the base class of a model behind a provider's API (public as
``greenroom.ProviderModel``; docs/providers.md, "Writing a provider").

A subclass says how one call looks on the wire: ``build_body`` (a ``ModelRequest`` ->
the JSON to send), ``make_client`` (the HTTP or SDK client, given the API key),
``send`` (one attempt with that client) and ``parse`` (the answer -> a
``ModelResponse``). The base class does the rest the same way for every provider,
the built-in OpenAI and Anthropic ones included:

- the API key is read from the environment variable ``[model] api_key_env`` names when
  the first call needs it (building a runtime, ``greenroom inspect`` and ``greenroom
  config check`` need none), and masked in every error from then on;
- ``[model] extra_body`` is merged over the body ``build_body`` returns;
- each attempt is bounded by ``timeout`` as a whole, and cancellation goes through at
  once (it closes the HTTP call);
- failures are retried as ``retry`` (a ``RetryPolicy``) says: 429, 5xx, timeouts and
  lost connections, honouring ``Retry-After``;
- whatever goes wrong leaves as a ``ProviderError`` naming the provider and model;
- the client belongs to the event loop that made it, and is made again on another
  (an earlier ``anyio.run`` closed the first one's connections).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Mapping
from typing import Any, ClassVar

import anyio
import anyio.lowlevel

from greenroom._support.redact import Redactor, public_url, remember_secrets
from greenroom.config import ConfigError
from greenroom.models import ModelError, ModelRequest, ModelResponse
from greenroom.providers.errors import ProviderError, ProviderResponseError, ProviderTimeoutError
from greenroom.providers.options import NO_KEY_PLACEHOLDER, ProviderOptions, api_key
from greenroom.providers.retry import RetryPolicy, call_with_retries


class ProviderModel:
    """A model behind a provider's API: ``await model.complete(request)``.

    Subclasses set ``provider`` and implement ``build_body``, ``make_client``, ``send``
    and ``parse``; ``translate`` and ``decode`` are there to override when the client
    raises its own exceptions or answers with its own objects.
    """

    provider: ClassVar[str] = ""
    """The prefix in ``agent.model`` (``provider:MODEL``); errors start with it."""

    def __init__(self, model: str, options: ProviderOptions) -> None:
        if not model:
            raise ConfigError(f"name the model after the prefix, e.g. {self.provider}:MODEL_NAME", path="agent.model")
        self.model = model
        self.options = options
        self.retry = RetryPolicy(max_retries=options.max_retries)
        self._client: Any = None
        self._client_loop: object = None
        # What a server sends back can echo the key (a compatible server quoting the
        # Authorization header in a 401): every error is cleaned before anyone sees it.
        self._redact = Redactor(())

    # ------------------------------------------------------------------ subclass API
    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body of the call (``[model] extra_body`` is merged over it)."""
        raise NotImplementedError

    def make_client(self, key: str) -> Any:
        """The client ``send`` calls through, made on first use in each event loop. ``key``
        is the API key (``"not-needed"`` when ``api_key_env = ""``). Its ``aclose()`` or
        ``close()`` (awaited if it is a coroutine) is called when it is done with."""
        raise NotImplementedError

    async def send(self, client: Any, body: dict[str, Any]) -> Any:
        """One attempt: send ``body`` with ``client`` and return the answer (what
        ``decode`` turns into the JSON object ``parse`` reads).

        Raise a ``ProviderError`` for a failed call: ``error_for_status`` picks the class
        (and so whether it is retried) from an HTTP status, ``parse_retry_after`` reads
        the wait a 429 asks for. Any other exception goes through ``translate``.
        """
        raise NotImplementedError

    def parse(self, data: Mapping[str, Any], request: ModelRequest) -> ModelResponse:
        """The provider's answer (a JSON object) -> the model's turn, usage and stop reason.
        Raise ``ProviderResponseError`` for an answer that is not the API's shape."""
        raise NotImplementedError

    def translate(self, exc: Exception) -> ProviderError:
        """An exception ``send`` let out (the client's own) -> the ``ProviderError`` to raise
        and maybe retry. Override to name the client's transport errors
        ``ProviderConnectionError`` (retried); by default it is a ``ProviderError`` that is
        not retried."""
        return ProviderError(self.provider, f"{type(exc).__name__}: {exc}", model=self.model)

    def decode(self, raw: Any) -> Any:
        """What ``send`` returned -> the JSON data for ``parse`` (unchanged by default)."""
        return raw

    # ------------------------------------------------------------------ given
    def api_key(self) -> str:
        """The key from the environment, or ``MissingApiKeyError`` saying which variable to
        set; from here on it is masked in every error (this provider's and any other)."""
        key = api_key(self.provider, self.options.api_key_env)
        if key != NO_KEY_PLACEHOLDER:
            self._redact = Redactor([key])
            remember_secrets([key])  # a key is secret in any text, not only this provider's
        return key

    def check_ready(self) -> None:
        """Raise what the first call would raise before reaching the network (no API key):
        ``greenroom config check`` asks, without making a client or calling anything."""
        api_key(self.provider, self.options.api_key_env)

    @property
    def client(self) -> Any:
        """The client, made on first use: the key is read then, so building a runtime
        needs no key, and the client's connection pool belongs to the loop that uses it."""
        if self._client is None:
            self._client = self.make_client(self.api_key())
        return self._client

    async def complete(self, request: ModelRequest) -> ModelResponse:
        body = self.build_body(request)
        body.update(self.options.extra_body)  # the config's extra_body wins: it is the escape hatch
        raw = await call_with_retries(lambda: self._attempt(body), self.retry)
        try:
            return self._read(raw, request)
        except ProviderError as exc:
            raise exc.redacted(self._redact) from None

    async def aclose(self) -> None:
        """Close the client's connections (safe to call twice)."""
        client, loop = self._client, self._client_loop
        self._client = self._client_loop = None
        if client is None:
            return
        if loop in (None, _event_loop()):
            await _close(client)
        else:
            await _close_from_another_loop(client)

    def __repr__(self) -> str:
        where = f" at {public_url(self.options.base_url)}" if self.options.base_url else ""
        return f"<{type(self).__name__} {self.provider}:{self.model}{where}>"

    # ------------------------------------------------------------------ internals
    def _read(self, raw: Any, request: ModelRequest) -> ModelResponse:
        data = self.decode(raw)
        if isinstance(data, str):
            # a client hands back the text of a non-JSON answer: usually a base_url that
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
        # The client's own timeout bounds each read; this deadline bounds the whole
        # attempt (a server that trickles bytes never trips a read timeout), and it
        # cancels the HTTP call through the anyio scope. The second of grace lets the
        # client report first when it can.
        try:
            with anyio.fail_after(self.options.timeout + 1.0):
                return await self.send(client, body)
        except TimeoutError:
            raise ProviderTimeoutError(
                self.provider, f"no answer within {self.options.timeout:g} s", model=self.model
            ) from None
        except ModelError:
            raise
        except json.JSONDecodeError as exc:
            # a body labelled JSON that is not: clients let the decoder's error through
            raise ProviderResponseError(
                self.provider, f"the response body is not valid JSON ({exc})", model=self.model
            ) from None
        except Exception as exc:
            # not chained: a client's own message may quote the request, key included;
            # the error is cleaned like the others on its way out
            raise self.translate(exc) from None


async def _close(client: Any) -> None:
    closer = getattr(client, "aclose", None) or getattr(client, "close", None)
    if closer is not None:
        result = closer()
        if inspect.isawaitable(result):
            await result


async def _close_from_another_loop(client: Any) -> None:
    """Mark a client whose connections belong to another, finished event loop closed.
    Its connections cannot be closed from this loop, but closing marks the client closed
    before it touches one, which is what matters: otherwise the SDK's finalizer schedules
    the same failing close on whatever loop runs when it is collected."""
    try:
        await _close(client)
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


__all__ = ["ProviderModel"]
