"""``SDKModel`` (public as ``greenroom.SDKModel``): a ``ProviderModel`` whose calls go
through an official SDK generated the way OpenAI's and Anthropic's are (an async client
class taking ``api_key``, ``base_url``, ``timeout`` and ``max_retries``; a create method
taking ``extra_body`` and ``extra_headers``; ``APIError`` and its subclasses; response
objects with ``to_dict``): the SDK imported when a model is built, its client made, and
its errors translated. The first-party OpenAI and Anthropic providers are built on it.

``error_endpoint`` (in ``greenroom.kit``) is the URL a failed SDK call went to, cleaned.

Nothing here imports an SDK at module level, so ``greenroom plugins`` lists a provider
on a machine without its extra.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import Any, ClassVar

from greenroom._support.redact import public_url
from greenroom.providers._messages import without_lone_surrogates
from greenroom.providers.base import ProviderModel
from greenroom.providers.errors import (
    ProviderConnectionError,
    ProviderError,
    ProviderResponseError,
    ProviderTimeoutError,
    error_for_status,
)
from greenroom.providers.options import ProviderOptions, import_sdk
from greenroom.providers.retry import parse_retry_after


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


def error_endpoint(exc: BaseException) -> str:
    """The URL a failed SDK call went to (its exception's response's, else its
    request's), without the query or the user info, where a key may ride; ``""`` when
    the exception names none."""
    for holder in ("response", "request"):
        try:
            url = getattr(getattr(exc, holder, None), "url", None)
            if url is not None:
                return public_url(str(url))
        except (RuntimeError, ValueError):  # an httpx response made without its request; a URL urllib refuses
            continue
    return ""


class SDKModel(ProviderModel):
    """A provider model whose calls go through an official SDK (module docstring).

    Subclasses set ``provider``, ``sdk_module`` (the module imported when a model is
    built), ``extra`` (the ``greenroom[...]`` extra that installs it) and
    ``client_class``, and implement ``build_body``, ``sdk_method`` and ``parse``; a
    streaming one also ``stream_reader``. ``self.sdk`` is the imported module.
    """

    sdk_module: ClassVar[str] = ""
    extra: ClassVar[str] = ""
    client_class: ClassVar[str] = ""
    """The SDK's async client class (``AsyncOpenAI``, ``AsyncAnthropic``)."""

    def __init__(self, model: str, options: ProviderOptions, sdk: ModuleType | None = None) -> None:
        super().__init__(model, options)
        self.sdk = sdk if sdk is not None else import_sdk(self.sdk_module, self.extra, self.provider)

    # ------------------------------------------------------------------ subclass API
    required: ClassVar[tuple[str, ...]] = ("model",)
    """Body keys passed to the SDK method as keyword arguments; the rest go in
    ``extra_body``. The body is already the exact wire JSON, and SDK releases add and
    drop keyword arguments (anthropic 2.x has no ``temperature``), so only the keys
    every release takes are given by name."""

    def sdk_method(self, client: Any) -> Any:
        """The SDK's create method for this API."""
        raise NotImplementedError

    def request_headers(self) -> dict[str, str]:
        """HTTP headers added to every call (none by default)."""
        return {}

    # ------------------------------------------------------------------ ProviderModel
    async def send(self, client: Any, body: dict[str, Any]) -> Any:
        """One HTTP call through the SDK; returns the SDK's response object."""
        return await self._call(client, body, {})

    async def open_stream(self, client: Any, body: dict[str, Any]) -> Any:
        """One streamed call through the SDK (``stream=True``): the SDK parses the
        server-sent events and returns them as an async iterable of its event objects."""
        return await self._call(client, body, {"stream": True})

    async def _call(self, client: Any, body: dict[str, Any], flags: dict[str, Any]) -> Any:
        try:
            return await self.sdk_method(client)(**self._arguments(body), **flags)
        except UnicodeEncodeError:
            # text from outside (a file name, a tool's output) with a lone surrogate,
            # which UTF-8 cannot encode: replaced, and the same body sent again (found only
            # when it happens, so a sound body costs no second pass)
            body.update(without_lone_surrogates(body))
            return await self.sdk_method(client)(**self._arguments(body), **flags)

    def _arguments(self, body: dict[str, Any]) -> dict[str, Any]:
        named = {k: v for k, v in body.items() if k in self.required}
        extra = {k: v for k, v in body.items() if k not in self.required}
        if extra:
            named["extra_body"] = extra
        headers = self.request_headers()
        if headers:
            named["extra_headers"] = headers
        return named

    def make_client(self, key: str) -> Any:
        return getattr(self.sdk, self.client_class)(
            api_key=key,
            base_url=self.options.base_url,
            timeout=self.options.timeout,
            max_retries=0,  # greenroom's own loop retries (see retry.py)
        )

    def decode(self, raw: Any) -> Any:
        # warnings off: the SDK's models warn when the server sent something other than
        # the documented type (a string tool input); parse() copes, the data is kept as sent
        return raw.to_dict(warnings=False) if hasattr(raw, "to_dict") else raw

    def translate(self, exc: Exception) -> ProviderError:
        """An SDK exception -> the matching ``ProviderError``."""
        sdk = self.sdk
        if not isinstance(exc, sdk.APIError):
            # anything else the SDK raises (a rejected option, a transport it does not
            # wrap) still leaves as a provider error, cleaned like the others
            return super().translate(exc)
        where = error_endpoint(exc)
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


__all__ = ["SDKModel", "error_detail", "error_endpoint"]
