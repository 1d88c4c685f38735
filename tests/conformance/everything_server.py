"""The upstream server behind ``greenroom serve`` in the conformance tests: a stdio MCP
server (the SDK's low-level ``Server``) that offers what the conformance suite's server
scenarios ask of a server, under the names they ask for (``test_simple_text``,
``test://static-text``, ``test_simple_prompt`` ...), so that what the suite checks through
the gateway is what the gateway passes on. ``python everything_server.py``.

It is written from the scenario descriptions of ``@modelcontextprotocol/conformance``
(``conformance list``; each scenario's requirements are in its description).
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import anyio
import mcp_types as t
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params

# a red pixel, and a WAV file with no samples: the smallest of each that is still valid
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA="

NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}


def _tool(name: str, description: str, schema: dict[str, Any] | None = None) -> t.Tool:
    return t.Tool(name=name, description=description, input_schema=schema or NO_ARGS)


def _one_string(arg: str, description: str) -> dict[str, Any]:
    return {"type": "object", "properties": {arg: {"type": "string", "description": description}}, "required": [arg]}


SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}

TOOLS = [
    _tool("test_simple_text", "Answer a line of text."),
    _tool("test_image_content", "Answer a one-pixel PNG image."),
    _tool("test_audio_content", "Answer a short WAV recording."),
    _tool("test_embedded_resource", "Answer an embedded text resource."),
    _tool("test_multiple_content_types", "Answer text, an image and an embedded resource at once."),
    _tool("test_tool_with_logging", "Log three messages while it runs."),
    _tool("test_tool_with_progress", "Report progress three times while it runs."),
    _tool("test_error_handling", "Always fail, with an error result."),
    _tool("test_sampling", "Ask the client's model to answer a prompt.", _one_string("prompt", "The prompt.")),
    _tool("test_elicitation", "Ask the user for a name and an email.", _one_string("message", "What to ask.")),
    _tool("test_elicitation_sep1034_defaults", "Ask the user for values that all have defaults."),
    _tool("test_elicitation_sep1330_enums", "Ask the user to choose from five kinds of enum."),
    _tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", SCHEMA_2020_12),
    _tool("test_reconnection", "Answer after a moment (a client's stream to the gateway may drop meanwhile)."),
]


def _text(text: str) -> t.TextContent:
    return t.TextContent(type="text", text=text)


def _answer(*content: Any, error: bool = False) -> t.CallToolResult:
    return t.CallToolResult(content=list(content), is_error=error)


SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "description": "Verified", "default": True},
    },
}

SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


async def _elicit(ctx: Any, message: str, schema: dict[str, Any]) -> t.CallToolResult:
    answer = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    return _answer(_text(f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"))


async def _steps(ctx: Any) -> None:
    """Progress at 0, 50 and 100 of 100, about 50 ms apart (when the caller asked for it)."""
    token = progress_token_from_params(ctx.params)
    for done in (0, 50, 100):
        if token is not None:
            await ctx.session.send_progress_notification(token, done, 100, related_request_id=ctx.request_id)
        if done < 100:
            await anyio.sleep(0.05)


async def _log(ctx: Any) -> None:
    for i, line in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
        if i:
            await anyio.sleep(0.05)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # logging is deprecated in 2026-07-28; the scenario is 2025-11-25
            await ctx.session.send_log_message("info", line, related_request_id=ctx.request_id)


async def call_tool(ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult:
    args = params.arguments or {}
    name = params.name
    image = t.ImageContent(type="image", data=PNG, mime_type="image/png")
    if name == "test_simple_text":
        return _answer(_text("This is a simple text response for testing."))
    if name == "test_image_content":
        return _answer(image)
    if name == "test_audio_content":
        return _answer(t.AudioContent(type="audio", data=WAV, mime_type="audio/wav"))
    if name == "test_embedded_resource":
        inner = t.TextResourceContents(
            uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
        )
        return _answer(t.EmbeddedResource(type="resource", resource=inner))
    if name == "test_multiple_content_types":
        inner = t.TextResourceContents(
            uri="test://mixed-content-resource", mime_type="application/json", text='{"test":"data","value":123}'
        )
        embedded = t.EmbeddedResource(type="resource", resource=inner)
        return _answer(_text("Multiple content types test:"), image, embedded)
    if name == "test_tool_with_logging":
        await _log(ctx)
        return _answer(_text("Logged three messages."))
    if name == "test_tool_with_progress":
        await _steps(ctx)
        return _answer(_text("Done, in three steps."))
    if name == "test_sampling":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # sampling is deprecated in 2026-07-28; the scenario is 2025-11-25
            reply = await ctx.session.create_message(
                [t.SamplingMessage(role="user", content=_text(str(args.get("prompt", ""))))],
                max_tokens=100,
                related_request_id=ctx.request_id,
            )
        said = reply.content.text if isinstance(reply.content, t.TextContent) else str(reply.content)
        return _answer(_text(f"LLM response: {said}"))
    if name == "test_elicitation":
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        return await _elicit(ctx, str(args.get("message", "")), schema)
    if name == "test_elicitation_sep1034_defaults":
        return await _elicit(ctx, "Accept the defaults, or change them.", SEP1034_SCHEMA)
    if name == "test_elicitation_sep1330_enums":
        return await _elicit(ctx, "Choose from each list.", SEP1330_SCHEMA)
    if name == "test_reconnection":  # closing the client's stream is the gateway's part, not this server's
        await anyio.sleep(0.1)
        return _answer(_text("Reconnection test completed successfully"))
    if name == "json_schema_2020_12_tool":
        return _answer(_text(f"Hello {args.get('name', 'nobody')}."))
    return _answer(_text("This tool intentionally returns an error for testing"), error=True)


async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
    return t.ListToolsResult(tools=TOOLS)


RESOURCES = [
    t.Resource(
        uri="test://static-text", name="static-text", description="A static text resource.", mime_type="text/plain"
    ),
    t.Resource(
        uri="test://static-binary", name="static-binary", description="A static PNG image.", mime_type="image/png"
    ),
    t.Resource(
        uri="test://watched-resource", name="watched-resource", description="A resource to subscribe to.",
        mime_type="text/plain",
    ),
]  # fmt: skip


async def list_resources(ctx: Any, params: Any) -> t.ListResourcesResult:
    return t.ListResourcesResult(resources=RESOURCES)


async def list_templates(ctx: Any, params: Any) -> t.ListResourceTemplatesResult:
    data = t.ResourceTemplate(
        uri_template="test://template/{id}/data",
        name="template-data",
        description="Data for an id.",
        mime_type="application/json",
    )
    return t.ListResourceTemplatesResult(resource_templates=[data])


async def read_resource(ctx: Any, params: t.ReadResourceRequestParams) -> t.ReadResourceResult:
    uri = str(params.uri)
    if uri == "test://static-binary":
        return t.ReadResourceResult(contents=[t.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG)])
    if uri.startswith("test://template/") and uri.endswith("/data"):
        ident = uri[len("test://template/") : -len("/data")]
        text = json.dumps({"id": ident, "templateTest": True, "data": f"Data for ID: {ident}"}, separators=(",", ":"))
        return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, mime_type="application/json", text=text)])
    if uri == "test://static-text":
        text = "This is the content of the static text resource."
        return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, mime_type="text/plain", text=text)])
    return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, mime_type="text/plain", text="watched")])


async def subscribe(ctx: Any, params: Any) -> t.EmptyResult:
    return t.EmptyResult()


PROMPTS = [
    t.Prompt(name="test_simple_prompt", description="A simple prompt without arguments."),
    t.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with two arguments.",
        arguments=[
            t.PromptArgument(name="arg1", description="First argument", required=True),
            t.PromptArgument(name="arg2", description="Second argument", required=True),
        ],
    ),
    t.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt that embeds a resource.",
        arguments=[t.PromptArgument(name="resourceUri", description="The resource to embed", required=True)],
    ),
    t.Prompt(name="test_prompt_with_image", description="A prompt with an image."),
]


def _user(content: Any) -> t.PromptMessage:
    return t.PromptMessage(role="user", content=content)


async def list_prompts(ctx: Any, params: Any) -> t.ListPromptsResult:
    return t.ListPromptsResult(prompts=PROMPTS)


async def get_prompt(ctx: Any, params: t.GetPromptRequestParams) -> t.GetPromptResult:
    args = params.arguments or {}
    if params.name == "test_prompt_with_arguments":
        said = f"Prompt with arguments: arg1='{args.get('arg1', '')}', arg2='{args.get('arg2', '')}'"
        return t.GetPromptResult(messages=[_user(_text(said))])
    if params.name == "test_prompt_with_embedded_resource":
        uri = args.get("resourceUri", "test://example-resource")
        inner = t.TextResourceContents(uri=uri, mime_type="text/plain", text="Embedded resource content for testing.")
        embedded = t.EmbeddedResource(type="resource", resource=inner)
        ask = _text("Please process the embedded resource above.")
        return t.GetPromptResult(messages=[_user(embedded), _user(ask)])
    if params.name == "test_prompt_with_image":
        image = t.ImageContent(type="image", data=PNG, mime_type="image/png")
        return t.GetPromptResult(messages=[_user(image), _user(_text("Please analyze the image above."))])
    return t.GetPromptResult(messages=[_user(_text("This is a simple prompt for testing."))])


async def complete(ctx: Any, params: t.CompleteRequestParams) -> t.CompleteResult:
    words = ["paris", "park", "party"]
    values = [w for w in words if w.startswith(params.argument.value)] or words
    return t.CompleteResult(completion=t.Completion(values=values, total=len(values), has_more=False))


async def set_level(ctx: Any, params: Any) -> t.EmptyResult:
    return t.EmptyResult()


server = Server(
    "greenroom-conformance-upstream",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_list_resource_templates=list_templates,
    on_read_resource=read_resource,
    on_subscribe_resource=subscribe,
    on_unsubscribe_resource=subscribe,
    on_list_prompts=list_prompts,
    on_get_prompt=get_prompt,
    on_completion=complete,
    on_set_logging_level=set_level,
)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
