"""The pinned versions CI installs (``.ci/constraints.txt``) agree with ``pyproject.toml``:
every package the ``dev`` and ``embeddings`` extras need is pinned, and each pin is a
release the declared range allows. A dependency added or a range moved without
``bash .ci/run --refresh-lock`` fails here, not on somebody's fresh machine next month."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / ".ci" / "constraints.txt"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def pins() -> dict[str, Version]:
    pinned: dict[str, Version] = {}
    for number, line in enumerate(LOCK.read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9._-]+)==([^\s;]+)", line)
        assert match, f".ci/constraints.txt:{number}: not 'name==version': {line!r}"
        pinned[canonicalize_name(match[1])] = Version(match[2])
    return pinned


def requirements(extras: tuple[str, ...]) -> list[Requirement]:
    """The project's requirements with ``extras``, its own extras followed, for Python 3.11."""
    wanted, seen, found = list(extras), set(), [Requirement(r) for r in PYPROJECT["dependencies"]]
    while wanted:
        extra = wanted.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in PYPROJECT["optional-dependencies"][extra]:
            req = Requirement(text)
            if canonicalize_name(req.name) == "greenroom":
                wanted.extend(req.extras)
            else:
                found.append(req)
    env = {"python_version": "3.11", "python_full_version": "3.11.0"}
    return [r for r in found if r.marker is None or r.marker.evaluate(env)]


def test_every_requirement_ci_installs_is_pinned_within_its_range() -> None:
    pinned = pins()
    missing, outside = [], []
    for req in requirements(("dev", "embeddings")):
        version = pinned.get(canonicalize_name(req.name))
        if version is None:
            missing.append(req.name)
        elif not req.specifier.contains(version, prereleases=True):
            outside.append(f"{req.name}=={version} (pyproject: {req.specifier})")
    assert not missing, f"not pinned in .ci/constraints.txt (run bash .ci/run --refresh-lock): {missing}"
    assert not outside, f"pinned outside pyproject.toml's range: {outside}"


def test_ci_installs_from_the_lock() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    installs = [line for line in script.splitlines() if re.search(r"pip(_install| install) ", line)]
    unpinned = [line.strip() for line in installs if "pip_install" not in line and "--upgrade pip" not in line]
    assert not unpinned or all('"${pin[@]}"' in line for line in unpinned), unpinned
    assert "pin=(-c .ci/constraints.txt)" in script
