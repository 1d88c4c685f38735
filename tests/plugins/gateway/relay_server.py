"""An upstream MCP server (the SDK's low-level ``Server``, stdio) with what the gateway
relays besides calls: a prompt and a resource template whose arguments it completes, a tool
that asks its caller for a name (``elicitation/create``), a tool that says a resource was
updated, resources to subscribe to, and a tool that answers once a file exists (a call in
progress while a client's stream drops). ``python relay_server.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

CITIES = ["Palermo", "Paris", "Porto", "Prague"]
NAME_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def _one(arg: str) -> dict[str, Any]:
    return {"type": "object", "properties": {arg: {"type": "string"}}, "required": [arg]}


TOOLS = [
    t.Tool(name="ask_name", description="Ask the person at the client for their name.", input_schema=_one("why")),
    t.Tool(name="touch", description="Say that a resource was updated.", input_schema=_one("uri")),
    t.Tool(name="when_file", description="Answer once a file exists.", input_schema=_one("path")),
]


def _text(text: str, error: bool = False) -> t.CallToolResult:
    return t.CallToolResult(content=[t.TextContent(type="text", text=text)], is_error=error)


async def call_tool(ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult:
    args = params.arguments or {}
    if params.name == "ask_name":
        answer = await ctx.session.elicit_form(str(args["why"]), NAME_SCHEMA, related_request_id=ctx.request_id)
        return _text(f"{answer.action}: {(answer.content or {}).get('name', '')}")
    if params.name == "touch":
        await ctx.session.send_resource_updated(str(args["uri"]))
        return _text("touched")
    if params.name == "when_file":
        path = Path(str(args["path"]))
        path.with_name(path.name + ".waiting").write_text("waiting")
        while not path.exists():  # the test makes it once the client's stream has dropped
            await anyio.sleep(0.02)
        return _text(f"found {path.name}")
    return _text(f"no tool {params.name!r}", error=True)


async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
    return t.ListToolsResult(tools=TOOLS)


RESOURCES = [
    t.Resource(uri="notes://a", name="a", description="Note a.", mime_type="text/plain"),
    t.Resource(uri="notes://b", name="b", description="Note b.", mime_type="text/plain"),
]


async def list_resources(ctx: Any, params: Any) -> t.ListResourcesResult:
    return t.ListResourcesResult(resources=RESOURCES)


async def list_templates(ctx: Any, params: Any) -> t.ListResourceTemplatesResult:
    weather = t.ResourceTemplate(uri_template="weather://{city}/today", name="weather", description="A city's weather.")
    return t.ListResourceTemplatesResult(resource_templates=[weather])


async def read_resource(ctx: Any, params: t.ReadResourceRequestParams) -> t.ReadResourceResult:
    uri = str(params.uri)
    return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, mime_type="text/plain", text=uri)])


async def subscription(ctx: Any, params: Any) -> t.EmptyResult:
    return t.EmptyResult()


async def list_prompts(ctx: Any, params: Any) -> t.ListPromptsResult:
    city = t.PromptArgument(name="city", description="Where to go.", required=True)
    return t.ListPromptsResult(prompts=[t.Prompt(name="trip", description="Plan a trip.", arguments=[city])])


async def get_prompt(ctx: Any, params: t.GetPromptRequestParams) -> t.GetPromptResult:
    city = (params.arguments or {}).get("city", "")
    return t.GetPromptResult(messages=[t.PromptMessage(role="user", content=t.TextContent(type="text", text=city))])


async def complete(ctx: Any, params: t.CompleteRequestParams) -> t.CompleteResult:
    """Cities for a prompt's ``city``; for the template's, the same, and whose ref it was."""
    prefix = params.argument.value
    values = [c for c in CITIES if c.startswith(prefix)]
    if isinstance(params.ref, t.ResourceTemplateReference):
        values = [f"{c} ({params.ref.uri})" for c in values]
    return t.CompleteResult(completion=t.Completion(values=values, total=len(values), has_more=False))


server = Server(
    "greenroom-relay-upstream",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_list_resource_templates=list_templates,
    on_read_resource=read_resource,
    on_subscribe_resource=subscription,
    on_unsubscribe_resource=subscription,
    on_list_prompts=list_prompts,
    on_get_prompt=get_prompt,
    on_completion=complete,
)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
