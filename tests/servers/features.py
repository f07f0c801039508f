"""The features test server: resources, prompts, completions, and tools that ask things of the client.

Run over stdio with ``python -m tests.servers.features``, or in-process / over HTTP through
``build_server()`` (a fresh server each time: an HTTP app can only run once).
``python -m tests.servers.features --legacy`` serves only the ``initialize`` handshake era,
where change notifications and resource updates travel as notifications and resources
are subscribed to with ``resources/subscribe``.

Its lists (resources, templates, prompts) come in pages of ``PAGE_SIZE``, so a client has
to follow cursors to see them all.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.elicitation import render_elicitation_schema
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import UrlElicitationRequiredError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

_R = TypeVar("_R", bound=BaseModel)

__all__ = [
    "LANGUAGES",
    "LOGO",
    "PAGE_SIZE",
    "PROMPTS",
    "RESOURCES",
    "STUCK",
    "TEMPLATE",
    "Preferences",
    "build_server",
    "run_legacy_stdio",
]

PAGE_SIZE = 2
RESOURCES = ["features://info", "features://logo", "note://first", "note://second", "note://third"]
"""The static resources, in the order they are listed."""
TEMPLATE = "note://{id}"
STUCK = "note://stuck"
"""A resource whose ``resources/unsubscribe`` is never answered (the server hangs on it)."""
PROMPTS = ["review", "greet", "plain"]
"""The prompts at start, in the order they are listed."""
LANGUAGES = ["python", "pascal", "perl", "rust"]
LOGO = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
"""A 1x1 PNG, the blob resource ``features://logo``."""


class Preferences(BaseModel):
    """What ``ask`` asks the user: a name (required) and three fields with defaults."""

    name: str = Field(description="Your name")
    colour: str = Field(default="blue", description="Favourite colour")
    count: int = Field(default=3, description="How many")
    loud: bool = Field(default=False, description="Shout?")


def _page(items: list[Any], params: types.PaginatedRequestParams | None) -> tuple[list[Any], str | None]:
    start = int(params.cursor) if params is not None and params.cursor else 0
    following = start + PAGE_SIZE
    return items[start:following], str(following) if following < len(items) else None


def _modern(ctx: Context) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


async def _input(
    ctx: Context, key: str, request: types.InputRequest, result_type: type[_R]
) -> _R | types.InputRequiredResult:
    """Ask the client something: inside the call on older protocols, by "input required" on 2026-07-28."""
    if not _modern(ctx):
        metadata = ServerMessageMetadata(related_request_id=ctx.request_id)
        return await ctx.session.send_request(request, result_type, metadata=metadata)
    answer = (ctx.input_responses or {}).get(key)
    if answer is None:
        return types.InputRequiredResult(input_requests={key: request})
    if not isinstance(answer, result_type):
        raise ToolError(f"the client answered {key!r} with a {type(answer).__name__}")
    return answer


def build_server(name: str = "features") -> MCPServer:
    """A new features server."""
    server = MCPServer(name, instructions="Resources, prompts, and tools that ask the client.", version="0.9")
    visited: set[str] = set()
    roots_changes: list[int] = []
    roots_event = anyio.Event()
    cancelled: dict[str, anyio.Event] = {}
    subscribed: set[str] = set()  # by resources/subscribe (before 2026-07-28)

    # ----- resources --------------------------------------------------------------------------

    @server.resource("features://info", name="info", title="About", mime_type="text/plain")
    def info() -> str:
        return f"the {name} server"

    @server.resource("features://logo", name="logo", mime_type="image/png")
    def logo() -> bytes:
        return LOGO

    def note_reader(note: str) -> Callable[[], str]:
        def read_note() -> str:
            return f"the {note} note"

        return read_note

    for note in ("first", "second", "third"):
        server.resource(f"note://{note}", name=f"{note} note", mime_type="text/plain")(note_reader(note))

    @server.resource(TEMPLATE, name="note", mime_type="text/plain")
    def any_note(id: str) -> str:
        return f"note {id} (from the template)"

    # ----- prompts and completions --------------------------------------------------------------

    @server.prompt(description="Review some code.")
    def review(code: str, language: str = "python") -> str:
        return f"Review this {language} code: {code}"

    @server.prompt(description="Greet someone.")
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    @server.prompt(description="A prompt without arguments.")
    def plain() -> str:
        return "Just a plain prompt."

    @server.completion()
    async def complete(
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: types.CompletionArgument,
        context: types.CompletionContext | None,
    ) -> types.Completion | None:
        if isinstance(ref, types.PromptReference) and ref.name == "review" and argument.name == "language":
            values = [lang for lang in LANGUAGES if lang.startswith(argument.value)]
            return types.Completion(values=values, total=len(values), has_more=False)
        if isinstance(ref, types.ResourceTemplateReference) and ref.uri == TEMPLATE and argument.name == "id":
            values = [n for n in ("first", "second", "third") if n.startswith(argument.value)]
            return types.Completion(values=values, total=len(values), has_more=False)
        return None

    # ----- the lists, in pages ------------------------------------------------------------------

    lowlevel: Server[Any] = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        page, cursor = _page(await server.list_resources(), params)
        return types.ListResourcesResult(resources=page, next_cursor=cursor)

    async def list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        page, cursor = _page(await server.list_resource_templates(), params)
        return types.ListResourceTemplatesResult(resource_templates=page, next_cursor=cursor)

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        page, cursor = _page(await server.list_prompts(), params)
        return types.ListPromptsResult(prompts=page, next_cursor=cursor)

    async def roots_changed(ctx: ServerRequestContext[Any], params: types.NotificationParams) -> None:
        roots_changes.append(len(roots_changes) + 1)
        roots_event.set()

    lowlevel.add_notification_handler("notifications/roots/list_changed", types.NotificationParams, roots_changed)

    # resources/subscribe is how clients before 2026-07-28 subscribe (later ones listen).
    async def subscribe(ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams) -> types.EmptyResult:
        subscribed.add(params.uri)
        return types.EmptyResult()

    async def unsubscribe(ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        if params.uri == STUCK:  # a server that never answers: whoever unsubscribes must not wait for it forever
            await anyio.sleep_forever()
        subscribed.discard(params.uri)
        return types.EmptyResult()

    lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)
    lowlevel.add_request_handler("resources/list", types.PaginatedRequestParams, list_resources)
    lowlevel.add_request_handler("resources/templates/list", types.PaginatedRequestParams, list_templates)
    lowlevel.add_request_handler("prompts/list", types.PaginatedRequestParams, list_prompts)

    # ----- tools ----------------------------------------------------------------------------------

    @server.tool()
    async def ask(question: str, ctx: Context) -> str | types.InputRequiredResult:
        """Ask the user for their preferences; answer with the action and the content exactly as received."""
        params = types.ElicitRequestFormParams(
            message=question, requested_schema=render_elicitation_schema(Preferences)
        )
        answer = await _input(ctx, "prefs", types.ElicitRequest(params=params), types.ElicitResult)
        if isinstance(answer, types.InputRequiredResult):
            return answer
        return json.dumps({"action": answer.action, "content": answer.content}, sort_keys=True)

    @server.tool()
    async def ask_url(ctx: Context) -> str | types.InputRequiredResult:
        """Ask the user to open a page (URL elicitation); answer with what they did."""
        params = types.ElicitRequestURLParams(
            message="Connect your account", url="https://example.com/connect", elicitation_id="connect-1"
        )
        answer = await _input(ctx, "page", types.ElicitRequest(params=params), types.ElicitResult)
        if isinstance(answer, types.InputRequiredResult):
            return answer
        return answer.action

    @server.tool()
    async def needs_page(key: str) -> str:
        """Fail with "URL elicitation required" until ``visit(key)`` was called."""
        if key not in visited:
            raise UrlElicitationRequiredError(
                [
                    types.ElicitRequestURLParams(
                        message=f"Open the page for {key}",
                        url=f"https://example.com/visit/{key}",
                        elicitation_id=f"visit-{key}",
                    )
                ]
            )
        return f"page {key} was visited"

    @server.tool()
    def visit(key: str) -> str:
        """What the page of ``needs_page`` does when the user opens it."""
        visited.add(key)
        return f"visited {key}"

    @server.tool()
    async def summarize(text: str, ctx: Context) -> str | types.InputRequiredResult:
        """Ask the client's model to summarise ``text`` (sampling)."""
        message = types.SamplingMessage(role="user", content=types.TextContent(text=f"Summarise: {text}"))
        params = types.CreateMessageRequestParams(messages=[message], max_tokens=50)
        try:
            answer = await _input(ctx, "summary", types.CreateMessageRequest(params=params), types.CreateMessageResult)
        except MCPError as error:
            return f"sampling failed: {error.message}"
        if isinstance(answer, types.InputRequiredResult):
            return answer
        content = answer.content
        text_out = content.text if isinstance(content, types.TextContent) else f"[{content.type}]"
        return f"summary by {answer.model}: {text_out}"

    @server.tool()
    async def list_roots(ctx: Context) -> str | types.InputRequiredResult:
        """The client's roots as JSON (``{"capability": false}`` when it offers none)."""
        capabilities = ctx.session.client_capabilities
        if capabilities is None or capabilities.roots is None:
            return json.dumps({"capability": False, "roots": []})
        answer = await _input(ctx, "roots", types.ListRootsRequest(), types.ListRootsResult)
        if isinstance(answer, types.InputRequiredResult):
            return answer
        roots = [{"uri": str(root.uri), "name": root.name} for root in answer.roots]
        return json.dumps({"capability": True, "roots": roots})

    @server.tool()
    async def roots_changed_count(at_least: int) -> int:
        """How many roots/list_changed notifications arrived, once there are ``at_least`` (waits up to 10 s)."""
        nonlocal roots_event
        with anyio.move_on_after(10):
            while len(roots_changes) < at_least:
                await roots_event.wait()
                roots_event = anyio.Event()
        return len(roots_changes)

    @server.tool()
    async def chatty(count: int, ctx: Context) -> str:
        """Send ``count`` log messages (info), then one warning."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(1, count + 1):
                await ctx.info(f"chatty message {i}", logger_name="chatter")  # pyright: ignore[reportDeprecated]
            await ctx.warning({"done": count})  # pyright: ignore[reportDeprecated]
        return f"sent {count + 1} messages"

    @server.tool()
    async def progress(steps: int, delay: float, ctx: Context) -> str:
        """Work ``steps`` steps of ``delay`` seconds, reporting progress after each."""
        for step in range(1, steps + 1):
            await anyio.sleep(delay)
            await ctx.report_progress(step, steps, f"step {step}")
        return f"done after {steps} steps"

    @server.tool()
    async def wait_forever(key: str, ctx: Context) -> str:
        """Report progress once, then wait until cancelled; ``was_cancelled(key)`` tells whether it was."""
        cancelled.setdefault(key, anyio.Event())
        await ctx.report_progress(0, None, "waiting")
        try:
            await anyio.sleep_forever()
        finally:
            cancelled[key].set()
        return "never"  # pragma: no cover

    @server.tool()
    async def was_cancelled(key: str, within: float) -> bool:
        """Whether the ``wait_forever(key)`` call was cancelled, waiting up to ``within`` seconds for it."""
        event = cancelled.setdefault(key, anyio.Event())
        with anyio.move_on_after(within):
            await event.wait()
        return event.is_set()

    @server.tool()
    async def freeze(seconds: float) -> str:
        """Block the server's whole event loop for ``seconds``: it answers nothing meanwhile, not even pings."""
        time.sleep(seconds)  # noqa: ASYNC251 - blocking on purpose
        return f"thawed after {seconds:g} s"

    @server.tool()
    async def touch(uri: str, ctx: Context) -> str:
        """Tell subscribers that ``uri`` changed."""
        if _modern(ctx):
            await ctx.notify_resource_updated(uri)  # to the listen streams that subscribed to it
        elif uri in subscribed:
            await ctx.session.send_resource_updated(uri)
        return f"touched {uri}"

    @server.tool()
    async def grow_prompts(prompt_name: str, ctx: Context) -> str:
        """Add a prompt called ``prompt_name`` and tell the client the prompt list changed."""

        def grown() -> str:
            return f"I am {prompt_name}"

        server.add_prompt(Prompt.from_function(grown, name=prompt_name, description="Added at run time."))
        if _modern(ctx):
            await ctx.notify_prompts_changed()
        else:
            await ctx.session.send_prompt_list_changed()
        return f"added {prompt_name}"

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    return server


async def run_legacy_stdio(server: MCPServer) -> None:
    """Serve the ``initialize`` handshake era only, over stdin/stdout."""
    lowlevel: Server[Any] = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]
    options = lowlevel.create_initialization_options(
        NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
    )
    async with stdio_server() as (read_stream, write_stream), lowlevel.lifespan(lowlevel) as state:
        await serve_loop(lowlevel, read_stream, write_stream, lifespan_state=state, init_options=options)


async def _main(legacy: bool) -> None:
    server = build_server()
    if legacy:
        await run_legacy_stdio(server)
    else:
        await server.run_stdio_async()


if __name__ == "__main__":
    anyio.run(_main, "--legacy" in sys.argv[1:])
