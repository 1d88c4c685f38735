"""Compaction that loses nothing: a JSON result reaches the model minified, without its
null and empty fields, every other value intact (``false`` and ``0`` included); a text
whose rewriting could change a value is sent as it came; a tool can opt out; the result's
structured content is never touched. On a real MCP server's result too."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenroom import RunKind, ToolCall, ToolResult, tool
from greenroom.config import ResultsConfig
from greenroom.results.compaction import compact_text
from greenroom.tokens.counting import count_tokens
from greenroom.tools import ToolCallContext

EMPTY: tuple[Any, ...] = (None, "", [], {})

leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["", "0", "false", "null", 'é \u2028 \\ " /'])
)
documents = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=6), inner, max_size=5),
    max_leaves=40,
)


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | dict) and not value)


def non_empty_leaves(value: Any, path: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], Any]:
    """Every leaf that is not null, "", [] or {}, by its path (keys and array positions)."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in non_empty_leaves(item, (*path, key)).items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in non_empty_leaves(item, (*path, i)).items()}
    return {} if _is_empty(value) else {path: value}


def no_empty_fields(value: Any) -> bool:
    if isinstance(value, dict):
        return all(not _is_empty(v) and no_empty_fields(v) for v in value.values())
    if isinstance(value, list):
        return all(no_empty_fields(v) for v in value)
    return True


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values: bools are not numbers, and -0.0 keeps its sign."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


@settings(max_examples=400, deadline=None)
@given(documents.filter(lambda d: isinstance(d, dict | list)), st.sampled_from([None, 1, 2]))
def test_compaction_keeps_every_non_empty_leaf_and_drops_only_empty_fields(doc: Any, indent: int | None) -> None:
    text = json.dumps(doc, indent=indent, ensure_ascii=indent == 2)
    lean = compact_text(text)
    if lean is None:  # nothing to save (already minified without empty fields)
        assert json.dumps(doc, separators=(",", ":"), ensure_ascii=False) == text or indent is None
        return
    assert len(lean) < len(text)
    back = json.loads(lean)
    before, after = non_empty_leaves(doc), non_empty_leaves(back)
    assert before.keys() == after.keys()
    assert all(same(before[k], after[k]) for k in before)
    assert no_empty_fields(back)
    assert lean == json.dumps(back, separators=(",", ":"), ensure_ascii=False)  # minified, order kept


def test_values_a_user_relies_on_stay_and_empty_fields_go() -> None:
    text = json.dumps(
        {"ok": False, "count": 0, "ratio": 0.0, "note": "", "tags": [], "meta": {"a": None}, "items": [None, {}, 1]},
        indent=2,
    )
    assert compact_text(text) == '{"ok":false,"count":0,"ratio":0.0,"items":[null,{},1]}'


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1.0000000000000001}',  # more digits than a float holds
        '{"a": 1e400}',  # no float at all
        '{"a": 1, "a": 2}',  # a key twice
        '{"a": "\\ud800"}',  # a lone surrogate
        '{"a": NaN}',
        '{"a": 1',
        "[1, 2] trailing",
        "plain text",
    ],
)
def test_a_text_whose_rewriting_could_change_a_value_is_sent_as_it_came(text: str) -> None:
    assert compact_text(text) is None


REPORT = {"status": "ok", "warnings": [], "owner": None, "retries": 0, "done": False}


@tool
def report() -> dict[str, Any]:
    """A report with empty fields."""
    return dict(REPORT)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("results", "compacted"),
    [(None, True), (ResultsConfig(verbatim=("rep*",)), False), (ResultsConfig(compact=False), False)],
)
async def test_the_model_reads_the_compacted_result_unless_the_tool_opts_out(
    make_runtime: Any, results: ResultsConfig | None, compacted: bool
) -> None:
    rt = make_runtime([{"tool_calls": [{"name": "report", "arguments": {}}]}, {"text": "ok"}], tools=[report])
    if results is not None:
        rt.parts.results = results
    session = rt.session()
    await session.run("go")
    (message,) = [m for m in rt.model.requests[-1].messages if m.role == "tool"]
    if compacted:
        assert message.content == '{"done":false,"retries":0,"status":"ok"}'
    else:
        assert message.content == ToolResult.from_value(REPORT).content
    # what a gateway passes on beside the text: the structured content, untouched
    run = rt.start_run(session, kind=RunKind.CLIENT)
    await run.start()
    result = await run.call_tool(ToolCall("c9", "report", {}))
    await run.end(run.outcome_of("final"))
    assert result.structured == REPORT and result.content == message.content
    await rt.aclose()


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_real_servers_json_result_reaches_the_model_compacted_with_its_values(tmp_path: Path) -> None:
    pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")
    from greenroom import abuild_runtime

    turns = [
        {"tool_calls": [{"name": "time__convert_time", "arguments": {
            "source_timezone": "Europe/Paris", "time": "12:30", "target_timezone": "Asia/Tokyo"}}]},
        {"text": "ok"},
    ]  # fmt: skip
    (tmp_path / "turns.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    config = tmp_path / "agent.toml"
    config.write_text(
        '[agent]\nmodel = "scripted:turns.jsonl"\n[[tools.mcp]]\nname = "time"\ndefer = false\n'
        f'command = {json.dumps(sys.executable)}\nargs = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\n'
        '[plugins]\nenable = ["scripted"]\n'
    )
    rt = await abuild_runtime(config)
    try:
        session = rt.session()
        await session.run("what time is it in Tokyo?")
        (message,) = [m for m in rt.model.requests[-1].messages if m.role == "tool"]
        raw = await rt.tools["time__convert_time"].execute(
            dict(turns[0]["tool_calls"][0]["arguments"]),  # type: ignore[index]
            ToolCallContext(call_id="raw", run_id="raw", tool_name="time__convert_time"),
        )
    finally:
        await rt.aclose()
    sent = json.loads(message.content)
    assert "\n" not in message.content and count_tokens(message.content) < count_tokens(raw.content)
    assert non_empty_leaves(sent) == non_empty_leaves(json.loads(raw.content)) and no_empty_fields(sent)


def test_a_config_turns_it_off_or_exempts_tools(tmp_path: Path) -> None:
    from greenroom.config import ConfigError, RuntimeConfig, ToolsConfig, load_config

    path = tmp_path / "agent.toml"
    path.write_text("[tools.results]\ncompact = false\nverbatim = ['db_*']\n")
    assert load_config(path).tools.results == ResultsConfig(compact=False, verbatim=("db_*",))
    assert RuntimeConfig().tools == ToolsConfig()
    path.write_text("[tools.results]\nverbatim = ['[']\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert "tools.results.verbatim" in str(caught.value)
