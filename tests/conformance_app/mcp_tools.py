"""The fixture tools, resources and prompts of the MCP conformance suite's server scenarios
(`@modelcontextprotocol/conformance`, pinned in tests/conformance/package.json), declared
through HomeHub's own registries, with the names and behaviour each scenario asks for.

The server-to-client fixtures (`test_sampling`, `test_elicitation`,
`test_elicitation_sep1034_defaults`, `test_elicitation_sep1330_enums`) ask the client
through `ToolContext.request_client`; `test_reconnection` closes its POST stream mid-call
so that its result arrives on a GET resumed with `Last-Event-ID`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from mcp_endpoint.registry import Tool, ToolContext, ToolError, ToolResult, registry, tool
from mcp_endpoint.resources import (
    Prompt,
    PromptArgument,
    Resource,
    ResourceContents,
    ResourceNotFound,
    ResourceTemplate,
    resources,
)

# A 1x1 red PNG and a tiny silent WAV.
PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
WAV_BASE64 = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA=="


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _image() -> dict[str, Any]:
    return {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"}


# --- tools -------------------------------------------------------------------------------


@tool(scope="read", read_only=True)
def test_simple_text(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Returns a simple text response (conformance fixture)."""
    return ToolResult(content=[_text("This is a simple text response for testing.")])


@tool(scope="read", read_only=True)
def test_image_content(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Returns a 1x1 PNG image (conformance fixture)."""
    return ToolResult(content=[_image()])


@tool(scope="read", read_only=True)
def test_audio_content(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Returns a short WAV clip (conformance fixture)."""
    return ToolResult(content=[{"type": "audio", "data": WAV_BASE64, "mimeType": "audio/wav"}])


@tool(scope="read", read_only=True)
def test_embedded_resource(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Returns an embedded text resource (conformance fixture)."""
    resource = {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    }
    return ToolResult(content=[{"type": "resource", "resource": resource}])


@tool(scope="read", read_only=True)
def test_multiple_content_types(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Returns text, an image and an embedded resource (conformance fixture)."""
    resource = {
        "uri": "test://mixed-content-resource",
        "mimeType": "application/json",
        "text": json.dumps({"test": "data", "value": 123}),
    }
    return ToolResult(
        content=[_text("Multiple content types test:"), _image(), {"type": "resource", "resource": resource}]
    )


@tool(scope="read", read_only=True)
async def test_tool_with_logging(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Sends three info log messages while it runs (conformance fixture)."""
    await ctx.log("info", "Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.log("info", "Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.log("info", "Tool execution completed")
    return ToolResult(content=[_text("Tool with logging executed successfully")])


@tool(scope="read", read_only=True)
async def test_tool_with_progress(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Reports progress 0, 50 and 100 of 100 (conformance fixture)."""
    for step, progress in enumerate((0, 50, 100)):
        if step:
            await asyncio.sleep(0.05)
        await ctx.report_progress(progress, 100)
    return ToolResult(content=[_text("Tool with progress executed successfully")])


@tool(scope="read", read_only=True)
def test_error_handling(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Always fails (conformance fixture)."""
    raise ToolError("This tool intentionally returns an error for testing")


class Prompted(BaseModel):
    prompt: str


@tool(scope="read", read_only=True)
async def test_sampling(args: Prompted, ctx: ToolContext) -> ToolResult:
    """Asks the client's LLM to answer the prompt (conformance fixture)."""
    answer = await ctx.request_client(
        "sampling/createMessage",
        {"messages": [{"role": "user", "content": _text(args.prompt)}], "maxTokens": 100},
    )
    content = answer.get("content")
    text = content.get("text") if isinstance(content, dict) else None
    return ToolResult(content=[_text(f"LLM response: {text}")])


class Message(BaseModel):
    message: str


def _elicitation_text(answer: dict[str, Any]) -> str:
    return f"action={answer.get('action')}, content={json.dumps(answer.get('content'))}"


@tool(scope="read", read_only=True)
async def test_elicitation(args: Message, ctx: ToolContext) -> ToolResult:
    """Asks the user for a username and an email (conformance fixture)."""
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    answer = await ctx.request_client(
        "elicitation/create", {"message": args.message, "requestedSchema": schema}
    )
    return ToolResult(content=[_text(f"User response: {_elicitation_text(answer)}")])


async def _elicit(ctx: ToolContext, message: str, properties: dict[str, Any]) -> ToolResult:
    schema = {"type": "object", "properties": properties, "required": []}
    answer = await ctx.request_client("elicitation/create", {"message": message, "requestedSchema": schema})
    return ToolResult(content=[_text(f"Elicitation completed: {_elicitation_text(answer)}")])


@tool(scope="read", read_only=True)
async def test_elicitation_sep1034_defaults(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Elicitation whose fields all carry defaults (conformance fixture, SEP-1034)."""
    return await _elicit(
        ctx,
        "Test client default value handling - please accept with defaults",
        {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
    )


def _titled(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in pairs]


@tool(scope="read", read_only=True)
async def test_elicitation_sep1330_enums(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Elicitation with the five enum forms (conformance fixture, SEP-1330)."""
    options = ["option1", "option2", "option3"]
    return await _elicit(
        ctx,
        "Pick from each list",
        {
            "untitledSingle": {"type": "string", "enum": options},
            "titledSingle": {
                "type": "string",
                "oneOf": _titled(
                    ("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")
                ),
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": _titled(
                        ("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice")
                    )
                },
            },
        },
    )


@tool(scope="read", read_only=True)
async def test_reconnection(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Closes its response stream mid-call, then answers (conformance fixture, SEP-1699)."""
    await asyncio.sleep(0.05)
    await ctx.close_stream()
    await asyncio.sleep(0.2)
    return ToolResult(content=[_text("Reconnection test completed successfully")])


class AnyObject(BaseModel):
    model_config = ConfigDict(extra="allow")


def json_schema_2020_12_tool(args: AnyObject, ctx: ToolContext) -> ToolResult:
    return ToolResult(content=[_text("JSON Schema 2020-12 tool called")])


# Declared with a hand-written schema: the suite checks that `$schema`, `$defs` and
# `additionalProperties` reach the client untouched.
registry.register(
    Tool(
        name="json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features",
        scope="read",
        input_model=AnyObject,
        output_model=None,
        handler=json_schema_2020_12_tool,
        input_schema={
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    )
)


# --- resources -----------------------------------------------------------------------------

STATIC_TEXT = "test://static-text"
STATIC_BINARY = "test://static-binary"
WATCHED = "test://watched-resource"
TEMPLATE_RE = re.compile(r"^test://template/([^/]+)/data$")


class ConformanceResources:
    scope = "read"
    change_group = "conformance"
    change_type = "conformance.change"

    def list_resources(self) -> list[Resource]:
        return [
            Resource(STATIC_TEXT, "static-text", "A static text resource", "text/plain"),
            Resource(STATIC_BINARY, "static-binary", "A static binary resource (a PNG)", "image/png"),
            Resource(WATCHED, "watched-resource", "A resource clients may subscribe to", "text/plain"),
        ]

    def templates(self) -> list[ResourceTemplate]:
        return [ResourceTemplate("test://template/{id}/data", "template", "Data for an id")]

    def handles(self, uri: str) -> bool:
        return uri.startswith("test://")

    def read(self, uri: str) -> str | ResourceContents:
        if uri == STATIC_TEXT:
            return ResourceContents("text/plain", text="This is the content of the static text resource.")
        if uri == STATIC_BINARY:
            return ResourceContents("image/png", blob=base64.b64decode(PNG_BASE64))
        if uri == WATCHED:
            return ResourceContents("text/plain", text="Watched resource content")
        match = TEMPLATE_RE.match(uri)
        if match:
            item = match.group(1)
            return json.dumps({"id": item, "templateTest": True, "data": f"Data for ID: {item}"})
        raise ResourceNotFound(uri)

    def uris_for_event(self, event: dict[str, Any]) -> list[str]:
        return [WATCHED] if event.get("kind") == "conformance" else []


resources.add_provider(ConformanceResources())


# --- prompts --------------------------------------------------------------------------------


def _user(content: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": content}


resources.add_prompt(
    Prompt(
        name="test_simple_prompt",
        description="A simple prompt without arguments",
        render=lambda args: [_user(_text("This is a simple prompt for testing."))],
    )
)
resources.add_prompt(
    Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with two required arguments",
        render=lambda args: [
            _user(_text(f"Prompt with arguments: arg1='{args['arg1']}', arg2='{args['arg2']}'"))
        ],
        arguments=[
            PromptArgument("arg1", "First test argument", required=True, values=("paris", "park", "party")),
            PromptArgument("arg2", "Second test argument", required=True),
        ],
    )
)
resources.add_prompt(
    Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt that embeds a resource",
        render=lambda args: [
            _user(
                {
                    "type": "resource",
                    "resource": {
                        "uri": args["resourceUri"],
                        "mimeType": "text/plain",
                        "text": "Embedded resource content for testing.",
                    },
                }
            ),
            _user(_text("Please process the embedded resource above.")),
        ],
        arguments=[PromptArgument("resourceUri", "URI of the resource to embed", required=True)],
    )
)
resources.add_prompt(
    Prompt(
        name="test_prompt_with_image",
        description="A prompt with an image",
        render=lambda args: [_user(_image()), _user(_text("Please analyze the image above."))],
    )
)
