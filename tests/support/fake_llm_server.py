"""A local HTTP server that speaks the OpenAI, Anthropic and Gemini wire formats, for tests.

It records every request (raw bytes, parsed JSON, headers) and answers from a queue of
scripted replies, or from a responder function when the queue is empty. A reply can be
any status with a JSON body and headers, or a *hang*: the handler holds the connection
open without answering until the client goes away or the test ends, and counts the
disconnect (that is how a test sees that cancellation really closed the HTTP call).

The JSON bodies follow the official API references: ``chat.completion`` objects
(choices / message / tool_calls / usage with ``prompt_tokens_details``), Responses API
``response`` objects, Anthropic ``message`` objects (content blocks, usage with the
cache fields), Gemini ``GenerateContentResponse`` objects (candidates / content / parts,
``usageMetadata`` with the cached and thinking counts; each one event of a
``streamGenerateContent?alt=sse`` stream) and each provider's error envelope.
"""

from __future__ import annotations

import collections
import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

OPENAI_KEY_ENV = "GREENROOM_TEST_OPENAI_KEY"
ANTHROPIC_KEY_ENV = "GREENROOM_TEST_ANTHROPIC_KEY"
GEMINI_KEY_ENV = "GREENROOM_TEST_GEMINI_KEY"
HANG_LIMIT = 10.0  # seconds a hanging handler waits at most, so no thread outlives a test run


@attrs.define
class SSE:
    """One server-sent event: ``data`` is JSON (or a literal string such as ``[DONE]``),
    ``event`` its name when the API names its events (Anthropic, Responses)."""

    data: Any
    event: str | None = None

    def encode(self) -> bytes:
        text = self.data if isinstance(self.data, str) else json.dumps(self.data)
        head = f"event: {self.event}\n" if self.event else ""
        return f"{head}data: {text}\n\n".encode()


@attrs.define
class Reply:
    """One scripted answer. With ``stream``, the answer is ``text/event-stream``: those
    events, each flushed as it is written; ``break_after`` cuts the connection after that
    many (a stream that breaks mid-way); ``gate`` holds the stream after ``gate_after``
    events until the test sets it (a stream whose first token the test can time)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = attrs.field(factory=dict)
    hang: bool = False
    content_type: str = "application/json"
    stream: Sequence[SSE] | None = None
    break_after: int | None = None
    gate: threading.Event | None = None
    gate_after: int = 1


@attrs.define
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes

    @property
    def body(self) -> Any:
        return json.loads(self.raw)


class FakeLLMServer:
    """A threaded HTTP server on 127.0.0.1 with a free port."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.replies: collections.deque[Reply] = collections.deque()
        self.responder: Callable[[Recorded], Reply] | None = None
        self.release = threading.Event()
        self.changed = threading.Condition()
        self.disconnects = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    def push(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def _next(self, rec: Recorded) -> Reply:
        with self.changed:
            self.requests.append(rec)
            self.changed.notify_all()
        if self.replies:
            return self.replies.popleft()
        if self.responder is not None:
            return self.responder(rec)
        return Reply(500, {"error": {"message": "the fake server has no reply scripted", "type": "test_error"}})

    def _disconnected(self) -> None:
        with self.changed:
            self.disconnects += 1
            self.changed.notify_all()

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
        """Block (bounded) until ``predicate()`` holds; re-checked on every change."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(left)
        return True


def _make_handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            rec = Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, raw)
            reply = server._next(rec)
            if reply.hang:
                self._hang()
                return
            if reply.stream is not None:
                self._stream(reply)
                return
            payload = reply.body if isinstance(reply.body, (bytes, str)) else json.dumps(reply.body)
            data = payload.encode() if isinstance(payload, str) else payload
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            self.send_header("content-length", str(len(data)))
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, reply: Reply) -> None:
            """Chunked ``text/event-stream``: each event one chunk, flushed at once."""
            self.send_response(reply.status)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            try:
                for i, event in enumerate(reply.stream or ()):
                    if reply.break_after is not None and i >= reply.break_after:
                        self.close_connection = True
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)  # mid-stream, no final chunk
                        return
                    if reply.gate is not None and i == reply.gate_after:
                        reply.gate.wait(HANG_LIMIT)
                    data = event.encode()
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:  # the client went away
                server._disconnected()

        def _hang(self) -> None:
            self.close_connection = True
            deadline = time.monotonic() + HANG_LIMIT
            while not server.release.is_set() and time.monotonic() < deadline:
                readable, _, _ = select.select([self.connection], [], [], 0.02)
                if readable:
                    try:
                        gone = self.connection.recv(1, socket.MSG_PEEK) == b""
                    except OSError:
                        gone = True
                    if gone:
                        server._disconnected()
                        return

    return Handler


class SleepRecorder:
    """Stands in for ``anyio.sleep`` in a RetryPolicy: records each wait, returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


# ----------------------------------------------------------------------------- wire bodies


def strip_cache_control(value: Any) -> Any:
    """A request part without its prompt-cache breakpoints (the last message's moves on
    with every request), to compare histories request to request."""
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def openai_tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chat_completion(
    content: str | None = None,
    tool_calls: Sequence[dict[str, Any]] = (),
    *,
    prompt_tokens: int = 100,
    completion_tokens: int = 10,
    cached_tokens: int = 0,
    finish_reason: str | None = None,
    model: str = "gpt-test",
) -> dict[str, Any]:
    """A ``chat.completion`` object as the API reference documents it."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None, "annotations": []}
    if tool_calls:
        message["tool_calls"] = list(tool_calls)
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": "fp_test",
    }


def responses_object(
    output: Iterable[dict[str, Any]], *, input_tokens: int = 100, output_tokens: int = 10, cached_tokens: int = 0
) -> dict[str, Any]:
    """A Responses API ``response`` object."""
    return {
        "id": "resp_test",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": "gpt-test",
        "output": list(output),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached_tokens},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
    }


def openai_error(message: str, type_: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def anthropic_message(
    content: Sequence[dict[str, Any]],
    *,
    input_tokens: int = 20,
    output_tokens: int = 10,
    cache_read: int = 0,
    cache_write: int = 0,
    stop_reason: str | None = None,
) -> dict[str, Any]:
    """An Anthropic ``message`` object as the Messages API reference documents it."""
    has_tool = any(b.get("type") == "tool_use" for b in content)
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": list(content),
        "stop_reason": stop_reason or ("tool_use" if has_tool else "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": cache_write,
            "cache_read_input_tokens": cache_read,
            "service_tier": "standard",
        },
    }


def anthropic_error(type_: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": type_, "message": message}, "request_id": "req_test"}


def gemini_response(
    parts: Sequence[dict[str, Any]],
    *,
    prompt_tokens: int = 100,
    cached_tokens: int = 0,
    output_tokens: int = 10,
    thoughts_tokens: int = 0,
    finish_reason: str | None = "STOP",
) -> dict[str, Any]:
    """A ``GenerateContentResponse`` as the Gemini API reference documents it (one
    candidate; ``finish_reason=None`` for an event in the middle of a stream)."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    usage: dict[str, Any] = {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": prompt_tokens + output_tokens + thoughts_tokens,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt_tokens}],
    }
    if cached_tokens:
        usage["cachedContentTokenCount"] = cached_tokens
    if thoughts_tokens:
        usage["thoughtsTokenCount"] = thoughts_tokens
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": "gemini-test",
        "responseId": "resp-test",
    }


def gemini_call(name: str, args: Any, call_id: str | None = None, signature: str | None = None) -> dict[str, Any]:
    """A ``functionCall`` part (Gemini 3 gives ids and a signature on a step's first call)."""
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        call["id"] = call_id
    part: dict[str, Any] = {"functionCall": call}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def gemini_error(code: int, message: str, status: str, details: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """Google's error envelope (``google.rpc.Status`` as JSON)."""
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return {"error": error}


# ----------------------------------------------------------------------------- raw bytes


def top_level_raw(raw: bytes) -> dict[str, str]:
    """Each top-level key of a JSON object with its value's exact source text."""
    text = raw.decode()
    decoder = json.JSONDecoder()
    out: dict[str, str] = {}
    i = text.index("{") + 1
    while True:
        while text[i] in " \t\r\n,":
            i += 1
        if text[i] == "}":
            return out
        key, i = decoder.raw_decode(text, i)
        while text[i] in " \t\r\n:":
            i += 1
        start = i
        _, i = decoder.raw_decode(text, i)
        out[key] = text[start:i]


def array_items_raw(text: str) -> list[str]:
    """The exact source text of each element of a JSON array."""
    decoder = json.JSONDecoder()
    out: list[str] = []
    i = text.index("[") + 1
    while True:
        while text[i] in " \t\r\n,":
            i += 1
        if text[i] == "]":
            return out
        start = i
        _, i = decoder.raw_decode(text, i)
        out.append(text[start:i])
