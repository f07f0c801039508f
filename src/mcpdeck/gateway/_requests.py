"""What every request handler of a gateway profile shares: the client it comes from, the
profile's view, the host error turned into the protocol error the client should see, and
the way a request runs on a server (noted as running, or in rounds for a 2026-07-28 client).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request

from mcpdeck._util.safe_text import safe_text
from mcpdeck.catalog import servers_named_by
from mcpdeck.errors import (
    MCPDeckError,
    PermissionDeniedError,
    PromptNotFoundError,
    ResourceNotFoundError,
    ServerCrashedError,
    ServerError,
    ServerTimeoutError,
    ServerUnavailableError,
    ToolNotFoundError,
)
from mcpdeck.events import CLIENT_META
from mcpdeck.gateway._approval import calling_client
from mcpdeck.gateway._clients import GatewayClient, InFlightRequest, MultiRoundCall
from mcpdeck.gateway._relayed import holder_of, relay_round, responses
from mcpdeck.gateway._view import ProfileView
from mcpdeck.permissions import Access, CallingClient
from mcpdeck.status import ServerState

if TYPE_CHECKING:
    from mcpdeck.gateway._gateway import Gateway

__all__ = [
    "PARKED_TIMEOUT",
    "RESOURCE_NOT_FOUND",
    "TOKEN_STATE",
    "RequestContext",
    "Requests",
    "mcp_error",
    "relayed_client",
    "servers_answer",
]

RequestContext = ServerRequestContext[Any]

RESOURCE_NOT_FOUND = -32002
"""The MCP error code for an unknown resource."""
TOKEN_STATE = "mcpdeck_gateway_token"
"""Where the HTTP layer leaves the name of the token a request used (``scope["state"]``)."""
RELAYED_NAME = 200
"""Characters kept of the client name a relaying gateway states (``relayed_client``)."""
PARKED_TIMEOUT = 300.0
"""Seconds a 2026-07-28 call that asked its client something waits for the client's next round."""


_NOT_AN_ANSWER = (ServerCrashedError, ServerTimeoutError, ServerUnavailableError)


def servers_answer(error: MCPDeckError) -> MCPError | None:
    """The server's own JSON-RPC error behind a host error, if it answered with one.

    Not a crash, a timeout or a server that is down: their causes are the SDK's local errors
    ("Connection closed"), which name no server; the host's own message says which and why.
    """
    cause = error.__cause__
    if isinstance(error, ServerError) and not isinstance(error, _NOT_AN_ANSWER) and isinstance(cause, MCPError):
        return cause
    return None


def mcp_error(error: MCPDeckError, client: GatewayClient | None = None) -> MCPError:
    """The protocol error a client should see for a host error: the server's own, when it sent one."""
    if (answer := servers_answer(error)) is not None:
        return MCPError(code=answer.code, message=answer.message, data=answer.data)
    if isinstance(error, PermissionDeniedError):  # the gate's reason names the client when it could not ask it
        return MCPError(code=INVALID_REQUEST, message=str(error))
    if isinstance(error, ToolNotFoundError | PromptNotFoundError):
        return MCPError(code=INVALID_PARAMS, message=str(error))
    if isinstance(error, ResourceNotFoundError):
        return MCPError(code=RESOURCE_NOT_FOUND, message=str(error), data={"uri": error.uri})
    return MCPError(code=INTERNAL_ERROR, message=str(error))


def relayed_client(params: types.CallToolRequestParams) -> str | None:
    """The client a call is relayed for, as the mcpdeck gateway in front states it (``CLIENT_META`` in the
    call's ``_meta``, sent for servers configured with ``forwardCaller``), made safe to show; None if not stated.

    It is the relaying client's word: the history keeps it beside that client's own name and token.
    """
    meta = params.meta
    stated = meta.get(CLIENT_META) if meta is not None else None
    if not isinstance(stated, str) or not stated.strip():
        return None
    text = safe_text(stated.strip())
    return text if len(text) <= RELAYED_NAME else text[: RELAYED_NAME - 1] + "\u2026"


def _token_of(ctx: RequestContext) -> str | None:
    request = ctx.request
    if isinstance(request, Request):
        state: object = request.scope.get("state")
        if isinstance(state, dict):
            token: object = cast(dict[str, object], state).get(TOKEN_STATE)
            return token if isinstance(token, str) else None
    return None


class Requests:
    """The base of each group of handlers: one profile of one gateway."""

    def __init__(self, gateway: Gateway, profile: str | None) -> None:
        self.gateway = gateway
        self.profile = profile
        self.host = gateway.host

    def view(self) -> ProfileView:
        return self.gateway.view(self.profile)

    async def started(self) -> None:
        """Wait a little for the profile's servers still starting (see ``Gateway.started``)."""
        await self.gateway.started(self.view().servers())

    def named_by(self, name: str) -> list[str]:
        """The profile's servers whose tool or prompt could bear the served name ``name``."""
        view = self.view()
        servers = view.servers()
        return servers_named_by(name, servers) if view.profile.prefix else servers

    async def once_started(self, servers: Iterable[str]) -> bool:
        """Wait for those of ``servers`` still starting (each at most its startup timeout, after which its
        connection gives up); whether there were any (a client may ask for what such a server offers before the
        gateway's servers are up)."""
        statuses = self.host.servers
        starting = [name for name in servers if name in statuses and statuses[name].state is ServerState.CONNECTING]
        if starting:
            async with anyio.create_task_group() as tg:
                for name in starting:
                    tg.start_soon(self.host.wait_settled, name)
        return bool(starting)

    def client(self, ctx: RequestContext) -> GatewayClient:
        return self.gateway.clients.get(ctx, self.profile, _token_of(ctx))

    def approver(self, ctx: RequestContext, who: GatewayClient) -> CallingClient:
        """``who`` as the approver of its request ``ctx``: it approves what no rule covers (unless the gateway's
        ``approval`` is ``ask``), and is asked what an ``ask`` rule asks about."""
        return calling_client(ctx, who, ask_all=self.gateway.approval == "ask", store=self.gateway.approvals)

    def denied_server(self, server: str) -> bool:
        """Whether a ``deny`` rule covers all of ``server``: it is sent no request, not even a log level."""
        return self.gateway.denied_server(server)

    def refuse_denied(self, access: Access) -> None:
        """Refuse a request that a ``deny`` rule covers and nothing is asked about (a completion, a subscription).

        Raises:
            MCPError: A ``deny`` rule (or unreadable rules) covers ``access``.
        """
        if self.gateway.check_permission and (refused := self.host.permissions.denied(access)) is not None:
            raise MCPError(code=INVALID_REQUEST, message=refused.message)

    async def running_on(
        self, ctx: RequestContext, who: GatewayClient, server: str, work: Callable[[], Awaitable[Any]]
    ) -> Any:
        """Run ``work`` as the request of ``who`` (the client ``ctx`` comes from) on ``server``: its log messages and
        questions come back here."""
        gateway = self.gateway
        if gateway.modern and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await self._in_rounds(ctx, who, server, work)
        running = InFlightRequest(who, server, ctx)
        noted = gateway.calls.start(running)
        try:
            return await work()
        finally:
            gateway.calls.end(running, noted)
            if running.pending:
                await running.flush()

    async def _in_rounds(
        self, ctx: RequestContext, who: GatewayClient, server: str, work: Callable[[], Awaitable[Any]]
    ) -> Any:
        """A 2026-07-28 request: the call runs in the gateway's task group, and each question the
        server asks ends this round with an ``InputRequiredResult``; the client's next round answers (relayed
        to the replica that holds the call when its ``requestState`` names another: ``_relayed``)."""
        gateway = self.gateway
        params: Mapping[str, Any] = ctx.params or {}
        state: object = params.get("requestState")
        parked = gateway.parked.get(state) if isinstance(state, str) else None
        token = _token_of(ctx)
        if parked is not None and parked.owner != token:  # another token's call: for this one, no call at all
            parked = None
        if parked is None and isinstance(state, str) and (holder := holder_of(state, gateway.replica)) is not None:
            assert gateway.replica is not None
            raw = params.get("inputResponses")
            outcome = await relay_round(gateway.relay, gateway.replica, holder, state, token, raw)
            if outcome is not None:
                return outcome
        if parked is None:
            key = uuid.uuid4().hex
            parked = MultiRoundCall(f"{gateway.replica}.{key}" if gateway.replica else key, token)
            gateway.parked[parked.key] = parked
            running = InFlightRequest(who, server, ctx, parked=parked)
            gateway.task_group.start_soon(self._park, running, parked, work)
        else:
            parked.answer(responses(params.get("inputResponses")))
        return await parked.round(gateway.parked)

    async def _park(self, running: InFlightRequest, parked: MultiRoundCall, work: Callable[[], Awaitable[Any]]) -> None:
        """Run a 2026-07-28 call to its end, then keep its result for a client that may come back for it."""
        calls = self.gateway.calls
        noted = calls.start(running)
        try:
            parked.finish(await work())
        except Exception as error:  # handed to the round that collects the result
            parked.finish(error=error)
        finally:
            calls.end(running, noted)
        with anyio.move_on_after(PARKED_TIMEOUT):  # a client that never comes back
            await anyio.sleep_forever()
        self.gateway.parked.pop(parked.key, None)
