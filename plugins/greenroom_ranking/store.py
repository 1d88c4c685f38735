"""Ranking indexes on disk, shared by every process on the machine.

Each costly structure (the text index, a BM25 table) is one ``.npz`` of plain arrays under
greenroom's state dir (``ranking-index/``, beside the embedding cache), named by a key
that holds the catalog's digest and the settings it was built with: a catalog that
changes gets a new key, and the old file ages out.

- Writes are atomic (a temporary file, then ``os.replace``): a reader sees the old file,
  the new one or none.
- A process that is about to build takes a file lock on the key first, then looks
  again, so two processes starting on the same catalog build it once.
- Anything unreadable (truncated, damaged, from another format, for another key) is a
  miss: the caller rebuilds and overwrites it; a search never fails for the cache.
- Least recently used files go first once the folder holds more than ``KEEP_FILES``
  files or ``KEEP_BYTES`` bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from greenroom.kit import state_dir

FORMAT = 1
KEEP_FILES = 64
KEEP_BYTES = 1 << 30
"""At most 1 GiB of indexes (a 100,000-tool catalog's text index and BM25 table: about 55 MB)."""
LOCK_WAIT = 120.0
"""Seconds to wait for another process's build before building here too."""
_STALE_TEMP = 3600.0  # a temporary file this old belongs to a writer that died


def folder() -> Path:
    return state_dir() / "ranking-index"


class IndexStore:
    """Arrays by key in one folder (the state dir's ``ranking-index`` unless given)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root

    @property
    def path(self) -> Path:
        return self.root if self.root is not None else folder()

    def file(self, key: str) -> Path:
        """Where ``key``'s arrays are (a hash: keys hold digests and settings)."""
        name = hashlib.sha256(f"{FORMAT}:{key}".encode("utf-8", "surrogatepass")).hexdigest()[:40]
        return self.path / f"{name}.npz"

    def load(self, key: str) -> dict[str, np.ndarray] | None:
        """The arrays stored under ``key``, or None when absent or unreadable."""
        path = self.file(key)
        try:
            with np.load(path, allow_pickle=False) as stored:
                # reading every member checks its CRC: a damaged file fails here
                arrays = {name: stored[name] for name in stored.files}
        except FileNotFoundError:
            return None
        except Exception:  # truncated, damaged, not an npz at all: a miss, rebuilt by the caller
            return None
        meta = arrays.pop("_key", None)
        if meta is None or meta.tobytes() != key.encode("utf-8", "surrogatepass"):
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used indexes survive pruning
        return arrays

    def save(self, key: str, arrays: dict[str, np.ndarray]) -> None:
        """Write atomically, then prune; a read-only or full disk costs a rebuild next
        time, never a failed search."""
        folder_ = self.path
        try:
            folder_.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=folder_)
            try:
                with os.fdopen(fd, "wb") as fh:
                    stamp = np.frombuffer(key.encode("utf-8", "surrogatepass"), dtype=np.uint8)
                    payload: dict[str, Any] = {"_key": stamp, **arrays}
                    np.savez(fh, **payload)
                os.replace(tmp, self.file(key))
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            return
        self.prune()

    @contextlib.contextmanager
    def building(self, key: str) -> Iterator[None]:
        """Hold the build lock of ``key`` (waits up to ``LOCK_WAIT`` for another process;
        without a usable lock, builds anyway: the atomic write keeps the file whole)."""
        from filelock import FileLock, Timeout

        lock_dir = self.path / "locks"
        # a fixed set of lock files, never deleted: deleting one while a process holds it
        # would let a third process lock a new file of the same name
        bucket = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:2]
        try:
            lock_dir.mkdir(parents=True, exist_ok=True)
            lock = FileLock(str(lock_dir / f"{bucket}.lock"), timeout=LOCK_WAIT)
            lock.acquire()
        except (OSError, Timeout):
            yield
            return
        try:
            yield
        finally:
            lock.release()

    def prune(self, keep_files: int = KEEP_FILES, keep_bytes: int = KEEP_BYTES) -> None:
        """Delete least recently used files beyond the bounds, and dead writers' temporaries."""
        try:
            entries = []
            now = time.time()
            for f in self.path.glob("*.npz"):
                st = f.stat()
                if f.name.startswith(".tmp-"):
                    if now - st.st_mtime > _STALE_TEMP:
                        f.unlink(missing_ok=True)
                    continue
                entries.append((st.st_mtime, st.st_size, f))
            entries.sort(key=lambda e: e[0], reverse=True)
            total = 0
            for count, (_, size, f) in enumerate(entries):
                total += size
                if count >= keep_files or (total > keep_bytes and count > 0):
                    f.unlink(missing_ok=True)
        except OSError:
            pass  # another process pruned first, or the folder is read-only: nothing lost
