"""A server built on today's SDK that asks its client things in the middle of a tool call, both ways servers ask.

Over the back-channel, as most servers are written (each is a server-to-client request inside the
call, which only the ``initialize`` handshake era carries):

- ``ask_name``: ``ctx.elicit(...)`` for a ``Name``;
- ``summarize``: ``ctx.session.create_message(...)`` (sampling);
- ``roots``: ``ctx.session.list_roots()``.

With the SDK's ``Resolve`` markers, which ask over the back-channel in the handshake era and as an
``InputRequiredResult`` (rounds the client answers and sends again) on 2026-07-28:

- ``ask_name_rounds``, ``summarize_rounds``, ``roots_rounds``: the same three questions.

Each tool answers with what came back, so a test sees that the answer reached the server.

``python -m tests.servers.asking`` serves both eras over stdio, as ``MCPServer.run()`` does;
``--modern-only`` serves only 2026-07-28: it refuses ``initialize`` with -32022 naming the
modern versions (what the spec asks of a server that does not speak the requested version);
``--modern-only=invalid-params`` refuses it with -32602, as a server that reads every request
for the 2026-07-28 envelope does. ``build_app(modern_only=...)`` is the same over streamable HTTP;
``--http`` serves that on a free port of 127.0.0.1 and prints its URL first (``python -m bench.era``).
"""

from __future__ import annotations

import json
import socket
import sys
import warnings
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

import anyio
import mcp_types as types
import uvicorn
from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from mcp.server.runner import serve_dual_era_loop
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field
from starlette.applications import Starlette

__all__ = ["Name", "Refusal", "build_app", "build_server"]

Refusal = Literal["unsupported-version", "invalid-params"]
"""How a modern-only server refuses ``initialize``."""


class Name(BaseModel):
    """What ``ask_name`` asks for."""

    name: str = Field(description="Your name")


def _outcome(result: Any) -> str:
    """An elicitation's outcome as the tools report it."""
    data = result.data.model_dump() if result.action == "accept" else None
    return json.dumps({"action": result.action, "data": data})


def _text(result: types.CreateMessageResult) -> str:
    content = result.content
    return content.text if isinstance(content, types.TextContent) else f"[{content.type}]"


def _sampling(text: str) -> list[types.SamplingMessage]:
    return [types.SamplingMessage(role="user", content=types.TextContent(text=f"Summarise: {text}"))]


async def _ask_for_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


async def _ask_for_summary(text: str) -> Sample:
    return Sample(_sampling(text), max_tokens=50)


async def _ask_for_roots() -> ListRoots:
    return ListRoots()


def _refusal(refuse: Refusal, params: Mapping[str, Any] | None) -> MCPError:
    if refuse == "invalid-params":
        return MCPError(code=INVALID_PARAMS, message="params._meta must carry the 2026-07-28 envelope")
    requested = (params or {}).get("protocolVersion")
    data = {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": requested}
    return MCPError(code=UNSUPPORTED_PROTOCOL_VERSION, message="Unsupported protocol version", data=data)


def build_server(name: str = "asking", *, modern_only: Refusal | None = None) -> MCPServer:
    """A new asking server; ``modern_only`` refuses ``initialize`` (over HTTP; stdio refuses it in ``_serve_stdio``)."""

    async def refuse_handshake(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "initialize" and modern_only is not None:
            raise _refusal(modern_only, ctx.params)
        return await call_next(ctx)

    server = MCPServer(name, version="2.3", middleware=[refuse_handshake])

    @server.tool()
    async def ask_name(ctx: Context) -> str:
        """Ask the user's name (``ctx.elicit``)."""
        return _outcome(await ctx.elicit("What is your name?", Name))

    @server.tool()
    async def summarize(text: str, ctx: Context) -> str:
        """Ask the client's model to summarise ``text`` (``ctx.session.create_message``)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # sampling is deprecated as of 2026-07-28
            answer = await ctx.session.create_message(  # pyright: ignore[reportDeprecated]
                _sampling(text), max_tokens=50, related_request_id=ctx.request_id
            )
        return f"{answer.model}: {_text(answer)}"

    @server.tool()
    async def roots(ctx: Context) -> str:
        """The client's roots (``ctx.session.list_roots``)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # roots are deprecated as of 2026-07-28
            answer = await ctx.session.list_roots()  # pyright: ignore[reportDeprecated]
        return json.dumps([str(root.uri) for root in answer.roots])

    @server.tool()
    async def ask_name_rounds(name: Annotated[Name, Resolve(_ask_for_name)]) -> str:
        """Ask the user's name through a ``Resolve`` marker."""
        return json.dumps({"action": "accept", "data": name.model_dump()})

    @server.tool()
    async def summarize_rounds(
        text: str, answer: Annotated[types.CreateMessageResult, Resolve(_ask_for_summary)]
    ) -> str:
        """Sample the client's model through a ``Resolve`` marker."""
        return f"{answer.model}: {_text(answer)}"

    @server.tool()
    async def roots_rounds(answer: Annotated[types.ListRootsResult, Resolve(_ask_for_roots)]) -> str:
        """The client's roots through a ``Resolve`` marker."""
        return json.dumps([str(root.uri) for root in answer.roots])

    return server


def build_app(*, modern_only: Refusal | None = None) -> Starlette:
    """The server over streamable HTTP at ``/mcp``."""
    return build_server(modern_only=modern_only).streamable_http_app()


@asynccontextmanager
async def _without_handshake(
    read_stream: Any, write_stream: Any, refuse: Refusal
) -> AsyncGenerator[anyio.abc.ObjectReceiveStream[SessionMessage | Exception]]:
    """The client's messages with every ``initialize`` taken out and refused."""
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](16)

    async def relay() -> None:
        async with send:
            async for item in read_stream:
                message = item.message if isinstance(item, SessionMessage) else None
                if isinstance(message, types.JSONRPCRequest) and message.method == "initialize":
                    error = _refusal(refuse, message.params).error
                    await write_stream.send(
                        SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=message.id, error=error))
                    )
                elif (
                    not isinstance(message, types.JSONRPCNotification) or message.method != "notifications/initialized"
                ):
                    await send.send(item)

    async with anyio.create_task_group() as tg:
        tg.start_soon(relay)
        yield receive
        tg.cancel_scope.cancel()


async def _serve_stdio(modern_only: Refusal | None) -> None:
    lowlevel = build_server()._lowlevel_server  # pyright: ignore[reportPrivateUsage]
    options = lowlevel.create_initialization_options()
    async with stdio_server() as (read_stream, write_stream), lowlevel.lifespan(lowlevel) as state:
        if modern_only is None:
            await serve_dual_era_loop(lowlevel, read_stream, write_stream, lifespan_state=state, init_options=options)
            return
        async with _without_handshake(read_stream, write_stream, modern_only) as messages:
            await serve_dual_era_loop(lowlevel, messages, write_stream, lifespan_state=state, init_options=options)


async def _serve_http(modern_only: Refusal | None) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    config = uvicorn.Config(build_app(modern_only=modern_only), log_level="warning", access_log=False)
    await uvicorn.Server(config).serve([sock])


def _modern_only(argv: list[str]) -> Refusal | None:
    for arg in argv:
        if arg == "--modern-only":
            return "unsupported-version"
        if arg == "--modern-only=invalid-params":
            return "invalid-params"
    return None


if __name__ == "__main__":
    anyio.run(_serve_http if "--http" in sys.argv[1:] else _serve_stdio, _modern_only(sys.argv[1:]))
