"""The sandbox: one script, one fresh Deno process granted no permission at all.

The process starts with no ``--allow-*`` flag and ``--no-prompt`` (so the network, the file
system, the environment, subprocesses and native libraries are refused, not asked for),
``--no-remote`` and ``--no-npm`` (no code is fetched), ``--no-config``, a V8 heap limit,
an empty environment and a fresh temporary folder as its working folder, removed
afterwards. Deno's own cache (its compiled harness) is kept in greenroom's state folder:
the script cannot reach it (no file access, and the harness takes the storage APIs away
before the script runs), and keeping it spares each script a third of its start. Once
Deno has started (and reserved its address space), the
process's data segment is limited too (Linux ``RLIMIT_DATA``): buffers outside the
JavaScript heap cannot grow past the limit either. The harness (``harness.js``) reads
the script from stdin and talks with greenroom one JSON line at a time (its module says
how); greenroom reads every line bounded in size, counts the script's calls, and answers
each through ``answer``. Whatever the script does (an endless loop, a memory bomb, a
flood of output or calls, lines of its own on stdout), the result is an ``Outcome``; the
caller's deadline (the tool's timeout) cancels ``run_script``, which kills the process.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import attrs

from greenroom.kit import state_dir

HARNESS = Path(__file__).resolve().with_name("harness.js")

Answer = Callable[[str, Any], Awaitable[tuple[bool, Any]]]
"""A tool call of the script (name, arguments) -> ``(True, value)`` or ``(False, error text)``."""

STDERR_KEPT = 4096
"""Bytes of the process's stderr kept, from its end, to say why it died."""


class DenoMissing(RuntimeError):
    """No Deno binary to run scripts with."""


@attrs.frozen
class Limits:
    memory_mb: int = 256
    max_calls: int = 64
    console_chars: int = 4000
    max_message_bytes: int = 1 << 20
    cpu_seconds: float | None = None
    """Processor time the process may use (Linux ``RLIMIT_CPU``): what ends a sandbox whose
    greenroom died while its script spun; greenroom's own deadline comes first."""


@attrs.frozen
class Outcome:
    """How a script ended: its return value (``ok``), or why it failed; its console output
    and how many tool calls it made either way."""

    ok: bool
    value: Any = None
    error: str = ""
    console: str = ""
    calls: int = 0


def find_deno(configured: str | None = None) -> str:
    """The Deno binary: the configured one, the ``deno`` package's, else deno on PATH."""
    if configured:
        found = shutil.which(configured)
        if found is None:
            raise DenoMissing(f"deno = {configured!r}: no such executable")
        return found
    try:
        import deno  # the PyPI package that ships the binary (greenroom[code])

        return str(deno.find_deno_bin())
    except (ImportError, FileNotFoundError):
        pass
    found = shutil.which("deno")
    if found is None:
        raise DenoMissing("code mode needs Deno: pip install 'greenroom[code]' (or set [plugins.code-mode] deno)")
    return found


def command(deno: str, limits: Limits) -> list[str]:
    """The command line of one sandbox: no permission flag at all."""
    return [
        deno,
        "run",
        "--quiet",
        "--no-prompt",
        "--no-remote",
        "--no-npm",
        "--no-config",
        f"--v8-flags=--max-old-space-size={limits.memory_mb}",
        str(HARNESS),
    ]


async def run_script(code: str, answer: Answer, limits: Limits, *, deno: str, concurrency: int = 8) -> Outcome:
    """Run ``code`` (the body of an async function of ``tools`` and ``console``) in a fresh
    sandbox, answering its tool calls with ``answer`` (at most ``concurrency`` at once)."""
    work = Path(await anyio.to_thread.run_sync(lambda: tempfile.mkdtemp(prefix="greenroom-code-")))
    env = {"DENO_DIR": str(state_dir() / "code-mode" / "deno"), "DENO_NO_UPDATE_CHECK": "1", "NO_COLOR": "1"}
    try:
        try:
            process = await anyio.open_process(
                command(deno, limits),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=work,
                env=env,
                start_new_session=True,  # its own process group: killed whole
            )
        except OSError as exc:
            return Outcome(False, error=f"the sandbox could not start {deno}: {exc.strerror or exc}")
        try:
            return await _Conversation(process, answer, limits, concurrency).run(code)
        finally:
            with anyio.CancelScope(shield=True):
                _kill(process)
                await process.wait()
                await process.aclose()
    finally:
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(work, ignore_errors=True))


def _kill(process: anyio.abc.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _TooLarge(Exception):
    """A line of the script's over the message bound."""


class _Lines:
    """Lines of a byte stream, each at most ``limit`` bytes."""

    def __init__(self, stream: anyio.abc.ByteReceiveStream, limit: int) -> None:
        self._stream = stream
        self._limit = limit
        self._buffer = bytearray()

    async def next(self) -> bytes | None:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return line
            if len(self._buffer) > self._limit:
                raise _TooLarge
            try:
                self._buffer += await self._stream.receive(65536)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return None


class _Conversation:
    """The exchange with one harness, from its first line to its answer."""

    def __init__(self, process: anyio.abc.Process, answer: Answer, limits: Limits, concurrency: int) -> None:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        self.process = process
        self.stdin = process.stdin
        self.answer = answer
        self.limits = limits
        self.lines = _Lines(process.stdout, limits.max_message_bytes)
        self.stderr = bytearray()
        self.limiter = anyio.Semaphore(max(1, concurrency))
        self.writing = anyio.Lock()
        self.token = secrets.token_hex(16)
        self.calls = 0

    async def run(self, code: str) -> Outcome:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._drain_stderr)
            try:
                outcome = await self._converse(code, tg)
            except _TooLarge:
                outcome = self._failed(f"the script sent a message over {self.limits.max_message_bytes} bytes")
            # the process is done with (its answer is in, or it broke the rules): the calls it
            # started still finish as calls of the run; their answers have nowhere to go
            _kill(self.process)
        return outcome

    async def _converse(self, code: str, tg: anyio.abc.TaskGroup) -> Outcome:
        ready = await self.lines.next()
        if ready != b'{"t":"ready"}':
            return await self._ended("the sandbox did not start")
        _limit(self.process.pid, self.limits)
        start = {"code": code, "token": self.token, "console_chars": self.limits.console_chars}
        if not await self._send(start):
            return await self._ended("the sandbox did not start")
        while True:
            line = await self.lines.next()
            if line is None:
                return await self._ended("the script ended without an answer")
            message = _parse(line)
            if message is None or message.get("k") != self.token:
                return self._failed("the script wrote to greenroom's channel itself (only tools.NAME() calls tools)")
            if message.get("t") == "done":
                console = str(message.get("console") or "")
                if message.get("ok") is True:
                    return Outcome(True, message.get("value"), console=console, calls=self.calls)
                return Outcome(False, error=str(message.get("error") or "failed"), console=console, calls=self.calls)
            self.calls += 1
            if self.calls > self.limits.max_calls:
                return self._failed(f"the script made more than {self.limits.max_calls} tool calls")
            tg.start_soon(self._call, message.get("id"), str(message.get("name") or ""), message.get("args"))

    async def _call(self, call_id: Any, name: str, arguments: Any) -> None:
        async with self.limiter:
            ok, value = await self.answer(name, arguments)
        reply: dict[str, Any] = {"id": call_id, "ok": ok}
        reply["value" if ok else "error"] = value
        await self._send(reply)

    async def _send(self, message: dict[str, Any]) -> bool:
        data = (_json(message) + "\n").encode()
        async with self.writing:
            try:
                await self.stdin.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return False  # the process is gone: what it was owed cannot reach it
        return True

    async def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        try:
            async for chunk in self.process.stderr:
                self.stderr += chunk
                del self.stderr[:-STDERR_KEPT]
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    def _failed(self, why: str) -> Outcome:
        return Outcome(False, error=why, calls=self.calls)

    async def _ended(self, what: str) -> Outcome:
        """The process stopped talking: why, from how it ended and what it last said."""
        with anyio.move_on_after(2):
            await self.process.wait()
        code = self.process.returncode
        said = self.stderr.decode(errors="replace")
        if "out of memory" in said or code in (-signal.SIGTRAP, 133):
            return self._failed(f"the script ran out of memory (its limit is {self.limits.memory_mb} MB)")
        last = [line.strip() for line in said.splitlines() if line.strip()]
        detail = f": {last[-1][:300]}" if last else ""
        return self._failed(f"{what} (exit code {code}){detail}")


def _limit(pid: int, limits: Limits) -> None:
    """Cap the data segment at what Deno holds once started plus ``memory_mb`` (V8 reserves
    its address space as it starts, so a limit set before that would stop it starting),
    and the processor time at ``cpu_seconds``. Linux only: elsewhere the V8 heap limit and
    greenroom's deadline still hold."""
    try:
        import resource

        status = Path(f"/proc/{pid}/status").read_text()
        held = next(int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmData:"))
        data = held + (limits.memory_mb << 20) + (64 << 20)  # its heap counts here too, and room for the runtime
        resource.prlimit(pid, resource.RLIMIT_DATA, (data, data))
        if limits.cpu_seconds is not None:
            cpu = math.ceil(limits.cpu_seconds)
            resource.prlimit(pid, resource.RLIMIT_CPU, (cpu, cpu + 2))  # SIGXCPU, then SIGKILL
    except (OSError, StopIteration, ValueError, ImportError, AttributeError):
        pass


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _json(value: Any) -> str:
    """JSON text JavaScript can parse: no NaN or Infinity, anything else as its text."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)
    except ValueError:  # a float JSON has no word for
        return json.dumps(json.loads(json.dumps(value, default=str), parse_constant=lambda _: None))
