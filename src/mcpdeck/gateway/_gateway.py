"""``Gateway``: a running ``Host`` served to other MCP clients as one MCP server.

::

    async with Host.from_file() as host, Gateway(host) as gateway:
        await gateway.run_stdio()                      # mcpdeck gateway --stdio
        # or serve gateway.asgi() (streamable HTTP at /mcp and /mcp/<profile>)

Entering the gateway routes the servers' requests (elicitation, sampling, roots) to the
client whose call is running, starts passing the host's news (list changes, resource
updates, log messages) to the clients, and starts nothing else; leaving it undoes that.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Coroutine, Iterable, Mapping
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server

from mcpdeck._http_faces.guard import LOOPBACK_HOSTS, Guard, same_secret
from mcpdeck.config import DEFAULT_APPROVAL, ConfigDocument, GatewayApproval, ProfileConfig
from mcpdeck.errors import ConfigError
from mcpdeck.events import Event, PromptsChanged, ResourcesChanged, ResourceUpdated, ServerLog, ToolsChanged
from mcpdeck.gateway._approval import ApprovalStore, GatewayGate
from mcpdeck.gateway._clients import Calls, ClientRouter, MultiRoundCall, sole_face
from mcpdeck.gateway._connected_clients import ConnectedClients
from mcpdeck.gateway._http import GatewayApp, GatewayToken
from mcpdeck.gateway._relayed import RoundRelay, answer_relayed
from mcpdeck.gateway._requests import InFlight, ServedProfile
from mcpdeck.gateway._server import build_server
from mcpdeck.gateway._stdio import stdio_streams
from mcpdeck.gateway._view import ProfileView
from mcpdeck.host import Host
from mcpdeck.status import ServerState

__all__ = ["Gateway", "GatewayToken"]

logger = logging.getLogger(__name__)

NEWS = (ToolsChanged, ResourcesChanged, PromptsChanged, ResourceUpdated, ServerLog)
"""The host events clients are told about."""
NEWS_BUFFER = 10_000
PROFILES_POLL = 0.5
"""Seconds between two looks at the config file for edited profiles and ``gateway.approval`` (one ``stat`` each)."""
STARTUP_WAIT = 5.0
"""Seconds after the gateway opens during which a list waits for the servers still starting (a client that
lists right after ``initialize`` gets them all if they come up by then; later ones follow with ``list_changed``)."""


class Gateway:
    """Serves a host's catalog (or one profile of it) as an MCP server."""

    def __init__(
        self,
        host: Host,
        *,
        profile: str | None = None,
        profiles: Mapping[str, ProfileConfig | Mapping[str, Any]] | None = None,
        tokens: Mapping[str, GatewayToken] | None = None,
        check_permission: bool = True,
        approval: GatewayApproval | None = None,
        allowed_hosts: list[str] | None = None,
        allowed_origins: list[str] | None = None,
        any_address: bool = False,
        modern: bool = True,
        name: str | None = None,
        instructions: str | None = None,
        replica: str | None = None,
        approvals: ApprovalStore | None = None,
        relay: RoundRelay | None = None,
    ):
        """Create a gateway for an open host.

        Args:
            host: The host whose servers it serves.
            profile: The profile served over stdio and at the bare ``/mcp`` (default: everything).
            profiles: Profiles given in code; default: the ``profiles`` of the host's config file,
                read again when the file changes.
            tokens: Named bearer tokens for HTTP; none: HTTP needs no token (keep it on loopback).
            check_permission: Pass every call through the host's permission gate (``deny`` refuses; ``ask``
                is put to the calling client as an elicitation, or refused when it cannot answer).
            approval: Who approves a call no rule covers: ``client``, the calling client (which asks its
                own user), or ``ask``, the gateway asks the client as for an ``ask`` rule. Default: the
                config file's ``gateway.approval`` (followed when the file changes), else ``client``.
            allowed_hosts: ``Host`` headers HTTP accepts (DNS-rebinding protection; ``NAME:*``: any port);
                default: the loopback names with any port (``gateway --port`` gives exactly its own).
            allowed_origins: ``Origin`` headers HTTP accepts; default: ``http://`` and ``https://`` with each
                of ``allowed_hosts``.
            any_address: HTTP listens on every address: a ``Host`` that is an IP address with the
                listening port is accepted too (it cannot be a DNS rebinding), and its own ``Origin``.
            modern: Offer protocol 2026-07-28 to clients that ask for it (``server/discover``, or a request
                that names that version), beside the handshake era. A server's question in the middle of such
                a client's call (elicitation, sampling, roots) ends the call's round with an
                ``InputRequiredResult``; the client's next round carries the answers and a ``requestState``
                naming the call, which goes on here (see ``relay`` for a round that reaches another replica).
                False: the handshake era only; a client that probes gets 404 for ``server/discover`` and
                falls back to ``initialize``.
            name: What it calls itself to clients (``serverInfo.name``); default ``mcpdeck``, or
                ``mcpdeck/<profile>`` for a profile.
            instructions: What it tells clients in ``initialize``; default one line saying what it serves.
                (For a gateway that relays another one, which says it better.)
            replica: The replica id of the process (``serve --replica-id``): streamable HTTP session ids
                begin with ``<replica>.`` so a load balancer can send each session to its replica, and so do the
                ``requestState`` of 2026-07-28 calls waiting for their client's next round.
            approvals: Where the clients' "for this session" answers are kept for the other replicas of a
                fleet (``mcpdeck.store.SessionApprovals``), so a client's approval holds on any replica; None:
                in this process only.
            relay: How a 2026-07-28 round that names another replica's call reaches it (``serve`` on PostgreSQL:
                ``mcpdeck.store.Relay``, whose ``run`` takes ``answer_relayed``); None: such a round is answered
                at once with an error saying the call is lost and to call again.
        """
        self.host = host
        self.profile = profile
        self.check_permission = check_permission
        self._approval: GatewayApproval | None = approval
        self.modern = modern
        self.replica = replica
        self.relay = relay
        self.tokens = dict(tokens or {})
        self.allowed_hosts = allowed_hosts
        self.allowed_origins = allowed_origins
        self.any_address = any_address
        self._name = name
        self._instructions = instructions
        self._given_profiles = (
            {
                name: p if isinstance(p, ProfileConfig) else ProfileConfig.model_validate(dict(p))
                for name, p in profiles.items()
            }
            if profiles is not None
            else None
        )
        self._config = host.config_store
        """The config file's store, whose document (profiles, ``gateway.approval``) every view reads without a
        ``stat``; ``_follow_config`` (or ``serve``'s follower) has it look at the file."""
        self._everything = ProfileConfig()
        self._views: dict[str | None, ProfileView] = {}
        self.calls = Calls()
        self.in_flight = InFlight(self.calls, modern=modern, replica=replica, relay=relay, spawn=self._spawn)
        """Clients' requests running on servers, and 2026-07-28 calls between their rounds."""
        self.approvals = approvals
        self.gate = GatewayGate(
            host.permissions, check=check_permission, approval=lambda: self.approval, approvals=approvals
        )
        """The permission gate as the handlers use it."""
        self.clients = ConnectedClients(host, self.calls, self._serves, approvals)
        self._servers: dict[str | None, Server[Any]] = {}
        self._stack: AsyncExitStack | None = None
        self._event_queue: MemoryObjectSendStream[Event] | None = None
        self._tg: TaskGroup | None = None
        self.closing = anyio.Event()
        """Set when the gateway closes: its HTTP session managers end then, not before (``GatewayApp``)."""
        self._lists_wait_until: float | None = None
        if profile is not None:
            self.profile_config(profile)  # an unknown profile is an error now, not at the first request
        if approval is None and self._config is not None:
            # a setting that cannot be read is an error now; an edit that breaks it later keeps the last one
            self._config.document().check("gateway")

    # ----- profiles --------------------------------------------------------------------

    @property
    def profiles(self) -> Mapping[str, ProfileConfig]:
        """The profiles now (from the config file's document, as last read: no ``stat`` here)."""
        if self._given_profiles is not None:
            return self._given_profiles
        document = self._document()
        return document.profiles if document is not None else {}

    @property
    def approval(self) -> GatewayApproval:
        """Who approves a call no rule covers now: ``client`` or ``ask`` (see ``Gateway``)."""
        if self._approval is not None:
            return self._approval
        document = self._document()
        return document.gateway.approval if document is not None else DEFAULT_APPROVAL

    def _document(self) -> ConfigDocument | None:
        """The config file's document as last read (None: no file, or none that could ever be read)."""
        if self._config is None:
            return None
        try:
            return self._config.cached or self._config.document()
        except ConfigError:  # said where the host read it; the views serve no profiles meanwhile
            return None

    def profile_config(self, name: str | None) -> ProfileConfig:
        """A profile's config (None: the whole catalog).

        Raises:
            ConfigError: There is no such profile.
        """
        if name is None:
            return self._everything
        found = self.profiles.get(name)
        if found is None:
            document = self._document() if self._given_profiles is None else None
            if document is not None and "profiles" in document.problems:
                raise document.problems["profiles"]  # what keeps it from being read, not only that it is missing
            known = ", ".join(self.profiles) or "none"
            raise ConfigError(f'no profile named {name!r} (known: {known}); add it under "profiles" in the config')
        return found

    def view(self, profile: str | None) -> ProfileView:
        """What a profile serves, now (a view reads the host as it is when asked; it is made again only when
        the profile's config changed)."""
        config = self.profile_config(profile)
        view = self._views.get(profile)
        if view is None or view.profile is not config:
            view = self._views[profile] = ProfileView(self.host, profile, config)
        return view

    def _serves(self, profile: str | None, server: str) -> bool:
        try:
            return self.profile_config(profile).serves(server)
        except ConfigError:
            return False

    def denied_server(self, server: str) -> bool:
        """Whether a ``deny`` rule covers all of ``server`` (for a gateway that checks permissions): it is sent
        no request of a client, and learns nothing of the clients (their roots)."""
        return self.gate.denied_server(server)

    @property
    def parked(self) -> dict[str, MultiRoundCall]:
        """2026-07-28 calls waiting for their client's next round, by ``requestState``."""
        return self.in_flight.parked

    def server_name(self, profile: str | None) -> str:
        """What the gateway calls itself to a client of a profile (``serverInfo.name``)."""
        if self._name is not None:
            return self._name
        return "mcpdeck" if profile is None else f"mcpdeck/{profile}"

    def instructions(self, profile: str | None) -> str:
        """What the gateway tells a client about itself in ``initialize``."""
        if self._instructions is not None:
            return self._instructions
        config = self.profile_config(profile)
        what = f"profile {profile!r} of " if profile else ""
        text = f"This is {what}an mcpdeck gateway: several MCP servers served as one."
        if config.prefix:
            text += " Tool and prompt names are mcp__<server>__<name>."
        if config.description:
            text += f" {config.description}"
        return text

    def server(self, profile: str | None) -> Server[Any]:
        """The SDK server object for a profile (one per profile, made on first use)."""
        if profile not in self._servers:
            self.profile_config(profile)
            served = ServedProfile(self.host, profile, self.view, self.started)
            self._servers[profile] = build_server(
                served,
                self.clients,
                self.gate,
                self.in_flight,
                name=self.server_name(profile),
                instructions=self.instructions(profile),
                modern=self.modern,
            )
        return self._servers[profile]

    # ----- lifecycle -------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._stack is not None:
            raise RuntimeError("this Gateway is already open; create a new one")
        async with AsyncExitStack() as stack:
            self._lists_wait_until = anyio.current_time() + STARTUP_WAIT
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(self._tg.cancel_scope.cancel)
            stack.callback(self.closing.set)
            stack.callback(self.host.route_server_requests(ClientRouter(self.calls, self._serves, self.denied_server)))
            self._event_queue, news = anyio.create_memory_object_stream[Event](NEWS_BUFFER)
            stack.callback(news.close)
            stack.callback(self._event_queue.close)
            stack.callback(self.host.events.on(self._on_event, *NEWS))
            self._tg.start_soon(self._deliver, news)
            if self._config is not None:
                self._tg.start_soon(self._follow_config)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        stack, self._stack, self._tg, self._event_queue = self._stack, None, None, None
        if stack is not None:
            await stack.aclose()

    def _on_event(self, event: Event) -> None:
        """The host's news, synchronously (a call's own events are not asked for: the call path does not
        build them for the gateway)."""
        self.clients.on_event(event)
        if self._event_queue is not None:
            try:
                self._event_queue.send_nowait(event)
            except anyio.WouldBlock:
                logger.warning("gateway: clients are %d events behind; %s dropped", NEWS_BUFFER, type(event).__name__)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    async def _deliver(self, news: MemoryObjectReceiveStream[Event]) -> None:
        with news:
            try:
                async for event in news:
                    await self.clients.deliver(event)
            except anyio.ClosedResourceError:  # the gateway closes
                pass

    async def _follow_config(self) -> None:
        """Until the gateway closes: the config file's ``gateway.approval`` read again when it changes, and when an
        edit changes a profile (the console, the API or a text editor), the clients of that profile are told to
        list everything again."""
        config = self._config
        assert config is not None
        seen, looked = self.profiles, config.cached
        while True:
            await anyio.sleep(PROFILES_POLL)
            try:
                document = await anyio.to_thread.run_sync(config.document)  # parsed only when the file changed
            except ConfigError:  # unusable from the start: the host's own reading said so
                continue
            if document is looked:
                continue
            looked = document
            if "profiles" in document.problems:
                logger.warning("gateway: profiles kept as they were: %s", document.problems["profiles"])
            if "gateway" in document.problems:
                logger.warning("gateway: gateway settings kept as they were: %s", document.problems["gateway"])
            now = self.profiles
            if now is seen:
                continue
            changed = {name for name in seen.keys() | now.keys() if seen.get(name) != now.get(name)}
            seen = now
            for name in sorted(changed):
                await self.clients.profile_changed(name)

    async def started(self, servers: Iterable[str]) -> None:
        """Wait for those of ``servers`` still starting, until ``STARTUP_WAIT`` seconds after the gateway opened
        (after that, at once): what a list request does first."""
        until = self._lists_wait_until
        if until is None or anyio.current_time() >= until:
            return
        statuses = self.host.servers
        starting = [name for name in servers if name in statuses and statuses[name].state is ServerState.CONNECTING]
        if not starting:
            return
        with anyio.move_on_after(until - anyio.current_time()):
            async with anyio.create_task_group() as tg:
                for name in starting:
                    tg.start_soon(self.host.wait_settled, name)

    async def answer_relayed(self, body: str) -> str:
        """A round of one of this replica's parked 2026-07-28 calls that another replica relayed (``relay``):
        answered here, its outcome the answer to send back."""
        return await answer_relayed(self.in_flight.parked, body)

    def _spawn(self, fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Start ``fn()`` in the gateway's task group (a 2026-07-28 call between its rounds)."""
        self.task_group.start_soon(fn)

    @property
    def task_group(self) -> TaskGroup:
        """The gateway's task group (for its HTTP session managers).

        Raises:
            RuntimeError: The gateway is not open.
        """
        if self._tg is None:
            raise RuntimeError("the gateway is not open; use `async with Gateway(host):` first")
        return self._tg

    # ----- faces -----------------------------------------------------------------------

    async def run_stdio(self, profile: str | None = None) -> None:
        """Serve one client over this process's stdin and stdout until it closes them (see ``run_streams``)."""
        streams = stdio_server() if sys.platform == "win32" else stdio_streams()
        async with streams as (read_stream, write_stream):
            await self.run_streams(read_stream, write_stream, profile)

    async def run_streams(self, read_stream: Any, write_stream: Any, profile: str | None = None) -> None:
        """Serve one client over a pair of message streams (stdin and stdout for ``run_stdio``) until it ends.

        That client is the face's only one: once it has initialized, it answers the servers of its profile
        for their roots, in calls and outside them (see docs/gateway.md).
        """
        server = self.server(profile if profile is not None else self.profile)
        self.task_group  # noqa: B018 - the gateway must be open
        options = server.create_initialization_options()
        face = sole_face.set(True)  # the client registered in this face's tasks is its one client
        try:
            if self.modern:  # the client's first request picks the era
                await server.run(read_stream, write_stream, options)
                return
            async with server.lifespan(server) as state:  # the handshake era only
                await serve_loop(server, read_stream, write_stream, lifespan_state=state, init_options=options)
        finally:
            sole_face.reset(face)

    def asgi(self, prefix: str = "/mcp") -> Guard:
        """The streamable HTTP face: ``<prefix>`` and ``<prefix>/<profile>`` (``GatewayApp``) behind mcpdeck's
        guard (``mcpdeck._http_faces.guard``): ``allowed_hosts`` and ``allowed_origins`` (421 and 403), the gateway's
        tokens when it has any (401, 429 past the wrong ones), request bodies up to 4 MiB (413)."""
        return Guard(
            GatewayApp(self, prefix),
            hosts=self.allowed_hosts or LOOPBACK_HOSTS,
            origins=self.allowed_origins,
            any_address=self.any_address,
            credentials=self.token_named if self.tokens else None,
            mcp_prefix="",
            token_hint=" (one of the gateway's tokens: the config's gateway.tokens, or the one it printed at start)",
        )

    def token_named(self, given: str) -> str | None:
        """The name of the gateway token ``given`` is, or None; every token is compared, in constant time."""
        found: str | None = None
        for name, token in self.tokens.items():
            if same_secret(given, token.secret):
                found = name
        return found
