"""``ProviderModel``: the base class of a model behind a provider's API (public as
``greenroom.ProviderModel``; docs/providers.md, "Writing a provider").

A subclass says how one call looks on the wire: ``build_body`` (a ``ModelRequest`` ->
the JSON to send), ``make_client`` (the HTTP or SDK client, given the API key),
``send`` (one attempt with that client) and ``parse`` (the answer -> a
``ModelResponse``). The base class does the rest the same way for every provider,
the first-party OpenAI, Anthropic and Gemini ones included:

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

Streaming (``stream(request)``, the ``greenroom.StreamingModel`` protocol) is given the
same way. A subclass whose API streams writes two more methods: ``open_stream`` (one
attempt: send the body asking for a stream, return the events as an async iterable;
``SDKModel`` has it for the official SDKs) and ``stream_reader`` (a fresh ``StreamReader``
per attempt: ``feed(event)`` returns the visible text an event adds, ``finish()`` the
whole ``ModelResponse`` once the events are over, raising a ``ProviderError`` when they
stopped short, so that a cut stream never gives a half-parsed call). ``stream_body``
adds what the API needs to stream (``stream_options``, say). The base class then yields
each piece of text as a ``TextDelta`` and the response last; opening the stream and each
wait for an event are bounded by what is left of ``timeout``; the events' iterator is
closed whoever stops reading; an attempt that fails before any text was yielded is
retried as ``retry`` says (``retry.next_retry``, the same decision as ``complete``'s),
one that fails after is raised with ``ProviderError.after_text`` (not retried: the text
would show twice). A provider without both methods still has ``stream``: the whole
response from ``complete``, its text as one delta.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncGenerator, Awaitable, Iterable, Mapping
from typing import Any, ClassVar, Protocol, TypeVar

import anyio
import anyio.lowlevel

from greenroom._support.redact import Redactor, Secrets, add_url, public_url, remember_secrets, remember_url
from greenroom.config import ConfigError
from greenroom.models import ModelError, ModelRequest, ModelResponse, StreamItem, TextDelta
from greenroom.providers.errors import ProviderError, ProviderResponseError, ProviderTimeoutError
from greenroom.providers.options import NO_KEY_PLACEHOLDER, ProviderOptions, api_key
from greenroom.providers.retry import RetryPolicy, call_with_retries, next_retry

T = TypeVar("T")


class StreamReader(Protocol):
    """One streamed attempt's events -> its text as it comes, then the whole response."""

    def feed(self, event: Any) -> Iterable[str]:
        """Take one event (as ``decode`` gives it); return the visible text it adds."""
        ...

    def finish(self) -> ModelResponse:
        """The whole response, once the events are over; a ``ProviderError`` when they
        stopped before the response was complete."""
        ...


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
        # Authorization header in a 401), or the base_url's user info, which the HTTP
        # client sends as a Basic header: every error is cleaned before anyone sees it,
        # and text that reaches the user by another road too (remember_url)
        self._redact = Redactor(Secrets())
        if options.base_url:
            add_url(self._redact.secrets, options.base_url)
            remember_url(options.base_url)

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
        """What ``send`` returned (or one streamed event) -> its JSON data (unchanged by default)."""
        return raw

    def stream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The body of a streamed call, from ``build_body``'s (``[model] extra_body`` is
        merged over it). Unchanged by default."""
        return body

    async def open_stream(self, client: Any, body: dict[str, Any]) -> Any:
        """One streamed attempt: send ``body`` asking for a stream and return its events,
        an async iterable (its ``close()`` or ``aclose()`` is called when done with). Raise
        as ``send`` does. Not written: ``stream`` gives ``complete``'s response whole."""
        raise NotImplementedError

    def stream_reader(self, request: ModelRequest) -> StreamReader:
        """A fresh reader of one streamed attempt's events (see ``StreamReader``)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ given
    def api_key(self) -> str:
        """The key from the environment, or ``MissingApiKeyError`` saying which variable to
        set; from here on it is masked in every error (this provider's and any other)."""
        key = api_key(self.provider, self.options.api_key_env)
        if key != NO_KEY_PLACEHOLDER:
            self._redact.secrets.add(key)
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
        # reading the answer is part of the attempt: an answer the model must give again
        # (a malformed tool call) is retried like a failed call
        return await call_with_retries(lambda: self._attempt(body, request), self.retry)

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamItem, None]:
        """``TextDelta`` s of the model's text as it arrives, then the whole
        ``ModelResponse`` (module docstring). Close it (``contextlib.aclosing``) when
        stopping early: that closes the HTTP response."""
        own = type(self)
        if own.open_stream is ProviderModel.open_stream or own.stream_reader is ProviderModel.stream_reader:
            response = await self.complete(request)
            if response.message.content:
                yield TextDelta(response.message.content)
            yield response
            return
        body = self.stream_body(self.build_body(request))
        body.update(self.options.extra_body)
        retry = 0
        while True:
            shown = False
            reader = self.stream_reader(request)
            budget = _Budget(self.options.timeout + 1.0)
            events: Any = None
            try:
                try:
                    client = await self._client_for_this_loop()
                    events = await budget.wait(self.open_stream(client, body))
                    iterator = events.__aiter__()
                    while (event := await budget.wait(anext(iterator, _END))) is not _END:
                        for text in reader.feed(self.decode(event)):
                            if text:
                                shown = True
                                yield TextDelta(text)
                    response = reader.finish()
                finally:
                    if events is not None:
                        with anyio.move_on_after(5.0, shield=True):
                            await _close(events)
            except Exception as exc:
                error = self._failure(exc, waited="the stream did not end")
                if not isinstance(error, ProviderError):
                    raise error from None
                if events is not None and isinstance(error, ProviderTimeoutError) and not isinstance(exc, TimeoutError):
                    # the stream began and the client's read timeout fired: its events stopped
                    # coming (newer SDKs wrap the transport's timeout in their own), not the
                    # attempt's whole budget
                    error = error.stalled()
                error = error.redacted(self._redact)
                if shown:
                    raise error.with_attempts(retry + 1).after_text() from None
                delay = next_retry(self.retry, error, retry)
                if delay is None:
                    raise error from None
                retry += 1
                await self.retry.sleep(delay)
                continue
            yield response
            return

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

    async def _attempt(self, body: dict[str, Any], request: ModelRequest) -> ModelResponse:
        """One attempt, read; its error is already clean of secrets when the retry loop
        logs it."""
        try:
            return self._read(await self._send_once(body), request)
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
        except Exception as exc:
            raise self._failure(exc, waited="no answer") from None

    def _failure(self, exc: Exception, *, waited: str) -> ModelError:
        """What an attempt raised -> the error to raise (a ``ProviderError`` unless it is
        another ``ModelError``, such as a missing key). Never chained by the caller: a
        client's own message may quote the request, key included; the error is cleaned
        like the others on its way out."""
        if isinstance(exc, TimeoutError):
            return ProviderTimeoutError(self.provider, f"{waited} within {self.options.timeout:g} s", model=self.model)
        if isinstance(exc, ModelError):
            return exc
        if isinstance(exc, json.JSONDecodeError):
            # a body labelled JSON that is not: clients let the decoder's error through
            return ProviderResponseError(
                self.provider, f"the response body is not valid JSON ({exc})", model=self.model
            )
        return self.translate(exc)


_END: Any = object()
"""What ``anext`` gives for an iterator that is over (it does not raise in a wait)."""


class _Budget:
    """What is left of one attempt's ``timeout``, spent only while waiting on the
    provider: each wait is bounded by the rest (a stream that trickles cannot outlast
    it), and the time a caller spends on the text between events is not counted."""

    def __init__(self, seconds: float) -> None:
        self.left = seconds

    async def wait(self, awaitable: Awaitable[T]) -> T:
        started = anyio.current_time()
        try:
            with anyio.fail_after(max(self.left, 0.0)):
                return await awaitable
        finally:
            self.left -= anyio.current_time() - started


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


__all__ = ["ProviderModel", "StreamReader"]
