"""The observer plugin of docs/plugins.md ("Observing a run") does what the page says, and
the page quotes examples/observer_plugin/observer.py as it is."""

from __future__ import annotations

import re
import sys
from typing import Any

import anyio
import pytest
from support.gr_testutil import EXAMPLES, ROOT

from greenroom import tool
from greenroom.run.context import RunKind

EXAMPLE = EXAMPLES / "observer_plugin"
sys.path.insert(0, str(EXAMPLE))

from observer import Observer, RunStats  # noqa: E402

pytestmark = pytest.mark.anyio


@tool
async def echo(text: str) -> str:
    """Echo text, a little slowly."""
    await anyio.sleep(0.05)
    return text


def turns() -> list[Any]:
    return [
        {"tool_calls": [{"name": "echo", "arguments": {"text": "a"}}]},
        {"tool_calls": [{"name": "echo", "arguments": {"text": "b"}}, {"name": "nope", "arguments": {}}]},
        {"tool_calls": [{"name": "echo", "arguments": {"bad": 1}}]},
        {"text": "done"},
    ]


async def test_the_observer_counts_a_runs_calls_and_times_it(make_runtime) -> None:
    observer = Observer()
    rt = make_runtime(turns(), tools=[echo], plugins=[observer])
    session = rt.session()
    outcome = await session.run("go")
    (report,) = observer.reports
    assert (report.run_id, report.kind, report.stop_reason) == (outcome.run_id, "agent", "final")
    # four calls: two ran, one named no tool and one had invalid arguments (both refused)
    assert (report.calls, report.failed, report.rejected) == (4, 2, 2)
    assert report.seconds >= 0.1  # the two calls that ran took 0.05 s each
    # the counters lived in the run: the session's snapshot of it holds them
    assert session.last_snapshot is not None and session.last_snapshot[RunStats].calls == 4


async def test_runs_that_interleave_on_one_runtime_keep_their_own_counts(make_runtime) -> None:
    observer = Observer()
    rt = make_runtime([], tools=[echo], plugins=[observer])
    one, two = rt.start_run(kind=RunKind.CLIENT), rt.start_run(kind=RunKind.CLIENT)
    for run in (one, two):
        await run.start()
        await run.next_request()
    await one.call_tool(one.take_client_call("echo", {"text": "x"}))
    await two.call_tool(two.take_client_call("echo", {"text": "y"}))
    await two.call_tool(two.take_client_call("missing", {}))
    await one.end(one.outcome_of("final"))
    await two.end(two.outcome_of("cancelled"))
    got = {r.run_id: (r.kind, r.stop_reason, r.calls, r.rejected) for r in observer.reports}
    assert got == {
        one.ctx.run_id: ("client", "final", 1, 0),
        two.ctx.run_id: ("client", "cancelled", 2, 1),
    }


async def test_a_preview_is_a_run_of_its_own_kind(make_runtime) -> None:
    observer = Observer()
    rt = make_runtime([], tools=[echo], plugins=[observer])
    await rt.preview()
    (report,) = observer.reports
    assert (report.kind, report.stop_reason, report.calls) == ("preview", "preview", 0)


def test_the_docs_quote_the_example_as_it_is() -> None:
    doc = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- snippet: examples/observer_plugin/observer.py -->\n```python\n(.*?)\n```", doc, re.S)
    assert m is not None, "docs/plugins.md no longer quotes examples/observer_plugin/observer.py"
    assert m.group(1).rstrip() == (EXAMPLE / "observer.py").read_text(encoding="utf-8").rstrip()
