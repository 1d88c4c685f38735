"""What a session costs: prompt-cache simulation and provider price tables.

Providers cache prompt prefixes. A request is a sequence of blocks (the cacheable prefix:
tools + system; then each message); the part equal to the previous request's leading
blocks can be read from the cache, and a change in the tools array or system prompt
invalidates everything after it. How that is billed differs:

- ``anthropic``: explicit breakpoints after the stable prefix and on the last message;
  cache reads cost ``cache_read`` (0.1x input), everything else up to the last
  breakpoint is a cache write (1.25x input for the 5-minute cache).
- ``openai``: automatic caching of prefixes of at least 1,024 tokens in 128-token
  steps; cached input is discounted, the rest is billed as input, no write premium.
- ``none``: no caching, every input token at the input price.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import attrs

CacheModel = Literal["anthropic", "openai", "none"]


@attrs.frozen
class Price:
    """US dollars per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    cache: CacheModel

    def without_cache(self) -> Price:
        """The same list prices with no prompt caching: every input token at ``input``."""
        return attrs.evolve(self, cache_read=self.input, cache_write=self.input, cache="none")


#: Published list prices (per million tokens) used when no table is given.
DEFAULT_PRICES: Mapping[str, Price] = {
    "anthropic:claude-sonnet-4.5": Price(
        input=3.00, output=15.00, cache_read=0.30, cache_write=3.75, cache="anthropic"
    ),
    "openai:gpt-5": Price(input=1.25, output=10.00, cache_read=0.125, cache_write=1.25, cache="openai"),
    "no-cache:claude-sonnet-4.5": Price(input=3.00, output=15.00, cache_read=3.00, cache_write=3.00, cache="none"),
}


@attrs.frozen
class Request:
    """One request as blocks of tokens: block 0 is the cacheable prefix (tools + system)."""

    prefix_hash: str
    prefix_tokens: int
    message_tokens: tuple[int, ...]
    message_ids: tuple[str, ...]
    output_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prefix_tokens + sum(self.message_tokens)


@attrs.frozen
class StepBill:
    uncached: int
    cache_write: int
    cache_read: int
    output: int
    cost: float


def cached_prefix(previous: Request | None, current: Request) -> int:
    """Tokens of ``current`` that equal the leading blocks of ``previous``."""
    if previous is None or previous.prefix_hash != current.prefix_hash:
        return 0
    shared = current.prefix_tokens
    for prev_id, cur_id, tokens in zip(previous.message_ids, current.message_ids, current.message_tokens, strict=False):
        if prev_id != cur_id:
            break
        shared += tokens
    return shared


def bill(requests: Sequence[Request], price: Price) -> list[StepBill]:
    """Bill each request the way the provider would, given the one before it."""
    out: list[StepBill] = []
    previous: Request | None = None
    for req in requests:
        total = req.total
        if price.cache == "none":
            read, write = 0, 0
        elif price.cache == "openai":
            shared = cached_prefix(previous, req)
            read = 0 if shared < 1024 else 1024 + ((shared - 1024) // 128) * 128
            write = 0
        else:
            read = cached_prefix(previous, req)
            write = total - read  # breakpoint on the last message: the rest is written
        uncached = total - read - write
        cost = (
            uncached * price.input
            + write * price.cache_write
            + read * price.cache_read
            + req.output_tokens * price.output
        ) / 1_000_000
        out.append(StepBill(uncached, write, read, req.output_tokens, cost))
        previous = req
    return out
