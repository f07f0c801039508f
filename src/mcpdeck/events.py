"""Typed host events and the bus that delivers them.

Subscribe with a callback (``bus.on(fn)``, called synchronously, in publish order; or
``bus.on(fn, ToolsChanged, ServerLog)`` for those kinds only) or with a stream
(``async with bus.subscribe() as events: async for e in events``). A slow stream subscriber
never blocks the host: past its buffer, events are dropped for it and counted in
``Subscription.dropped``. Publishers ask ``bus.wants(kind)`` before building an event on a
hot path: when no one takes that kind, it need not be built.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpdeck.status import ServerState

if TYPE_CHECKING:  # annotations only: importing the events costs no SDK import
    from mcp_types import LoggingLevel

    from mcpdeck.results import ToolResult

__all__ = [
    "CLIENT_META",
    "ApprovedBy",
    "ConfigChange",
    "ConfigChanged",
    "ConfigReloadFailed",
    "ConfigReloaded",
    "Event",
    "EventBus",
    "PromptsChanged",
    "RemoteEvent",
    "ResourceUpdated",
    "ResourcesChanged",
    "ServerLog",
    "ServerRequestHandled",
    "ServerRequestKind",
    "ServerRequestOutcome",
    "ServerStatusChanged",
    "Subscription",
    "ToolCallFinished",
    "ToolCallProgress",
    "ToolCallStarted",
    "ToolsChanged",
    "current_caller",
    "current_client",
    "current_conversation",
]

logger = logging.getLogger(__name__)

ApprovedBy = Literal[
    "rule",
    "autoApprove",
    "native",
    "user-once",
    "user-session",
    "user-always",
    "client",
    "denied-by-rule",
    "denied-by-user",
    "no-approver",
]
"""Who let a tool call through, or refused it: a rule, a server's ``autoApprove`` list, a native
tool's own rule, the user (once, for the session, always), the calling client (a gateway's client,
which asks its own user, for a call no rule covers), or the refusals."""

ConfigChange = Literal["added", "updated", "removed", "enabled", "disabled"]
"""What ``ConfigChanged`` reports: a server added, updated or removed, or the global switch."""

ServerRequestKind = Literal["elicitation", "sampling", "roots"]
"""What a server asked of the host."""

ServerRequestOutcome = Literal["accept", "decline", "cancel", "answered", "refused", "error"]
"""How the host answered: ``accept``, ``decline`` or ``cancel`` (elicitation), ``answered`` or
``refused`` (sampling, roots), ``error`` (the app's handler failed)."""


current_conversation: ContextVar[str | None] = ContextVar("mcpdeck_conversation", default=None)
"""The conversation a task works for (set by the agent loop); tool-call events carry it."""


current_caller: ContextVar[str | None] = ContextVar("mcpdeck_caller", default=None)
"""Who a task makes calls for, when it is not this program (set by the gateway: the client's name,
and the profile or token it came through); tool-call events carry it."""

current_client: ContextVar[str | None] = ContextVar("mcpdeck_client", default=None)
"""The name of the gateway client a task makes calls for (its ``clientInfo``, or the client an
mcpdeck gateway in front said it relays); sent to servers configured with ``forwardCaller``."""

CLIENT_META = "io.mcpdeck/client"
"""The ``_meta`` key of a tool call that names the client it is made for (``current_client``)."""


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base of every host event."""

    at: datetime = field(default_factory=_now)


@dataclass(frozen=True, kw_only=True)
class ServerStatusChanged(Event):
    """A server moved to another state (``connecting``, ``connected``, ``failed`` ...)."""

    server: str
    state: ServerState
    previous: ServerState
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class ToolsChanged(Event):
    """A server's tools were (re)loaded; the catalog has a new version."""

    server: str
    tool_count: int
    catalog_version: int


@dataclass(frozen=True, kw_only=True)
class ToolCallStarted(Event):
    """``Host.call_tool`` sent a call."""

    call_id: str
    name: str
    server: str
    tool: str
    arguments: dict[str, Any]
    approved_by: ApprovedBy | None = None
    """Who let the call through, when a permission gate decided ("rule", "user-once" ...)."""
    conversation: str | None = None
    """The conversation the call was made in (``current_conversation`` when it was sent)."""
    caller: str | None = None
    """Who made the call through the gateway (``current_caller`` when it was sent)."""
    trace_id: str | None = None
    """The OpenTelemetry trace the call's span belongs to (32 hex digits), when spans are recorded."""


@dataclass(frozen=True, kw_only=True)
class ToolCallFinished(Event):
    """A call ended: with a result (``is_error`` tells if the tool failed) or an ``error``."""

    call_id: str
    name: str
    server: str
    tool: str
    duration: float
    is_error: bool
    error: str | None = None
    result_size: int | None = None
    """Characters of content the result carried (text, and binary data as base64)."""
    approved_by: ApprovedBy | None = None
    """Who let the call through, when a permission gate decided ("rule", "user-once" ...)."""
    result: ToolResult | None = field(default=None, repr=False, compare=False, metadata={"json": False})
    """The result itself (None when the call failed), for those that keep it (the history keeps its
    start); not part of the event's JSON form."""


@dataclass(frozen=True, kw_only=True)
class ToolCallProgress(Event):
    """A running call reported progress (``total`` may be None; ``message`` is optional)."""

    call_id: str
    name: str
    server: str
    progress: float
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True, kw_only=True)
class ResourcesChanged(Event):
    """A server's resources or resource templates were (re)loaded."""

    server: str
    resource_count: int
    template_count: int


@dataclass(frozen=True, kw_only=True)
class PromptsChanged(Event):
    """A server's prompts were (re)loaded."""

    server: str
    prompt_count: int


@dataclass(frozen=True, kw_only=True)
class ResourceUpdated(Event):
    """A subscribed resource changed on its server: read it again to see how."""

    server: str
    uri: str


@dataclass(frozen=True, kw_only=True)
class ServerLog(Event):
    """A log message a server sent (MCP logging), also written to that server's log file."""

    server: str
    level: LoggingLevel
    logger: str | None
    data: Any


@dataclass(frozen=True, kw_only=True)
class ServerRequestHandled(Event):
    """A server asked something of the host (elicitation, sampling, roots) and got an answer.

    ``outcome`` is ``accept``, ``decline`` or ``cancel`` for elicitation, ``answered`` or
    ``refused`` for sampling, ``answered`` for roots, ``error`` when the app's handler failed;
    ``detail`` says why a request was refused or failed.
    """

    server: str
    kind: ServerRequestKind
    outcome: ServerRequestOutcome
    detail: str | None = None


@dataclass(frozen=True, kw_only=True)
class ConfigChanged(Event):
    """The host changed its config file (or its in-memory config)."""

    server: str | None
    """The server concerned; None for the global switch (``enabled`` / ``disabled``)."""
    change: ConfigChange


@dataclass(frozen=True, kw_only=True)
class ConfigReloaded(Event):
    """The config file changed on disk and the changes were applied."""

    path: str
    added: list[str] = field(default_factory=list[str])
    updated: list[str] = field(default_factory=list[str])
    removed: list[str] = field(default_factory=list[str])


@dataclass(frozen=True, kw_only=True)
class ConfigReloadFailed(Event):
    """An edit of the config file could not be applied (whole file, or one ``server``); what ran keeps running."""

    path: str
    error: str
    server: str | None = None


@dataclass(frozen=True, kw_only=True)
class RemoteEvent(Event):
    """An event of another replica of the fleet (``serve`` replicas on one PostgreSQL store), as it said it.

    ``kind`` is its type's name (``ToolCallFinished`` ...) and ``data`` its JSON form (``mcpdeck.api.event_json``),
    possibly trimmed (``trimmed`` names what was left out). Re-emitted on this host's bus for those who follow
    live events (the console); it is not this host's own: no metrics, history or gateway news are made of it,
    and it is never told to the fleet again.
    """

    replica: str
    kind: str
    data: dict[str, Any]


class Subscription:
    """One stream subscriber: iterate it for events."""

    def __init__(self, receive: MemoryObjectReceiveStream[Event]):
        self._receive = receive
        self.dropped = 0

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        try:
            return await self._receive.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def receive(self) -> Event:
        """The next event."""
        return await self._receive.receive()


class EventBus:
    """Delivers host events to callbacks and stream subscribers."""

    def __init__(self) -> None:
        self._callbacks: list[tuple[Callable[[Event], None], tuple[type[Event], ...]]] = []
        self._streams: list[tuple[MemoryObjectSendStream[Event], Subscription]] = []
        self._wanted: dict[type[Event] | tuple[type[Event], ...], bool] = {}
        """``wants`` (and ``wants_any``) answers, until the next subscriber comes or goes."""

    def on(self, callback: Callable[[Event], None], *kinds: type[Event]) -> Callable[[], None]:
        """Call ``callback(event)`` for every event (or for events of ``kinds`` only); returns a function that
        unsubscribes."""
        entry = (callback, kinds)
        self._callbacks.append(entry)
        self._wanted.clear()

        def off() -> None:
            self._callbacks.remove(entry)
            self._wanted.clear()

        return off

    @asynccontextmanager
    async def subscribe(self, buffer: int = 1000) -> AsyncGenerator[Subscription]:
        """A stream of events from now until the block ends."""
        send, receive = anyio.create_memory_object_stream[Event](buffer)
        sub = Subscription(receive)
        entry = (send, sub)
        self._streams.append(entry)
        self._wanted.clear()
        try:
            yield sub
        finally:
            self._streams.remove(entry)
            self._wanted.clear()
            send.close()
            receive.close()

    def wants(self, kind: type[Event]) -> bool:
        """Whether anyone takes events of ``kind`` (publishers may skip building those no one takes). Cached until
        the next subscriber comes or goes: on the event loop only (another thread asks ``takes``)."""
        wanted = self._wanted.get(kind)
        if wanted is None:
            wanted = self._wanted[kind] = self.takes(kind)
        return wanted

    def wants_any(self, kinds: tuple[type[Event], ...]) -> bool:
        """Whether anyone takes events of any of ``kinds``: ``wants`` for several kinds at once (a tool call asks it
        of its three kinds on every call), cached as it is."""
        wanted = self._wanted.get(kinds)
        if wanted is None:
            wanted = any(self.wants(kind) for kind in kinds)
            self._wanted[kinds] = wanted
        return wanted

    def takes(self, kind: type[Event]) -> bool:
        """Whether anyone takes events of ``kind`` now, worked out afresh: safe to ask from another thread (it reads
        a copy of the subscribers and caches nothing)."""
        return bool(self._streams) or any(not kinds or issubclass(kind, kinds) for _, kinds in list(self._callbacks))

    def publish(self, event: Event) -> None:
        """Deliver ``event`` now. Never blocks and never raises."""
        for callback, kinds in list(self._callbacks):
            if kinds and not isinstance(event, kinds):
                continue
            try:
                callback(event)
            except Exception:  # a subscriber's bug must not break the host
                logger.exception("event callback %r failed", callback)
        for send, sub in self._streams:
            try:
                send.send_nowait(event)
            except anyio.WouldBlock:
                sub.dropped += 1
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
