"""Images and sounds in tool results: a Python tool returns them, they reach the model on
the tool message with their token cost estimated per provider family and counted against
``max_result_tokens`` (those that do not fit are left out, and the text says so), events
and traces name them without carrying them, and sessions save and resume them."""

from __future__ import annotations

import base64
import io
import json
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from greenroom import MediaPart, Message, RequestSent, SessionError, ToolExecuted, ToolResult, TraceWriter, tool
from greenroom.events import MediaDropped
from greenroom.run.limits import bound_parts
from greenroom.run.runtime import Runtime
from greenroom.tokens.media import (
    anthropic_image_tokens,
    audio_seconds,
    image_size,
    media_tokens,
    model_family,
    openai_image_tokens,
)

pytestmark = pytest.mark.anyio


def png(width: int, height: int) -> MediaPart:
    image = pytest.importorskip("PIL.Image", reason="Pillow reads image headers")
    out = io.BytesIO()
    image.new("RGB", (width, height), "red").save(out, "PNG")
    return MediaPart("image", "image/png", base64.b64encode(out.getvalue()).decode())


def wav(seconds: float, rate: int = 8000) -> MediaPart:
    out = io.BytesIO()
    with wave.open(out, "wb") as sound:
        sound.setnchannels(1)
        sound.setsampwidth(2)
        sound.setframerate(rate)
        sound.writeframes(b"\x00\x00" * int(seconds * rate))
    return MediaPart("audio", "audio/wav", base64.b64encode(out.getvalue()).decode())


# ---------------------------------------------------------------- what a tool returns


def test_a_tool_may_return_an_image_or_text_and_images_mixed() -> None:
    image = MediaPart("image", "image/png", base64.b64encode(b"\x89PNG\r\n\x1a\n").decode())
    alone = ToolResult.from_value(image)
    assert alone.parts == (image,) and alone.content == "[image: image/png, 8 bytes]"
    mixed = ToolResult.from_value(["before", image, {"n": 1}, image])
    assert mixed.parts == (image, image)
    assert mixed.content.splitlines() == ["before", image.placeholder(), '{"n": 1}', image.placeholder()]
    plain = ToolResult.from_value(["a", 1])
    assert plain.parts == () and plain.structured == ["a", 1]


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


@pytest.mark.parametrize(
    ("part", "why"),
    [
        (MediaPart("image", "image/png", "iVBORw0KGgo!"), "its data is not valid base64"),
        (MediaPart("image", "image/png", "iVBORw0KGgo"), "its data is not valid base64"),  # padding cut off
        (MediaPart("image", "image/png", b64(b"<html>not found</html>")), "its bytes are not a PNG image"),
        (MediaPart("image", "image/jpeg", b64(b"\x89PNG\r\n\x1a\n")), "its bytes are not a JPEG image"),
        (MediaPart("image", "image/webp", b64(b"RIFF\0\0\0\0WAVEfmt ")), "its bytes are not a WebP image"),
        (MediaPart("audio", "audio/wav", "UklGRg=\n"), "its data is not valid base64"),
        (MediaPart("image", "image/gif", ""), "its data is empty"),
    ],
    ids=["not base64", "bad padding", "text labelled PNG", "PNG labelled JPEG", "WAV labelled WebP", "audio", "empty"],
)
def test_a_part_that_is_not_what_it_says_is_left_out_and_the_text_says_why(part: MediaPart, why: str) -> None:
    # a provider refuses the whole request over one such part: the model reads why instead
    good = MediaPart("image", "image/gif", b64(b"GIF89a\x01\x00\x01\x00"))
    assert good.problem() is None and part.problem() == why
    result = ToolResult.from_value(["before", part, good])
    assert result.parts == (good,)
    note = f"[{part.kind}: {part.mime_type}, left out: {why}]"
    assert result.content.splitlines() == ["before", note, good.placeholder()]
    # a result made whole (an MCP server's, a tool's own ToolResult) is checked the same way
    made = ToolResult.from_value(ToolResult("shot", parts=(part,)))
    assert made.parts == () and made.content == f"shot\n{note}"


# ---------------------------------------------------------------- what it costs


def test_images_cost_what_each_provider_family_publishes() -> None:
    # OpenAI's documented examples (high detail) and Anthropic's w*h/750 with its scaling
    assert openai_image_tokens(1024, 1024) == 765
    assert openai_image_tokens(2048, 4096) == 1105
    assert anthropic_image_tokens(1000, 1000) == 1334
    assert anthropic_image_tokens(8000, 8000) == anthropic_image_tokens(1072, 1072)  # scaled to ~1.15 MP first
    image = png(800, 600)
    assert image_size(image) == (800, 600)
    assert media_tokens(image, "anthropic") == 640 and media_tokens(image, "openai") == 765
    assert media_tokens(image) == 765  # a model of no known family: the larger estimate


def test_what_is_not_a_readable_image_is_estimated_from_its_size() -> None:
    blob = MediaPart("image", "image/png", base64.b64encode(b"not a png" * 1000).decode())
    assert image_size(blob) is None
    assert media_tokens(blob, "anthropic") == anthropic_image_tokens(94, 94)  # 9,000 bytes as a square


def test_sound_costs_by_its_length() -> None:
    assert audio_seconds(wav(2.0)) == pytest.approx(2.0, rel=0.01)
    assert media_tokens(wav(2.0)) == 65  # 32 a second
    mp3 = MediaPart("audio", "audio/mpeg", base64.b64encode(b"\xff" * 32_000).decode())
    assert audio_seconds(mp3) == 2.0  # 128 kbit/s


def test_the_family_comes_from_the_model() -> None:
    class Claude:
        provider = "anthropic"

    assert model_family(Claude()) == "anthropic" and model_family(object()) == ""


# ---------------------------------------------------------------- the limit


def test_parts_that_fit_beside_the_text_are_kept_the_rest_left_out_with_a_note() -> None:
    small, big = png(100, 100), png(1500, 1500)
    result = ToolResult("three pictures", parts=(small, big, small))
    assert bound_parts(result, 10_000, "anthropic") == (result, None)
    kept, dropped = bound_parts(result, 1_000, "anthropic")
    assert dropped is not None and (dropped.kept, dropped.dropped) == (2, 1)
    assert kept.parts == (small, small)
    assert dropped.dropped_tokens == media_tokens(big, "anthropic")
    assert kept.content.startswith("three pictures\n[greenroom left out 1 part of this result")
    over, all_out = bound_parts(ToolResult("word " * 2_000, parts=(small,)), 500, "anthropic")
    assert all_out is not None and over.parts == () and all_out.dropped == 1


# ---------------------------------------------------------------- a run


@tool
def screenshot(width: int = 800) -> list[Any]:
    """A screenshot of the page."""
    return ["the page:", png(width, 600)]


TURNS = [{"tool_calls": [{"name": "screenshot", "arguments": {}}]}, {"text": "It is red."}]


async def test_a_tools_image_reaches_the_model_and_is_saved(
    make_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    rt = make_runtime(TURNS, tools=[screenshot])
    events: list[Any] = []
    rt.events.subscribe(events.append)
    trace = TraceWriter(tmp_path / "trace.jsonl")
    rt.events.subscribe(trace)
    session = rt.session()
    await rt.run(session, "look")
    trace.close()
    result = rt.model.requests[1].messages[-1]
    (part,) = result.parts
    assert part.kind == "image" and result.content == f"the page:\n{part.placeholder()}"
    (executed,) = [e for e in events if isinstance(e, ToolExecuted)]
    assert executed.parts == ({"kind": "image", "mime_type": "image/png", "bytes": part.size},)
    assert part.data not in (tmp_path / "trace.jsonl").read_text()
    first, second = [e.messages_tokens for e in events if isinstance(e, RequestSent)]
    assert second - first >= media_tokens(part)  # the image counts in what the request sends

    session.save(tmp_path / "s.json")
    resumed = rt.load_session(tmp_path / "s.json")
    assert resumed.messages[2].parts == (part,)


async def test_an_image_over_the_limit_is_left_out_and_the_model_is_told(
    make_runtime: Callable[..., Runtime],
) -> None:
    rt = make_runtime(TURNS, tools=[screenshot], max_result_tokens=300)
    events: list[Any] = []
    rt.events.subscribe(events.append)
    session = rt.session()
    await rt.run(session, "look")
    result = session.messages[2]
    assert result.parts == () and "greenroom left out 1 part" in result.content
    (dropped,) = [e for e in events if isinstance(e, MediaDropped)]
    assert (dropped.dropped, dropped.kept, dropped.limit) == (1, 0, 300)
    (executed,) = [e for e in events if isinstance(e, ToolExecuted)]
    assert executed.parts == ()


def test_a_session_with_a_broken_part_is_refused_naming_it(
    make_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    rt = make_runtime([])
    session = rt.session()
    session.messages.append(Message(role="tool", content="x", tool_call_id="c", parts=(png(2, 2),)))
    path = session.save(tmp_path / "s.json")
    data = json.loads(path.read_text())
    data["messages"][0]["parts"][0]["kind"] = "video"
    path.write_text(json.dumps(data))
    with pytest.raises(SessionError, match=r"messages\[0\]\.parts\[0\]\.kind: .video. is not one of"):
        rt.load_session(path)
