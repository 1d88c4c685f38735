"""Where greenroom's files live, and reading and writing them safely: only regular files
(a named pipe or a device is refused, never waited on), atomic JSON files (0600) and an
exclusive hold on a file while one process uses it (a ``.lock`` file beside it that names
its holder's pid)."""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import platformdirs
from filelock import FileLock, Timeout

LOCK_SUFFIX = ".lock"


def state_dir() -> Path:
    """Where greenroom keeps its files (``GREENROOM_HOME`` overrides)."""
    override = os.environ.get("GREENROOM_HOME")
    if override:
        return Path(override)
    return Path(platformdirs.user_state_dir("greenroom", appauthor=False))


class NotARegularFile(OSError):
    """A path greenroom reads or writes as a file is something else: a folder, a named pipe,
    a device such as ``/dev/full``, a socket. Reading a pipe waits for a writer that may
    never come, reading ``/dev/zero`` or ``/dev/full`` never ends, and replacing either
    would replace the device itself; so neither is tried."""

    def __init__(self, path: str | os.PathLike[str], mode: int) -> None:
        super().__init__(errno.EINVAL, f"not a regular file but {_kind(mode)}", os.fspath(path))


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "another kind of file")


def read_regular_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the regular file at ``path`` (a symbolic link to one is followed);
    anything else raises ``NotARegularFile`` before a byte is read, and a file that cannot
    be opened raises the ``OSError`` that says why (``FileNotFoundError``, ...)."""
    # O_NONBLOCK: opening a named pipe does not wait for a writer (regular files ignore it)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotARegularFile(path, mode)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def check_writable_file(path: str | os.PathLike[str]) -> None:
    """Raise ``NotARegularFile`` when ``path`` (followed through links) is there and is not
    a regular file: what ``write_bytes_atomic`` would replace must be a file."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return
    if not stat.S_ISREG(mode):
        raise NotARegularFile(path, mode)


def json_utf8(data: Any, **options: Any) -> bytes:
    """``data`` as UTF-8 JSON bytes, whatever its strings hold.

    Text from the outside can carry lone surrogates (a file name that was not UTF-8, via
    ``os.fsdecode``), which UTF-8 cannot encode; such a document is written with ASCII
    escapes instead, which JSON reads back to the very same strings."""
    try:
        return json.dumps(data, ensure_ascii=False, default=str, **options).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, ensure_ascii=True, default=str, **options).encode("ascii")


def write_json_atomic(path: Path, data: Any) -> Path:
    """Write JSON so that a crash at any moment leaves the old file or the new one.

    The file is readable by its owner only (0600): sessions, caches and stores hold
    conversations and tool output, which are nobody else's business. A ``path`` that is a
    symbolic link is written through: the file it points to is replaced (created when
    missing), and the link stays a link."""
    write_bytes_atomic(path, [json_utf8(data, indent=1, sort_keys=True)])
    return path


def write_bytes_atomic(path: Path, chunks: Iterable[bytes]) -> None:
    """Write ``chunks`` one after another as the file at ``path``, atomically and 0600, as
    ``write_json_atomic`` does (a symbolic link is written through). A ``path`` that is
    not a regular file (``/dev/full``, a named pipe) raises ``NotARegularFile``."""
    check_writable_file(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp creates the file 0600, and os.replace keeps the mode of the file it moves
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class FileInUse(Exception):
    """Another process holds ``path``; ``pid`` is its process id when the lock file names it."""

    def __init__(self, path: Path, pid: int | None) -> None:
        self.path = path
        self.pid = pid
        super().__init__(f"{path} is in use ({self.holder})")

    @property
    def holder(self) -> str:
        return f"pid {self.pid}" if self.pid is not None else "another process"


def lock_path(path: Path) -> Path:
    """The lock file of ``path``: beside it, with ``.lock`` appended."""
    return path.with_name(path.name + LOCK_SUFFIX)


def _stamp_pid(fd: int) -> None:
    # runs only once the lock is ours, so a contender never reads a half-written pid of a loser
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)


def holder_pid(path: Path) -> int | None:
    """The pid the lock file of ``path`` names, or None when it names none."""
    try:
        text = lock_path(path).read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdecimal() else None


class FileHold:
    """An exclusive hold on ``path`` among processes, for as long as this object holds it.

    The OS lock (``flock`` through filelock) dies with the process, so a run that crashes
    or is killed never leaves the file locked; the lock file stays beside ``path``.
    """

    def __init__(self, path: Path, wait: float = 0.0) -> None:
        self.path = path
        self.wait = wait
        target = lock_path(path)
        try:
            self._lock = FileLock(target, mode=0o600, on_acquired=_stamp_pid)
        except TypeError:  # filelock before on_acquired: the hold works, the message names no pid
            self._lock = FileLock(target, mode=0o600)

    def acquire(self, on_wait: Callable[[FileInUse], None] | None = None) -> FileHold:
        """Take the hold, waiting up to ``wait`` seconds; raises ``FileInUse`` if another
        process keeps it that long. ``on_wait`` hears who holds it before the wait starts."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire(timeout=0)
            return self
        except Timeout:
            busy = FileInUse(self.path, holder_pid(self.path))
        if self.wait <= 0:
            raise busy
        if on_wait is not None:
            on_wait(busy)
        try:
            self._lock.acquire(timeout=self.wait)
        except Timeout:
            raise FileInUse(self.path, holder_pid(self.path)) from None
        return self

    def release(self) -> None:
        if self._lock.is_locked:
            self._lock.release()

    def __enter__(self) -> FileHold:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
