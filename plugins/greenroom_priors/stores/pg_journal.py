"""The journal of calls in PostgreSQL: the table and its statements (parameters only).

``greenroom_usage_journal`` holds one row per ``(agent_id, run_id, tool)``: the run's
successful calls of the tool so far (``calls``), how many of them are already in the
priors document (``folded``), in how many of the run's steps it was called (``steps``),
the run's steps (``run_steps``) and when the run last wrote it (``updated_at``, the
server's clock, so replicas with skewed clocks agree on what is stale). Writes only grow
a row (``GREATEST``), so a write repeated after a dropped connection counts nothing
twice. ``CHECK (folded <= calls)`` keeps a row sound whatever happens to a client.

The functions take a psycopg connection; the caller owns the transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from greenroom_priors.journal import JournalEntry, StaleRun, ToolTally

JOURNAL = "greenroom_usage_journal"

SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {JOURNAL} ("
    " agent_id text NOT NULL,"
    " run_id text NOT NULL,"
    " tool text NOT NULL,"
    " calls bigint NOT NULL CHECK (calls >= 0),"
    " folded bigint NOT NULL DEFAULT 0 CHECK (folded >= 0 AND folded <= calls),"
    " steps integer NOT NULL DEFAULT 0,"
    " run_steps integer NOT NULL DEFAULT 0,"
    " updated_at timestamptz NOT NULL DEFAULT now(),"
    " PRIMARY KEY (agent_id, run_id, tool))",
    f"CREATE INDEX IF NOT EXISTS {JOURNAL}_updated_at ON {JOURNAL} (updated_at)",
    # folded rows stay a day (a run saved again must find them): a sweep looks at the others
    f"CREATE INDEX IF NOT EXISTS {JOURNAL}_unfolded ON {JOURNAL} (agent_id, run_id) WHERE calls > folded",
)

SWEEP_BATCH = 1000
"""Runs one sweep folds at most (the rest wait for the next sweep)."""

_WRITE = (
    f"INSERT INTO {JOURNAL} AS j (agent_id, run_id, tool, calls, steps, run_steps)"
    " SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::bigint[], %s::integer[], %s::integer[])"
    " ON CONFLICT (agent_id, run_id, tool) DO UPDATE SET"
    " calls = GREATEST(j.calls, EXCLUDED.calls),"
    " steps = GREATEST(j.steps, EXCLUDED.steps),"
    " run_steps = GREATEST(j.run_steps, EXCLUDED.run_steps),"
    " updated_at = now()"
)

_STALE = (
    f"SELECT agent_id, run_id FROM {JOURNAL} WHERE (agent_id, run_id) IN"
    f" (SELECT agent_id, run_id FROM {JOURNAL} WHERE calls > folded)"
    " GROUP BY agent_id, run_id HAVING max(updated_at) < now() - make_interval(secs => %s)"
    " ORDER BY agent_id, run_id LIMIT %s"
)

_FORGET = (
    f"DELETE FROM {JOURNAL} AS j USING ("
    f" SELECT agent_id, run_id FROM {JOURNAL} GROUP BY agent_id, run_id"
    " HAVING max(updated_at) < now() - make_interval(secs => %s) AND bool_and(calls = folded)) AS done"
    " WHERE j.agent_id = done.agent_id AND j.run_id = done.run_id AND j.calls = j.folded"
)


def create(conn: Any) -> None:
    for statement in SCHEMA:
        conn.execute(statement)


def write(conn: Any, entries: Sequence[JournalEntry]) -> None:
    """One statement for every row of ``entries`` (one entry per run)."""
    rows = sorted(
        (e.agent_id, e.run_id, name, t.calls, t.steps, e.steps) for e in entries for name, t in e.tallies.items()
    )  # rows in one order: two writers never lock them crosswise
    if rows:
        conn.execute(_WRITE, tuple(list(column) for column in zip(*rows, strict=True)))


def take_run(conn: Any, agent_id: str, run_id: str) -> dict[str, int]:
    """Lock the run's rows and mark them folded: its unfolded calls per tool."""
    rows = conn.execute(
        f"SELECT tool, calls - folded FROM {JOURNAL} WHERE agent_id = %s AND run_id = %s ORDER BY tool FOR UPDATE",
        (agent_id, run_id),
    ).fetchall()
    conn.execute(
        f"UPDATE {JOURNAL} SET folded = calls, updated_at = now() WHERE agent_id = %s AND run_id = %s",
        (agent_id, run_id),
    )
    return {tool: int(n) for tool, n in rows if n > 0}


def stale_runs(conn: Any, stale_after: float) -> dict[str, list[str]]:
    """Runs with unfolded calls, not written for ``stale_after`` seconds, by agent."""
    out: dict[str, list[str]] = {}
    for agent_id, run_id in conn.execute(_STALE, (stale_after, SWEEP_BATCH)).fetchall():
        out.setdefault(agent_id, []).append(run_id)
    return out


def take_stale(conn: Any, agent_id: str, run_ids: Sequence[str]) -> list[StaleRun]:
    """Lock the unfolded rows of the agent's ``run_ids`` and read them as ``StaleRun``s
    (a row a live run grew since ``stale_runs`` is read as it is now)."""
    rows = conn.execute(
        f"SELECT run_id, tool, calls - folded, steps, run_steps FROM {JOURNAL}"
        " WHERE agent_id = %s AND run_id = ANY(%s::text[]) AND calls > folded ORDER BY run_id, tool FOR UPDATE",
        (agent_id, list(run_ids)),
    ).fetchall()
    tools: dict[str, dict[str, ToolTally]] = {}
    steps: dict[str, int] = {}
    for run_id, tool, unfolded, tool_steps, run_steps in rows:
        tools.setdefault(run_id, {})[tool] = ToolTally(int(unfolded), int(tool_steps))
        steps[run_id] = max(steps.get(run_id, 0), int(run_steps))
    return [StaleRun(agent_id, run_id, steps[run_id], t) for run_id, t in tools.items()]


def mark_folded(conn: Any, agent_id: str, runs: Sequence[StaleRun]) -> None:
    """Set ``folded`` of each row ``take_stale`` locked up by what it read as unfolded."""
    run_ids, names, amounts = [], [], []
    for run in runs:
        for name, tally in run.tools.items():
            run_ids.append(run.run_id)
            names.append(name)
            amounts.append(tally.calls)
    conn.execute(
        f"UPDATE {JOURNAL} AS j SET folded = j.folded + v.n"
        " FROM unnest(%s::text[], %s::text[], %s::bigint[]) AS v(run_id, tool, n)"
        " WHERE j.agent_id = %s AND j.run_id = v.run_id AND j.tool = v.tool",
        (run_ids, names, amounts, agent_id),
    )


def forget(conn: Any, older_than: float) -> int:
    """Delete the fully folded rows of runs silent for ``older_than`` seconds."""
    return int(conn.execute(_FORGET, (older_than,)).rowcount or 0)


def counts(conn: Any, table: str, agent_id: str, key: str) -> tuple[Any, dict[str, int]]:
    """The agent's document (``table``) and its journal's unfolded calls, in one statement
    (one snapshot: no fold can move calls between the two halves while they are read)."""
    row = conn.execute(
        f"SELECT (SELECT doc FROM {table} WHERE agent_id = %s AND key = %s),"
        " (SELECT coalesce(jsonb_object_agg(tool, n), '{}'::jsonb) FROM ("
        f" SELECT tool, sum(calls - folded) AS n FROM {JOURNAL} WHERE agent_id = %s"
        " GROUP BY tool HAVING sum(calls - folded) > 0) AS s)",
        (agent_id, key, agent_id),
    ).fetchone()
    return row[0], {str(k): int(v) for k, v in (row[1] or {}).items()}
