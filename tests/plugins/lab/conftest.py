"""The provider fixtures the eval's run against a real provider client uses
(tests/support/provider_fixtures.py): a fake provider server per test and fake keys."""

from __future__ import annotations

from support.provider_fixtures import fake_keys, server

__all__ = ["fake_keys", "server"]
