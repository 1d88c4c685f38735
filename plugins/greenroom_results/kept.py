"""Results kept whole in the state folder, by session and call id, bounded, and removed with
their session.

Layout: ``state_dir()/results/<session>/<call>.kept``, both names digests of the ids (any
id is a safe file name, and none reaches another session's folder). A kept file is one
JSON header line (call id, tool, size), then the text as UTF-8; written atomically, 0600,
in a folder only its owner may enter. ``pinned`` in a session's folder names the session
files it was saved to or resumed from, one a line.

Bounds: a result over ``[tools.results] max_kept_bytes`` is not kept; a session keeps at
most ``max_session_bytes`` and ``MAX_PER_SESSION`` results, its oldest going first.

Removed with its session:

- a session saved to a file keeps its results as long as that file is there: resumed from
  it (in any process), it reads them again;
- a session never saved loses them when its runtime closes (``Runtime.aclose``) or when its
  MCP client of a server leaves (the client's run ends, ``greenroom_run_end``);
- whatever is left (a process that ended without closing, a session file deleted) goes at
  a sweep once it has not been used for ``UNUSED_SECONDS`` (a day): a folder without a
  pin, or whose pinned files are all gone. A process sweeps at its first keep, then at
  most once every ``SWEEP_SECONDS``, in the worker thread that keeps.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import anyio.to_thread
import attrs

from greenroom.kit import read_regular_file, state_dir, write_bytes_atomic

log = logging.getLogger("greenroom")

FORMAT = "greenroom.kept/1"
SUFFIX = ".kept"
PINS = "pinned"
MAX_PINS = 8
MAX_PER_SESSION = 1000
UNUSED_SECONDS = 24 * 3600.0
SWEEP_SECONDS = 3600.0


@attrs.frozen
class KeptResult:
    """One result kept whole: the call that made it, the tool, its size."""

    call_id: str
    tool: str
    chars: int
    bytes: int


class NotKept(Exception):
    """A result that was not kept: ``reason`` says why, in words the model reads."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def root() -> Path:
    """The folder of every session's kept results."""
    return state_dir() / "results"


def folder_of(session_id: str) -> Path:
    return root() / _key(session_id)


def _mkdir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)


def pin(session_id: str, session_file: str | os.PathLike[str]) -> None:
    """Tie the session's kept results (when it has any) to ``session_file``: they stay as
    long as that file is there. The last ``MAX_PINS`` files are remembered. A pin that
    cannot be written is logged: the session was saved, and its results only risk a sweep."""
    try:
        _pin(folder_of(session_id), session_file)
    except OSError as exc:
        log.warning("could not tie the kept results of session %s to %s: %s", session_id, session_file, exc)


def _pin(folder: Path, session_file: str | os.PathLike[str]) -> None:
    if not folder.is_dir():
        return
    path = os.path.abspath(session_file)
    pins = _pins(folder)
    if pins[-1:] == [path]:
        return
    pins = [*[p for p in pins if p != path][-(MAX_PINS - 1) :], path]
    write_bytes_atomic(folder / PINS, ["".join(f"{p}\n" for p in pins).encode("utf-8", "surrogatepass")])


def _pins(folder: Path) -> list[str]:
    try:
        return read_regular_file(folder / PINS).decode("utf-8", "surrogatepass").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


class KeptResults:
    """The kept results of one runtime's sessions (the files are shared by every process:
    a session resumed elsewhere finds its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the calls of one turn keep from several threads
        self._mine: set[str] = set()  # the session folders this runtime kept into
        self._swept = -SWEEP_SECONDS

    def keep(
        self,
        session_id: str,
        call_id: str,
        tool: str,
        text: str,
        *,
        max_bytes: int,
        session_bytes: int,
        session_file: Path | None = None,
    ) -> KeptResult:
        """Keep ``text`` as the result of ``call_id`` (blocking: call it from a worker
        thread). Raises ``NotKept`` over a bound, ``OSError`` when it cannot be written."""
        bound = min(max_bytes, session_bytes)
        if len(text) > bound:  # every character is at least a byte: over before encoding
            raise NotKept(f"it is over {bound:,} bytes, the most one result may keep")
        data = text.encode("utf-8", "surrogatepass")
        if len(data) > bound:
            raise NotKept(f"it is {len(data):,} bytes, over {bound:,}, the most one result may keep")
        # ASCII escapes: an id with a lone surrogate is still one JSON line, read back the same
        header = json.dumps({"format": FORMAT, "call_id": call_id, "tool": tool, "chars": len(text)}).encode()
        folder = folder_of(session_id)
        with self._lock:
            self._sweep_now_and_then()
            _mkdir(folder.parent)
            _mkdir(folder)
            self._mine.add(folder.name)
            if session_file is not None:
                _pin(folder, session_file)
            target = folder / (_key(call_id) + SUFFIX)
            _make_room(folder, target, len(header) + 1 + len(data), session_bytes)
            write_bytes_atomic(target, [header, b"\n", data])
            os.utime(folder)  # the folder's time is its session's last use
        return KeptResult(call_id, tool, len(text), len(data))

    async def forget(self, session_id: str) -> None:
        """Remove the session's kept results unless it was saved to a file (its client left,
        say)."""
        folder = folder_of(session_id)
        self._mine.discard(folder.name)  # a server of clients keeps only its live sessions' names
        await anyio.to_thread.run_sync(_remove_unpinned, folder)

    async def aclose(self) -> None:
        """The runtime closes: the kept results of its sessions never saved go."""
        mine, self._mine = self._mine, set()
        base = root()
        await anyio.to_thread.run_sync(_remove_each, [base / name for name in mine])

    def _sweep_now_and_then(self) -> None:
        now = time.monotonic()
        if now - self._swept < SWEEP_SECONDS:
            return
        self._swept = now
        try:
            sweep()
        except OSError as exc:  # a sweep that fails is tried again later; the keep goes on
            log.debug("sweeping kept results failed: %s", exc)


def read(session_id: str, call_id: str) -> tuple[dict[str, Any], str]:
    """The header and the text kept for ``call_id`` in the session; ``NotKept`` when
    there is none (blocking: call it from a worker thread)."""
    folder = folder_of(session_id)
    try:
        raw = read_regular_file(folder / (_key(call_id) + SUFFIX))
    except FileNotFoundError:
        raise NotKept("nothing is kept for it") from None
    except OSError as exc:
        raise NotKept(f"it cannot be read: {exc.strerror or exc}") from None
    first, _, body = raw.partition(b"\n")
    try:
        header = json.loads(first)
    except ValueError:
        raise NotKept("its file is damaged") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("call_id") != call_id:
        raise NotKept("its file is damaged")
    try:
        os.utime(folder)
    except OSError:
        pass
    return header, body.decode("utf-8", "surrogatepass")


def _make_room(folder: Path, target: Path, size: int, session_bytes: int) -> None:
    """Remove the session's oldest kept results until ``size`` more bytes fit (the file it
    replaces does not count)."""
    kept = []
    for entry in os.scandir(folder):
        if entry.name.endswith(SUFFIX) and entry.path != str(target):
            st = entry.stat()
            kept.append((st.st_mtime, entry.path, st.st_size))
    kept.sort()
    total = sum(k[2] for k in kept)
    while kept and (total + size > session_bytes or len(kept) >= MAX_PER_SESSION):
        _, path, bytes_ = kept.pop(0)
        Path(path).unlink(missing_ok=True)
        total -= bytes_


def _remove_each(folders: list[Path]) -> None:
    for folder in folders:
        _remove_unpinned(folder)


def _remove_unpinned(folder: Path) -> None:
    if folder.is_dir() and not _pins(folder):
        shutil.rmtree(folder, ignore_errors=True)


def sweep(now: float | None = None) -> list[Path]:
    """Remove the folders unused for ``UNUSED_SECONDS`` whose session was never saved, or
    whose session files are all gone; returns them."""
    now = time.time() if now is None else now
    removed: list[Path] = []
    try:
        entries = list(os.scandir(root()))
    except FileNotFoundError:
        return removed
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False) or now - entry.stat().st_mtime < UNUSED_SECONDS:
            continue
        folder = Path(entry.path)
        if any(os.path.exists(p) for p in _pins(folder)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed
