"""Saved sessions: atomic JSON files in a folder (the user's state directory by default)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import platformdirs


def state_dir() -> Path:
    """Where greenroom keeps its files (``GREENROOM_HOME`` overrides)."""
    override = os.environ.get("GREENROOM_HOME")
    if override:
        return Path(override)
    return Path(platformdirs.user_state_dir("greenroom", appauthor=False))


def write_json_atomic(path: Path, data: Any) -> Path:
    """Write JSON so that a crash at any moment leaves the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, ensure_ascii=False, indent=1, sort_keys=True, default=str)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
