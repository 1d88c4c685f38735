"""How an HTTP gateway stops on SIGTERM or SIGINT (Ctrl-C), whatever its clients hold open.

1. It stops taking requests: a new one is answered 503, ``/readyz`` says 503 (a load
   balancer drains this replica), ``/healthz`` still says alive.
2. The requests in progress finish, within the drain timeout (``--drain-timeout``). A
   ``tools/call`` still running then is cancelled (upstream too), and its client gets an
   error result that says why.
3. Every stream still open ends (a client's GET stream, a ``subscriptions/listen``), as
   it would if its client left, and the HTTP server stops.

Then the caller ends every client's run (RunEnd: what was learned is kept) and the
upstream servers stop. A second signal cuts the wait of step 2 short; one more after
step 3 stops waiting for connections to close.
"""

from __future__ import annotations

import logging
import signal
from typing import TYPE_CHECKING, Any

import anyio

from greenroom_gateway.ops.http import Front

if TYPE_CHECKING:
    from greenroom_gateway.ops.limits import Calls

log = logging.getLogger("greenroom.serve.ops")

DRAIN_SECONDS = 10.0
"""How long the calls in progress may take to finish once the gateway stops, by default."""
ANSWER_SECONDS = 5.0
"""How long the calls cancelled past the drain timeout have to write their error."""


async def drain(front: Front, calls: Calls, timeout: float, hurry: anyio.Event | None = None) -> None:
    """Steps 1 to 3 of the module's docstring, but for stopping the HTTP server."""
    front.stopping = True
    if front.busy:
        log.warning("stopping: %d requests in progress may take %g s to finish", front.busy, timeout)
    else:
        log.warning("stopping")
    if not await front.wait_idle(timeout, hurry):
        why = (
            f"the gateway is stopping: this call was still running after {timeout:g} s (the gateway's drain "
            "timeout, --drain-timeout) and was cancelled"
        )
        cancelled = calls.cancel_all(why)
        log.warning("stopping: cancelled %d calls still in progress after %g s", cancelled, timeout)
        await front.wait_idle(ANSWER_SECONDS)
    front.close_streams()


async def stop_on_signal(server: Any, front: Front, calls: Calls, timeout: float) -> None:
    """Wait for SIGTERM or SIGINT, drain, then tell the HTTP server (uvicorn's) to stop; go on
    listening, so that no later signal kills the process before the clients' runs end."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for received in signals:
            log.warning("received %s", signal.Signals(received).name)
            break
        else:  # pragma: no cover - the receiver never ends on its own
            return
        hurry = anyio.Event()
        async with anyio.create_task_group() as tg:

            async def hurried() -> None:
                async for again in signals:
                    log.warning("received %s again: not waiting for the calls in progress", signal.Signals(again).name)
                    hurry.set()
                    return

            tg.start_soon(hurried)
            await drain(front, calls, timeout, hurry)
            tg.cancel_scope.cancel()
        server.should_exit = True
        async for _ in signals:
            server.force_exit = True  # stop waiting for connections to close


__all__ = ["ANSWER_SECONDS", "DRAIN_SECONDS", "drain", "stop_on_signal"]
