"""Executable tools for the greenroom offline demo task.

The demo's large tool catalog (``catalog.jsonl``) is descriptor-only: those
tools are never called. This module holds the handful of tools that the
scripted task actually executes:

    "Checkout latency is spiking. Find the active alert, look up who is on
    call for the payments service, page them with the alert summary, and
    post an incident note in the #incidents Slack channel."

Every function is a plain, standard-library-only Python function with full
type hints and a Google-style docstring, so a framework can derive its
schema from the signature. All data comes from the module-level dicts below
and is fully deterministic: the same inputs always produce the same outputs,
and unknown inputs raise ``ValueError`` with a clear message.

None of these names appear in ``catalog.jsonl``.
"""

from collections.abc import Callable
from typing import Any, Literal

# ---------------------------------------------------------------------------
# Fake backing data
# ---------------------------------------------------------------------------

#: Services known to the monitoring system, mapped to the team that owns them.
SERVICE_OWNERS: dict[str, str] = {
    "checkout": "payments",
    "payments-api": "payments",
    "ledger": "payments",
    "search": "discovery",
    "recommendations": "discovery",
    "auth": "identity",
}

#: Alerts currently firing, keyed by alert ID.
ACTIVE_ALERTS: dict[str, dict] = {
    "ALRT-4821": {
        "alert_id": "ALRT-4821",
        "incident_id": "INC-2291",
        "rule": "CheckoutP99LatencyHigh",
        "service": "checkout",
        "team": "payments",
        "severity": "critical",
        "summary": "checkout p99 latency 2.4s > 800ms",
        "value": 2.4,
        "threshold": 0.8,
        "unit": "s",
        "started_at": "2024-05-14T09:12:00Z",
        "runbook_url": "https://wiki.example.com/runbooks/checkout-latency",
        "dashboard_uid": "checkout-overview",
    },
    "ALRT-4817": {
        "alert_id": "ALRT-4817",
        "incident_id": "INC-2288",
        "rule": "SearchIndexLagWarning",
        "service": "search",
        "team": "discovery",
        "severity": "warning",
        "summary": "search index lag 14m > 10m",
        "value": 14.0,
        "threshold": 10.0,
        "unit": "min",
        "started_at": "2024-05-14T08:47:00Z",
        "runbook_url": "https://wiki.example.com/runbooks/search-index-lag",
        "dashboard_uid": "search-indexing",
    },
    "ALRT-4809": {
        "alert_id": "ALRT-4809",
        "incident_id": None,
        "rule": "AuthCertExpiringSoon",
        "service": "auth",
        "team": "identity",
        "severity": "info",
        "summary": "auth TLS certificate expires in 13 days",
        "value": 13.0,
        "threshold": 14.0,
        "unit": "days",
        "started_at": "2024-05-13T00:00:00Z",
        "runbook_url": "https://wiki.example.com/runbooks/cert-rotation",
        "dashboard_uid": "auth-certificates",
    },
}

#: Users who can be paged, keyed by user ID.
USERS: dict[str, dict] = {
    "U042": {
        "user_id": "U042",
        "name": "Dana Ortiz",
        "email": "dana.ortiz@example.com",
        "team": "payments",
        "slack_handle": "@dana",
    },
    "U017": {
        "user_id": "U017",
        "name": "Marcus Lee",
        "email": "marcus.lee@example.com",
        "team": "payments",
        "slack_handle": "@marcus",
    },
    "U088": {
        "user_id": "U088",
        "name": "Priya Raman",
        "email": "priya.raman@example.com",
        "team": "discovery",
        "slack_handle": "@priya",
    },
    "U105": {
        "user_id": "U105",
        "name": "Tomasz Nowak",
        "email": "tomasz.nowak@example.com",
        "team": "identity",
        "slack_handle": "@tomasz",
    },
}

#: Current on-call shifts, keyed by (service, schedule).
ONCALL_SHIFTS: dict[tuple[str, str], dict] = {
    ("payments", "primary"): {
        "user_id": "U042",
        "shift_start": "2024-05-13T09:00:00Z",
        "shift_end": "2024-05-20T09:00:00Z",
        "escalation_policy": "payments-critical",
    },
    ("payments", "secondary"): {
        "user_id": "U017",
        "shift_start": "2024-05-13T09:00:00Z",
        "shift_end": "2024-05-20T09:00:00Z",
        "escalation_policy": "payments-critical",
    },
    ("discovery", "primary"): {
        "user_id": "U088",
        "shift_start": "2024-05-14T00:00:00Z",
        "shift_end": "2024-05-15T00:00:00Z",
        "escalation_policy": "discovery-default",
    },
    ("identity", "primary"): {
        "user_id": "U105",
        "shift_start": "2024-05-10T17:00:00Z",
        "shift_end": "2024-05-17T17:00:00Z",
        "escalation_policy": "identity-default",
    },
}

#: Slack channels the demo bot may post to, keyed by channel name.
SLACK_CHANNELS: dict[str, dict] = {
    "incidents": {"channel_id": "C07INC0001", "name": "incidents"},
    "payments-eng": {"channel_id": "C07PAY0002", "name": "payments-eng"},
    "sre": {"channel_id": "C07SRE0003", "name": "sre"},
}

#: Known incident IDs and the alert each one was opened for.
INCIDENTS: dict[str, str] = {
    "INC-2291": "ALRT-4821",
    "INC-2288": "ALRT-4817",
}

_SEVERITIES = ("critical", "warning", "info")
_URGENCIES = ("high", "low")
_PAGE_ACK_TIMEOUT_MINUTES = {"high": 5, "low": 30}


def _check_incident(incident_id: str | None) -> None:
    if incident_id is not None and incident_id not in INCIDENTS:
        raise ValueError(f"Unknown incident_id {incident_id!r}. Known incidents: {sorted(INCIDENTS)}.")


def _resolve_team(service: str) -> str:
    """Map a service or team name to the owning team."""
    if service in SERVICE_OWNERS:
        return SERVICE_OWNERS[service]
    if service in set(SERVICE_OWNERS.values()):
        return service
    known = sorted(set(SERVICE_OWNERS) | set(SERVICE_OWNERS.values()))
    raise ValueError(f"Unknown service {service!r}. Known services and teams: {known}.")


# ---------------------------------------------------------------------------
# Task tools
# ---------------------------------------------------------------------------


def monitoring_list_active_alerts(
    service: str | None = None,
    severity: Literal["critical", "warning", "info"] | None = None,
) -> list[dict]:
    """List alerts that are currently firing, optionally filtered by service and severity.

    Args:
        service: Only return alerts for this service, e.g. "checkout". Omit to
            return alerts for every service.
        severity: Only return alerts with this severity level ("critical",
            "warning" or "info"). Omit to return all severities.

    Returns:
        Firing alerts, most severe first, each with alert_id, rule, service,
        team, severity, summary, value, threshold, unit, started_at,
        runbook_url, dashboard_uid and incident_id (the open incident for
        the alert, or None if no incident has been declared).

    Raises:
        ValueError: If service is not a known service or severity is not a
            valid level.
    """
    if service is not None and service not in SERVICE_OWNERS:
        raise ValueError(f"Unknown service {service!r}. Known services: {sorted(SERVICE_OWNERS)}.")
    if severity is not None and severity not in _SEVERITIES:
        raise ValueError(f"Invalid severity {severity!r}. Expected one of {list(_SEVERITIES)}.")
    alerts = [
        dict(alert)
        for alert in ACTIVE_ALERTS.values()
        if (service is None or alert["service"] == service) and (severity is None or alert["severity"] == severity)
    ]
    alerts.sort(key=lambda a: (_SEVERITIES.index(a["severity"]), a["alert_id"]))
    return alerts


def oncall_get_current(service: str, schedule: str = "primary") -> dict:
    """Look up who is currently on call for a service or team.

    Args:
        service: Service name (e.g. "checkout") or owning team name (e.g.
            "payments") whose on-call rotation should be consulted.
        schedule: Rotation layer to read, "primary" or "secondary".

    Returns:
        The on-call responder: user_id, name, email, slack_handle, team,
        schedule, shift_start, shift_end and escalation_policy.

    Raises:
        ValueError: If the service or team is unknown, or it has no such
            schedule.
    """
    team = _resolve_team(service)
    shift = ONCALL_SHIFTS.get((team, schedule))
    if shift is None:
        available = sorted(s for (t, s) in ONCALL_SHIFTS if t == team)
        raise ValueError(f"Team {team!r} has no {schedule!r} on-call schedule. Available schedules: {available}.")
    user = USERS[shift["user_id"]]
    return {
        "user_id": user["user_id"],
        "name": user["name"],
        "email": user["email"],
        "slack_handle": user["slack_handle"],
        "team": team,
        "schedule": schedule,
        "shift_start": shift["shift_start"],
        "shift_end": shift["shift_end"],
        "escalation_policy": shift["escalation_policy"],
    }


def pager_send_page(
    user_id: str,
    summary: str,
    urgency: Literal["high", "low"] = "high",
    incident_id: str | None = None,
) -> dict:
    """Page a responder by push notification, SMS and phone call with a short summary.

    Args:
        user_id: ID of the user to page, e.g. "U042", as returned by
            oncall_get_current.
        summary: One-line description of the problem shown in the page,
            e.g. the alert summary. At most 240 characters.
        urgency: "high" notifies immediately on all channels and escalates
            after 5 minutes without acknowledgement; "low" sends a push
            notification only and escalates after 30 minutes.
        incident_id: Existing incident to attach the page to, e.g.
            "INC-2291". Omit to page without linking an incident.

    Returns:
        The page record: page_id, status, user_id, user_name, urgency,
        summary, incident_id, channels and ack_timeout_minutes.

    Raises:
        ValueError: If the user, urgency or incident is unknown, or the
            summary is empty or too long.
    """
    user = USERS.get(user_id)
    if user is None:
        raise ValueError(f"Unknown user_id {user_id!r}. Known users: {sorted(USERS)}.")
    if not summary.strip():
        raise ValueError("summary must not be empty.")
    if len(summary) > 240:
        raise ValueError(f"summary is {len(summary)} characters; the limit is 240.")
    if urgency not in _URGENCIES:
        raise ValueError(f"Invalid urgency {urgency!r}. Expected one of {list(_URGENCIES)}.")
    _check_incident(incident_id)
    channels = ["push", "sms", "phone"] if urgency == "high" else ["push"]
    return {
        "page_id": f"PG-{user_id}-{incident_id or 'adhoc'}",
        "status": "triggered",
        "user_id": user_id,
        "user_name": user["name"],
        "urgency": urgency,
        "summary": summary,
        "incident_id": incident_id,
        "channels": channels,
        "ack_timeout_minutes": _PAGE_ACK_TIMEOUT_MINUTES[urgency],
    }


def slack_post_incident_note(
    channel: str,
    text: str,
    incident_id: str | None = None,
) -> dict:
    """Post an incident status note to a Slack channel, tagged with the incident if given.

    Args:
        channel: Channel name with or without the leading "#" (e.g.
            "#incidents") or a channel ID such as "C07INC0001".
        text: Note body in Slack mrkdwn: what is happening, who was paged
            and the next steps. At most 4000 characters.
        incident_id: Incident the note belongs to, e.g. "INC-2291"; it is
            prefixed to the message and recorded in message metadata.

    Returns:
        The posted message: ok, channel_id, channel_name, ts, permalink,
        text and incident_id.

    Raises:
        ValueError: If the channel or incident is unknown, or the text is
            empty or too long.
    """
    name = channel.lstrip("#")
    info = SLACK_CHANNELS.get(name)
    if info is None:
        info = next((c for c in SLACK_CHANNELS.values() if c["channel_id"] == channel), None)
    if info is None:
        raise ValueError(
            f"Unknown Slack channel {channel!r}. Known channels: {['#' + n for n in sorted(SLACK_CHANNELS)]}."
        )
    if not text.strip():
        raise ValueError("text must not be empty.")
    if len(text) > 4000:
        raise ValueError(f"text is {len(text)} characters; the limit is 4000.")
    _check_incident(incident_id)
    posted = f"[{incident_id}] {text}" if incident_id else text
    ts = "1715678400.000100"
    return {
        "ok": True,
        "channel_id": info["channel_id"],
        "channel_name": info["name"],
        "ts": ts,
        "permalink": (f"https://example.slack.com/archives/{info['channel_id']}/p{ts.replace('.', '')}"),
        "text": posted,
        "incident_id": incident_id,
    }


TASK_TOOLS: list[Callable[..., Any]] = [
    monitoring_list_active_alerts,
    oncall_get_current,
    pager_send_page,
    slack_post_incident_note,
]

TOOL_GROUPS = {
    "monitoring_list_active_alerts": "monitoring",
    "oncall_get_current": "oncall",
    "pager_send_page": "oncall",
    "slack_post_incident_note": "slack",
}
