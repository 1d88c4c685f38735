"""The context window an arm's requests must fit: a request past it is not sent, and
ends its session as an error of the arm, as a provider would refuse it.

``--context-window N`` sets it (0: none). Without it, the window is the one of the
model's family: the arm's model for ``--agent model``, the model the ``--price`` table
names for the simulated agent. A model of no family known here has none (the provider
will say so itself, if it must).
"""

from __future__ import annotations

import re

from greenroom import Model, ModelError, ModelRequest, ModelResponse, ProviderModel, current_run
from greenroom_lab.eval.record import SessionRecord

FAMILIES: tuple[tuple[str, int], ...] = (
    (r"claude", 200_000),
    (r"gpt-5", 400_000),
    (r"gpt-4\.1", 1_047_576),
    (r"gpt-4o", 128_000),
    (r"^o[134]\b|^o[134]-", 200_000),
    (r"gemini", 1_048_576),
)
"""Published context windows (input and output) by model name, first match wins."""


def window_of(name: str) -> int:
    """The context window of a model by its name (``claude-sonnet-4.5``,
    ``openai:gpt-5``); 0 when its family is not known here."""
    model = name.split(":", 1)[-1].lower()
    return next((tokens for pattern, tokens in FAMILIES if re.search(pattern, model)), 0)


def model_window(model: Model) -> int:
    """The window of a provider's model by its name; 0 for any other (a scripted one)."""
    return window_of(model.model) if isinstance(model, ProviderModel) else 0


class PastWindow(ModelError):
    """A request longer than the context window: not sent."""

    def __init__(self, tokens: int, window: int, step: int) -> None:
        super().__init__(
            f"request of {tokens:,} tokens at step {step} is past the context window of {window:,} (--context-window)"
        )
        self.tokens = tokens


class Windowed:
    """The arm's model, asked only for requests that fit ``window`` tokens (as greenroom
    counted them, ``RequestSent``, which the probe records just before the model is asked)."""

    def __init__(self, inner: Model, window: int) -> None:
        self.inner = inner
        self.window = window

    async def complete(self, request: ModelRequest) -> ModelResponse:
        ctx = current_run()
        steps = ctx.state[SessionRecord].steps if ctx is not None else []
        if self.window and steps and steps[-1].counted > self.window:
            raise PastWindow(steps[-1].counted, self.window, request.step)
        return await self.inner.complete(request)
