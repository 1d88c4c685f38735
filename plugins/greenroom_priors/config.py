"""The ``[plugins.priors-persistence]`` section: a frozen attrs class and its JSON Schema.

Bounds are the fields' attrs validators, declared once: ``config_schema`` derives the
JSON Schema's bounds from them (core's ``schema_for_attrs`` reads them). The store URL's check is the
plugin's own function, so its pattern is written into the schema here (one constant).
"""

from __future__ import annotations

import re
from typing import Any, Literal

import attrs

_gt, _ge, _le = attrs.validators.gt, attrs.validators.ge, attrs.validators.le

# scheme://rest, and a sqlite:// URL names its file: a bare "sqlite://" would quietly be the
# default store, and a plain path (no scheme) fails every run, even with on_store_error = "warn"
STORE_URL_PATTERN = r"^(?!sqlite://(\?|$))[A-Za-z][A-Za-z0-9+.-]*://"
STORE_URL_MEANS = (
    "expected a store URL such as sqlite:///abs/priors.sqlite3, sqlite://relative/priors.sqlite3, "
    "postgresql://user@host/db or memory://name (a sqlite:// URL needs a file path)"
)


def _journal(instance: Any, attribute: attrs.Attribute, value: object) -> None:
    if not (value == "auto" or isinstance(value, bool)):
        raise ValueError(f'{attribute.name}: expected "auto", true or false, got {value!r}')


def _store_url(instance: Any, attribute: attrs.Attribute, value: str | None) -> None:
    if value is not None and not re.match(STORE_URL_PATTERN, value):
        raise ValueError(f"{attribute.name}: {STORE_URL_MEANS}, got {value!r}")


@attrs.frozen
class PriorsConfig:
    """Where and how per-agent tool priors are kept."""

    store: str | None = attrs.field(
        default=None,
        validator=_store_url,
        metadata={
            "description": (
                "Profile store URL: sqlite:///path/priors.sqlite3, sqlite://relative/to/config.sqlite3, "
                "postgresql://user@host/db, memory://name, or a scheme a store plugin provides. "
                "Default: priors.sqlite3 in greenroom's state directory (GREENROOM_HOME overrides)."
            )
        },
    )
    save: bool = attrs.field(
        default=True,
        metadata={
            "description": (
                "Fold each run's tool use into the stored priors. false: load only (evaluation runs "
                "that must not teach the agent)."
            )
        },
    )
    min_smoothing: float = attrs.field(
        default=0.1,
        validator=[_gt(0), _le(1)],
        metadata={
            "description": (
                "Floor of the EWMA weight of the newest session: l = max(min_smoothing, 1/(n+1)). "
                "Higher adapts faster and forgets sooner."
            )
        },
    )
    decay_unused: bool = attrs.field(
        default=True,
        metadata={
            "description": (
                "Fold a share of 0 into known tools that were available in the run but not called, "
                "so tools that fall out of use fade (and a tool learned eager goes back to deferred "
                "once it stops being used). false: only called tools move, and a tool once learned "
                "eager stays eager."
            )
        },
    )
    default_prior: float = attrs.field(
        default=0.01,
        validator=[_ge(0), _le(1)],
        metadata={"description": ("Probability assumed for a tool with no history (ToolPriors.default).")},
    )
    on_store_error: Literal["warn", "raise"] = attrs.field(
        default="warn",
        validator=attrs.validators.in_(("warn", "raise")),
        metadata={
            "description": (
                "A store that cannot be used at run start or end: 'warn' logs, emits an event and "
                "goes on with what is in memory (the defaults in a fresh runtime; a run's calls that "
                "could not be saved wait in the spool); 'raise' fails the run (its calls are spooled all the same)."
            )
        },
    )
    journal: Literal["auto", True, False] = attrs.field(
        default="auto",
        validator=_journal,
        metadata={
            "description": (
                "Checkpoint each run's successful tool calls into the store as the run goes "
                "(a journal of calls, folded into the priors when the run ends, or by a sweep when "
                "its process died). 'auto': on for stores a fleet shares (postgresql), off for "
                "sqlite and memory; true needs a store that keeps a journal."
            )
        },
    )
    checkpoint_every: float = attrs.field(
        default=5.0,
        validator=[_gt(0), _le(300)],
        metadata={
            "description": (
                "Seconds between two checkpoints of the journal: the calls of open runs are written "
                "behind them, and a process that dies loses at most the calls of the last interval."
            )
        },
    )
    checkpoint_calls: int = attrs.field(
        default=100,
        validator=[_ge(1), _le(100_000)],
        metadata={"description": "A checkpoint comes sooner once this many calls wait for one."},
    )
    journal_stale: float = attrs.field(
        default=3600.0,
        validator=_gt(0),
        metadata={
            "description": (
                "Seconds after which the journal of a run that has not written is folded by a "
                "sweep, as if the run had ended (its process is taken to be gone)."
            )
        },
    )
    sweep_every: float = attrs.field(
        default=300.0,
        validator=_ge(0),
        metadata={
            "description": (
                "Seconds between two sweeps of the journal by one process, at run start or end "
                "(0: at every one). 'greenroom priors sweep' sweeps on demand."
            )
        },
    )


def config_schema(base: dict[str, Any]) -> dict[str, Any]:
    """The schema derived from ``PriorsConfig`` (its validators' bounds included), the
    store URL's pattern, and the journal's values as TOML spells them."""
    props = base["properties"]
    props["store"].update({"pattern": STORE_URL_PATTERN, "errorMessage": STORE_URL_MEANS})
    # one of two kinds, so a wrong value is said in the words TOML spells them with
    journal = props["journal"]
    journal.pop("enum", None)
    journal["anyOf"] = [{"type": "boolean"}, {"enum": ["auto"]}]
    journal["errorMessage"] = 'expected "auto", true or false'
    props["store"].setdefault(
        "examples", ["sqlite:///var/lib/agents/priors.sqlite3", "postgresql://agents@db.internal/agents"]
    )
    return base
