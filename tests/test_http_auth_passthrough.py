"""OAuth costs nothing until a server asks for it, and never puts requests in single file.

A remote server gets mcpdeck's OAuth handler unless its config turns OAuth off, but the
SDK's flow (and the lock it holds from before a request is sent until its answer arrives)
is entered only when a request needs it: at a 401, or to refresh a token. Here:

- a server without authorization gets plain requests, no discovery, no flow, and two calls
  in flight at once;
- a server that answers 401 gets the full flow, its 401 asked only once;
- with a stored token, calls are in flight together, and a token the server refuses while
  several calls are in flight is refreshed once (the refresh token is single-use).

The rest of the OAuth flow is covered by ``tests/auth`` (``test_flow.py``: discovery,
registration, PKCE, refresh, step-up; ``test_machine.py``, ``test_identity.py``,
``test_legacy.py``) and by the conformance suite (``tests/conformance``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.server.mcpserver import MCPServer

from mcpdeck import Host, ServerState, ToolResult
from mcpdeck.auth import TokenStore
from mcpdeck.auth._flow import DeckFlow
from tests.auth.oauth_server import OAuthSetup, RequestLog, oauth_servers
from tests.auth.support import SERVER, HeadlessBrowser, host
from tests.helpers import WAIT, serve_asgi

pytestmark = pytest.mark.anyio

_Flow = Callable[[DeckFlow, httpx2.Request], AsyncGenerator[httpx2.Request, httpx2.Response]]


class Gate:
    """The ``gather`` tool: a call returns once ``size`` calls have arrived.

    Served with JSON responses (sent when the result is ready), the calls can only all
    arrive if their requests are in flight together; if a request waits for the answer to
    the one before it, the first call fails after ``WAIT`` seconds instead.
    """

    def __init__(self, size: int):
        self.size = size
        self.arrived = 0
        self._full = anyio.Event()

    def install(self, server: MCPServer) -> None:
        @server.tool()
        async def gather() -> str:  # pyright: ignore[reportUnusedFunction]
            """Wait until enough calls have arrived."""
            self.arrived += 1
            if self.arrived >= self.size:
                self._full.set()
            with anyio.fail_after(WAIT):
                await self._full.wait()
            return "met"


class FlowSpy:
    """What went through mcpdeck's OAuth handler, and what entered the SDK's flow."""

    def __init__(self) -> None:
        self.handled: list[str] = []
        self.flows: list[str] = []


@pytest.fixture
def store(tmp_path: Path) -> TokenStore:
    return TokenStore(tmp_path / "auth")


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> FlowSpy:
    found = FlowSpy()

    def watch(name: str, seen: list[str]) -> None:
        original: _Flow = DeckFlow.__dict__[name]

        def watched(self: DeckFlow, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
            seen.append(f"{request.method} {request.url.path}")
            return original(self, request)

        monkeypatch.setattr(DeckFlow, name, watched)

    watch("async_auth_flow", found.handled)  # every request of an HTTP client with the handler
    watch("flow_of", found.flows)  # the SDK's flow, under its lock (its _auth_flow hands over to flow_of)
    return found


async def at_once(h: Host, tool: str, n: int, arguments: dict[str, str] | None = None) -> list[ToolResult]:
    results: list[ToolResult] = []

    async def one() -> None:
        results.append(await h.call_tool(tool, arguments or {}))

    with anyio.fail_after(WAIT + 5):
        async with anyio.create_task_group() as tg:
            for _ in range(n):
                tg.start_soon(one)
    return results


async def test_a_server_without_authorization_gets_plain_requests_and_no_oauth_flow(
    store: TokenStore, log_dir: Path, spy: FlowSpy
) -> None:
    server = MCPServer("open")

    @server.tool()
    def echo(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Return the text unchanged."""
        return text

    Gate(2).install(server)
    log = RequestLog(server.streamable_http_app(json_response=True))
    async with serve_asgi(log) as base:
        async with Host({"open": {"type": "http", "url": f"{base}/mcp"}}, log_dir=log_dir, auth_store=store) as h:
            status = h.servers["open"]
            assert status.state is ServerState.CONNECTED, status.error
            assert (await h.call_tool("mcp__open__echo", {"text": "hi"})).text() == "hi"
            results = await at_once(h, "mcp__open__gather", 2)

    assert [(r.is_error, r.text()) for r in results] == [(False, "met")] * 2  # both in flight at once
    posts = [r for r in log.requests if r.method == "POST"]
    assert len(posts) >= 4  # the handshake and three calls
    assert [r for r in log.requests if r.authorization is not None] == []
    assert [r for r in log.requests if r.path.startswith("/.well-known/")] == []  # no OAuth discovery
    assert len(spy.handled) >= len(posts)  # OAuth is on for the server: every request passed the handler...
    assert spy.flows == []  # ...and none entered the SDK's flow
    assert store.records() == []


async def test_a_server_that_answers_401_gets_the_full_oauth_flow_and_is_asked_once(
    store: TokenStore, log_dir: Path, spy: FlowSpy
) -> None:
    async with oauth_servers() as setup:
        async with host(setup, store, log_dir, HeadlessBrowser()) as h:
            status = h.servers[SERVER]
            assert status.state is ServerState.CONNECTED, status.error
            assert (await h.call_tool(f"mcp__{SERVER}__whoami")).text().endswith("mcp:tools")
    assert setup.mcp_log is not None
    seen = setup.mcp_log.requests
    assert (seen[0].method, seen[0].path, seen[0].authorization) == ("POST", "/mcp", None)
    assert seen[1].path.startswith("/.well-known/oauth-protected-resource")  # the 401's answer was used as it came
    assert [r for r in seen if r.path == "/mcp" and r.authorization is None] == [seen[0]]
    assert all(r.authorization and r.authorization.startswith("Bearer ") for r in seen[1:] if r.path == "/mcp")
    assert spy.flows  # the SDK's flow took over at the 401
    assert (setup.provider.seen.registrations, setup.provider.seen.authorizations) == (1, 1)


async def login(setup: OAuthSetup, store: TokenStore, log_dir: Path) -> None:
    async with host(setup, store, log_dir, HeadlessBrowser()) as h:
        status = h.servers[SERVER]
        assert status.state is ServerState.CONNECTED, status.error


async def test_calls_with_a_stored_token_are_in_flight_together(store: TokenStore, log_dir: Path) -> None:
    gate = Gate(2)
    async with oauth_servers(json_response=True, more_tools=gate.install) as setup:
        await login(setup, store, log_dir)
        async with host(setup, store, log_dir) as h:  # no interaction: the stored token
            status = h.servers[SERVER]
            assert status.state is ServerState.CONNECTED, status.error
            results = await at_once(h, f"mcp__{SERVER}__gather", 2)
    assert [(r.is_error, r.text()) for r in results] == [(False, "met")] * 2
    assert setup.provider.seen.authorizations == 1 and setup.provider.seen.refreshes == 0


async def test_a_token_refused_during_calls_in_flight_is_refreshed_once(store: TokenStore, log_dir: Path) -> None:
    async with oauth_servers(json_response=True) as setup:
        await login(setup, store, log_dir)
        async with host(setup, store, log_dir) as h:
            status = h.servers[SERVER]
            assert status.state is ServerState.CONNECTED, status.error
            setup.provider.expire_access_tokens()  # refused from now on; the host still thinks it is good
            results = await at_once(h, f"mcp__{SERVER}__echo", 8, {"text": "hi"})
            assert h.servers[SERVER].state is ServerState.CONNECTED
    assert [(r.is_error, r.text()) for r in results] == [(False, "hi")] * 8
    seen = setup.provider.seen
    assert seen.rejected_tokens >= 1
    assert seen.refreshes == 1  # one refresh for all (a second would spend the refresh token again)
    assert seen.authorizations == 1
