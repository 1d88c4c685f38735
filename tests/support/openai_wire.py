"""The OpenAI APIs' streamed wire format, for the fake server: Chat Completions chunks
(``chat.completion.chunk``, the usage chunk of ``stream_options.include_usage``,
``[DONE]``) and Responses events (``response.created`` ... ``response.completed``), as
the API references document them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from support.fake_llm_server import SSE


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with one choice."""
    choices = [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    return {
        "id": "chatcmpl-stream",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-test",
        "system_fingerprint": "fp_test",
        "choices": choices,
        **extra,
    }


def chat_usage(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    """The last chunk with ``include_usage``: no choices, the usage."""
    return chunk(
        None,
        usage={
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        },
    )


def chat_stream(
    texts: Sequence[str] = (),
    calls: Sequence[tuple[str, str, Sequence[str]]] = (),
    *,
    finish: str | None = None,
    usage: tuple[int, int, int] = (100, 10, 0),
) -> list[SSE]:
    """Text pieces, then each call (id, name, argument fragments) as the API streams it:
    the first delta of a call carries its index, id, type and name, the next ones
    argument fragments only; then the finish reason, the usage chunk and ``[DONE]``."""
    events = [SSE(chunk({"role": "assistant", "content": ""}))]
    events += [SSE(chunk({"content": t})) for t in texts]
    for index, (call_id, name, fragments) in enumerate(calls):
        head = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        events.append(SSE(chunk({"tool_calls": [head]})))
        events += [SSE(chunk({"tool_calls": [{"index": index, "function": {"arguments": f}}]})) for f in fragments]
    events.append(SSE(chunk({}, finish or ("tool_calls" if calls else "stop"))))
    events.append(SSE(chat_usage(*usage)))
    events.append(SSE("[DONE]"))
    return events


def event(kind: str, **fields: Any) -> SSE:
    return SSE({"type": kind, **fields}, event=kind)


def response(output: Sequence[dict[str, Any]], status: str = "completed", usage: tuple[int, int, int] = (100, 10, 0)):  # type: ignore[no-untyped-def]
    return {
        "id": "resp_stream",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "model": "gpt-test",
        "output": list(output),
        "usage": {
            "input_tokens": usage[0],
            "input_tokens_details": {"cached_tokens": usage[2]},
            "output_tokens": usage[1],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage[0] + usage[1],
        },
    }


def message_item(text: str, item_id: str = "msg_1") -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def responses_stream(items: Sequence[dict[str, Any]], *, usage: tuple[int, int, int] = (100, 10, 0)) -> list[SSE]:
    """``response.created``, then each output item: added, its deltas (text pieces of a
    message, argument fragments of a call), done; then ``response.completed``. A message
    item's text is streamed in pieces of 4 characters."""
    seq = iter(range(1, 10_000))
    out = [event("response.created", sequence_number=0, response=response([], "in_progress"))]
    for index, item in enumerate(items):
        started = {**item, "status": "in_progress"}
        if item["type"] == "message":
            started["content"] = []
        if item["type"] == "function_call":
            started["arguments"] = ""
        out.append(event("response.output_item.added", sequence_number=next(seq), output_index=index, item=started))
        if item["type"] == "message":
            text = item["content"][0]["text"]
            for i in range(0, len(text), 4):
                out.append(
                    event(
                        "response.output_text.delta",
                        sequence_number=next(seq),
                        item_id=item["id"],
                        output_index=index,
                        content_index=0,
                        delta=text[i : i + 4],
                        logprobs=[],
                    )
                )
        if item["type"] == "function_call":
            args = item["arguments"]
            for i in range(0, len(args), 5):
                out.append(
                    event(
                        "response.function_call_arguments.delta",
                        sequence_number=next(seq),
                        item_id=item.get("id", ""),
                        output_index=index,
                        delta=args[i : i + 5],
                    )
                )
        out.append(event("response.output_item.done", sequence_number=next(seq), output_index=index, item=item))
    out.append(event("response.completed", sequence_number=next(seq), response=response(items, usage=usage)))
    return out
