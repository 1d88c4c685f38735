"""The provider fixtures (tests/support/provider_fixtures.py): a fake provider server per
test, fake keys, a retry policy that records its waits, models of both SDK providers."""

from __future__ import annotations

from support.provider_fixtures import fake_keys, make_anthropic, make_openai, server, sleeps

__all__ = ["fake_keys", "make_anthropic", "make_openai", "server", "sleeps"]
