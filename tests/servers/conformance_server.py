"""The server the official conformance suite (server mode) expects: its tools, resources and prompts.

``@modelcontextprotocol/conformance`` 0.1.16 ``server --url ...`` drives a server through 32
scenarios, each naming the tools (``test_simple_text``, ``test_sampling`` ...), resources
(``test://static-text`` ...) and prompts it calls. This server implements all of them on the
SDK's low-level ``Server``, served as today's SDK serves any server: both eras, ``initialize``
(2025-06-18 / 2025-11-25, the era the scenarios test) and ``server/discover`` (2026-07-28). Its
tools ask over the back-channel (``elicit_form``, ``create_message``), as most servers do, which
only the handshake era carries: a client must choose it for them to work.

- ``build_app()``: the streamable HTTP app at ``/mcp`` (DNS-rebinding protection on, SSE
  events kept for resumption, a retry interval in the priming events).
- ``python -m tests.servers.conformance_server``: the same server over stdio; with ``--http``
  over streamable HTTP on a free port of 127.0.0.1, whose URL it prints first.
"""

from __future__ import annotations

import base64
import json
import socket
import sys
import warnings
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp import MCPError
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.runner import serve_dual_era_loop
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Route

from mcpdeck.gateway import MemoryEventStore

__all__ = ["AUDIO", "PNG", "build_app", "build_server"]

Ctx = ServerRequestContext[Any]

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
"""A 1x1 red pixel."""
AUDIO = base64.b64encode(
    b"RIFF"
    + (36 + 2).to_bytes(4, "little")
    + b"WAVEfmt "
    + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (1).to_bytes(2, "little")
    + (8000).to_bytes(4, "little")
    + (16000).to_bytes(4, "little")
    + (2).to_bytes(2, "little")
    + (16).to_bytes(2, "little")
    + b"data"
    + (2).to_bytes(4, "little")
    + b"\x00\x00"
).decode()
"""One silent 16-bit sample of 8 kHz mono WAV."""

_LEVELS: list[types.LoggingLevel] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
_NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}


def _tool(name: str, description: str, schema: dict[str, Any] | None = None) -> types.Tool:
    return types.Tool.model_validate({"name": name, "description": description, "inputSchema": schema or _NO_ARGS})


def _string_args(*names: str) -> dict[str, Any]:
    return {"type": "object", "properties": {n: {"type": "string"} for n in names}, "required": list(names)}


TOOLS = [
    _tool("test_simple_text", "Returns a simple text response."),
    _tool("test_image_content", "Returns an image."),
    _tool("test_audio_content", "Returns audio."),
    _tool("test_embedded_resource", "Returns an embedded resource."),
    _tool("test_multiple_content_types", "Returns text, an image and a resource."),
    _tool("test_tool_with_logging", "Sends three log messages while it runs."),
    _tool("test_error_handling", "Always fails."),
    _tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100."),
    _tool("test_sampling", "Asks the client's model.", _string_args("prompt")),
    _tool("test_elicitation", "Asks the user for a username and email.", _string_args("message")),
    _tool("test_elicitation_sep1034_defaults", "Asks the user a form whose fields all have defaults."),
    _tool("test_elicitation_sep1330_enums", "Asks the user a form with every kind of enum."),
    _tool("test_reconnection", "Closes its SSE stream before it answers, so the client must resume."),
    _tool(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    ),
]

RESOURCES = [
    types.Resource(uri="test://static-text", name="static-text", description="A text resource", mime_type="text/plain"),
    types.Resource(uri="test://static-binary", name="static-binary", description="A PNG", mime_type="image/png"),
    types.Resource(
        uri="test://watched-resource",
        name="watched-resource",
        description="Can be subscribed to",
        mime_type="text/plain",
    ),
]
TEMPLATE = types.ResourceTemplate(
    uri_template="test://template/{id}/data", name="template", description="Data by id", mime_type="application/json"
)

PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="A prompt without arguments"),
    types.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with two arguments",
        arguments=[
            types.PromptArgument(name="arg1", description="First test argument", required=True),
            types.PromptArgument(name="arg2", description="Second test argument", required=True),
        ],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt that embeds a resource",
        arguments=[types.PromptArgument(name="resourceUri", description="The URI to embed", required=True)],
    ),
    types.Prompt(name="test_prompt_with_image", description="A prompt with an image"),
]

_SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
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
    "required": [],
}
_SEP1330_SCHEMA: dict[str, Any] = {
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
    "required": [],
}


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _image() -> types.ImageContent:
    return types.ImageContent(type="image", data=PNG, mime_type="image/png")


def _result(*content: types.ContentBlock, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), is_error=error)


class _State:
    """What one server instance remembers: the log level and the subscriptions."""

    def __init__(self) -> None:
        self.level: types.LoggingLevel = "debug"
        self.subscribed: set[str] = set()


async def _log(ctx: Ctx, state: _State, text: str) -> None:
    if _LEVELS.index("info") >= _LEVELS.index(state.level):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # logging is deprecated as of 2026-07-28; these scenarios are older
            await ctx.session.send_log_message(  # pyright: ignore[reportDeprecated]
                "info", text, "conformance", related_request_id=ctx.request_id
            )


async def _elicit(ctx: Ctx, message: str, schema: dict[str, Any]) -> types.CallToolResult:
    answer = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)  # pyright: ignore[reportArgumentType]
    return _result(_text(f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"))


async def _call_tool(ctx: Ctx, params: types.CallToolRequestParams, state: _State) -> types.CallToolResult:
    args = params.arguments or {}
    match params.name:
        case "test_simple_text":
            return _result(_text("This is a simple text response for testing."))
        case "test_image_content":
            return _result(_image())
        case "test_audio_content":
            return _result(types.AudioContent(type="audio", data=AUDIO, mime_type="audio/wav"))
        case "test_embedded_resource":
            resource = types.TextResourceContents(
                uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
            )
            return _result(types.EmbeddedResource(type="resource", resource=resource))
        case "test_multiple_content_types":
            resource = types.TextResourceContents(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text=json.dumps({"test": "data", "value": 123}),
            )
            return _result(
                _text("Multiple content types test:"),
                _image(),
                types.EmbeddedResource(type="resource", resource=resource),
            )
        case "test_tool_with_logging":
            await _log(ctx, state, "Tool execution started")
            await anyio.sleep(0.05)
            await _log(ctx, state, "Tool processing data")
            await anyio.sleep(0.05)
            await _log(ctx, state, "Tool execution completed")
            return _result(_text("Tool with logging executed successfully"))
        case "test_error_handling":
            return _result(_text("This tool intentionally returns an error for testing"), error=True)
        case "test_tool_with_progress":
            token = params.meta.get("progress_token") if params.meta else None  # without one, no progress
            for step, value in enumerate((0.0, 50.0, 100.0)):
                if step:
                    await anyio.sleep(0.05)
                if token is not None:
                    await ctx.session.report_progress(value, 100.0)
            return _result(_text("Tool with progress executed successfully"))
        case "test_sampling":
            message = types.SamplingMessage(role="user", content=_text(str(args.get("prompt", ""))))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # sampling is deprecated as of 2026-07-28
                answer = await ctx.session.create_message(  # pyright: ignore[reportDeprecated]
                    [message], max_tokens=100, related_request_id=ctx.request_id
                )
            content = answer.content
            text = (
                content.text if isinstance(content, types.TextContent) else json.dumps(answer.model_dump(mode="json"))
            )
            return _result(_text(f"LLM response: {text}"))
        case "test_elicitation":
            schema = {
                "type": "object",
                "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"},
                },
                "required": ["username", "email"],
            }
            answer = await ctx.session.elicit_form(
                str(args.get("message", "")), schema, related_request_id=ctx.request_id
            )  # pyright: ignore[reportArgumentType]
            return _result(_text(f"User response: action={answer.action}, content={json.dumps(answer.content)}"))
        case "test_elicitation_sep1034_defaults":
            return await _elicit(
                ctx, "Test client default value handling - please accept with defaults", _SEP1034_SCHEMA
            )
        case "test_elicitation_sep1330_enums":
            return await _elicit(ctx, "Test enum schema variants - please choose", _SEP1330_SCHEMA)
        case "test_reconnection":
            if ctx.close_sse_stream is not None:
                await ctx.close_sse_stream()
            await anyio.sleep(0.2)
            return _result(_text("Reconnection test completed successfully"))
        case "json_schema_2020_12_tool":
            return _result(_text(f"Received: {json.dumps(args)}"))
        case _:
            raise MCPError(code=-32602, message=f"Unknown tool: {params.name}")


async def _read(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    contents: types.TextResourceContents | types.BlobResourceContents
    if uri == "test://static-text":
        contents = types.TextResourceContents(
            uri=uri, mime_type="text/plain", text="This is the content of the static text resource."
        )
    elif uri == "test://static-binary":
        contents = types.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG)
    elif uri == "test://watched-resource":
        contents = types.TextResourceContents(uri=uri, mime_type="text/plain", text="Watched resource content.")
    elif uri.startswith("test://template/") and uri.endswith("/data"):
        item = uri.removeprefix("test://template/").removesuffix("/data")
        data = {"id": item, "templateTest": True, "data": f"Data for ID: {item}"}
        contents = types.TextResourceContents(uri=uri, mime_type="application/json", text=json.dumps(data))
    else:
        raise MCPError(code=-32002, message=f"Resource not found: {uri}", data={"uri": uri})
    return types.ReadResourceResult(contents=[contents])


async def _get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    args = params.arguments or {}
    user = "user"
    match params.name:
        case "test_simple_prompt":
            messages = [types.PromptMessage(role=user, content=_text("This is a simple prompt for testing."))]
        case "test_prompt_with_arguments":
            text = f"Prompt with arguments: arg1='{args.get('arg1', '')}', arg2='{args.get('arg2', '')}'"
            messages = [types.PromptMessage(role=user, content=_text(text))]
        case "test_prompt_with_embedded_resource":
            resource = types.TextResourceContents(
                uri=args.get("resourceUri", "test://example-resource"),
                mime_type="text/plain",
                text="Embedded resource content for testing.",
            )
            messages = [
                types.PromptMessage(role=user, content=types.EmbeddedResource(type="resource", resource=resource)),
                types.PromptMessage(role=user, content=_text("Please process the embedded resource above.")),
            ]
        case "test_prompt_with_image":
            messages = [
                types.PromptMessage(role=user, content=_image()),
                types.PromptMessage(role=user, content=_text("Please analyze the image above.")),
            ]
        case _:
            raise MCPError(code=-32602, message=f"Unknown prompt: {params.name}")
    return types.GetPromptResult(messages=messages)


class _ConformanceServer(Server[Any]):
    """Announces list changes, as the scenarios' servers do."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        every = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
        return super().create_initialization_options(
            notification_options or every, experimental_capabilities, extensions
        )


def build_server() -> Server[Any]:
    """A fresh server (an HTTP app can run only once)."""
    state = _State()

    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await _call_tool(ctx, params, state)

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=RESOURCES)

    async def list_templates(
        ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[TEMPLATE])

    async def subscribe(ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        state.subscribed.add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        state.subscribed.discard(str(params.uri))
        return types.EmptyResult()

    async def list_prompts(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=PROMPTS)

    async def complete(ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        words = ["paris", "park", "party", "test", "testing"]
        values = [w for w in words if w.startswith(params.argument.value)]
        return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))

    async def set_level(ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        state.level = params.level
        return types.EmptyResult()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # on_set_logging_level is deprecated as of 2026-07-28
        server = _ConformanceServer(  # pyright: ignore[reportDeprecated]
            "conformance-test-server",
            version="1.0.0",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=_read,
            on_subscribe_resource=subscribe,
            on_unsubscribe_resource=unsubscribe,
            on_list_prompts=list_prompts,
            on_get_prompt=_get_prompt,
            on_completion=complete,
            on_set_logging_level=set_level,
        )
    return server


LOCAL = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"],
    allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
)


def build_app() -> Starlette:
    """The server over streamable HTTP at ``/mcp``, for loopback clients only."""
    manager = StreamableHTTPSessionManager(
        build_server(), event_store=MemoryEventStore(), retry_interval=100, security_settings=LOCAL
    )
    return Starlette(routes=[Route("/mcp", StreamableHTTPASGIApp(manager))], lifespan=lambda _app: manager.run())


async def _serve_http() -> None:
    """Listen on a free port of 127.0.0.1 and print the endpoint's URL as the first line of stdout."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # As uvicorn's own sockets are: an answer's small writes go at once (without it, a client that
    # keeps its connection waits ~40 ms for each answer's second write, the delayed ACK).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"http://localhost:{sock.getsockname()[1]}/mcp", flush=True)
    config = uvicorn.Config(build_app(), log_level="warning", access_log=False)
    await uvicorn.Server(config).serve([sock])


async def _main() -> None:
    if "--http" in sys.argv[1:]:
        await _serve_http()
        return
    server = build_server()
    async with stdio_server() as (read_stream, write_stream), server.lifespan(server) as state:
        await serve_dual_era_loop(
            server, read_stream, write_stream, lifespan_state=state, init_options=server.create_initialization_options()
        )


if __name__ == "__main__":
    anyio.run(_main)
