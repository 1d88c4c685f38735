"""A test run's greenroom home does not outlive it: the run deletes it at its end, and a
run killed before its end leaves one the next run deletes (its process is gone), while
the homes of runs still going are kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.gr_testutil import HOME_PREFIX, LEGACY_AGE, sweep_stale_homes


def test_this_runs_home_is_tagged_with_its_pid() -> None:
    home = Path(os.environ["GREENROOM_HOME"])
    assert home.name.startswith(f"{HOME_PREFIX}{os.getpid()}-") and home.is_dir()


def test_only_the_homes_of_runs_that_are_gone_are_swept(tmp_path: Path) -> None:
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"{HOME_PREFIX}{int(ended.stdout)}-abc"
    alive = tmp_path / f"{HOME_PREFIX}{os.getpid()}-def"
    old, new = tmp_path / f"{HOME_PREFIX}old_x1", tmp_path / f"{HOME_PREFIX}new_y2"
    other = tmp_path / "someone-elses-folder"
    for folder in (dead, alive, old, new, other):
        folder.mkdir()
        (folder / "priors.sqlite3").write_text("x")
    now = new.stat().st_mtime
    os.utime(old, (now - LEGACY_AGE - 60, now - LEGACY_AGE - 60))

    gone = sweep_stale_homes(tmp_path, now=now)

    assert sorted(gone) == sorted([dead, old])
    assert not dead.exists() and not old.exists()
    assert alive.is_dir() and new.is_dir() and other.is_dir()


def test_a_killed_run_leaves_a_home_the_next_run_sweeps(tmp_path: Path) -> None:
    # a pytest run killed before pytest_unconfigure, in its own temp folder
    tests = Path(__file__).resolve().parent
    probe = tmp_path / "test_probe.py"
    probe.write_text("import os, signal\n\ndef test_die():\n    os.kill(os.getpid(), signal.SIGKILL)\n")
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(tests)}
    env.pop("GREENROOM_HOME", None)
    # the suite's conftest as a plugin: the probe lives outside tests/, in the run's temp folder
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest", "-c", os.devnull]
    killed = subprocess.run([*args, str(probe)], env=env, capture_output=True, cwd=tmp_path)
    assert killed.returncode < 0, killed.stdout + killed.stderr
    left = list(tmp_path.glob(f"{HOME_PREFIX}*"))
    assert len(left) == 1  # the killed run's home stayed behind
    assert sweep_stale_homes(tmp_path) == left and not left[0].exists()
