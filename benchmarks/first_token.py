"""Time to the first visible words of an answer: ``greenroom run`` streaming it against the
same run waiting for the whole response, on the same local OpenAI-compatible server.

Each run is the real command line (``python -m greenroom.cli run``, a subprocess, its
output a pipe) with ``model = "openai:..."`` and ``[model] base_url`` pointing at the
tests' fake server (tests/support/fake_llm_server.py). The server plays a model
that takes ``--generation`` seconds to write its answer:

- streamed: the first chunk (the answer's first line) is sent at once, the rest is held
  until the generation time has passed since the request arrived;
- whole (``greenroom run --no-stream``): the complete ``chat.completion`` is sent when
  the generation time has passed.

Measured per run, from the process's start: when the answer's first line appears on its
output (a pipe gets whole lines), and when the process ends; also the first line from
when the server got the request (the command's own start-up left out). Runs alternate
streamed and whole, ``--runs`` of each; the medians and their ratios (streamed / whole)
come from this one invocation.

    python benchmarks/first_token.py [--runs 5] [--generation 2.0]

Results go to benchmarks/results/first_token.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.fake_llm_server import FakeLLMServer, Recorded, Reply, chat_completion  # noqa: E402
from support.openai_wire import chat_stream  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "first_token.json"
FIRST = "The checkout alert is ALRT-4821, firing since 09:12.\n"
REST = [
    "Its p99 latency is 2.4 s against a goal of 800 ms. ",
    "Dana Ortiz is on call for payments and has been paged. ",
    "The incident note is posted in #incidents.",
]
ANSWER = FIRST + "".join(REST)
MARKER = "ALRT-4821"

CONFIG = """\
[agent]
id = "first-token"
model = "openai:gpt-test"
system_prompt = "You are the on-call assistant."

[model]
base_url = "{url}/v1"
api_key_env = ""
max_retries = 0

[plugins]
enable = ["openai"]
"""


class Model:
    """What the fake server answers: the same answer, streamed or whole, written in
    ``generation`` seconds from when the request arrived."""

    def __init__(self, generation: float) -> None:
        self.generation = generation
        self.arrived: list[float] = []

    def __call__(self, request: Recorded) -> Reply:
        self.arrived.append(time.monotonic())
        if request.body.get("stream"):
            written = threading.Event()
            threading.Timer(self.generation, written.set).start()
            # the role chunk and the first line go at once; the rest when it is written
            return Reply(stream=chat_stream([FIRST, *REST]), gate=written, gate_after=2)
        time.sleep(self.generation)  # this handler's own thread: the whole answer, once written
        return Reply(body=chat_completion(ANSWER))


def one_run(config: Path, model: Model, streamed: bool) -> dict[str, float]:
    """Start ``greenroom run``, time its first answer line and its end."""
    env = {**os.environ, "GREENROOM_DISABLE_PLUGIN_AUTOLOAD": "1", "COLUMNS": "200"}
    args = [sys.executable, "-m", "greenroom.cli", "run", str(config), "what is firing?"]
    if not streamed:
        args.append("--no-stream")
    started = time.monotonic()
    proc = subprocess.Popen(args, cwd=config.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    first = None
    for line in proc.stdout:
        if first is None and MARKER in line:
            first = time.monotonic()
    _, err = proc.communicate(timeout=120)
    ended = time.monotonic()
    if proc.returncode != 0 or first is None:
        raise SystemExit(f"greenroom run failed (exit {proc.returncode}): {err.strip()}")
    arrived = model.arrived[-1]
    return {"first_line": first - started, "first_line_after_request": first - arrived, "done": ended - started}


def median_of(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each kind (default 5)")
    parser.add_argument("--generation", type=float, default=2.0, help="seconds the model takes to write its answer")
    args = parser.parse_args()

    server = FakeLLMServer().start()
    model = Model(args.generation)
    server.responder = model
    runs: dict[str, list[dict[str, float]]] = {"streamed": [], "whole": []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            os.environ.setdefault("GREENROOM_HOME", str(Path(tmp) / "home"))
            config = Path(tmp) / "agent.toml"
            config.write_text(CONFIG.format(url=server.url))
            one_run(config, model, streamed=True)  # warm the caches the first run of a command fills
            for _ in range(args.runs):
                runs["streamed"].append(one_run(config, model, streamed=True))
                runs["whole"].append(one_run(config, model, streamed=False))
    finally:
        server.stop()

    report: dict[str, Any] = {"runs": args.runs, "generation_s": args.generation, "median_s": {}, "ratio": {}}
    for key in ("first_line", "first_line_after_request", "done"):
        streamed, whole = median_of(runs["streamed"], key), median_of(runs["whole"], key)
        report["median_s"][key] = {"streamed": round(streamed, 3), "whole": round(whole, 3)}
        report["ratio"][key] = round(streamed / whole, 3)
    report["all_s"] = runs
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")

    print(f"greenroom run, an answer the model writes in {args.generation:g} s, medians of {args.runs} runs each")
    print(f"{'':34} {'streamed':>9} {'whole':>9} {'ratio':>7}")
    labels = {
        "first_line": "first answer line (from start)",
        "first_line_after_request": "first answer line (from request)",
        "done": "run ended (from start)",
    }
    for key, label in labels.items():
        m = report["median_s"][key]
        print(f"{label:34} {m['streamed']:>8.3f}s {m['whole']:>8.3f}s {report['ratio'][key]:>6.3g}x")
    print(f"results: {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
