"""The official MCP conformance suite against greenroom: its server scenarios against
``greenroom serve`` over streamable HTTP (in front of ``everything_server.py``), its client
auth scenarios against ``greenroom mcp probe`` (``auth_client.py``).

Every scenario that ``baseline.toml`` does not name must pass; every one it names must
still be run and still fail (an entry that starts passing is reported, to be removed).
A scenario passes as the suite judges it: none of its checks is a failure or a warning.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomllib
from support.serve_testutil import HttpGateway

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
BASELINE: dict[str, dict[str, str]] = tomllib.loads((HERE / "baseline.toml").read_text(encoding="utf-8"))

# what a gateway in front of a server must pass, whatever the baseline says
GATEWAY_MUST_PASS = {
    "server-initialize",
    "ping",
    "tools-list",
    "dns-rebinding-protection",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "tools-call-simple-text",
}
_STAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
_LISTED = re.compile(r"^\s+- (\S+)(?: \[([^\]]*)\])?$")


class Conformance:
    """The suite's CLI and the node that runs it (the ``conformance`` fixture)."""

    def __init__(self, found: tuple[Path, Path]) -> None:
        self.node, self.cli = found

    def env(self, **extra: str) -> dict[str, str]:
        """The environment to run it in: this node first on ``PATH``."""
        path = f"{self.node.parent}{os.pathsep}{os.environ.get('PATH', '')}"
        return {**os.environ, "PATH": path, "NO_COLOR": "1", **extra}

    def start(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        """``conformance ARGS`` in a process group of its own (it starts the clients)."""
        return subprocess.Popen(
            [str(self.node), str(self.cli), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env or self.env(),
            start_new_session=True,
        )


def finish(proc: subprocess.Popen[str], timeout: float) -> str:
    """Wait for ``proc`` (at most ``timeout`` s), then end what is left of its process
    group (a client the suite started and left running); its output."""
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        end_group(proc)
        out, _ = proc.communicate()
        pytest.fail(f"the conformance suite did not finish within {timeout:g} s:\n{out[-4000:]}")
    finally:
        end_group(proc)
    return out


def end_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture
def conformance(conformance_install: tuple[Path, Path]) -> Conformance:
    return Conformance(conformance_install)


def results(folder: Path, prefix: str = "") -> dict[str, list[dict[str, Any]]]:
    """Scenario -> its checks, from the suite's output folder (``-o``): one
    ``<prefix><scenario>-<time>/checks.json`` per scenario (``auth/...`` are subfolders)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for checks in sorted(folder.rglob("checks.json")):
        name = _STAMP.sub("", checks.parent.relative_to(folder).as_posix())
        found[name.removeprefix(prefix)] = json.loads(checks.read_text(encoding="utf-8"))
    return found


def failures(checks: list[dict[str, Any]]) -> list[str]:
    return [
        f"{c['status']} {c.get('name', c['id'])}: {c.get('errorMessage') or c.get('description', '')}"
        for c in checks
        if c.get("status") in ("FAILURE", "WARNING")
    ]


def judge(ran: dict[str, list[dict[str, Any]]], baseline: dict[str, str], why: dict[str, str]) -> None:
    """Fail with every unexpected failure, stale baseline entry and scenario not run."""
    problems = []
    for scenario, checks in sorted(ran.items()):
        failed = failures(checks)
        if failed and scenario not in baseline:
            detail = "\n      ".join(failed)
            problems.append(f"{scenario} fails (not in baseline.toml):\n      {detail}{why.get(scenario, '')}")
        elif not failed and scenario in baseline:
            problems.append(f"{scenario} passes now: remove it from baseline.toml")
    problems += [f"{s} is in baseline.toml but the suite did not run it" for s in sorted(set(baseline) - set(ran))]
    assert not problems, "\n".join(problems)


def listed(conformance: Conformance, which: str) -> dict[str, set[str]]:
    """``conformance list --WHICH``: scenario -> the spec versions it is for."""
    proc = conformance.start("list", f"--{which}")
    out = finish(proc, 60)
    assert proc.returncode == 0, out
    found = {}
    for line in out.splitlines():
        match = _LISTED.match(line)
        if match:
            found[match[1]] = {v.strip() for v in (match[2] or "").split(",") if v.strip()}
    assert found, out
    return found


def test_the_baseline_never_excuses_what_a_gateway_must_pass() -> None:
    assert not GATEWAY_MUST_PASS & set(BASELINE["server"])
    assert all(reason.strip() for section in BASELINE.values() for reason in section.values())


def test_server_scenarios_pass_through_the_gateway(
    conformance: Conformance, tmp_path: Path, gateway_config: Path
) -> None:
    gateway = HttpGateway(gateway_config)
    try:
        out_dir = tmp_path / "server-results"
        output = finish(conformance.start("server", "--url", gateway.url, "--suite", "all", "-o", str(out_dir)), 120)
    finally:
        gateway.stop()
    ran = results(out_dir, prefix="server-")
    assert set(listed(conformance, "server")) == set(ran), output[-4000:]
    assert GATEWAY_MUST_PASS <= set(ran)
    judge(ran, BASELINE["server"], {})


def test_client_auth_scenarios_pass_against_probe(conformance: Conformance, tmp_path: Path) -> None:
    client = ["--command", shlex.join([sys.executable, str(HERE / "auth_client.py")]), "--timeout", "60000"]
    env = conformance.env(GREENROOM_HOME=str(tmp_path / "home"))
    suites = ("auth", "backcompat")  # at once: each runs its scenarios in parallel too
    runs = [
        conformance.start("client", *client, "--suite", name, "-o", str(tmp_path / name), env=env) for name in suites
    ]
    try:
        output = "\n".join(finish(proc, 150) for proc in runs)
    finally:
        for proc in runs:
            end_group(proc)
            proc.wait(10)
    ran: dict[str, list[dict[str, Any]]] = {}
    for name in suites:
        ran.update(results(tmp_path / name))
    wanted = {
        name
        for name, versions in listed(conformance, "client").items()
        if name.startswith("auth/") and not versions <= {"draft", "extension"}
    }
    assert wanted == set(ran), output[-4000:]
    why = {}  # what the probe said, shown for a scenario that fails unexpectedly
    for name in suites:
        for stderr in sorted((tmp_path / name).rglob("stderr.txt")):
            said = stderr.read_text(encoding="utf-8").strip()
            if said:
                scenario = _STAMP.sub("", stderr.parent.relative_to(tmp_path / name).as_posix())
                why[scenario] = "\n      probe: " + said[-1500:].replace("\n", "\n      ")
    judge(ran, BASELINE["client"], why)
