"""A fleet on one machine: N ``greenroom serve`` replicas behind HAProxy, on loopback.

    python deploy/local/fleet.py CONFIG [--replicas 2] [--port 8700]

Each replica is ``greenroom serve CONFIG --transport http`` on a port of its own; HAProxy
(``haproxy.cfg`` beside this file, one ``server`` line per replica added) balances them
on ``--port`` and takes a replica out of the rotation when its ``/readyz`` fails. The
config's ``${VAR}``s come from this environment (``GREENROOM_PRIORS_URL`` for a shared
PostgreSQL store, say). Ctrl-C stops the balancer, then each replica gracefully.

The tests (tests/fleet) and ``benchmarks/serve_fleet.py`` use ``Fleet`` the same way.
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE / "haproxy.cfg"
READY_WAIT = 60.0  # seconds for a replica to say where it listens, and for the balancer
# ``python -m`` puts the current folder first on sys.path, where a folder named greenroom
# would be imported instead of the package; -P (3.11+) leaves it out, as the installed
# ``greenroom`` command does. Python 3.10 has only -I, which also ignores PYTHON*
# variables and the user's site-packages.
GREENROOM = [sys.executable, "-P" if sys.version_info >= (3, 11) else "-I", "-m", "greenroom.cli"]


class FleetError(RuntimeError):
    """A replica or the balancer did not start."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(port: int, path: str, timeout: float = 2.0) -> int:
    """The status of ``GET path`` on loopback ``port`` (0 when nothing answers)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    except OSError:
        return 0
    finally:
        conn.close()


class Replica:
    """One ``greenroom serve`` process; its stderr goes to ``log``."""

    def __init__(self, index: int, config: Path, folder: Path, env: dict[str, str], extra: Sequence[str]) -> None:
        self.index = index
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = folder / f"replica-{index}.log"
        argv = [*GREENROOM, "serve", str(config), "--transport", "http"]
        argv += ["--port", str(self.port), *extra]
        self._err = self.log.open("wb")
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self._err, env=env, start_new_session=True)

    @property
    def name(self) -> str:
        return f"r{self.index}"

    def wait_listening(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise FleetError(f"replica {self.name} exited ({self.proc.returncode}):\n{self.tail()}")
            if b"listening on" in self.log.read_bytes():
                return
            time.sleep(0.05)
        raise FleetError(f"replica {self.name} did not start within {READY_WAIT:g} s:\n{self.tail()}")

    def tail(self, lines: int = 20) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def kill(self) -> None:
        """SIGKILL the replica and everything it started (a node that dies)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM (a deploy): it drains, ends its clients' runs, and exits."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._err.close()
        return self.proc.returncode


class Fleet:
    """Replicas of one config behind HAProxy. ``with Fleet(config, 2) as fleet:``
    starts everything and waits until the balancer answers; leaving stops it all."""

    def __init__(
        self,
        config: Path,
        replicas: int = 2,
        *,
        port: int = 0,
        env: dict[str, str] | None = None,
        serve_args: Sequence[str] = (),
        folder: Path | None = None,
    ) -> None:
        if replicas < 1:
            raise ValueError("a fleet has at least one replica")
        self.config = config
        self.count = replicas
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.env = {**os.environ, **(env or {})}
        self.serve_args = tuple(serve_args)
        self._own_folder = folder is None
        self.folder = folder or Path(tempfile.mkdtemp(prefix="greenroom-fleet-"))
        self.folder.mkdir(parents=True, exist_ok=True)
        self.replicas: list[Replica] = []
        self.balancer: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Fleet:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        haproxy = shutil.which("haproxy")
        if haproxy is None:
            raise FleetError("haproxy is not installed (Debian: apt-get install haproxy)")
        deadline = time.monotonic() + READY_WAIT
        self.replicas = [Replica(i + 1, self.config, self.folder, self.env, self.serve_args) for i in range(self.count)]
        for replica in self.replicas:
            replica.wait_listening(deadline)
        cfg = self.folder / "haproxy.cfg"
        servers = "".join(f"    server {r.name} 127.0.0.1:{r.port} check\n" for r in self.replicas)
        cfg.write_text(TEMPLATE.read_text(encoding="utf-8") + servers, encoding="utf-8")
        log = (self.folder / "haproxy.log").open("wb")
        env = {**self.env, "GR_LB_BIND": f"127.0.0.1:{self.port}"}
        self.balancer = subprocess.Popen(
            [haproxy, "-db", "-f", str(cfg)], stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        while time.monotonic() < deadline:
            if self.balancer.poll() is not None:
                raise FleetError(f"haproxy exited:\n{(self.folder / 'haproxy.log').read_text(errors='replace')}")
            if get(self.port, "/healthz") == 200:
                return
            time.sleep(0.05)
        raise FleetError(f"haproxy did not answer on port {self.port} within {READY_WAIT:g} s")

    def wait_out_of_rotation(self, replica: Replica, timeout: float = 30.0) -> None:
        """Until the balancer no longer sends requests to ``replica`` (its checks failed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if get(replica.port, "/healthz", timeout=0.5) == 0 and self._marked_down(replica):
                return
            time.sleep(0.1)
        raise FleetError(f"replica {replica.name} is still in the rotation after {timeout:g} s")

    def _marked_down(self, replica: Replica) -> bool:
        log = (self.folder / "haproxy.log").read_text(errors="replace")
        return f"gateways/{replica.name} is DOWN" in log

    def stop(self) -> None:
        if self.balancer is not None and self.balancer.poll() is None:
            self.balancer.send_signal(signal.SIGTERM)
            try:
                self.balancer.wait(10)
            except subprocess.TimeoutExpired:
                self.balancer.kill()
                self.balancer.wait(5)
        threads = [threading.Thread(target=r.stop) for r in self.replicas]  # drain side by side
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self._own_folder:
            shutil.rmtree(self.folder, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("config", type=Path)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--port", type=int, default=8700, help="the balancer's port (0: any free one)")
    args = parser.parse_args(argv)

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)  # like Ctrl-C: leave the `with`, stop everything
    try:
        with Fleet(args.config.resolve(), args.replicas, port=args.port) as fleet:
            print(f"{fleet.count} replicas behind {fleet.url} (logs in {fleet.folder}); Ctrl-C stops them")
            for r in fleet.replicas:
                print(f"  {r.name}: {r.url}")
            while True:
                signal.pause()
    except KeyboardInterrupt:
        pass
    except FleetError as exc:
        print(f"fleet: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
