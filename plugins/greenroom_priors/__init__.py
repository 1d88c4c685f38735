"""priors-persistence: per-agent tool priors learned across sessions (an EWMA of how
often each tool is used), kept in a profile store (SQLite by default, PostgreSQL for a
fleet) and loaded into ``greenroom.ToolPriors`` at the start of every run. The profile-store
contract (``ProfileStore``, ``StoreError``) and the ``greenroom_profile_stores`` hook that
contributes stores belong to this plugin. With a store a fleet shares, each run's
successful calls are also checkpointed into a journal in the store every few seconds,
behind the calls (``greenroom_priors.journal``), so a process that dies loses at most the
last interval's calls; what a store that is down cannot take waits in the spool
(``greenroom_priors.spool``) until it is back.
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
from greenroom_priors.journal import JournalStore, StaleRun, SweepReport, ToolTally, exact_calls, fold_runs
from greenroom_priors.keys import KEY
from greenroom_priors.plugin import PriorsPlugin
from greenroom_priors.store import ProfileStore, StoreError, StoreFactory
from greenroom_priors.stores import MemoryStore, PostgresStore, SqliteStore, default_url, open_store

__all__ = [
    "FORMAT",
    "KEY",
    "DocumentError",
    "JournalStore",
    "MemoryStore",
    "Observation",
    "PostgresStore",
    "PriorsConfig",
    "PriorsPlugin",
    "ProfileStore",
    "SqliteStore",
    "StaleRun",
    "StoreError",
    "StoreFactory",
    "SweepReport",
    "ToolTally",
    "check_document",
    "default_url",
    "exact_calls",
    "fold",
    "fold_document",
    "fold_runs",
    "open_store",
    "smoothing",
]
