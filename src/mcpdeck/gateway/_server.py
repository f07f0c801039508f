"""One profile of the gateway as an SDK low-level ``Server``: each request handled by the host.

The SDK does the protocol (JSON-RPC, the handshake, both eras, cancellation, ping); the
handlers (``_handlers``, one group per kind of request) turn each request into a ``Host``
call under the profile's names. Here they are wired to the server.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp import MCPError
from mcp.server import Server
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp_types.jsonrpc import METHOD_NOT_FOUND

from mcpdeck._util.version import __version__
from mcpdeck.gateway._handlers import (
    ListenRequests,
    LoggingRequests,
    PromptRequests,
    ResourceRequests,
    RootsRequests,
    ToolRequests,
)
from mcpdeck.gateway._requests import RequestContext, ServedProfile
from mcpdeck.gateway._spans import tracing

if TYPE_CHECKING:
    from mcpdeck.gateway._approval import GatewayGate
    from mcpdeck.gateway._connected_clients import ConnectedClients
    from mcpdeck.gateway._requests import InFlight

__all__ = ["build_server"]

_HANDSHAKE_ONLY = (
    "this gateway speaks the initialize handshake (protocol 2025-11-25 and earlier), where servers can ask "
    "the client questions in the middle of a call; connect with initialize"
)


class _GatewayServer(Server[Any]):
    """Announces every list change: the catalog changes whenever a server does."""

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


async def _no_discover(ctx: RequestContext, params: types.RequestParams) -> types.EmptyResult:
    raise MCPError(code=METHOD_NOT_FOUND, message=_HANDSHAKE_ONLY)


def build_server(
    served: ServedProfile,
    clients: ConnectedClients,
    gate: GatewayGate,
    in_flight: InFlight,
    *,
    name: str,
    instructions: str,
    modern: bool,
) -> Server[Any]:
    """The MCP server for one profile (``served``): its handlers, each group given what it uses (the profile, the
    connected clients, the gate, the requests in flight), which the ``Gateway`` owns."""
    tools = ToolRequests(served, clients, gate, in_flight)
    resources = ResourceRequests(served, clients, gate, in_flight)
    prompts = PromptRequests(served, clients, gate, in_flight)
    logs = LoggingRequests(served, clients, gate)
    roots = RootsRequests(served, clients, gate, in_flight.calls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # on_set_logging_level is deprecated as of 2026-07-28; older clients use it
        server = _GatewayServer(  # pyright: ignore[reportDeprecated]
            name,
            version=__version__,
            instructions=instructions,
            on_list_tools=tools.list_tools,
            on_call_tool=tools.call_tool,
            on_list_resources=resources.list_resources,
            on_list_resource_templates=resources.list_templates,
            on_read_resource=resources.read_resource,
            on_subscribe_resource=resources.subscribe,
            on_unsubscribe_resource=resources.unsubscribe,
            on_list_prompts=prompts.list_prompts,
            on_get_prompt=prompts.get_prompt,
            on_completion=prompts.complete,
            on_set_logging_level=logs.set_level,
        )
    server.add_notification_handler("notifications/initialized", types.NotificationParams, roots.initialized)
    server.add_notification_handler(
        "notifications/roots/list_changed", types.NotificationParams, roots.roots_list_changed
    )
    if not tracing():  # the SDK's span middleware costs even when the spans go nowhere (see ``_spans``)
        server.middleware = [m for m in server.middleware if type(m).__name__ != "OpenTelemetryMiddleware"]
    if modern:
        bus = clients.buses[served.name] = InMemorySubscriptionBus()
        listen = ListenRequests(served, clients, gate, ListenHandler(bus))
        server.add_request_handler(
            "subscriptions/listen", types.SubscriptionsListenRequestParams, listen.subscriptions_listen
        )
    else:
        server.add_request_handler("server/discover", types.RequestParams, _no_discover)
    return server
