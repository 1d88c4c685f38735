"""The stable-section watch: a system section marked stable that changes step after step
silently costs the provider's prompt cache, so it is reported."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from greenroom import events as ev
from greenroom.models import RequestDraft

if TYPE_CHECKING:
    from greenroom.run.context import RunContext
    from greenroom.run.session import Session

log = logging.getLogger("greenroom")

STABLE_RUN = 3
"""Steps in a row a stable system section may change before it is reported."""


def watch_stable(ctx: RunContext, session: Session, draft: RequestDraft) -> None:
    """Say when a section marked stable changes step after step. A section that changes
    now and then (a listing after a discovery) is what stable allows; one that changed on
    ``STABLE_RUN`` steps in a row is reported, once per session and section (an event and
    a log warning)."""
    seen, streaks = session.stable_sections, session.stable_streaks
    for section in draft.system:
        if not section.stable:
            continue
        before = seen.get(section.key)
        seen[section.key] = section.text
        if before is None:
            continue
        streak = streaks.get(section.key, 0)
        if streak < 0:  # reported already
            continue
        streak = streak + 1 if before != section.text else 0
        streaks[section.key] = streak
        if streak >= STABLE_RUN:
            streaks[section.key] = -1
            ctx.emit(ev.StableSectionChanged(step=ctx.step, key=section.key))
            log.warning(
                "system section %r is marked stable but changed on each of the last %d steps; give a section "
                "that changes stable=False, or the provider's prompt cache is rebuilt every step",
                section.key,
                STABLE_RUN,
            )
