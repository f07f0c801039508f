"""The gateway's connected clients, and the host's news each of them gets.

A client is registered on its first request and dropped when its connection ends. Host
events become notifications: list changes to the clients whose profile has that server,
resource updates to the clients subscribed to the URI, log messages to the client whose
call is running on that server (on the call's own stream, before its answer) or, outside
calls, to every client whose profile has the server and whose level lets it through.

Clients of 2026-07-28 have no connection to notify: they open ``subscriptions/listen``
streams. Each profile's streams hang off one subscription bus (``buses``); list changes and
resource updates are published there too, and the SDK's listen handler gives each stream
what it asked for. A stream's resource URIs count as subscriptions like a client's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ServerEvent,
    SubscriptionBus,
    ToolsListChanged,
)
from mcp.server.subscriptions import ResourceUpdated as ResourceChanged

from mcpdeck._sdk import session_connection
from mcpdeck.events import (
    Event,
    PromptsChanged,
    ResourcesChanged,
    ResourceUpdated,
    ServerLog,
    ToolsChanged,
)
from mcpdeck.gateway._approval import ApprovalStore, session_ended
from mcpdeck.gateway._clients import LEVELS, Calls, GatewayClient, send_log, sole_face
from mcpdeck.host import Host

__all__ = ["UNSUBSCRIBE_LIMIT", "ConnectedClients"]

logger = logging.getLogger(__name__)

_STATE_KEY = "mcpdeck_gateway_client"
UNSUBSCRIBE_LIMIT = 1.0
RECENT = 60.0
"""Seconds within which a client that made a request counts as seen (``seen_recently``)."""
"""Seconds a departing client's subscriptions get to be dropped upstream (the rest are dropped here only)."""


class ConnectedClients:
    """Every client connected to the gateway, on any profile."""

    def __init__(
        self,
        host: Host,
        calls: Calls,
        serves: Callable[[str | None, str], bool],
        approvals: ApprovalStore | None = None,
    ):
        self._host = host
        self.approvals = approvals
        """Where the clients' session approvals are shared with other replicas (None: nowhere)."""
        self._calls = calls
        self._serves = serves  # (profile, server) -> whether the profile has the server
        self._clients: list[GatewayClient] = []
        self._subscribers: dict[str, set[Hashable]] = {}
        self.buses: dict[str | None, SubscriptionBus] = {}
        """Each profile's ``subscriptions/listen`` streams (2026-07-28 clients), by profile."""
        self.listening: dict[str | None, int] = {}
        """The ``subscriptions/listen`` streams open now, by profile."""
        self._seen: dict[tuple[str | None, str], float] = {}  # (token, client name) -> when it last made a request
        self._upstream_level: types.LoggingLevel | None = None
        self._held: set[int] = set()  # log events held for running calls: not delivered again

    def __iter__(self) -> Any:
        return iter(list(self._clients))

    def __len__(self) -> int:
        return len(self._clients)

    def get(self, ctx: ServerRequestContext[Any], profile: str | None, token: str | None) -> GatewayClient:
        """The client a request comes from, registered on its first request."""
        connection = session_connection(ctx.session)
        found: object = connection.state.get(_STATE_KEY)
        if isinstance(found, GatewayClient):
            found.session = ctx.session
            self._seen[token, found.name] = time.monotonic()
            return found
        client = GatewayClient(ctx.session, profile, token, sole=sole_face.get())
        connection.state[_STATE_KEY] = client
        self._clients.append(client)
        connection.exit_stack.push_async_callback(self._gone, client)
        self._seen[token, client.name] = time.monotonic()
        return client

    def seen_recently(self) -> int:
        """How many clients (a token and a ``clientInfo``: of either era, with a session or not) made a request in
        the last ``RECENT`` seconds; the older ones are forgotten."""
        since = time.monotonic() - RECENT
        for key in [key for key, at in self._seen.items() if at < since]:
            del self._seen[key]
        return len(self._seen)

    async def _gone(self, client: GatewayClient) -> None:
        if client in self._clients:
            self._clients.remove(client)
        if self._calls.sole is client:
            self._calls.sole = None
        await self.unsubscribe_all(client, list(client.subscriptions))
        with anyio.move_on_after(UNSUBSCRIBE_LIMIT, shield=True):  # also while the gateway stops
            await session_ended(client, self.approvals)

    async def unsubscribe_all(self, client: Hashable, uris: Iterable[str]) -> None:
        """Drop a departing client's (or listen stream's) subscriptions, also while the gateway stops (shielded),
        at most ``UNSUBSCRIBE_LIMIT`` seconds: a server that does not answer must not hold the stop up."""
        with anyio.move_on_after(UNSUBSCRIBE_LIMIT, shield=True):
            async with anyio.create_task_group() as tg:
                for uri in uris:
                    tg.start_soon(self.unsubscribe, client, uri)

    # ----- subscriptions -----------------------------------------------------------------

    async def subscribe(self, client: Hashable, uri: str, server: str) -> None:
        """Subscribe ``client`` (a ``GatewayClient``, or anything standing for a listen stream) to a resource;
        the first subscriber subscribes the host to it."""
        subscribers = self._subscribers.setdefault(uri, set())
        if not subscribers:
            try:
                await self._host.subscribe_resource(uri, server=server)
            except BaseException:
                if not subscribers:
                    self._subscribers.pop(uri, None)
                raise
        subscribers.add(client)
        if isinstance(client, GatewayClient):
            client.subscriptions.add(uri)

    def subscribed(self) -> set[str]:
        """The resource URIs some client or listen stream is subscribed to now."""
        return set(self._subscribers)

    async def unsubscribe(self, client: Hashable, uri: str) -> None:
        """Drop a client's subscription; the last one leaving unsubscribes the host."""
        if isinstance(client, GatewayClient):
            client.subscriptions.discard(uri)
        subscribers = self._subscribers.get(uri)
        if subscribers is None:
            return
        subscribers.discard(client)
        if not subscribers:
            del self._subscribers[uri]
            try:
                await self._host.unsubscribe_resource(uri)
            except Exception as error:  # the server went away: nothing left to unsubscribe from
                logger.info("gateway: unsubscribing from %s failed: %s", uri, error)

    async def lower_server_level(self, level: types.LoggingLevel, servers: Iterable[str]) -> None:
        """Make the servers send log messages from ``level`` up, if that is lower than asked so far.

        The servers are shared by every client, so their level only goes down; each client
        gets only the messages its own level lets through.
        """
        current = self._upstream_level
        if current is not None and LEVELS.index(level) >= LEVELS.index(current):
            return
        self._upstream_level = level
        await self._host.set_log_level(level, servers)

    # ----- host news -----------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        """Hold a log message for the call it belongs to (called synchronously, in event order)."""
        if isinstance(event, ServerLog):
            running = self._calls.running_on(event.server)
            if running:
                by_client: dict[int, Any] = {id(r.client): r for r in running}  # each client's newest call
                params = types.LoggingMessageNotificationParams(level=event.level, logger=event.logger, data=event.data)  # pyright: ignore[reportArgumentType]
                for entry in by_client.values():
                    if entry.client.wants(event.level):
                        entry.pending.append(params)
                self._held.add(id(event))

    async def deliver(self, event: Event) -> None:
        """Send what an event means to the clients it concerns (log messages of calls are sent with them)."""
        if isinstance(event, ToolsChanged | ResourcesChanged | PromptsChanged):
            for client in self._concerned(event.server):
                session = client.session
                if isinstance(event, ToolsChanged):
                    await self._send(client, session.send_tool_list_changed())
                elif isinstance(event, ResourcesChanged):
                    await self._send(client, session.send_resource_list_changed())
                else:
                    await self._send(client, session.send_prompt_list_changed())
        elif isinstance(event, ResourceUpdated):
            for client in list(self._subscribers.get(event.uri) or ()):
                if isinstance(client, GatewayClient):
                    await self._send(client, client.session.send_resource_updated(event.uri))
        elif isinstance(event, ServerLog):
            if id(event) in self._held:
                self._held.discard(id(event))
                return
            params = types.LoggingMessageNotificationParams(level=event.level, logger=event.logger, data=event.data)  # pyright: ignore[reportArgumentType]
            for client in self._concerned(event.server):
                if client.wants(event.level):
                    await self._send(client, send_log(client.session, params, None))
        await self._publish(event)

    async def profile_changed(self, profile: str) -> None:
        """A profile was added, edited or removed: its clients list tools, resources and prompts again."""
        for client in [c for c in self._clients if c.profile == profile]:
            await self._send(client, client.session.send_tool_list_changed())
            await self._send(client, client.session.send_resource_list_changed())
            await self._send(client, client.session.send_prompt_list_changed())
        bus = self.buses.get(profile)
        if bus is not None:
            for news in (ToolsListChanged(), ResourcesListChanged(), PromptsListChanged()):
                try:
                    await bus.publish(news)
                except Exception as error:  # as in _publish: the other clients' news goes on
                    logger.warning("gateway: could not publish %s: %s", type(news).__name__, error)

    async def _publish(self, event: Event) -> None:
        """Put a list change or resource update on the listen streams of the profiles that have its server."""
        news: ServerEvent
        if isinstance(event, ToolsChanged):
            news, server = ToolsListChanged(), event.server
        elif isinstance(event, ResourcesChanged):
            news, server = ResourcesListChanged(), event.server
        elif isinstance(event, PromptsChanged):
            news, server = PromptsListChanged(), event.server
        elif isinstance(event, ResourceUpdated):
            news, server = ResourceChanged(uri=event.uri), event.server
        else:
            return
        for profile, bus in list(self.buses.items()):
            if self._serves(profile, server):
                try:
                    await bus.publish(news)
                except Exception as error:  # a bus that fails must not stop the other clients' news
                    logger.warning("gateway: could not publish %s: %s", type(news).__name__, error)

    @staticmethod
    async def _send(client: GatewayClient, sending: Awaitable[None]) -> None:
        try:
            await sending
        except Exception as error:  # a client that went away must not stop the others' news
            logger.debug("gateway: could not notify %s: %s", client.name, error)

    def _concerned(self, server: str) -> list[GatewayClient]:
        return [client for client in self._clients if self._serves(client.profile, server)]
