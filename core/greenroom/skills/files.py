"""Skill files kept on disk by digest, one folder per origin: a file read once from an MCP
server is not read from it again while its digest stays the same.

``<state dir>/skill-files/<origin>/<hex>``: the origin is the server's identity (its
listing cache key), so same-named skills of two servers never share a file, and the
folder is outside every place skills are looked for. A file is written only once its
bytes matched its digest, and is checked again (size and sha256) each time it is read:
what a later process finds there is used only if it is still those bytes (SEP-2640,
"Cache integrity"). A folder keeps only the files the server's latest listing names
(``prune``), so it holds at most what that listing describes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from greenroom._support.storage import state_dir, write_bytes_atomic
from greenroom.skills.entry import SkillFile

log = logging.getLogger(__name__)


class FileCache:
    """The kept files of one origin."""

    def __init__(self, origin: str) -> None:
        self.folder = state_dir() / "skill-files" / origin

    def _path(self, file: SkillFile) -> Path:
        return self.folder / file.digest.removeprefix("sha256:")

    def get(self, file: SkillFile) -> bytes | None:
        """The file's bytes when kept and still its digest's; None otherwise."""
        path = self._path(file)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if file.check(data) is not None:
            path.unlink(missing_ok=True)  # not those bytes any more: read again, kept again
            return None
        return data

    def put(self, file: SkillFile, data: bytes) -> None:
        """Keep ``data``, which matched ``file``'s digest; a cache that cannot be written
        costs a read later, nothing more."""
        try:
            write_bytes_atomic(self._path(file), [data])
        except OSError as exc:
            log.warning("could not keep the skill file %s: %s", file.uri, exc)

    def prune(self, keep: Iterable[SkillFile]) -> None:
        """Remove the kept files no file of ``keep`` has the digest of."""
        wanted = {self._path(f).name for f in keep}
        try:
            kept = list(self.folder.iterdir())
        except OSError:
            return
        for path in kept:
            if path.name not in wanted:
                path.unlink(missing_ok=True)


__all__ = ["FileCache"]
