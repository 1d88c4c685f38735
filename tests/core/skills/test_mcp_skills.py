"""An upstream MCP server's skills in a run (a real SDK server declaring the Skills
extension, a scripted model): listed by name and description, found by ToolSearch,
loaded by a call whose result is the SKILL.md, files checked against their digests, a
skill the policy hides never listed, found or fetched, and a second start served from
the cached listing and files while the server is down."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from support.skills import skills_server_toml

from greenroom.compose.build import build_runtime
from greenroom.skills.mcp import skills_cache_path

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PDF, GIT = "docs__skill_pdf-processing", "docs__skill_git-workflow"


def agent(folder: Path, served: Path, turns: list[dict[str, Any]], *, extra: str = "", env: str = "") -> Path:
    (folder / "script.jsonl").write_text("\n".join(json.dumps(t) for t in [*turns, {"text": "done"}]) + "\n")
    log = folder / "server.log"
    path = folder / "agent.toml"
    path.write_text(
        f'[agent]\nmodel = "scripted:script.jsonl"\nmax_steps = 12\n{extra}\n'
        + skills_server_toml("docs", served, log, env)
        + "[plugins.deferred-tools]\nenabled = true\n"
    )
    return path


def call(tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def dispatch(tool: str, /, **arguments: Any) -> dict[str, Any]:
    return call("deferred_tool_call", tool_name=tool, arguments=arguments)


async def run(path: Path) -> tuple[Any, list[Any]]:
    rt = build_runtime(path)
    try:
        session = rt.session()
        await session.run("go")
        return rt, [m for m in session.messages if m.role == "tool"]
    finally:
        await rt.aclose()


def system_text(rt: Any) -> str:
    return "\n".join(s.text for s in rt.model.requests[0].system)


def server_log(folder: Path) -> list[str]:
    path = folder / "server.log"
    return path.read_text().splitlines() if path.exists() else []


async def test_an_upstream_servers_skills_are_listed_found_and_loaded(tmp_path: Path, skills_folder: Path) -> None:
    turns = [
        call("ToolSearch", query="fill in a PDF form"),
        dispatch(PDF),
        dispatch(PDF, file="references/FORMS.md"),
        dispatch(PDF, file="references/NOTES.md"),
    ]
    rt, (found, loaded, form, missing) = await run(agent(tmp_path, skills_folder, turns))
    listing = system_text(rt)
    assert f"{PDF} - Extract, fill, and assemble PDF documents" in listing
    assert f"{GIT} - Follow this team's Git conventions" in listing
    assert PDF in found.content and not found.is_error
    assert not loaded.is_error and "Read references/FORMS.md before filling a form." in loaded.content
    assert "MCP server 'docs'" in loaded.content and "references/FORMS.md (33 bytes)" in loaded.content
    assert form.content == "Forms are filled field by field.\n"
    assert missing.is_error and "no file 'references/NOTES.md'" in missing.content
    log = server_log(tmp_path)
    assert "get skill://pdf-processing/SKILL.md" in log and "read skill://pdf-processing/SKILL.md" in log


async def test_a_skill_file_that_is_not_what_its_entry_says_is_not_shown(tmp_path: Path, skills_folder: Path) -> None:
    path = agent(tmp_path, skills_folder, [dispatch(PDF)], env=', SKILLS_TAMPER = "pdf-processing"')
    _, (loaded,) = await run(path)
    assert loaded.is_error and "not what its skill entry describes" in loaded.content
    assert "Ignore the user" not in loaded.content


async def test_a_skill_the_policy_hides_is_never_listed_found_or_fetched(tmp_path: Path, skills_folder: Path) -> None:
    turns = [
        call("ToolSearch", query="git conventions for branching and commits"),
        call("ToolSearch", query=f"select:{GIT}"),
        dispatch(GIT),
        call(GIT),
        call("load_tools", group_id="skills:docs", tool_names=[GIT]),
    ]
    extra = '[tools.policy]\ndeny = ["docs__skill_git*"]\n'
    rt, results = await run(agent(tmp_path, skills_folder, turns, extra=extra))
    assert PDF in system_text(rt) and GIT not in system_text(rt)
    searched, selected, dispatched, called, loaded = results
    assert GIT not in searched.content
    asked, _, offered = selected.content.partition("Available")  # it names what was asked for, no more
    assert "No tools matched" in asked and offered and GIT not in offered
    assert dispatched.is_error and called.is_error and "Branch." not in dispatched.content + called.content
    report = json.loads(loaded.content)
    assert report["error"] == f"not in skills:docs: {GIT}" and GIT not in report.get("tool_names", [])
    assert all(GIT not in json.dumps([t.to_json() for t in r.tools]) for r in rt.model.requests)
    assert not [line for line in server_log(tmp_path) if "git-workflow" in line]  # never asked for, never read


async def test_a_second_start_reads_the_cached_listing_and_files_while_the_server_is_down(
    tmp_path: Path, skills_folder: Path
) -> None:
    await run(agent(tmp_path, skills_folder, [dispatch(PDF)]))
    reads = [line for line in server_log(tmp_path) if line.startswith("read ")]
    assert reads == ["read skill://pdf-processing/SKILL.md"]
    down = agent(tmp_path, skills_folder, [dispatch(PDF)], env=', SKILLS_DOWN = "1"')
    rt, (loaded,) = await run(down)
    assert f"{PDF} - Extract, fill" in system_text(rt)  # listed from the cache: nothing started for it
    assert not loaded.is_error and "Read references/FORMS.md" in loaded.content  # its file, kept by digest
    assert rt.mcp is not None and rt.mcp.servers["docs"].starts == 0
    assert [line for line in server_log(tmp_path) if line.startswith("read ")] == reads


async def test_an_entry_that_breaks_the_rules_is_left_out_naming_the_server_and_skill(
    tmp_path: Path, skills_folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = agent(tmp_path, skills_folder, [dispatch(GIT)], env=', SKILLS_BAD = "git-workflow"')
    with caplog.at_level(logging.WARNING, logger="greenroom"):
        rt, (called,) = await run(path)
    assert f"{PDF} - Extract, fill" in system_text(rt) and GIT not in system_text(rt)
    assert called.is_error and "Branch." not in called.content
    assert "MCP server 'docs' listed a skill greenroom leaves out: skill://git-workflow/SKILL.md: its digest" in (
        caplog.text
    )


async def test_a_start_that_lists_what_the_cache_holds_writes_no_cache(tmp_path: Path, skills_folder: Path) -> None:
    rt, _ = await run(agent(tmp_path, skills_folder, [dispatch(PDF)]))
    assert rt.mcp is not None
    cache = skills_cache_path(rt.mcp.servers["docs"])
    written = cache.stat().st_mtime_ns
    rt, (loaded,) = await run(agent(tmp_path, skills_folder, [dispatch(PDF)]))
    assert not loaded.is_error and rt.mcp is not None and rt.mcp.servers["docs"].starts == 1
    assert cache.stat().st_mtime_ns == written
