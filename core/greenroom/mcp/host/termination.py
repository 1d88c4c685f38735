"""Child servers end with greenroom: when the process is terminated (SIGTERM, SIGHUP) or
exits, every MCP host still running is stopped first, which shuts its stdio servers down
the SDK's way (stdin closed, then SIGTERM and SIGKILL to each server's process group).

Why here: a stdio server runs in a session of its own, so no signal meant for greenroom
reaches it, and one that is blocked never reads the end of its stdin. Without this, a
terminated greenroom would leave such a server running, adopted by PID 1.

- SIGTERM and SIGHUP: a handler is installed only where the signal would kill the process
  anyway (its handler is the default): it stops the hosts, then lets the signal kill the
  process as before. A handler someone else installed, or an ignored signal, is left alone.
- SIGINT is left to its owner (KeyboardInterrupt, or the event loop cancelling the run):
  either way the runtime is closed, or the process exits, and the exit hook below stops
  whatever is still running.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
import weakref
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from greenroom.mcp.host.thread import McpHost

TERMINATING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))

_hosts: weakref.WeakSet[McpHost] = weakref.WeakSet()
# Re-entrant: the handler runs in the main thread, which the signal may have caught inside
# ``track`` holding this very lock.
_lock = threading.RLock()
_exit_hook = False
_installed: set[int] = set()
_owner_pid = os.getpid()


def track(host: McpHost) -> None:
    """Stop ``host`` if the process is terminated or exits while it runs."""
    global _exit_hook
    with _lock:
        _hosts.add(host)
        if not _exit_hook:
            atexit.register(stop_all)
            _exit_hook = True
    install()


def untrack(host: McpHost) -> None:
    with _lock:
        _hosts.discard(host)


def install() -> None:
    """Install the handlers for SIGTERM and SIGHUP (once; only from the main thread, the one
    place Python lets a handler be set, and only over the default handler)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in TERMINATING:
        if signum in _installed:
            continue
        try:
            if signal.getsignal(signum) is not signal.SIG_DFL:
                continue
            signal.signal(signum, _on_terminate)
        except (OSError, ValueError):  # pragma: no cover - a platform without it
            continue
        _installed.add(signum)


def stop_all() -> None:
    """Stop every tracked host (each bounded by the host's own close timeout)."""
    if os.getpid() != _owner_pid:
        return  # a forked child: the hosts' threads are the parent's, not ours
    with _lock:
        hosts = list(_hosts)
    for host in hosts:
        host.stop()


def _on_terminate(signum: int, frame: FrameType | None) -> None:
    try:
        stop_all()
    finally:
        # Then the signal does what it did before greenroom handled it: end the process,
        # with the status a shell reports for it.
        signal.signal(signum, signal.SIG_DFL)
        _installed.discard(signum)
        os.kill(os.getpid(), signum)


__all__ = ["TERMINATING", "install", "stop_all", "track", "untrack"]
