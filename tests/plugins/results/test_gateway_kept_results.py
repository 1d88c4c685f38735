"""Results that fit, through ``greenroom serve``: the gateway offers ``read_result`` to its
MCP clients like its other plugin tools; a result of several MB reaches a client cut, with
the line naming its call id, and the client reads the rest back by pattern and by offset;
another client cannot read it; and when the client leaves, what its session kept goes.
The SDK's own client, over streamable HTTP (one session per connection)."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import mcp_types as t
import pytest
from support.serve_testutil import HttpGateway, http_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOOLS = '''
from greenroom import tool


@tool
def dump_logs() -> str:
    """The service's logs, all of them."""
    return "\\n".join(
        f"{k:07d} " + ("ERROR upstream reset" if k % 25_000 == 0 else "INFO request handled in 12 ms")
        for k in range(1, 120_001)
    )


TOOLS = [dump_logs]
'''


def text(result: t.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, t.TextContent))


def kept_files(home: Path) -> list[Path]:
    return sorted((home / "results").glob("*/*.kept"))


async def until(predicate: object, within: float = 30.0) -> None:
    with anyio.fail_after(within):
        while not predicate():  # type: ignore[operator]
            await anyio.sleep(0.05)


async def test_a_client_reads_a_cut_result_back_and_it_goes_when_the_client_leaves(
    tmp_path: Path, gr_home: Path
) -> None:
    (tmp_path / "big_tools.py").write_text(TOOLS, encoding="utf-8")
    config = tmp_path / "kept.toml"
    config.write_text(
        '[agent]\nid = "kept"\nmodel = "scripted:"\nmax_result_tokens = 2000\n'
        f"[tools]\npython = [{str(tmp_path / 'big_tools.py') + ':TOOLS'!r}]\n",
        encoding="utf-8",
    )
    gw = HttpGateway(config)
    try:
        async with http_client(gw.url) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            assert {"read_result", "dump_logs"} <= listed
            cut = text(await client.call_tool("dump_logs", {}))
            note = cut.split("\n", 1)[0]
            assert re.match(r"\[greenroom cut this result: it was 4,\d{3},\d{3} characters", note)
            assert "greenroom kept the whole result (120,000 lines;" in note
            (call_id,) = re.findall(r'call read_result with call_id "(call_\w+)"', note)
            assert len(kept_files(gr_home)) == 1

            found = await client.call_tool("read_result", {"call_id": call_id, "pattern": "ERROR"})
            assert not found.is_error
            assert re.findall(r"^(\d+):", text(found), re.M) == ["25000", "50000", "75000", "100000"]
            page = await client.call_tool("read_result", {"call_id": call_id, "offset": 60_000, "limit": 2})
            assert text(page).splitlines()[1:] == [
                "60000:0060000 INFO request handled in 12 ms",
                "60001:0060001 INFO request handled in 12 ms",
                "[next: offset=60002]",
            ]
            async with http_client(gw.url) as other:  # another client: another session
                theirs = await other.call_tool("read_result", {"call_id": call_id})
                assert theirs.is_error and f"no kept result for call_id {call_id!r} in this session" in text(theirs)
            assert len(kept_files(gr_home)) == 1
        # the client left: its run ended, and what its session kept went with it
        await until(lambda: kept_files(gr_home) == [])
        assert gw.proc.poll() is None  # the gateway itself goes on
    finally:
        assert gw.stop() == 0, "".join(gw.stderr)
