"""The demo's offline model: a small planner that behaves like a tool-using LLM.

It works through a fixed plan (find the alert, find who is on call, page them, post a
note). For each step it calls the tool directly when the tool is already visible to it
(eager, or injected), calls it through ``deferred_tool_call`` when it has seen the tool's
schema in a search result, and otherwise searches for it first. So when learned priors
make a tool eager, the model needs fewer searches, just as a real model would.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from greenroom import ModelRequest

PLAN: list[tuple[str, dict[str, Any], str]] = [
    ("monitoring_list_active_alerts", {"service": "checkout", "severity": "critical"}, "active alerts firing"),
    ("oncall_get_current", {"service": "payments"}, "who is on call for a service"),
    (
        "pager_send_page",
        {"user_id": "U042", "summary": "ALRT-4821 checkout p99 latency 2.4s > 800ms", "incident_id": "INC-2291"},
        "page the on-call responder",
    ),
    (
        "slack_post_incident_note",
        {
            "channel": "#incidents",
            "text": "INC-2291: checkout p99 latency 2.4s (ALRT-4821). Paged Dana Ortiz, payments on-call.",
            "incident_id": "INC-2291",
        },
        "post incident note slack",
    ),
]

FINAL = (
    "Done. ALRT-4821 (checkout p99 latency 2.4s) is tied to INC-2291; Dana Ortiz, the payments "
    "on-call, has been paged, and the incident note is posted in #incidents."
)

FOLLOW_UP = "Keep watching the checkout alert for a few minutes and tell me when it clears."
WATCH_CHECKS = 7

_NAME = re.compile(r'"name": "([^"]+)"')


def demo_policy(request: ModelRequest) -> dict[str, Any]:
    """Decide the next turn from what this run's conversation shows so far."""
    start = max(i for i, m in enumerate(request.messages) if m.role == "user")
    turn = request.messages[start:]
    done = {m.name for m in turn if m.role == "tool" and not m.is_error and m.name not in ("ToolSearch",)}
    seen_schemas = {n for m in turn if m.role == "tool" and m.name == "ToolSearch" for n in _NAME.findall(m.content)}
    searched = [c.arguments.get("query") for m in turn for c in m.tool_calls if c.name == "ToolSearch" and c.arguments]
    visible = {t.name for t in request.tools}
    if turn[0].content == FOLLOW_UP:
        return _watch(turn, visible)
    for name, args, query in PLAN:
        if name in done:
            continue
        if name in visible:
            return {"tool_calls": [{"name": name, "arguments": args}]}
        if name in seen_schemas:
            if "deferred_tool_call" in visible:
                return {
                    "tool_calls": [{"name": "deferred_tool_call", "arguments": {"tool_name": name, "arguments": args}}]
                }
            return {"tool_calls": [{"name": name, "arguments": args}]}
        # search by keywords first; if that did not surface the tool, ask for it by name
        q = query if query not in searched else f"select:{name}"
        return {"tool_calls": [{"name": "ToolSearch", "arguments": {"query": q, "max_results": 3}}]}
    return {"text": FINAL}


def _watch(turn: Sequence[Any], visible: set[str]) -> dict[str, Any]:
    """The follow-up: poll the alert a few times, using nothing else (so the other tools
    the first task promoted sit idle, which is what retention is for)."""
    checks = sum(1 for m in turn if m.role == "tool" and m.name == "monitoring_list_active_alerts")
    if checks >= WATCH_CHECKS:
        return {"text": "ALRT-4821 is still firing after several checks; I will keep the incident open."}
    args = {"service": "checkout"}
    if "monitoring_list_active_alerts" in visible:
        return {"tool_calls": [{"name": "monitoring_list_active_alerts", "arguments": args}]}
    wrapped = {"tool_name": "monitoring_list_active_alerts", "arguments": args}
    return {"tool_calls": [{"name": "deferred_tool_call", "arguments": wrapped}]}
