"""priors-persistence: per-agent tool priors learned across sessions (an EWMA of how
often each tool is used), kept in a profile store (SQLite by default, PostgreSQL for a
fleet) and loaded into ``greenroom.ToolPriors`` at the start of every run. The profile-store
contract (``ProfileStore``, ``StoreError``) and the ``greenroom_profile_stores`` hook that
contributes stores belong to this plugin.
"""

from greenroom_priors.config import PriorsConfig
from greenroom_priors.ewma import (
    FORMAT,
    DocumentError,
    Observation,
    check_document,
    fold,
    fold_document,
    smoothing,
)
from greenroom_priors.keys import KEY
from greenroom_priors.plugin import PriorsPlugin
from greenroom_priors.store import ProfileStore, StoreError, StoreFactory
from greenroom_priors.stores import MemoryStore, PostgresStore, SqliteStore, default_url, open_store

__all__ = [
    "FORMAT",
    "KEY",
    "DocumentError",
    "MemoryStore",
    "Observation",
    "PostgresStore",
    "PriorsConfig",
    "PriorsPlugin",
    "ProfileStore",
    "SqliteStore",
    "StoreError",
    "StoreFactory",
    "check_document",
    "default_url",
    "fold",
    "fold_document",
    "open_store",
    "smoothing",
]
