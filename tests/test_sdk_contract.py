"""The SDK's private parts mcpdeck relies on, each checked against the installed SDK (no mocks).

mcpdeck pins ``mcp`` exactly; a newer SDK is taken on purpose (docs/architecture.md, "The SDK and its
pins"). These tests are the first thing to run on it: each one names a private member mcpdeck imports,
overrides, calls or reads, and fails naming that member and where mcpdeck uses it when the SDK moved,
renamed or re-signed it. The list here and the private-SDK table of docs/architecture.md are one list.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider, PrivateKeyJWTOAuthProvider
from mcp.client.streamable_http import StreamableHTTPTransport
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared._httpx_utils import RedirectAwareAuth
from mcp.shared.auth import OAuthClientMetadata

from tests.helpers import WAIT

MODULE_NAMES = [
    # (module, name, where mcpdeck uses it)
    ("mcp.client._transport", "Transport", "the transports mcp.Client takes: stdio, HTTP, SSE, the taps"),
    ("mcp.client._transport", "TransportStreams", "the pair of streams every transport yields"),
    ("mcp.shared._stream_protocols", "ReadStream", "the streams the watch, the taps and HandshakeFirst wrap"),
    ("mcp.shared._stream_protocols", "WriteStream", "the streams the taps and HandshakeFirst wrap"),
    ("mcp.shared._httpx_utils", "create_mcp_http_client", "the SSE transport's HTTP client"),
    ("mcp.shared._httpx_utils", "RedirectAwareAuth", "the identity-assertion grant's base class"),
    ("mcp.client.streamable_http", "StreamWriter", "the streamable HTTP overrides' stream type"),
    ("mcp.shared.jsonrpc_dispatcher", "otel_span", "replaced by the gateway when no tracer is set"),
    ("mcp.shared.jsonrpc_dispatcher", "inject_trace_context", "replaced by the gateway when no tracer is set"),
    ("httpcore2._backends.anyio", "AnyIOStream", "the HTTP pool's streams, asked cheaply about idle connections"),
    ("httpcore2._utils", "is_socket_readable", "the question those streams answer for the pool"),
]


@pytest.mark.parametrize(("module", "name", "use"), MODULE_NAMES, ids=[f"{m}.{n}" for m, n, _ in MODULE_NAMES])
def test_a_private_name_mcpdeck_imports_is_there(module: str, name: str, use: str) -> None:
    found = importlib.import_module(module)
    assert hasattr(found, name), f"the SDK has no {module}.{name} any more ({use})"


METHODS: list[tuple[type[Any], str, list[str], str]] = [
    # (class, method, its parameters as mcpdeck calls or overrides it, where)
    (
        StreamableHTTPTransport,
        "post_writer",
        ["self", "client", "write_stream_reader", "read_stream_writer", "write_stream", "start_get_stream", "tg"],
        "run by the watched streamable HTTP transport",
    ),
    (
        StreamableHTTPTransport,
        "handle_get_stream",
        ["self", "client", "read_stream_writer"],
        "run by the watched streamable HTTP transport",
    ),
    (
        StreamableHTTPTransport,
        "_handle_json_response",
        ["self", "response", "read_stream_writer", "request_id"],
        "overridden: the size bound on an answer",
    ),
    (
        StreamableHTTPTransport,
        "_handle_sse_event",
        ["self", "sse", "read_stream_writer", "original_request_id", "resumption_callback"],
        "overridden: an unreadable event as one clear error",
    ),
    (
        StreamableHTTPTransport,
        "_resolve_abandoned_request",
        ["self", "read_stream_writer", "request_id", "message", "code"],
        "overridden: an unreadable answer as one clear error",
    ),
    (StreamableHTTPTransport, "terminate_session", ["self", "client"], "overridden: the DELETE shielded and bounded"),
    (
        StreamableHTTPServerTransport,
        "_handle_post_request",
        ["self", "scope", "request", "receive", "send"],
        "overridden: a call's result as one JSON body",
    ),
    (StreamableHTTPServerTransport, "_mint_priming_event", ["self", "stream_id", "protocol_version"], "called"),
    (
        StreamableHTTPServerTransport,
        "_create_session_message",
        ["self", "message", "request", "request_id", "protocol_version"],
        "called",
    ),
    (StreamableHTTPServerTransport, "_validate_request_headers", ["self", "request", "send"], "called"),
    (
        StreamableHTTPServerTransport,
        "_run_sse_writer",
        ["self", "request_id", "sse_stream_writer", "request_stream_reader", "priming_event"],
        "called",
    ),
    (StreamableHTTPServerTransport, "_create_event_data", ["self", "event_message"], "called"),
    (
        StreamableHTTPServerTransport,
        "_create_json_response",
        ["self", "response_message", "status_code", "headers"],
        "called",
    ),
    (
        StreamableHTTPServerTransport,
        "_create_error_response",
        ["self", "error_message", "status_code", "error_code", "headers"],
        "called",
    ),
    (StreamableHTTPServerTransport, "_clean_up_memory_streams", ["self", "request_id"], "called"),
    (
        StreamableHTTPSessionManager,
        "_admit_session",
        ["self", "requestor"],
        "overridden: sessions made with the gateway's transport",
    ),
    (OAuthClientProvider, "_initialize", ["self"], "overridden and called by _sdk.oauth: stored expiry and metadata"),
    (
        ClientCredentialsOAuthProvider,
        "_initialize",
        ["self"],
        "called by _sdk.oauth's _initialize (machine grants)",
    ),
    (PrivateKeyJWTOAuthProvider, "_initialize", ["self"], "called by _sdk.oauth's _initialize (machine grants)"),
    (OAuthClientProvider, "_expected_issuer", ["self"], "overridden by _sdk.oauth: the 2025-03-26 issuer"),
    (
        OAuthClientProvider,
        "_auth_flow",
        ["self", "request"],
        "overridden, called by _sdk.oauth: one refresh",
    ),
    (
        OAuthClientProvider,
        "_perform_authorization_code_grant",
        ["self"],
        "overridden and called by _sdk.oauth: auth's login gate",
    ),
    (OAuthClientProvider, "_add_auth_header", ["self", "request"], "called by _sdk.oauth: a token at hand, no lock"),
    (RedirectAwareAuth, "_auth_flow", ["self", "request"], "overridden by _sdk.oauth: the identity-assertion flow"),
]


@pytest.mark.parametrize(
    ("owner", "name", "parameters", "use"), METHODS, ids=[f"{o.__name__}.{n}" for o, n, _, _ in METHODS]
)
def test_a_private_method_mcpdeck_overrides_or_calls_keeps_its_parameters(
    owner: type[Any], name: str, parameters: list[str], use: str
) -> None:
    where = f"{owner.__module__}.{owner.__qualname__}.{name}"
    method: Callable[..., Any] | None = getattr(owner, name, None)
    assert method is not None, f"the SDK has no {where} any more ({use})"
    assert list(inspect.signature(method).parameters) == parameters, f"the SDK re-signed {where} ({use})"


def test_the_server_transport_s_private_attributes_the_gateway_reads_are_set() -> None:
    transport = StreamableHTTPServerTransport(mcp_session_id="contract")
    for name in ("_read_stream_writer", "_request_streams", "_sse_stream_writers"):
        assert hasattr(transport, name), f"StreamableHTTPServerTransport.{name} is gone (the gateway's JSON answers)"
    assert isinstance(transport._request_streams, dict)  # pyright: ignore[reportPrivateUsage]
    assert isinstance(transport._sse_stream_writers, dict)  # pyright: ignore[reportPrivateUsage]


def test_the_session_manager_s_private_attributes_the_gateway_reads_are_set() -> None:
    manager = StreamableHTTPSessionManager(app=Server("contract"))
    for name in ("_server_instances", "_session_owners"):
        assert isinstance(getattr(manager, name, None), dict), (
            f"StreamableHTTPSessionManager.{name} is gone or no dict (the gateway's sessions)"
        )


class _MemoryStorage:
    async def get_tokens(self) -> None:
        return None

    async def set_tokens(self, tokens: object) -> None:
        return None

    async def get_client_info(self) -> None:
        return None

    async def set_client_info(self, client_info: object) -> None:
        return None


def test_the_oauth_provider_s_loaded_flag_that_auth_reads_is_set() -> None:
    """``OAuthClientProvider._initialized``: whether the stored tokens are loaded (``_sdk.oauth``'s
    ``initialized``), read before a request goes out with a token at hand, without the SDK's lock."""
    metadata = OAuthClientMetadata.model_validate({"redirect_uris": ["http://127.0.0.1:1/callback"]})
    provider = OAuthClientProvider("https://mcp.example/mcp", metadata, _MemoryStorage())
    assert getattr(provider, "_initialized", None) is False, (
        "OAuthClientProvider._initialized is gone or no bool (auth's DeckFlow: a token at hand)"
    )


@pytest.mark.anyio
async def test_a_request_s_session_has_the_connection_the_gateway_keeps_its_client_on() -> None:
    """``ctx.session._connection``: the per-client state and exit stack the gateway registers each client in."""
    seen: list[tuple[bool, bool]] = []

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> Any:
        connection = getattr(ctx.session, "_connection", None)
        seen.append(
            (
                isinstance(getattr(connection, "state", None), dict),
                hasattr(getattr(connection, "exit_stack", None), "push_async_callback"),
            )
        )
        return types.ListToolsResult(tools=[])

    server = Server("contract", on_list_tools=list_tools)
    with anyio.fail_after(WAIT):
        async with Client(server) as client:
            await client.list_tools()
    assert seen == [(True, True)], "ServerSession._connection (its .state dict and .exit_stack) is gone"
