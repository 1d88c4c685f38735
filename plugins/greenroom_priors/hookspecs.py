"""Hooks the priors plugin declares: ``PriorsPlugin.hookspecs`` adds them to the host.

Any installed plugin may implement them with ``from greenroom import hookimpl``, whether
or not priors-persistence is enabled, without importing this package.
"""

from __future__ import annotations

from collections.abc import Mapping

from greenroom import hookspec
from greenroom_priors.store import StoreFactory


@hookspec
def greenroom_profile_stores() -> Mapping[str, StoreFactory] | None:
    """Contribute profile stores by URL scheme: ``{"redis": factory}``.

    Called when a store is opened (by a run or by ``greenroom priors``); ``factory(url)``
    returns a ``greenroom_priors.store.ProfileStore``. Every answer counts; for a scheme
    two plugins contribute, the earlier in pluggy's call order wins, so a ``tryfirst``
    implementation can replace a built-in store.
    """
