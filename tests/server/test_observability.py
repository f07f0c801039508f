"""Observability through a real ``mcpdeck serve``: its spans exported over OTLP/HTTP to a receiver on 127.0.0.1
that decodes them with ``opentelemetry-proto``, one trace from the gateway's client to the server behind it;
and ``/metrics`` scraped while a gateway client is connected and after, its counts those of the history."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Generator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import Context, MCPServer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.gateway.support import Seen, client
from tests.helpers import ROOT, WAIT, serve_asgi, stdio_server
from tests.support.prometheus_text import scraped, value
from tests.support.serve_process import serving, wait_connected

pytestmark = pytest.mark.anyio

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"


class Receiver:
    """An OTLP/HTTP receiver: every span it was sent, with its resource's attributes."""

    def __init__(self) -> None:
        self.spans: list[tuple[dict[str, Any], Span]] = []
        self.arrived = threading.Condition()

    def take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        with self.arrived:
            for resource_spans in request.resource_spans:
                resource = _attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    self.spans.extend((resource, span) for span in scope_spans.spans)
            self.arrived.notify_all()

    def named(self, name: str) -> list[tuple[dict[str, Any], Span]]:
        with self.arrived:
            return [(resource, span) for resource, span in self.spans if span.name == name]


def _value(kv: KeyValue) -> Any:
    kind = kv.value.WhichOneof("value")
    return getattr(kv.value, kind) if kind else None


def _attributes(items: Any) -> dict[str, Any]:
    return {kv.key: _value(kv) for kv in items}


@contextmanager
def otlp_receiver() -> Generator[tuple[str, Receiver]]:
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            if self.path == "/v1/traces":
                receiver.take(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def upstream() -> MCPServer:
    """A server whose tool answers with the trace context its request carried in ``_meta``."""
    server = MCPServer("up")

    @server.tool()
    def traceparent(ctx: Context) -> str:
        """The ``traceparent`` of this request's ``_meta``."""
        meta = ctx.request_context.meta or {}
        return str(meta.get("traceparent", "none"))

    return server


async def _spans_of(receiver: Receiver, name: str, trace_id: str) -> list[tuple[dict[str, Any], Span]]:
    """The spans named ``name`` in the trace, once one has arrived (the exporter sends them in batches)."""
    with anyio.fail_after(WAIT):
        while True:
            found = [(r, s) for r, s in receiver.named(name) if s.trace_id.hex() == trace_id]
            if found:
                return found
            await anyio.to_thread.run_sync(lambda: _wait(receiver))


def _wait(receiver: Receiver) -> None:
    with receiver.arrived:
        receiver.arrived.wait(0.5)


async def test_a_gateway_call_is_one_trace_from_the_client_through_mcpdeck_to_the_upstream(tmp_path: Path) -> None:
    with otlp_receiver() as (endpoint, receiver):
        async with serve_asgi(upstream().streamable_http_app()) as base:
            env = {
                "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
                "OTEL_BSP_SCHEDULE_DELAY": "50",  # milliseconds between the exporter's batches
                "MCPDECK_HISTORY": str(tmp_path / "history.sqlite3"),
            }
            settings = {"permissions": {"allow": ["mcp__up__*"]}}
            servers = {"up": {"type": "http", "url": f"{base}/mcp"}}
            async with (
                serving(tmp_path, servers, "--replica-id", "r7", env=env, settings=settings) as run,
                run.client() as http,
            ):
                await wait_connected(http, "up")
                token = {"Authorization": f"Bearer {run.state['token']}"}
                async with httpx2.AsyncClient(headers=token, timeout=WAIT) as authorized:
                    transport = streamable_http_client(f"{run.state['url']}/mcp", http_client=authorized)
                    with anyio.fail_after(WAIT):
                        async with Client(transport, mode="legacy") as mcp:  # a session, which /metrics counts
                            meta: Any = {"traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"}
                            result = await mcp.call_tool("mcp__up__traceparent", {}, meta=meta)
                            await mcp.call_tool("mcp__up__traceparent", {})  # a trace of its own
                            during = scraped((await http.get("/metrics")).text)
                assert not result.is_error, result
                text = result.content[0]
                assert isinstance(text, types.TextContent)
                seen_upstream = text.text
                calls = (await http.get("/api/history/calls")).json()["toolCalls"]
                after = scraped((await http.get("/metrics")).text)

                (resource, call), *_ = await _spans_of(receiver, "mcpdeck.tool_call", CLIENT_TRACE)
                ((_, sent),) = await _spans_of(receiver, "MCP send tools/call traceparent", CLIENT_TRACE)
                ((_, served),) = await _spans_of(receiver, "tools/call mcp__up__traceparent", CLIENT_TRACE)

    # The gateway's server span continues the client's trace; the call's span is its child, and the SDK's
    # client span of the request to the upstream is the call's child.
    assert served.parent_span_id.hex() == CLIENT_SPAN
    assert call.parent_span_id == served.span_id
    assert sent.parent_span_id == call.span_id
    # The upstream was sent that trace, with the client span as its parent (W3C traceparent in `_meta`).
    assert seen_upstream == f"00-{CLIENT_TRACE}-{sent.span_id.hex()}-01"
    attributes = _attributes(call.attributes)
    assert attributes["mcpdeck.server"] == "up"
    assert attributes["mcpdeck.tool"] == "traceparent"
    assert attributes["gen_ai.tool.name"] == "traceparent"
    assert attributes["mcpdeck.approval"] == "rule"
    assert attributes["mcpdeck.profile"] == "" and attributes["mcpdeck.token"] == ""
    assert call.status.code != call.status.STATUS_CODE_ERROR
    assert resource["service.name"] == "mcpdeck"
    # The replica (--replica-id) names the span, the exporting process, every history row and every series.
    assert attributes["mcpdeck.replica"] == "r7" and resource["service.instance.id"] == "r7"
    assert [c["replica"] for c in calls] == ["r7", "r7"]
    assert {s.labels.get("replica") for samples in after.values() for s in samples} == {"r7"}
    # The history keeps the trace id with the call; the other call has a trace of its own.
    (second, first) = [c["traceId"] for c in calls]
    assert first == CLIENT_TRACE and second not in (None, CLIENT_TRACE) and len(second) == 32

    # The gateway's session was open while its client was connected; every acknowledged call is counted.
    assert value(during["mcpdeck_gateway_sessions_open"], "mcpdeck_gateway_sessions_open", profile="") == 1
    assert value(after["mcpdeck_gateway_sessions_open"], "mcpdeck_gateway_sessions_open", profile="") == 0
    counted = value(after["mcpdeck_tool_calls"], "mcpdeck_tool_calls_total", server="up", outcome="ok")
    assert counted == len(calls) == 2
    name = "mcp_client_operation_duration_seconds_count"
    assert value(after["mcp_client_operation_duration_seconds"], name, server="up", tool="traceparent") == 2
    assert value(after["mcpdeck_store_commit_duration_seconds"], "mcpdeck_store_commit_duration_seconds_count") > 0


async def test_serve_stdio_names_its_spans_with_the_replica_id_it_is_given(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"basic": stdio_server("basic")}, "permissions": {"allow": ["mcp__*"]}})
    )
    with otlp_receiver() as (endpoint, receiver):
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "50",
            "MCPDECK_HISTORY": str(tmp_path / "history.sqlite3"),
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        }
        args = ["-m", "mcpdeck.cli", "--config", str(config), "serve", "--stdio", "--replica-id", "r9"]
        params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT), env=env)
        with anyio.fail_after(WAIT):
            async with client(params, Seen()) as gateway:
                result = await gateway.call_tool("mcp__basic__echo", {"text": "hi"})
                assert not result.is_error, result
                while not receiver.named("mcpdeck.tool_call"):
                    await anyio.to_thread.run_sync(lambda: _wait(receiver))
        ((resource, call),) = receiver.named("mcpdeck.tool_call")
    assert _attributes(call.attributes)["mcpdeck.replica"] == "r9"
    assert resource["service.instance.id"] == "r9"


async def test_metrics_count_listen_streams_and_the_clients_of_both_eras_seen_in_the_last_minute(
    tmp_path: Path,
) -> None:
    """A 2026-07-28 client holds no session: its open ``subscriptions/listen`` stream is what ``/metrics`` shows of
    it, and both it and a handshake-era client count as clients seen (by token and ``clientInfo``)."""
    listening = "mcpdeck_gateway_listen_streams_open"
    async with serving(tmp_path, {"basic": stdio_server("basic")}) as serve, serve.client() as http:
        await wait_connected(http, "basic")
        token = {"Authorization": f"Bearer {serve.state['token']}"}
        url = f"{serve.state['url']}/mcp"
        async with (
            httpx2.AsyncClient(headers=token, timeout=WAIT) as one,
            httpx2.AsyncClient(headers=token, timeout=WAIT) as two,
        ):
            modern_info = types.Implementation(name="modern-client", version="1")
            legacy_info = types.Implementation(name="legacy-client", version="1")
            with anyio.fail_after(WAIT):
                async with (
                    Client(
                        streamable_http_client(url, http_client=one), mode="auto", client_info=modern_info
                    ) as modern,
                    Client(streamable_http_client(url, http_client=two), mode="legacy", client_info=legacy_info) as old,
                ):
                    assert modern.protocol_version == "2026-07-28"
                    await old.list_tools()
                    async with modern.listen(tools_list_changed=True):
                        during = scraped((await http.get("/metrics")).text)
                    # The stream's end reaches the gateway a moment after the client closed it.
                    while value((after := scraped((await http.get("/metrics")).text))[listening], listening) != 0:  # noqa: ASYNC110
                        await anyio.sleep(0.05)
    assert value(during[listening], listening, profile="") == 1
    assert value(after[listening], listening, profile="") == 0
    assert value(during["mcpdeck_gateway_sessions_open"], "mcpdeck_gateway_sessions_open", profile="") == 1
    assert value(after["mcpdeck_gateway_clients_seen"], "mcpdeck_gateway_clients_seen") == 2
