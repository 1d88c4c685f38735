"""Paths and small helpers shared by the test modules (``support.gr_testutil``)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
DATASETS = SHARED / "datasets"
FIXTURES = ROOT / "tests" / "fixtures"
EXAMPLES = ROOT / "examples"

PIP_INSTALL = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps"]
PIP_INSTALL += ["--no-build-isolation"]  # setuptools from this environment: no download


def pip_install(sources: Iterable[Path], work: Path) -> Path:
    """pip-install the distributions at ``sources`` into ``work/site``, a folder of their
    own (never the shared environment), and return it. Each is built from a copy under
    ``work/src``: building in place would leave build/ and *.egg-info in the checkout."""
    copies = []
    for source in sources:
        copy = work / "src" / source.name
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns("build", "*.egg-info"))
        copies.append(str(copy))
    site = work / "site"
    subprocess.run([*PIP_INSTALL, "--target", str(site), *copies], check=True, capture_output=True)
    return site


def env_with_path(*folders: Path, **extra: str) -> dict[str, str]:
    """This process's environment with ``folders`` first on PYTHONPATH, so a subprocess
    sees what is installed there (entry points included), plus ``extra`` variables."""
    paths = [*(str(f) for f in folders), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p), **extra}


HOME_PREFIX = "greenroom-test-home-"
"""A test run's greenroom home: ``greenroom-test-home-<pid>-<random>`` in the temp folder."""
LEGACY_AGE = 3600.0
"""Seconds after which an untagged home (named before homes carried their pid) is stale:
far longer than a whole test run takes."""


def sweep_stale_homes(folder: Path, now: float | None = None) -> list[Path]:
    """Delete the homes of test runs that ended without ``pytest_unconfigure`` (killed by
    a timeout or a signal): each home's name carries its run's pid, and a home whose
    process is gone is stale. Returns what it deleted."""
    now = time.time() if now is None else now
    gone = []
    for home in folder.glob(f"{HOME_PREFIX}*"):
        pid, _, rest = home.name.removeprefix(HOME_PREFIX).partition("-")
        if rest and pid.isdigit():
            stale = not _alive(int(pid))
        else:  # untagged: another run may still use it, unless it is old
            try:
                stale = now - home.stat().st_mtime > LEGACY_AGE
            except OSError:
                continue
        if stale and home.is_dir():
            shutil.rmtree(home, ignore_errors=True)
            gone.append(home)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (no permission to signal it) is alive
        return True
    return True


def plugin_cli(*plugins: Any) -> Any:
    """A command line with what plugins add, as ``greenroom`` has it (a test double:
    ``greenroom``'s own commands are left out): those of ``plugins``, or of every
    installed plugin when none is given."""
    import typer

    from greenroom.cli import add_plugin_commands, app

    root = typer.Typer(rich_markup_mode=app.rich_markup_mode)  # help rendered as greenroom renders it

    @root.callback()
    def main() -> None:
        """greenroom (test double)"""

    if not plugins:
        add_plugin_commands(root)
    for plugin in plugins:
        plugin.greenroom_cli_commands(app=root)
    return root


def free_port() -> int:
    """A loopback TCP port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


BLOCKING_TOOLS = '''
import os
import threading
from pathlib import Path

import anyio

from greenroom import tool


@tool
async def wait_async(note: str = "") -> str:
    """Says it started, then waits until the run is cancelled.

    Args:
        note: Ignored.
    """
    Path(os.environ["GR_MARKER"]).write_text("started")
    await anyio.Event().wait()
    return "never"


@tool
def wait_sync(note: str = "") -> str:
    """Says it started, then blocks its thread for good.

    Args:
        note: Ignored.
    """
    Path(os.environ["GR_MARKER"]).write_text("started")
    threading.Event().wait()
    return "never"


TOOLS = [wait_async, wait_sync]
'''
"""A tools module whose two tools (async and sync) say they started, in the file named by
``GR_MARKER``, then block until the run is cancelled or the process ends."""


def lines_until_ready(stream: Any, marker: str, timeout: float) -> list[str]:
    """Read ``stream`` (a process's pipe, bytes) in a thread into a list it keeps filling,
    and return that list once a line containing ``marker`` arrived, the pipe closed (the
    process ended) or ``timeout`` passed; the caller checks which."""
    import threading

    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        for raw in stream:
            line = raw.decode(errors="replace")
            lines.append(line)
            if marker in line:
                ready.set()
        ready.set()  # exited

    threading.Thread(target=read, daemon=True).start()
    ready.wait(timeout)
    return lines
