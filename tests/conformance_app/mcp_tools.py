"""The fixture tools, resources and prompts of the MCP conformance suite's server scenarios
(`@modelcontextprotocol/conformance`, both lines pinned in tests/conformance/package.json),
declared through HomeHub's own registries, with the names and behaviour each scenario asks
for.

The server-to-client fixtures (`test_sampling`, `test_elicitation`,
`test_elicitation_sep1034_defaults`, `test_elicitation_sep1330_enums`) ask the client
through `ToolContext.request_client`; `test_reconnection` closes its POST stream mid-call
so that its result arrives on a GET resumed with `Last-Event-ID`.

The 0.2 line's 2026-07-28 scenarios add diagnostic tools: `test_missing_capability`,
`test_streaming_elicitation`, `test_logging_tool` and `test_trigger_tool_change`
(`server-stateless`), and the multi-round-trip tools and prompt
`test_input_required_result_*` (SEP-2322, `input-required-result-*`), whose questions carry
the keys the scenarios name.

The tasks extension's scenarios (SEP-2663, `tasks-*`) name `greet`, `slow_compute`,
`failing_job`, `protocol_error_job`, `confirm_delete`, `multi_input` and `test_tool_with_task`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mcp_endpoint.engine.providers import (
    Prompt,
    PromptArgument,
    Resource,
    ResourceContents,
    ResourceNotFound,
    ResourceTemplate,
    resources,
)
from mcp_endpoint.engine.registry import registry, tool
from mcp_endpoint.engine.tool_errors import ToolError
from mcp_endpoint.engine.tools import ClientRequest, Tool, ToolContext, ToolResult

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
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"},
            },
            # SEP-2106's composition and conditional keywords (the 0.2 line checks them).
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": False,
        },
    )
)


# --- diagnostic tools of server-stateless (0.2 line, 2026-07-28) ---------------------------


@tool(scope="read", read_only=True)
async def test_missing_capability(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Needs sampling: a client that did not declare it gets -32021 (conformance diagnostic)."""
    answer = await ctx.request_client(
        "sampling/createMessage", {"messages": [{"role": "user", "content": _text("Hi")}], "maxTokens": 10}
    )
    return ToolResult(content=[_text(f"LLM response: {answer.get('content')}")])


@tool(scope="read", read_only=True)
async def test_streaming_elicitation(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Reports progress, then asks the user something (conformance diagnostic: a stateless
    response stream carries no request of its own, the question comes as input_required)."""
    await ctx.report_progress(0, 1)
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    answer = await ctx.request_client(
        "elicitation/create", {"message": "Anything?", "requestedSchema": schema}
    )
    return ToolResult(content=[_text(f"User response: {_elicitation_text(answer)}")])


@tool(scope="read", read_only=True)
async def test_logging_tool(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Logs at three levels (conformance diagnostic: no log reaches a client that set no level)."""
    for level in ("debug", "info", "warning"):
        await ctx.log(level, f"test_logging_tool at {level}")
    return ToolResult(content=[_text("Logged at debug, info and warning")])


class ComingAndGoing:
    """A tool provider whose one tool `test_dynamic_tool` comes and goes with each call of
    `test_trigger_tool_change`, so that the tool set really changes."""

    def __init__(self) -> None:
        self.present = False
        self.dynamic = Tool.from_function(test_simple_text, scope="read", name="test_dynamic_tool")

    def tools(self) -> list[Tool]:
        return [self.dynamic] if self.present else []

    def tool(self, name: str) -> Tool | None:
        return self.dynamic if self.present and name == self.dynamic.name else None


coming_and_going = ComingAndGoing()
registry.add_provider(coming_and_going)


@tool(scope="read")
def test_trigger_tool_change(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Adds or removes `test_dynamic_tool` (conformance diagnostic: listen streams hear
    `notifications/tools/list_changed`)."""
    coming_and_going.present = not coming_and_going.present
    registry.notify_changed()
    state = "added" if coming_and_going.present else "removed"
    return ToolResult(content=[_text(f"test_dynamic_tool {state}")])


# --- custom headers from tool parameters (SEP-2243, 0.2 line, 2026-07-28) ------------------


class Routed(BaseModel):
    region: str = Field(json_schema_extra={"x-mcp-header": "Region"})
    note: str = ""


@tool(scope="read", read_only=True)
def test_mcp_param_header(args: Routed, ctx: ToolContext) -> ToolResult:
    """Echoes its region, which clients mirror in an `Mcp-Param-Region` header (conformance
    fixture, SEP-2243: the hub checks the header against the argument)."""
    return ToolResult(content=[_text(f"Region: {args.region}")])


# --- multi-round-trip requests (SEP-2322, 0.2 line, 2026-07-28) ----------------------------


def _asking(message: str, field: str, kind: str = "string") -> dict[str, Any]:
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return {"message": message, "requestedSchema": schema}


def _sampling(text: str, max_tokens: int) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": _text(text)}], "maxTokens": max_tokens}


def _content(answer: dict[str, Any], field: str) -> Any:
    content = answer.get("content")
    return content.get(field) if isinstance(content, dict) else None


@tool(scope="read", read_only=True)
async def test_input_required_result_elicitation(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Asks the user's name, then greets them (conformance fixture, SEP-2322)."""
    answer = await ctx.request_client(
        "elicitation/create", _asking("What is your name?", "name"), key="user_name"
    )
    return ToolResult(content=[_text(f"Hello, {_content(answer, 'name')}!")])


@tool(scope="read", read_only=True)
async def test_input_required_result_sampling(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Asks the client's model a question (conformance fixture, SEP-2322)."""
    answer = await ctx.request_client(
        "sampling/createMessage", _sampling("What is the capital of France?", 100), key="capital_question"
    )
    return ToolResult(content=[_text(f"LLM response: {_content(answer, 'text')}")])


@tool(scope="read", read_only=True)
async def test_input_required_result_list_roots(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Asks the client's roots (conformance fixture, SEP-2322)."""
    answer = await ctx.request_client("roots/list", {}, key="client_roots")
    roots = answer.get("roots") if isinstance(answer.get("roots"), list) else []
    uris = ", ".join(str(root.get("uri")) for root in roots if isinstance(root, dict))
    return ToolResult(content=[_text(f"Client roots: {uris}")])


@tool(scope="read", read_only=True)
async def test_input_required_result_request_state(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Asks for a confirmation; the answer it finishes with came through the signed
    requestState round trip (conformance fixture, SEP-2322)."""
    answer = await ctx.request_client(
        "elicitation/create", _asking("Please confirm", "ok", "boolean"), key="confirm"
    )
    return ToolResult(content=[_text(f"state-ok: confirmed={_content(answer, 'ok')}")])


@tool(scope="read", read_only=True)
async def test_input_required_result_multiple_inputs(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Asks three things at once: a name, a greeting and the roots (conformance fixture, SEP-2322)."""
    name, greeting, roots = await ctx.request_client_all(
        ClientRequest("elicitation/create", _asking("What is your name?", "name"), "user_name"),
        ClientRequest("sampling/createMessage", _sampling("Generate a greeting", 50), "greeting"),
        ClientRequest("roots/list", {}, "client_roots"),
    )
    count = len(roots.get("roots") or [])
    return ToolResult(
        content=[_text(f"{_content(greeting, 'text')} {_content(name, 'name')} ({count} roots)")]
    )


@tool(scope="read", read_only=True)
async def test_input_required_result_multi_round(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Asks a name, then a colour: two rounds (conformance fixture, SEP-2322)."""
    name = await ctx.request_client(
        "elicitation/create", _asking("Step 1: What is your name?", "name"), key="step1"
    )
    color = await ctx.request_client(
        "elicitation/create", _asking("Step 2: What is your favorite color?", "color"), key="step2"
    )
    return ToolResult(content=[_text(f"{_content(name, 'name')} likes {_content(color, 'color')}")])


@tool(scope="read", read_only=True)
async def test_input_required_result_tampered_state(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Asks for a confirmation; a forged requestState is refused (conformance fixture, SEP-2322)."""
    answer = await ctx.request_client(
        "elicitation/create", _asking("Please confirm", "ok", "boolean"), key="confirm"
    )
    return ToolResult(content=[_text(f"confirmed={_content(answer, 'ok')}")])


@tool(scope="read", read_only=True)
async def test_input_required_result_capabilities(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Asks only what the client declared it can answer (conformance fixture, SEP-2322)."""
    asks = []
    if ctx.client_supports("sampling"):
        asks.append(ClientRequest("sampling/createMessage", _sampling("Say hi", 10), "greeting"))
    if ctx.client_supports("elicitation"):
        asks.append(ClientRequest("elicitation/create", _asking("What is your name?", "name"), "user_name"))
    answers = await ctx.request_client_all(*asks) if asks else []
    return ToolResult(content=[_text(f"{len(answers)} answers")])


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


async def _render_with_context(arguments: dict[str, str], ctx: ToolContext) -> list[dict[str, Any]]:
    answer = await ctx.request_client(
        "elicitation/create", _asking("What context should the prompt use?", "context"), key="user_context"
    )
    return [_user(_text(f"Use this context: {_content(answer, 'context')}"))]


resources.add_prompt(
    Prompt(
        name="test_input_required_result_prompt",
        description="A prompt that asks the user for context first (SEP-2322)",
        render_asking=_render_with_context,
    )
)
resources.add_prompt(
    Prompt(
        name="test_prompt_with_image",
        description="A prompt with an image",
        render=lambda args: [_user(_image()), _user(_text("Please analyze the image above."))],
    )
)


# --- the tasks extension (SEP-2663, 0.2 line's `tasks-*` extension scenarios) ---------------


class Greeting(BaseModel):
    name: str = "World"


class SlowCompute(BaseModel):
    seconds: float = Field(default=0, ge=0, le=120)
    label: str = ""


class FileName(BaseModel):
    filename: str = "file.txt"


@tool(scope="read", read_only=True)
def greet(args: Greeting, ctx: ToolContext) -> ToolResult:
    """Greets `name` (conformance fixture: a tool that never runs as a task)."""
    return ToolResult(content=[_text(f"Hello, {args.name}!")])


@tool(scope="read", read_only=True, task_support="optional")
async def slow_compute(args: SlowCompute, ctx: ToolContext) -> ToolResult:
    """Sleeps `seconds`, then answers (conformance fixture: a task; cancelled while it sleeps)."""
    await asyncio.sleep(args.seconds)
    return ToolResult(content=[_text(f"Computed {args.label or 'result'} after {args.seconds} s")])


@tool(scope="read", read_only=True, task_support="required")
async def failing_job(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Fails after a second as a tool fails (conformance fixture: a task only)."""
    await asyncio.sleep(1)
    raise ToolError("The job failed, as it always does")


@tool(scope="read", read_only=True, task_support="optional")
async def protocol_error_job(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Asks the client's roots, which the scenario's client does not declare: the request
    itself fails (-32021), not the tool (conformance fixture: a task that fails)."""
    await ctx.request_client("roots/list", {})
    return ToolResult(content=[_text("unreachable with a client without roots")])


@tool(scope="read", read_only=True, task_support="optional")
async def confirm_delete(args: FileName, ctx: ToolContext) -> ToolResult:
    """Asks the user to confirm deleting `filename`, then says what it did (conformance
    fixture: a task waiting on one question; nothing is deleted)."""
    answer = await ctx.request_client(
        "elicitation/create", _asking(f"Delete {args.filename}?", "confirm", "boolean"), key="confirm"
    )
    confirmed = answer.get("action") == "accept" and _content(answer, "confirm") is True
    return ToolResult(content=[_text(f"{'Deleted' if confirmed else 'Kept'} {args.filename}")])


@tool(scope="read", read_only=True, task_support="optional")
async def multi_input(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Asks two questions at once (conformance fixture: a task with two pending questions)."""
    first, second = await ctx.request_client_all(
        ClientRequest("elicitation/create", _asking("First answer?", "confirm", "boolean"), "first"),
        ClientRequest("elicitation/create", _asking("Second answer?", "confirm", "boolean"), "second"),
    )
    answers = f"first={_content(first, 'confirm')} second={_content(second, 'confirm')}"
    return ToolResult(content=[_text(answers)])


@tool(scope="read", read_only=True, task_support="required", hands_off=True)
async def test_tool_with_task(args: NoArguments, ctx: ToolContext) -> ToolResult:
    """Asks the user's name in the request, then goes on as a task that greets them
    (conformance fixture: multi-round-trip input, then a task)."""
    answer = await ctx.request_client(
        "elicitation/create", _asking("What is your name?", "name"), key="user_name"
    )
    await ctx.continue_as_task()
    await asyncio.sleep(0.1)
    return ToolResult(content=[_text(f"Hello, {_content(answer, 'name')}!")])
