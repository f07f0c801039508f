"""What every request handler of a gateway profile shares: the client it comes from, the
profile's view, the host error turned into the protocol error the client should see, and
the way a request runs on a server (noted as running, or in rounds for a 2026-07-28 client).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from functools import partial
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
from mcpdeck.gateway._approval import GatewayGate
from mcpdeck.gateway._clients import Calls, GatewayClient, InFlightRequest, MultiRoundCall
from mcpdeck.gateway._connected_clients import ConnectedClients
from mcpdeck.gateway._relayed import RoundRelay, holder_of, relay_round, responses
from mcpdeck.gateway._view import ProfileView
from mcpdeck.status import ServerState

if TYPE_CHECKING:
    from mcpdeck.host import Host

__all__ = [
    "PARKED_TIMEOUT",
    "RESOURCE_NOT_FOUND",
    "TOKEN_STATE",
    "InFlight",
    "RequestContext",
    "Requests",
    "RunningRequests",
    "ServedProfile",
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


class ServedProfile:
    """One profile of the gateway as its handlers see it: the host, what the profile shows now, and the wait for
    its servers still starting.

    Args:
        host: The host whose servers the gateway serves.
        name: The profile (None: the whole catalog).
        views: What a profile shows now (``Gateway.view``: made again only when its config changed).
        started: Wait a little for those of some servers still starting (``Gateway.started``).
    """

    def __init__(
        self,
        host: Host,
        name: str | None,
        views: Callable[[str | None], ProfileView],
        started: Callable[[Iterable[str]], Awaitable[None]],
    ) -> None:
        self.host = host
        self.name = name
        self._views = views
        self._started = started

    def view(self) -> ProfileView:
        return self._views(self.name)

    async def started(self) -> None:
        """Wait a little for the profile's servers still starting (see ``Gateway.started``)."""
        await self._started(self.view().servers())

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


class InFlight:
    """Clients' requests running on servers: noted in ``calls`` while they run (so a server's questions and log
    messages find their client), or, for a 2026-07-28 client, run in rounds: the call goes on in the gateway's
    task group between them, ``parked`` under its ``requestState`` (relayed to the replica that holds it when
    a round names another).

    Args:
        calls: The requests running now, by server.
        modern: Whether the gateway offers protocol 2026-07-28 (``Gateway(modern=...)``).
        replica: This process's replica id, the prefix of the ``requestState`` it gives (None: no fleet).
        relay: How a round of another replica's call reaches it (None: refused clearly).
        spawn: Start a task in the gateway's task group (raises while the gateway is not open).
    """

    def __init__(
        self,
        calls: Calls,
        *,
        modern: bool,
        replica: str | None,
        relay: RoundRelay | None,
        spawn: Callable[[Callable[[], Coroutine[Any, Any, None]]], None],
    ) -> None:
        self.calls = calls
        self.modern = modern
        self.replica = replica
        self.relay = relay
        self._spawn = spawn
        self.parked: dict[str, MultiRoundCall] = {}
        """2026-07-28 calls waiting for their client's next round, by ``requestState``."""

    async def run(
        self, ctx: RequestContext, who: GatewayClient, server: str, work: Callable[[], Awaitable[Any]]
    ) -> Any:
        """Run ``work`` as the request of ``who`` (the client ``ctx`` comes from) on ``server``: its log messages
        and questions come back here."""
        if self.modern and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await self._in_rounds(ctx, who, server, work)
        running = InFlightRequest(who, server, ctx)
        noted = self.calls.start(running)
        try:
            return await work()
        finally:
            self.calls.end(running, noted)
            if running.pending:
                await running.flush()

    async def _in_rounds(
        self, ctx: RequestContext, who: GatewayClient, server: str, work: Callable[[], Awaitable[Any]]
    ) -> Any:
        """A 2026-07-28 request: the call runs in the gateway's task group, and each question the
        server asks ends this round with an ``InputRequiredResult``; the client's next round answers (relayed
        to the replica that holds the call when its ``requestState`` names another: ``_relayed``)."""
        params: Mapping[str, Any] = ctx.params or {}
        state: object = params.get("requestState")
        parked = self.parked.get(state) if isinstance(state, str) else None
        token = _token_of(ctx)
        if parked is not None and parked.owner != token:  # another token's call: for this one, no call at all
            parked = None
        if parked is None and isinstance(state, str) and (holder := holder_of(state, self.replica)) is not None:
            assert self.replica is not None
            raw = params.get("inputResponses")
            outcome = await relay_round(self.relay, self.replica, holder, state, token, raw)
            if outcome is not None:
                return outcome
        if parked is None:
            key = uuid.uuid4().hex
            parked = MultiRoundCall(f"{self.replica}.{key}" if self.replica else key, token)
            self.parked[parked.key] = parked
            running = InFlightRequest(who, server, ctx, parked=parked)
            self._spawn(partial(self._park, running, parked, work))
        else:
            parked.answer(responses(params.get("inputResponses")))
        return await parked.round(self.parked)

    async def _park(self, running: InFlightRequest, parked: MultiRoundCall, work: Callable[[], Awaitable[Any]]) -> None:
        """Run a 2026-07-28 call to its end, then keep its result for a client that may come back for it."""
        calls = self.calls
        noted = calls.start(running)
        try:
            parked.finish(await work())
        except Exception as error:  # handed to the round that collects the result
            parked.finish(error=error)
        finally:
            calls.end(running, noted)
        with anyio.move_on_after(PARKED_TIMEOUT):  # a client that never comes back
            await anyio.sleep_forever()
        self.parked.pop(parked.key, None)


class Requests:
    """The base of each group of handlers: one profile of one gateway, its connected clients, and its gate.

    Each group is given what it uses and nothing else (``_server.build_server`` puts them together): a group
    that runs requests on servers takes an ``InFlight`` too.
    """

    def __init__(self, profile: ServedProfile, clients: ConnectedClients, gate: GatewayGate) -> None:
        self.served = profile
        self.profile = profile.name
        self.host = profile.host
        self.clients = clients
        self.gate = gate
        self.view = profile.view
        self.started = profile.started
        self.named_by = profile.named_by
        self.once_started = profile.once_started

    def client(self, ctx: RequestContext) -> GatewayClient:
        return self.clients.get(ctx, self.profile, _token_of(ctx))


class RunningRequests(Requests):
    """A group of handlers whose requests run on servers (tools, resources, prompts)."""

    def __init__(self, profile: ServedProfile, clients: ConnectedClients, gate: GatewayGate, in_flight: InFlight):
        super().__init__(profile, clients, gate)
        self.running_on = in_flight.run
