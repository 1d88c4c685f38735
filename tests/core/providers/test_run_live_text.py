"""``greenroom run`` against an OpenAI-compatible server that streams: the answer's first
line is on the command's output while the server still holds the rest, and the run then
ends as usual with the whole answer; an image a tool returned is in the next request."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.fake_llm_server import OPENAI_KEY_ENV, FakeLLMServer, Reply, chat_completion
from support.openai_wire import chat_stream

pytestmark = pytest.mark.slow

FIRST = "The checkout alert is ALRT-4821.\n"
REST = "Dana is on call and has been paged."


def config(folder: Path, server: FakeLLMServer, tools: str = "") -> Path:
    cfg = folder / "agent.toml"
    cfg.write_text(
        '[agent]\nid = "live"\nmodel = "openai:gpt-test"\n'
        f'[model]\nbase_url = "{server.url}/v1"\napi_key_env = "{OPENAI_KEY_ENV}"\nmax_retries = 0\n'
        + (f'images = true\n[tools]\npython = ["{tools}"]\n' if tools else "")
        + '[plugins]\nenable = ["openai"]\n'
    )
    return cfg


def start(cfg: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "GREENROOM_DISABLE_PLUGIN_AUTOLOAD": "1", "COLUMNS": "200"}
    return subprocess.Popen(
        [sys.executable, "-m", "greenroom.cli", "run", str(cfg), "what fires?", *args],
        cwd=cfg.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_the_first_line_shows_while_the_server_holds_the_rest(tmp_path: Path, server: FakeLLMServer) -> None:
    held = threading.Event()
    server.push(Reply(stream=chat_stream([FIRST, REST]), gate=held, gate_after=2))
    proc = start(config(tmp_path, server))
    assert proc.stdout is not None
    try:
        seen = []
        while not seen or seen[-1] != "  " + FIRST.strip():
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else "the command ended"
            seen.append(line.rstrip("\n"))
    finally:
        held.set()  # only now does the server send the rest
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.splitlines()[-1] == "  " + REST and "answer:" not in out
    assert server.requests[0].body["stream"] is True


def test_no_stream_asks_for_the_whole_answer(tmp_path: Path, server: FakeLLMServer) -> None:
    server.push(Reply(body=chat_completion(FIRST + REST)))
    proc = start(config(tmp_path, server), "--no-stream")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "  answer: " + FIRST.strip() in out
    assert "stream" not in server.requests[0].body


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64).decode()

TOOLS = f'''
from greenroom import MediaPart, tool


@tool
def chart() -> list:
    """The latency chart."""
    return ["latency, last hour:", MediaPart("image", "image/png", "{PNG}")]


TOOLS = [chart]
'''


def test_an_image_a_tool_returned_is_in_the_next_request(tmp_path: Path, server: FakeLLMServer) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    server.push(
        Reply(stream=chat_stream([], [("call_1", "chart", ["{}"])])),
        Reply(stream=chat_stream(["It climbs."])),
    )
    proc = start(config(tmp_path, server, "tools.py:TOOLS"))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    second = json.dumps(server.requests[1].body)
    assert PNG in second  # in the form the API takes images (the provider's to choose)
    assert "latency, last hour:" in second and "It climbs." in out
