"""A stdio MCP server whose results are more than text, for the gateway's fidelity tests:
``python rich_server.py``.

``picture`` answers an image and a text; ``weather`` structured content; ``bundle`` a
resource link, an embedded text resource, an embedded blob and audio; ``broken`` an
error result; ``steps`` reports progress three times; ``crash`` ends the process
mid-call; ``slow`` writes ``started`` to the file ``RICH_MARK_FILE`` names, waits, and
writes ``cancelled`` there when cancelled. It
also offers one prompt, two resources (``rich://notes``, ``rich://logo``) and a resource
template (``rich://days/{day}``, read as ``LABEL: uri``); ``RICH_PREFIX`` and ``RICH_LABEL``
in the environment change the ``rich://`` and the label, to tell two servers apart.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA="
PREFIX = os.environ.get("RICH_PREFIX", "rich://")
LABEL = os.environ.get("RICH_LABEL", "rich")

OBJ: dict[str, Any] = {"type": "object", "properties": {}}
TOOLS = [
    t.Tool(name="picture", description="Draw a one-pixel picture of a sunset.", input_schema=OBJ),
    t.Tool(
        name="weather",
        description="Report the weather forecast of a city as structured data.",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        output_schema={"type": "object", "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}}},
    ),
    t.Tool(name="bundle", description="Hand over a bundle of attached files and recordings.", input_schema=OBJ),
    t.Tool(name="broken", description="Always fail with a reported error.", input_schema=OBJ),
    t.Tool(name="crash", description="Crash the whole server process.", input_schema=OBJ),
    t.Tool(name="slow", description="Take a very long time to answer.", input_schema=OBJ),
    t.Tool(name="steps", description="Work in three steps, reporting progress after each.", input_schema=OBJ),
]


async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
    return t.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult:
    args = params.arguments or {}
    if params.name == "picture":
        return t.CallToolResult(
            content=[
                t.ImageContent(type="image", data=PNG, mime_type="image/png"),
                t.TextContent(type="text", text="a sunset"),
            ]
        )
    if params.name == "weather":
        data = {"city": args.get("city", "?"), "celsius": 21.5}
        return t.CallToolResult(content=[t.TextContent(type="text", text="21.5 C")], structured_content=data)
    if params.name == "bundle":
        return t.CallToolResult(
            content=[
                t.ResourceLink(type="resource_link", uri=f"{PREFIX}notes", name="notes", mime_type="text/plain"),
                t.EmbeddedResource(
                    type="resource",
                    resource=t.TextResourceContents(uri=f"{PREFIX}inline", text="inline text", mime_type="text/plain"),
                ),
                t.EmbeddedResource(
                    type="resource",
                    resource=t.BlobResourceContents(uri=f"{PREFIX}blob", blob=PNG, mime_type="image/png"),
                ),
                t.AudioContent(type="audio", data=WAV, mime_type="audio/wav"),
            ]
        )
    if params.name == "steps":
        token = progress_token_from_params(ctx.params)
        for i in (1, 2, 3):
            if token is not None:
                await ctx.session.send_progress_notification(
                    token, i, 3, f"step {i}", related_request_id=ctx.request_id
                )
        return t.CallToolResult(content=[t.TextContent(type="text", text="three steps done")])
    if params.name == "crash":
        os._exit(7)
    if params.name == "slow":
        mark = Path(os.environ["RICH_MARK_FILE"])
        mark.write_text("started")
        try:
            await anyio.sleep(120)
        except anyio.get_cancelled_exc_class():
            mark.write_text("cancelled")
            raise
        return t.CallToolResult(content=[t.TextContent(type="text", text="done")])
    return t.CallToolResult(content=[t.TextContent(type="text", text="it broke")], is_error=True)


async def list_prompts(ctx: Any, params: Any) -> t.ListPromptsResult:
    arg = t.PromptArgument(name="topic", required=True)
    return t.ListPromptsResult(prompts=[t.Prompt(name="haiku", description="A haiku on a topic.", arguments=[arg])])


async def get_prompt(ctx: Any, params: t.GetPromptRequestParams) -> t.GetPromptResult:
    topic = (params.arguments or {}).get("topic", "nothing")
    text = t.TextContent(type="text", text=f"Write a haiku about {topic}.")
    return t.GetPromptResult(messages=[t.PromptMessage(role="user", content=text)])


async def list_resources(ctx: Any, params: Any) -> t.ListResourcesResult:
    return t.ListResourcesResult(
        resources=[
            t.Resource(uri=f"{PREFIX}notes", name="notes", mime_type="text/plain"),
            t.Resource(uri=f"{PREFIX}logo", name="logo", mime_type="image/png"),
        ]
    )


async def list_templates(ctx: Any, params: Any) -> t.ListResourceTemplatesResult:
    day = t.ResourceTemplate(uri_template=f"{PREFIX}days/{{day}}", name="day", mime_type="text/plain")
    return t.ListResourceTemplatesResult(resource_templates=[day])


async def read_resource(ctx: Any, params: t.ReadResourceRequestParams) -> t.ReadResourceResult:
    uri = str(params.uri)
    if uri.startswith(f"{PREFIX}days/"):
        return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, text=f"{LABEL}: {uri}")])
    if uri.endswith("logo"):
        return t.ReadResourceResult(contents=[t.BlobResourceContents(uri=uri, blob=PNG, mime_type="image/png")])
    return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, text="the notes", mime_type="text/plain")])


server = Server(
    "greenroom-test-rich",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_prompts=list_prompts,
    on_get_prompt=get_prompt,
    on_list_resources=list_resources,
    on_list_resource_templates=list_templates,
    on_read_resource=read_resource,
)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
