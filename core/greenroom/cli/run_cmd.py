"""``greenroom inspect`` and ``greenroom run``: the first request, and a run with a live view,
its session held from load to save, ended cleanly by Ctrl-C, SIGTERM or SIGHUP.

The runtime's modules load when a command runs, not when the command line starts."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.text import Text

from greenroom.cli.app import app, console, err_console, fail

if TYPE_CHECKING:
    from anyio import CancelScope

    from greenroom._support.storage import FileInUse

EXIT_IN_USE = 75  # EX_TEMPFAIL (sysexits.h): the session is busy, trying again later may work
EXIT_CANCELLED = 130  # 128 + SIGINT: what a shell reports for a command ended by Ctrl-C


def _build(path: Path, **kw: Any) -> Any:
    from greenroom.compose.build import build_runtime
    from greenroom.config import ConfigError

    try:
        return build_runtime(path, **kw)
    except ConfigError as exc:
        fail(str(exc))
    except Exception as exc:  # a plugin failing to start must not print a traceback
        fail(f"{type(exc).__name__}: {exc}")


@app.command("inspect")
def inspect_cmd(
    path: Annotated[Path, typer.Argument(help="Config file (TOML).")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    request: Annotated[
        bool,
        typer.Option("--request", help="Print the exact first request as JSON: system prompt, tools, provider body."),
    ] = False,
) -> None:
    """Show what the model would see on the first step: each tool eager or deferred.

    Needs no provider SDK: tokens are counted with greenroom's own o200k tokenizer."""
    import anyio

    from greenroom.cli.inspection import first_request_json, inspect_runtime, print_inspection
    from greenroom.failures import PluginHookError

    rt = _build(path, offline_model=True)
    try:
        report = anyio.run(inspect_runtime, rt)
    except PluginHookError as exc:
        fail(str(exc), 1)
    if request:
        typer.echo(json.dumps(first_request_json(rt, report), indent=2, ensure_ascii=False))
    elif as_json:
        typer.echo(json.dumps({k: v for k, v in report.items() if k != "request"}, indent=2))
    else:
        print_inspection(console, report)


@app.command("run")
def run_cmd(
    path: Annotated[Path, typer.Argument(help="Config file (TOML).")],
    user_input: Annotated[str, typer.Argument(metavar="input", help="The user's message.")],
    trace: Annotated[Path | None, typer.Option("--trace", help="Write a JSONL trace of events.")] = None,
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            help="Session file to resume and save; a bare file name lives in [session] dir when that is set.",
        ),
    ] = None,
    wait: Annotated[
        float,
        typer.Option("--wait", min=0, metavar="SECONDS", help="Wait this long for a session another run holds."),
    ] = 0.0,
    take_over: Annotated[
        bool, typer.Option("--take-over", help="Continue a session saved by another agent id, as this agent.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the final answer.")] = False,
    no_stream: Annotated[
        bool,
        typer.Option("--no-stream", help="Show the model's text when its response is complete, not as it arrives."),
    ] = False,
) -> None:
    """Run the agent on one input (resuming and saving --session if given).

    A model that streams shows its text as it arrives (in a pipe, a whole line at a time);
    --no-stream waits for each whole response, as --quiet does.

    Exit status: 0 answered; 1 the run stopped without an answer or failed; 2 a bad
    config or session file; 75 the session is in use by another run; 130 cancelled with
    Ctrl-C (the session is saved with everything up to that point); after SIGTERM or
    SIGHUP, saved the same way, the process ends by that signal (a shell says 143, 129).
    """
    from asyncio import CancelledError

    import anyio

    from greenroom import events as ev
    from greenroom._support.storage import FileInUse
    from greenroom.cli.live import LiveView
    from greenroom.failures import PluginHookError, first_error
    from greenroom.models import ModelError
    from greenroom.run.session import SessionError, SessionOwnerError, held_session, session_path

    bus = ev.EventBus()
    try:
        writer = ev.TraceWriter(trace) if trace else None
    except OSError as exc:
        culprit = f" ({exc.filename})" if exc.filename else ""
        fail(f"{trace}: cannot write the trace: {exc.strerror or exc}{culprit}")
    if writer:
        bus.subscribe(writer)
    view = None if quiet else LiveView(console)
    if view is not None:
        bus.subscribe(view)
    on_text = None if view is None or no_stream else view.text
    saved_to: Path | None = None
    ending = _Ending()
    rt: Any = None
    try:
        with ending:
            rt = _build(path, events=bus)
            if session is None:
                outcome = anyio.run(_drive, rt, rt.session(), user_input, ending, on_text)
            else:
                where = session_path(session, rt.config)
                with held_session(rt, where, wait=wait, take_over=take_over, on_wait=_waiting(wait)) as sess:
                    saved_to = where  # from here on, leaving the block saves it, whatever ends the run
                    outcome = anyio.run(_drive, rt, sess, user_input, ending, on_text)
    except (KeyboardInterrupt, CancelledError):
        # the first Ctrl-C cancels the run: RunEnd ran, the trace ends with run_end
        # ("cancelled"), the session was saved on the way out
        saved = f"; session saved to {saved_to}" if saved_to else ""
        _say(f"run cancelled (Ctrl-C){saved}")
        outcome = None
    except typer.Exit:
        raise
    except FileInUse as exc:
        fail(f"session {exc.path} is in use ({exc.holder}); --wait SECONDS waits for it", EXIT_IN_USE)
    except SessionOwnerError as exc:
        fail(f"{exc}; --take-over continues it as agent {exc.agent!r}")
    except SessionError as exc:
        fail(str(exc))
    except PluginHookError as exc:
        fail(_masked(rt, str(exc)), 1)
    except ModelError as exc:
        fail(_masked(rt, f"the model failed: {exc}"), 1)
    except Exception as exc:
        error = first_error(exc)
        fail(_masked(rt, f"{type(error).__name__}: {error}"), 1)
    finally:
        if writer:
            writer.close()
    if ending.signum is not None:
        # a SIGTERM or SIGHUP ended the run the way Ctrl-C does (RunEnd ran, the trace ends
        # with run_end, the session is saved), or came after it ended and waited for the save
        name = signal.Signals(ending.signum).name
        saved = f"; session saved to {saved_to}" if saved_to else ""
        _say(f"run cancelled ({name}){saved}" if outcome is None else f"{name} received; the run had ended{saved}")
        _end_by(ending.signum)
    if outcome is None:
        _leave(EXIT_CANCELLED)
    if quiet:
        typer.echo(outcome.text)
    if outcome.stop_reason != "final":
        err_console.print(f"[yellow]run stopped: {outcome.stop_reason}[/]")
        raise typer.Exit(1)


def _masked(rt: Any, message: str) -> str:
    """``message`` without the run's secrets (an MCP server's token a plugin's error quotes);
    ``fail`` masks the ones the whole process knows (API keys)."""
    secrets = getattr(rt, "secrets", None)
    return secrets.mask(message) if secrets else message


def _say(message: str) -> None:
    """A closing word on stderr, which may be gone (SIGHUP: the terminal hung up)."""
    with contextlib.suppress(OSError):
        err_console.print(Text(message, style="yellow"), highlight=False)


class _Ending:
    """SIGTERM and SIGHUP end ``greenroom run`` the way one Ctrl-C does.

    While the run goes on, the first such signal cancels it: RunEnd runs, the trace ends
    with ``run_end`` ("cancelled"), the session is saved, and then the process ends by
    that same signal, as a program that cleans up on a signal should (its parent sees it
    killed by the signal; a shell reports 128 + its number). A second one while the run winds down ends the process at
    once, as a second Ctrl-C does. Before the run starts (the config is read, servers
    start) nothing is lost, so the signal ends the process as it always did, its MCP
    servers stopped first; after the run ends it waits until the session is saved. A
    signal that is ignored (``nohup``) stays ignored.
    """

    def __init__(self) -> None:
        self.signum: int | None = None  # the signal that ended (or came after) the run
        self._started = False
        self._cancel: Callable[[], None] | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _Ending:
        if threading.current_thread() is not threading.main_thread():
            return self  # only the main thread may set handlers (and gets the signals)
        for name in ("SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is None:  # pragma: no cover - Windows has no SIGHUP
                continue
            try:
                previous = signal.getsignal(signum)
                if previous is signal.SIG_IGN:
                    continue
                signal.signal(signum, self._on_signal)
            except (OSError, ValueError):  # pragma: no cover - a platform without it
                continue
            self._previous[signum] = previous
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, signal.SIG_DFL if previous is None else previous)
        self._previous.clear()

    @contextlib.contextmanager
    def cancelling(self, scope: CancelScope) -> Iterator[None]:
        """While the block runs (on the event loop), a signal cancels ``scope``."""
        import asyncio

        loop = asyncio.get_running_loop()
        self._started = True

        # the handler runs between two bytecodes of the main thread, which may be the loop's
        # own: the cancel is handed to the loop, the way asyncio hands it a Ctrl-C
        def cancel() -> None:
            loop.call_soon_threadsafe(scope.cancel)

        self._cancel = cancel
        # While the loop waits, the signal may reach another thread (a worker's), and a
        # plain handler would wait until the loop wakes (a model that streams slowly: an
        # hour): through the loop, the signal wakes it wherever it lands.
        through_loop = []
        for signum in self._previous:
            try:
                loop.add_signal_handler(signum, self._on_signal, signum, None)
            except (NotImplementedError, RuntimeError, ValueError):  # pragma: no cover - no such support
                continue
            through_loop.append(signum)
        try:
            yield
        finally:
            self._cancel = None
            for signum in through_loop:
                loop.remove_signal_handler(signum)  # which leaves SIG_DFL: ours again, until __exit__
                signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if not self._started or (self._cancel is not None and self.signum is not None):
            _die(signum)
        if self.signum is None:
            self.signum = signum
        if self._cancel is not None:
            self._cancel()


def _die(signum: int) -> None:
    """End the process by ``signum`` as if greenroom had no handler, its servers stopped."""
    termination = sys.modules.get("greenroom.mcp.host.termination")  # no server ran without it
    try:
        if termination is not None:
            termination.stop_all()
    finally:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _waiting(wait: float) -> Callable[[FileInUse], None]:
    def say(busy: FileInUse) -> None:
        waiting = f"session {busy.path} is in use ({busy.holder}); waiting up to {wait:g} s"
        err_console.print(Text(waiting, style="yellow"), highlight=False)

    return say


async def _drive(rt: Any, sess: Any, user_input: str, ending: _Ending, on_text: Any = None) -> Any:
    """The run's outcome, or None when a SIGTERM or SIGHUP cancelled it. ``on_text`` shows
    the model's text as it arrives, when the model streams."""
    import anyio

    try:
        with anyio.CancelScope() as scope, ending.cancelling(scope):
            return await sess.run(user_input, on_text=on_text)
        return None
    finally:
        # servers and clients close even when Ctrl-C cancelled the run
        with anyio.CancelScope(shield=True):
            await rt.aclose()


def _end_by(signum: int) -> NoReturn:
    """End the process by ``signum`` once everything is saved and the exit hooks ran (which
    a death by signal skips), so whoever waits for it sees what the signal asked for."""
    run_exit_hooks = getattr(atexit, "_run_exitfuncs", None)  # CPython's own, as at exit
    if run_exit_hooks is not None:
        run_exit_hooks()
    with contextlib.suppress(OSError):  # a terminal that hung up
        sys.stdout.flush()
        sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # pragma: no cover - the signal ended the process


def _leave(code: int) -> NoReturn:
    """Exit with ``code``, not waiting for a tool still running in a thread.

    A sync tool cut off by Ctrl-C cannot be interrupted, and Python waits for every
    worker thread before it exits; everything is saved by now, so the process runs what
    a normal exit runs (the exit hooks that stop servers, flush logs) and ends without
    waiting for the thread."""
    main = threading.main_thread()
    if any(t is not main and t.is_alive() and not t.daemon for t in threading.enumerate()):
        run_exit_hooks = getattr(atexit, "_run_exitfuncs", None)  # CPython's own, as at exit
        if run_exit_hooks is not None:
            run_exit_hooks()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise typer.Exit(code)
