"""One server's connection: failures at start, timeouts, crashes, variables, transports, paging."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from mcpdeck import Host, RetryPolicy, ServerState
from mcpdeck.errors import ServerCrashedError, ServerTimeoutError, ServerUnavailableError
from mcpdeck.events import Event, ServerStatusChanged, ToolsChanged
from tests.helpers import WAIT, BasicServer, HandshakeOnly, closed_port, next_event, serve_asgi, stdio_server
from tests.servers import basic, paged

pytestmark = pytest.mark.anyio


def first_change(events: list[Event], server: str, state: str) -> ServerStatusChanged:
    """The first event that moved ``server`` to ``state``."""
    return next(e for e in events if isinstance(e, ServerStatusChanged) and e.server == server and e.state == state)


# ----- failing at start ------------------------------------------------------------------


async def test_a_missing_command_fails_with_a_clear_message_and_the_others_connect(log_dir: Path) -> None:
    servers = {"missing": {"command": "mcpdeck-no-such-command"}, "fine": basic.build_server()}
    async with Host(servers, log_dir=log_dir) as host:
        missing = host.servers["missing"]
        assert missing.state is ServerState.FAILED
        assert missing.error is not None
        assert "'mcpdeck-no-such-command' was not found on PATH" in missing.error
        assert missing.error_at is not None
        assert host.servers["fine"].state is ServerState.CONNECTED
        assert (await host.call_tool("mcp__fine__echo", {"text": "ok"})).text() == "ok"
        with pytest.raises(ServerUnavailableError, match="was not found on PATH") as caught:
            await host.call_tool("mcp__missing__anything", {})
        assert caught.value.server == "missing"


async def test_a_server_that_exits_at_start_reports_what_it_wrote_to_stderr(log_dir: Path) -> None:
    script = "import sys; sys.stderr.write('fatal: GITHUB_TOKEN is not set\\n'); sys.exit(3)"
    servers = {"quitter": {"command": sys.executable, "args": ["-c", script]}, "fine": basic.build_server()}
    async with Host(servers, log_dir=log_dir) as host:
        quitter = host.servers["quitter"]
        assert host.servers["fine"].state is ServerState.CONNECTED
    assert quitter.state is ServerState.FAILED
    assert quitter.error is not None and "fatal: GITHUB_TOKEN is not set" in quitter.error
    assert quitter.log_path is not None and quitter.log_path == log_dir / "quitter.log"
    log = quitter.log_path.read_text()
    assert "fatal: GITHUB_TOKEN is not set" in log
    assert "mcpdeck starting quitter" in log


async def test_a_missing_working_directory_fails_clearly(log_dir: Path, tmp_path: Path) -> None:
    servers = {"lost": stdio_server("basic", cwd=str(tmp_path / "nowhere"))}
    async with Host(servers, log_dir=log_dir) as host:
        lost = host.servers["lost"]
    assert lost.state is ServerState.FAILED
    assert lost.error is not None and "working directory" in lost.error and "nowhere" in lost.error


async def test_a_server_that_never_answers_times_out_without_delaying_the_others(log_dir: Path, http_url: str) -> None:
    servers = {
        # 8 s: long beside a healthy connect even at load 20 on two cores, well inside WAIT.
        "hung": stdio_server("hang", startupTimeout=8),
        "local": basic.build_server(),
        "remote": {"url": http_url},
    }
    host = Host(servers, log_dir=log_dir)
    seen: list[Event] = []
    host.events.on(seen.append)
    with anyio.fail_after(WAIT):
        async with host:
            hung = host.servers["hung"]
            assert hung.state is ServerState.FAILED  # the host opened once every server had settled
            assert {host.servers["local"].state, host.servers["remote"].state} == {ServerState.CONNECTED}
    assert hung.state is ServerState.FAILED
    assert hung.error is not None
    assert "within 8 s" in hung.error
    assert "hang: listening, but I will never answer" in hung.error
    # Nobody waited for the hung one: each healthy server was connected while it was still starting. (The
    # order of the events says so whatever the load; a fixed margin of time before the failure did not.)
    failed = seen.index(first_change(seen, "hung", "failed"))
    for healthy in ("local", "remote"):
        assert seen.index(first_change(seen, healthy, "connected")) < failed, healthy


# ----- calls -------------------------------------------------------------------------------


async def test_the_configured_timeout_cuts_off_a_silent_call_and_the_next_call_works(
    log_dir: Path, http_url: str
) -> None:
    async with Host({"slow": {"url": http_url, "type": "http", "timeout": 0.3}}, log_dir=log_dir) as host:
        with anyio.fail_after(WAIT), pytest.raises(ServerTimeoutError) as caught:
            await host.call_tool("mcp__slow__sleep", {"seconds": 2})
        assert 'raise "timeout" in its config' in str(caught.value)
        assert "0.3 s" in str(caught.value)
        with anyio.fail_after(WAIT):
            assert (await host.call_tool("mcp__slow__echo", {"text": "next"})).text() == "next"


async def test_progress_restarts_the_configured_timeout(log_dir: Path, http_url: str) -> None:
    async with Host({"slow": {"url": http_url, "type": "http", "timeout": 0.4}}, log_dir=log_dir) as host:
        with anyio.fail_after(WAIT):
            result = await host.call_tool("mcp__slow__slow_progress", {"steps": 4, "delay": 0.15})
    assert result.text() == "done after 4 steps"  # 0.6 s in all, never 0.4 s without progress: not cut


async def test_a_server_that_crashes_mid_call_fails_alone_and_reconnect_brings_it_back(log_dir: Path) -> None:
    servers = {"fragile": stdio_server("basic"), "steady": basic.build_server()}
    no_retries = RetryPolicy(attempts=0)
    async with Host(servers, log_dir=log_dir, retry=no_retries) as host, host.events.subscribe() as events:
        first_pid = int((await host.call_tool("mcp__fragile__pid")).text())
        with anyio.fail_after(WAIT), pytest.raises(ServerCrashedError) as caught:
            await host.call_tool("mcp__fragile__crash")
        assert caught.value.server == "fragile"
        assert "during the call to 'crash'" in str(caught.value)
        failed = await next_event(events, ServerStatusChanged, lambda e: e.server == "fragile" and e.state == "failed")
        assert failed.error is not None and "connection was lost" in failed.error
        status = host.servers["fragile"]
        assert status.state is ServerState.FAILED
        assert host.catalog.for_server("fragile") == []
        with pytest.raises(ServerUnavailableError):
            await host.call_tool("mcp__fragile__echo", {"text": "x"})

        assert host.servers["steady"].state is ServerState.CONNECTED
        assert (await host.call_tool("mcp__steady__echo", {"text": "fine"})).text() == "fine"

        with anyio.fail_after(WAIT):
            status = await host.reconnect("fragile")
        assert status.state is ServerState.CONNECTED
        assert status.error is None
        assert int((await host.call_tool("mcp__fragile__pid")).text()) != first_pid
        assert (await host.call_tool("mcp__fragile__echo", {"text": "back"})).text() == "back"


async def test_a_lost_server_is_reconnected_by_itself_and_calls_made_meanwhile_wait_for_it(log_dir: Path) -> None:
    quick = RetryPolicy(attempts=3, initial=0.05, jitter=0)
    async with Host({"fragile": stdio_server("basic")}, log_dir=log_dir, retry=quick) as host:
        async with host.events.subscribe() as events:
            first_pid = int((await host.call_tool("mcp__fragile__pid")).text())
            with anyio.fail_after(WAIT), pytest.raises(ServerCrashedError):
                await host.call_tool("mcp__fragile__crash")
            with anyio.fail_after(WAIT):
                # Sent while the server is down: it waits for the reconnect instead of failing.
                echo = await host.call_tool("mcp__fragile__echo", {"text": "patient"}, timeout=10)
            seen = [await next_event(events, ServerStatusChanged, lambda e: e.server == "fragile") for _ in range(2)]
        assert echo.text() == "patient"
        assert [(e.previous, e.state) for e in seen] == [("connected", "reconnecting"), ("reconnecting", "connected")]
        assert seen[0].error is None
        status = host.servers["fragile"]
        assert status.state is ServerState.CONNECTED and status.error is None
        assert int((await host.call_tool("mcp__fragile__pid")).text()) != first_pid


# ----- ${VAR} expansion ----------------------------------------------------------------------


async def test_an_unset_variable_fails_only_its_server_and_defaults_fill_in(log_dir: Path, http_url: str) -> None:
    port = http_url.split(":")[2].split("/")[0]
    environ = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "MCPDECK_TEST_PORT": port}
    servers = {
        "unset": {"url": "http://127.0.0.1:${MCPDECK_TEST_PORT}/mcp", "headers": {"Authorization": "${NO_SUCH_TOKEN}"}},
        "given": {"url": "http://127.0.0.1:${MCPDECK_TEST_PORT}/mcp", "type": "http"},
        "defaulted": {"url": f"http://127.0.0.1:${{NO_SUCH_PORT:-{port}}}/mcp", "type": "http"},
        "child": stdio_server("basic", env={"GREETING": "${NO_SUCH_GREETING:-hello from the default}"}),
    }
    async with Host(servers, log_dir=log_dir, environ=environ) as host:
        unset = host.servers["unset"]
        assert unset.state is ServerState.FAILED
        assert unset.error is not None
        assert "NO_SUCH_TOKEN" in unset.error and "headers.Authorization" in unset.error
        for name in ("given", "defaulted", "child"):
            assert host.servers[name].state is ServerState.CONNECTED, host.servers[name].error
        greeting = await host.call_tool("mcp__child__env", {"name": "GREETING"})
        assert greeting.text() == "hello from the default"
        # The config keeps the references; only the connection sees the values.
        assert host.servers["given"].target == "http://127.0.0.1:${MCPDECK_TEST_PORT}/mcp"


# ----- remote transports -----------------------------------------------------------------------


async def test_a_url_without_a_type_finds_the_transport_the_server_speaks(
    log_dir: Path, http_url: str, sse_url: str
) -> None:
    async with Host({"modern": {"url": http_url}, "older": {"url": sse_url}}, log_dir=log_dir) as host:
        modern, older = host.servers["modern"], host.servers["older"]
        assert (modern.state, modern.transport) == (ServerState.CONNECTED, "http")
        assert (older.state, older.transport) == (ServerState.CONNECTED, "sse")
        assert (await host.call_tool("mcp__older__echo", {"text": "over sse"})).text() == "over sse"
        assert (await host.call_tool("mcp__modern__echo", {"text": "over http"})).text() == "over http"


async def test_an_unreachable_remote_server_fails_and_says_so(log_dir: Path) -> None:
    with closed_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        servers = {"typed": {"url": url, "type": "http"}, "sse": {"url": url, "type": "sse"}, "untyped": {"url": url}}
        async with Host(servers, log_dir=log_dir) as host:
            statuses = host.servers
    for name in servers:
        assert statuses[name].state is ServerState.FAILED, name
        assert statuses[name].error, name
    hint = "is the server running, and is its URL right?"
    assert statuses["typed"].error is not None and "cannot connect" in statuses["typed"].error
    assert hint in statuses["typed"].error
    # Neither transport reached anything: one reason, said once (not once per transport).
    untyped = statuses["untyped"].error
    assert untyped is not None and untyped.count("cannot connect") == 1 and hint in untyped, untyped
    assert "neither streamable HTTP nor SSE" not in untyped


async def test_a_remote_server_that_refuses_with_an_http_status_says_which(log_dir: Path) -> None:
    async def refuse(request: Request) -> Response:
        return PlainTextResponse("sign in first", status_code=401)

    app = Starlette(routes=[Route(path, refuse, methods=["GET", "POST", "DELETE"]) for path in ("/mcp", "/sse")])
    async with serve_asgi(app) as base:
        servers = {"http": {"url": f"{base}/mcp", "type": "http"}, "sse": {"url": f"{base}/sse", "type": "sse"}}
        async with Host(servers, log_dir=log_dir) as host:
            statuses = host.servers
    for name in servers:
        error = statuses[name].error
        assert statuses[name].state is ServerState.FAILED, name
        assert error is not None and "401" in error, f"{name}: {error}"


async def test_a_server_neither_transport_works_with_says_why_for_each(log_dir: Path) -> None:
    async def missing(request: Request) -> Response:
        return PlainTextResponse("no such endpoint", status_code=404)

    app = Starlette(routes=[Route("/mcp", missing, methods=["GET", "POST", "DELETE"])])
    async with serve_asgi(app) as base:
        async with Host({"untyped": {"url": f"{base}/mcp"}}, log_dir=log_dir) as host:
            status = host.servers["untyped"]
    assert status.state is ServerState.FAILED
    error = status.error or ""
    assert "neither streamable HTTP nor SSE worked (http: " in error and "; sse: " in error, error
    assert "404" in error, error


async def test_the_same_server_reconnects_over_its_own_transport(basic_server: BasicServer, log_dir: Path) -> None:
    async with Host({"basic": basic_server.spec}, log_dir=log_dir) as host:
        first = host.servers["basic"].connected_at
        with anyio.fail_after(WAIT):
            status = await host.reconnect("basic")
        assert status.state is ServerState.CONNECTED
        assert status.transport == basic_server.transport
        assert first is not None and status.connected_at is not None and status.connected_at > first
        assert (await host.call_tool("mcp__basic__add", {"a": 1, "b": 1})).text() == "2"


# ----- tool lists --------------------------------------------------------------------------------


async def test_tools_are_read_from_every_page(log_dir: Path) -> None:
    async with Host({"paged": paged.build_server()}, log_dir=log_dir) as host:
        names = [tool.original_name for tool in host.catalog.for_server("paged")]
        assert host.servers["paged"].tool_count == paged.TOOL_COUNT + 1
        assert (await host.call_tool("mcp__paged__page_24")).text() == "called page_24"
    assert names == [f"page_{i:02d}" for i in range(paged.TOOL_COUNT)] + ["grow"]


async def test_a_tool_listed_twice_joins_the_catalog_once(log_dir: Path) -> None:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        schema: dict[str, Any] = {"type": "object"}
        first = types.Tool(name="dup", description="first", input_schema=schema)
        second = types.Tool(name="dup", description="second", input_schema=schema)
        return types.ListToolsResult(tools=[first, second])

    async with Host({"twice": Server("twice", on_list_tools=list_tools)}, log_dir=log_dir) as host:
        entries = host.catalog.for_server("twice")
    assert [(e.name, e.description) for e in entries] == [("mcp__twice__dup", "first")]


async def test_the_lists_are_asked_for_at_once_not_one_after_the_other(log_dir: Path) -> None:
    # A server that answers tools/list only once prompts/list has arrived, and resources/list only once
    # resources/templates/list has: read one after the other, it never connects.
    prompts_asked, templates_asked = anyio.Event(), anyio.Event()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        await prompts_asked.wait()
        return types.ListToolsResult(tools=[types.Tool(name="t", input_schema={"type": "object"})])

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        prompts_asked.set()
        return types.ListPromptsResult(prompts=[types.Prompt(name="p")])

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        await templates_asked.wait()
        return types.ListResourcesResult(resources=[types.Resource(uri="x://r", name="r")])

    async def list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        templates_asked.set()
        return types.ListResourceTemplatesResult(
            resource_templates=[types.ResourceTemplate(uri_template="x://{id}", name="by-id")]
        )

    async def read(ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return types.ReadResourceResult(contents=[])

    server = Server(
        "together",
        on_list_tools=list_tools,
        on_list_prompts=list_prompts,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read,
    )
    with anyio.fail_after(WAIT):
        async with Host({"together": server}, log_dir=log_dir) as host:
            status = host.servers["together"]
            assert status.state is ServerState.CONNECTED, status.error
            assert [e.name for e in host.catalog.for_server("together")] == ["mcp__together__t"]
            assert [p.original_name for p in host.prompts] == ["p"]
            assert [str(r.resource.uri) for r in host.resources] == ["x://r"]
            assert [t.template.uri_template for t in host.resource_templates] == ["x://{id}"]


async def test_a_tool_list_change_from_a_server_of_the_older_protocol_reaches_the_catalog(log_dir: Path) -> None:
    async with Host({"legacy": stdio_server("paged", "--legacy")}, log_dir=log_dir) as host:
        status = host.servers["legacy"]
        assert status.state is ServerState.CONNECTED, status.error
        assert status.protocol_version is not None and status.protocol_version < "2026"
        async with host.events.subscribe() as events:
            await host.call_tool("mcp__legacy__grow", {"name": "sprout"})
            changed = await next_event(events, ToolsChanged, lambda e: e.server == "legacy")
        assert changed.tool_count == paged.TOOL_COUNT + 2
        assert (await host.call_tool("mcp__legacy__sprout")).text() == "called sprout"


async def test_a_result_over_one_megabyte_arrives_whole_over_streamable_http(log_dir: Path) -> None:
    # The SDK caps one SSE event at 1 MiB by default; a host must not fail real results at that size.
    server = MCPServer("big")

    @server.tool()
    def payload(size: int) -> str:
        """Return `size` characters."""
        return "x" * size

    # A handshake-era session: the SDK's server answers its calls as SSE events.
    async with serve_asgi(HandshakeOnly(server.streamable_http_app())) as base:
        async with Host({"big": {"url": f"{base}/mcp", "type": "http"}}, log_dir=log_dir) as host:
            assert host.servers["big"].protocol_version == "2025-11-25"
            with anyio.fail_after(WAIT):
                result = await host.call_tool("mcp__big__payload", {"size": 3 * 1024 * 1024})
    assert not result.is_error
    assert result.text() == "x" * (3 * 1024 * 1024)
