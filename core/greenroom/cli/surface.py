"""What the plugins add to the command line, kept on disk so that ``greenroom --help``
lists it without importing a single plugin.

Discovering plugins imports every one of them (and what they import), which costs several
times the rest of ``--help``. The top-level listing needs only each added command's name
and help, and the warnings of plugins whose commands were skipped, so those are recorded
whenever the plugins are really loaded and read back while nothing they depend on changed.

An entry is valid while the environment that discovery sees is the same: the interpreter,
every ``sys.path`` entry's modification time (installing or removing a distribution
changes its folder), every ``GREENROOM_*`` variable (plugins read them), and each source
file imported while recording that lives outside the interpreter's prefixes (editable
installs and ``PYTHONPATH`` folders, edited in place). Anything else falls back to real
discovery. The cache only ever feeds the listing: running a plugin's command always loads
the plugins for real.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

FILE_NAME = "cli-commands.json"
FORMAT = 1
KEEP = 8  # environments remembered: a few venvs, PYTHONPATHs or working folders
_FIELDS = ("help", "short_help", "hidden", "deprecated", "rich_help_panel")

Entry = dict[str, Any]  # one added command: name, group, and the _FIELDS the listing shows


def cache_path() -> Path:
    # the same folder as storage.state_dir(), which this module does not import: storage
    # brings filelock, and this runs on every ``--help``
    override = os.environ.get("GREENROOM_HOME")
    if override:
        return Path(override) / FILE_NAME
    import platformdirs

    return Path(platformdirs.user_state_dir("greenroom", appauthor=False)) / FILE_NAME


def _stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path or ".")
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def environment() -> dict[str, Any]:
    """What decides which plugins discovery finds, apart from their source files."""
    return {
        "python": sys.executable,
        "version": sys.version,
        "path": [[entry, _stamp(entry)] for entry in sys.path],
        "env": sorted([k, v] for k, v in os.environ.items() if k.startswith("GREENROOM_")),
    }


def _read(path: Path) -> list[dict[str, Any]]:
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return []
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("entries"), list):
        return []
    return [e for e in doc["entries"] if isinstance(e, dict)]


def cached() -> tuple[list[Entry], list[str]] | None:
    """The recorded commands and warnings for this environment, or None when nothing
    recorded still holds."""
    env = environment()
    for record in _read(cache_path()):
        if record.get("environment") == env:
            return _still_valid(record)
    return None


def _still_valid(record: dict[str, Any]) -> tuple[list[Entry], list[str]] | None:
    files, commands, warnings = record.get("files"), record.get("commands"), record.get("warnings")
    if not (isinstance(files, dict) and isinstance(commands, list) and isinstance(warnings, list)):
        return None
    if any(_stamp(f) != stamp for f, stamp in files.items()):
        return None  # a source file was edited: what it adds may have changed
    if not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in commands):
        return None
    return commands, [str(w) for w in warnings]


def _source_files(modules: Iterable[str]) -> list[str]:
    """Files of ``modules`` that may change without any ``sys.path`` folder changing."""
    prefixes = tuple({os.path.join(p, "") for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
    files = []
    for name in modules:
        path = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(path, str) and not path.startswith(prefixes):
            files.append(path)
    return sorted(files)


def describe(name: str, command: Any) -> Entry:
    """What the top-level listing shows of one click command or group."""
    entry: Entry = {"name": name, "group": isinstance(command, TyperGroup)}
    for field in _FIELDS:
        value = getattr(command, field, None)
        # typer leaves a DefaultPlaceholder where nothing was set: the listing shows nothing
        entry[field] = value if isinstance(value, str | bool) else None
    return entry


def record(
    target: typer.Typer, load: Callable[[typer.Typer], list[str]], core: set[str]
) -> tuple[list[Entry], list[str]]:
    """Let ``load`` add the plugins' commands to ``target`` (it returns the warnings of the
    plugins it skipped), then keep what was added and the warnings for later listings."""
    before = set(sys.modules)
    warnings = load(target)
    env = environment()  # after loading: importing may add a __pycache__ to a path folder
    group = typer.main.get_group(target)
    commands = [describe(name, cmd) for name, cmd in group.commands.items() if name not in core]
    files = {f: _stamp(f) for f in _source_files(set(sys.modules) - before)}
    entry = {"environment": env, "files": files, "commands": commands, "warnings": warnings}
    _save(entry)
    return commands, warnings


def _save(entry: dict[str, Any]) -> None:
    path = cache_path()
    kept = [e for e in _read(path) if e.get("environment") != entry["environment"]]
    doc = {"format": FORMAT, "entries": [entry, *kept][:KEEP]}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, ensure_ascii=True)
        os.replace(tmp, path)  # readers see the old file or the new one, never half of one
    except OSError:
        tmp.unlink(missing_ok=True)  # a read-only home only costs the next --help a real discovery


def add_listed(target: typer.Typer, commands: Iterable[Entry]) -> None:
    """Stand-ins for recorded commands, for a listing only: same name, help and panel."""
    for c in commands:
        shown: dict[str, Any] = {
            "help": c.get("help") or "",  # a command without help must not get the stand-in's
            "short_help": c.get("short_help"),
            "hidden": bool(c.get("hidden")),
            "deprecated": bool(c.get("deprecated")),
            "rich_help_panel": c.get("rich_help_panel"),
        }
        if c.get("group"):
            target.add_typer(typer.Typer(), name=c["name"], **shown)
        else:
            target.command(c["name"], **shown)(_listed_only)


def _listed_only() -> None:
    raise RuntimeError("a command listed from the cache was run; plugins must be loaded first")
