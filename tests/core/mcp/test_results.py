"""MCP tool results as the model reads them: text, structured content, placeholders, errors."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")

import mcp_types as types

from greenroom.mcp import to_tool_result


def test_text_parts_are_joined_and_structured_content_kept() -> None:
    r = to_tool_result(
        types.CallToolResult(
            content=[types.TextContent(text="one"), types.TextContent(text="two")], structured_content={"n": 2}
        )
    )
    assert (r.content, r.is_error, r.structured) == ("one\ntwo", False, {"n": 2})


def test_structured_only_result_is_rendered_as_json() -> None:
    r = to_tool_result(types.CallToolResult(content=[], structured_content={"b": 1, "a": [1, 2]}))
    assert json.loads(r.content) == {"a": [1, 2], "b": 1}
    assert r.structured == {"a": [1, 2], "b": 1}


def test_images_audio_and_resources_become_placeholders() -> None:
    r = to_tool_result(
        types.CallToolResult(
            content=[
                types.ImageContent(data="aGVsbG8=", mime_type="image/png"),
                types.AudioContent(data="aGk=", mime_type="audio/wav"),
                types.ResourceLink(name="log", uri="file:///tmp/log.txt", mime_type="text/plain"),
                types.EmbeddedResource(resource=types.TextResourceContents(uri="mem://a", text="inline text")),
                types.EmbeddedResource(
                    resource=types.BlobResourceContents(uri="mem://b", blob="aGVsbG8=", mime_type="application/zip")
                ),
            ]
        )
    )
    assert r.content.splitlines() == [
        "[image: image/png, 5 bytes]",
        "[audio: audio/wav, 2 bytes]",
        "[resource link: log <file:///tmp/log.txt> (text/plain)]",
        "[resource <mem://a>]",
        "inline text",
        "[resource <mem://b> (application/zip), 5 bytes]",
    ]


def test_is_error_maps_to_an_error_result() -> None:
    r = to_tool_result(types.CallToolResult(content=[types.TextContent(text="bad zone")], is_error=True))
    assert r.is_error and r.content == "bad zone"
    empty = to_tool_result(types.CallToolResult(content=[], is_error=True))
    assert empty.is_error and "error" in empty.content


def test_images_and_audio_become_parts_for_a_model_that_takes_them() -> None:
    from greenroom import MediaPart
    from greenroom.mcp.results import masked

    r = to_tool_result(
        types.CallToolResult(
            content=[
                types.TextContent(text="a chart and a jingle"),
                types.ImageContent(data="aGVsbG8=", mime_type="image/png"),
                types.AudioContent(data="aGk=", mime_type="audio/wav"),
                types.EmbeddedResource(
                    resource=types.BlobResourceContents(uri="mem://b", blob="aGVsbG8=", mime_type="image/png")
                ),
            ]
        )
    )
    assert r.parts == (MediaPart("image", "image/png", "aGVsbG8="), MediaPart("audio", "audio/wav", "aGk="))
    assert r.content.splitlines()[1:3] == [p.placeholder() for p in r.parts]  # named in the text too
    assert masked(r, lambda text: text.replace("jingle", "***")).parts == r.parts
