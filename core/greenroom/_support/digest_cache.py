"""Results that are costly to derive from a catalog, kept on disk by the catalog's digest
and shared by every process: checking 100,000 parameter schemas or counting their tokens
takes seconds, and the next process would otherwise pay it again.

An entry is one file, ``<root>/<namespace>/<digest>.json`` (``.bin`` for bytes), under
``state_dir()/digests`` unless a root is given. A namespace names what was computed and
how (bump its version when the computation changes); the digest names what it was
computed from, so a changed catalog is simply another entry and the old one ages out.

- Writes are atomic (a temporary file renamed over the entry), so a reader sees a whole
  entry or none. A torn, foreign or unreadable entry is a miss: it is rebuilt, never an
  error.
- ``get_or_build`` holds a file lock while it builds, so processes that start together
  build an entry once and the others read it.
- The total size is bounded: after each write the least recently used entries are
  removed until the rest fit (a hit refreshes an entry's time).
- Nothing here may stop a run: a folder that cannot be written leaves the cache unused.

Tests point it at a folder of their own with ``DigestCache(root)`` and ``use_digest_cache``.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from filelock import FileLock, Timeout

from greenroom._support.storage import json_utf8, state_dir

T = TypeVar("T")

FORMAT = 1
"""The envelope's version: an entry written by another format is a miss."""

DEFAULT_MAX_BYTES = 256 * 2**20
"""The default bound on all entries together."""

_STALE_TEMP_SECONDS = 3600.0
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_BIN_MAGIC = b"greenroom-digest-cache\n"


class DigestCache:
    """Entries by ``(namespace, digest)`` under ``root`` (``state_dir()/digests`` when None,
    resolved at each use so ``GREENROOM_HOME`` applies), at most ``max_bytes`` in all.

    ``stats`` counts this process's hits, misses, builds, writes, evictions and entries
    found corrupt, by namespace (``"hits:tool-costs.v1"``) and in all (``"hits"``).
    """

    def __init__(
        self, root: str | Path | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES, wait: float = 300.0
    ) -> None:
        self._root = Path(root) if root is not None else None
        self.max_bytes = max_bytes
        self.wait = wait  # how long to wait for another process's build before building too
        self.stats: collections.Counter[str] = collections.Counter()
        self._touched: set[Path] = set()

    @property
    def root(self) -> Path:
        return self._root if self._root is not None else state_dir() / "digests"

    def path(self, namespace: str, digest: str, *, binary: bool = False) -> Path:
        for part in (namespace, digest):
            if not _NAME.fullmatch(part):
                raise ValueError(f"{part!r} cannot name a cache entry (letters, digits, '_', '.', '-')")
        return self.root / namespace / f"{digest}.{'bin' if binary else 'json'}"

    def _count(self, what: str, namespace: str) -> None:
        self.stats[what] += 1
        self.stats[f"{what}:{namespace}"] += 1

    # -- reading and writing -----------------------------------------------------------
    def get(self, namespace: str, digest: str, *, binary: bool = False) -> Any:
        """The entry's value (bytes for a binary entry), or None when there is none."""
        path = self.path(namespace, digest, binary=binary)
        try:
            data = path.read_bytes()
        except OSError:
            self._count("misses", namespace)
            return None
        value = _unwrap(data, namespace, digest, binary)
        if value is None:
            self._count("corrupt", namespace)
            self._count("misses", namespace)
            return None
        self._count("hits", namespace)
        if path not in self._touched:  # least recently used is judged by mtime
            self._touched.add(path)
            with contextlib.suppress(OSError):
                os.utime(path)
        return value

    def put(self, namespace: str, digest: str, value: Any, *, binary: bool = False) -> bool:
        """Store ``value`` (JSON data, or bytes when ``binary``); False when it could not be
        written (the cache is then simply not used)."""
        path = self.path(namespace, digest, binary=binary)
        data = _wrap(value, namespace, digest, binary)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            try:
                # no fsync: a cache may lose an entry in a crash; a torn one reads as a miss
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            return False
        self._count("writes", namespace)
        self._touched.add(path)
        self.evict(keep=path)
        return True

    def get_or_build(
        self,
        namespace: str,
        digest: str,
        build: Callable[[], T],
        *,
        encode: Callable[[T], Any] = lambda v: v,
        decode: Callable[[Any], T] = lambda v: v,
        binary: bool = False,
    ) -> T:
        """The entry decoded, or ``build()`` stored (encoded) and returned.

        ``decode`` raises on a value it cannot use (of a foreign or older shape): the entry
        is then rebuilt. While one process builds an entry, others asking for it wait for
        it (up to ``wait`` seconds, then build it themselves)."""
        found = self._decoded(namespace, digest, decode, binary)
        if found is not None:
            return found[0]
        with self._building(namespace, digest):
            found = self._decoded(namespace, digest, decode, binary)  # built while we waited?
            if found is not None:
                return found[0]
            value = build()
            self._count("builds", namespace)
            self.put(namespace, digest, encode(value), binary=binary)
            return value

    def _decoded(self, namespace: str, digest: str, decode: Callable[[Any], T], binary: bool) -> tuple[T] | None:
        raw = self.get(namespace, digest, binary=binary)
        if raw is None:
            return None
        try:
            return (decode(raw),)
        except Exception:  # whatever a decoder trips on, the entry is not usable: rebuild it
            self._count("corrupt", namespace)
            return None

    @contextlib.contextmanager
    def _building(self, namespace: str, digest: str) -> Iterator[None]:
        lock_file = self.root / ".locks" / f"{namespace}--{digest}.lock"
        lock: FileLock | None = None
        try:
            lock_file.parent.mkdir(parents=True, exist_ok=True)
            lock = FileLock(lock_file, mode=0o600, timeout=self.wait)
            lock.acquire()
        except (OSError, Timeout):
            lock = None  # no lock to be had: build anyway, a duplicate build is only time
        try:
            yield
        finally:
            if lock is not None:
                lock.release()

    # -- size ----------------------------------------------------------------------------
    def entries(self) -> list[tuple[Path, float, int]]:
        """Every entry as ``(path, mtime, size)`` (temporary files that a writer which died
        mid-write left an hour ago or more are removed on the way)."""
        out: list[tuple[Path, float, int]] = []
        try:
            spaces = [e for e in os.scandir(self.root) if e.is_dir() and not e.name.startswith(".")]
        except OSError:
            return out
        stale = time.time() - _STALE_TEMP_SECONDS
        for space in spaces:
            with contextlib.suppress(OSError):
                for e in os.scandir(space.path):
                    with contextlib.suppress(OSError):
                        if not e.is_file():
                            continue
                        st = e.stat()
                        if not e.name.startswith("."):
                            out.append((Path(e.path), st.st_mtime, st.st_size))
                        elif e.name.endswith(".tmp") and st.st_mtime < stale:
                            os.unlink(e.path)  # left by a writer that died mid-write
        return out

    def evict(self, keep: Path | None = None) -> int:
        """Remove least recently used entries until the rest fit in ``max_bytes``; how many
        were removed. ``keep`` (the entry just written) stays, even alone over the bound."""
        found = self.entries()
        total = sum(size for _, _, size in found)
        removed = 0
        for path, _, size in sorted(found, key=lambda e: e[1]):
            if total <= self.max_bytes:
                break
            if path == keep:
                continue
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
                self._touched.discard(path)
                self._count("evictions", path.parent.name)
                lock = self.root / ".locks" / f"{path.parent.name}--{path.stem}.lock"
                lock.unlink(missing_ok=True)
            total -= size
        return removed

    def clear(self) -> None:
        """Remove every entry."""
        for path, _, _ in self.entries():
            with contextlib.suppress(OSError):
                path.unlink()
        self._touched.clear()


def _wrap(value: Any, namespace: str, digest: str, binary: bool) -> bytes:
    if binary:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise TypeError(f"a binary entry holds bytes, not {type(value).__name__}")
        return _BIN_MAGIC + f"{FORMAT} {namespace} {digest} {len(value)}\n".encode("ascii") + bytes(value)
    envelope = {"format": FORMAT, "namespace": namespace, "digest": digest, "value": value}
    return json_utf8(envelope, separators=(",", ":"))


def _unwrap(data: bytes, namespace: str, digest: str, binary: bool) -> Any:
    """The value an entry's bytes hold, or None when they are not a whole entry of this key."""
    if binary:
        if not data.startswith(_BIN_MAGIC):
            return None
        header, sep, body = data[len(_BIN_MAGIC) :].partition(b"\n")
        if not sep or header != f"{FORMAT} {namespace} {digest} {len(body)}".encode("ascii"):
            return None
        return body
    try:
        envelope = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(envelope, dict) or "value" not in envelope:
        return None
    if (envelope.get("format"), envelope.get("namespace"), envelope.get("digest")) != (FORMAT, namespace, digest):
        return None
    return envelope["value"]


work: collections.Counter[str] = collections.Counter()
"""What this process computed because no entry had it (``"schema checks"``, ``"token counts"``
...), counted by the builders: zero on a warm cache."""

_default: list[DigestCache] = [DigestCache()]


def default_digest_cache() -> DigestCache:
    """The cache core uses when it is given none (``state_dir()/digests``)."""
    return _default[-1]


@contextlib.contextmanager
def use_digest_cache(cache: DigestCache) -> Iterator[DigestCache]:
    """Make ``cache`` the default for the duration (a test's temporary folder, say)."""
    _default.append(cache)
    try:
        yield cache
    finally:
        del _default[max(i for i, c in enumerate(_default) if c is cache)]


__all__ = ["DEFAULT_MAX_BYTES", "DigestCache", "default_digest_cache", "use_digest_cache", "work"]
