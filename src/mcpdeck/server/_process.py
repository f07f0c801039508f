"""``mcpdeck serve``: one ``Host`` for a config, kept running, behind one HTTP port.

The order of things:

1. the replica joins the store's fleet (``mcpdeck.store.Replica``: its id's lock, its row; an id
   another live process holds fails here), then the port is bound (a port in use fails at once,
   before any server starts);
2. the host is entered without waiting for servers (they settle in the background, and
   the console shows them coming up);
3. the state file is written (where, and with which token), the config follower starts (on
   PostgreSQL with the replica's one listening connection: the config notices and the fleet's
   live events, ``_live``), and uvicorn serves the app on the bound socket;
4. on SIGINT or SIGTERM (or ``stop``): event streams end, uvicorn stops taking requests
   and finishes the ones in flight (at most ``GRACE`` seconds), the follower stops, the
   host closes every server (stdio children and their process groups included), the state
   file is removed, the replica leaves the fleet and the history is closed.

The host, the signals and the stopping are ``server._runner.ProcessRunner``'s, as for every
other process mode; this module gives it the serve-specific parts.
"""

from __future__ import annotations

import gc
import logging
import os
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import uvicorn

from mcpdeck._http_faces.guard import allowed_hosts
from mcpdeck._http_faces.listening import ANY_ADDRESS, KEEP_ALIVE, bind, quiet_server
from mcpdeck._observability.call_metrics import CallMetrics
from mcpdeck._observability.tracing import exporting
from mcpdeck._util.version import __version__
from mcpdeck.api import ApiContext, ChatRoom, create_api, prepare_routes
from mcpdeck.config import ConfigStore, GatewayApproval
from mcpdeck.errors import ConfigError
from mcpdeck.events import ToolCallFinished, ToolCallStarted
from mcpdeck.history import History
from mcpdeck.host import Host
from mcpdeck.server._app import build_app
from mcpdeck.server._follow import ConfigFollower
from mcpdeck.server._live import share_events
from mcpdeck.server._runner import ProcessRunner
from mcpdeck.server._state import ServeState, read_state, remove_state, write_state
from mcpdeck.store import (
    HEARTBEAT,
    ConfigNotices,
    EventBroadcast,
    Listener,
    Relay,
    Replica,
    SessionApprovals,
    StoredMinutes,
    check_replica_id,
    default_replica_id,
)
from mcpdeck.traffic import Traffic

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from mcpdeck.gateway import Gateway

__all__ = ["DEFAULT_PORT", "GRACE", "ServeOptions", "run_serve"]

logger = logging.getLogger(__name__)

DEFAULT_PORT = 8765
"""The port ``mcpdeck serve`` listens on unless told otherwise."""
GRACE = 1.0
"""Seconds requests in flight get to finish when the process stops (then they are cancelled): with the
servers' own ends (``_child_process``: about 2 s at worst) the process is gone within 5 s of SIGTERM."""
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class ServeOptions:
    """How to run.

    Attributes:
        config: The config file.
        host: The address to listen on (loopback unless asked otherwise).
        port: The port (0: any free one).
        log_dir: Where server logs go (None: the default).
        history: The history tool calls are recorded in (None: off); closed on exit. Its ``replica``
            is set to ``replica`` when it has none.
        follow_interval: Seconds between looks at the config file (0: don't follow it).
        token: The API token (None: a new random one).
        roots: Folders offered to the servers as MCP roots (the global ``--root``); none: no roots.
        approval: Who approves a gateway call no rule covers (None: the config's ``gateway.approval``).
        replica: This process's replica id (None: ``default_replica_id`` of the config file).
        keep_days: Delete history older than this many days (None: keep it all).
        allowed_hosts: More ``Host`` header values to admit, exactly (a load balancer's name:
            ``check_allowed_host``); the addresses it listens on are always admitted.
    """

    config: Path
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    log_dir: Path | None = None
    history: History | None = None
    follow_interval: float = 0.5
    token: str | None = None
    roots: tuple[str, ...] = ()
    approval: GatewayApproval | None = None
    replica: str | None = None
    keep_days: float | None = None
    allowed_hosts: tuple[str, ...] = ()


def url_of(host: str, port: int) -> str:
    """The base URL for an address (loopback shown as 127.0.0.1)."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "localhost") else host
    if ":" in shown and shown != "::":
        shown = f"[{shown}]"
    if shown == "::":
        shown = "[::1]"
    return f"http://{shown}:{port}"


async def run_serve(
    options: ServeOptions,
    *,
    ready: Callable[[ServeState, Callable[[], str]], None] | None = None,
    stop: anyio.Event | None = None,
) -> None:
    """Run until SIGINT/SIGTERM (or ``stop`` is set); ``ready`` is called once it listens, with
    the state and a function that makes a new one-time login code for the console.

    Raises:
        ConfigError: The config file is unusable, another ``serve`` runs for it, or the port is taken.
    """
    config_path = options.config.expanduser().resolve()
    replica_id = check_replica_id(options.replica or default_replica_id(config_path))
    # OTLP spans, when OTEL_EXPORTER_OTLP_ENDPOINT asks for them (and mcpdeck[otel] is there), named by the replica
    with exporting(replica=replica_id):
        await _run(options, config_path, replica_id, ready, stop)


async def _run(
    options: ServeOptions,
    config_path: Path,
    replica_id: str,
    ready: Callable[[ServeState, Callable[[], str]], None] | None,
    stop: anyio.Event | None,
) -> None:
    store = _open_config(config_path, replica_id)
    history = options.history
    fleet: Replica | None = None
    if history is not None:
        if history.replica is None:
            history.replica = replica_id
        fleet = Replica(history, keep_days=options.keep_days)
        await anyio.to_thread.run_sync(fleet.join)  # an id another live serve holds stops us here
    try:
        sock = bind(options.host, options.port)
    except BaseException:
        _leave(fleet, history)
        raise
    try:
        # On PostgreSQL: a 2026-07-28 call's round that reaches this replica but is held by another is relayed
        # there, and each config write is announced to the other replicas
        postgres = (
            fleet if fleet is not None and history is not None and history.location.kind == "postgresql" else None
        )
        # One LISTEN connection for this replica's notices: the config file's writes, the fleet's live events and
        # the rounds relayed to it
        listener = Listener(postgres.history.store) if postgres is not None else None
        relay = Relay(postgres, listener) if postgres is not None and listener is not None else None
        parts = _assemble(options, store, config_path, sock, replica_id, relay)
        notices = ConfigNotices(listener.store, config_path, replica_id, listener) if listener is not None else None
        broadcast = EventBroadcast(listener, config_path, replica_id, parts.context.redact) if listener else None
    except BaseException:
        sock.close()
        _leave(fleet, history)
        raise
    runner = ProcessRunner(parts.host, history=history, grace=GRACE + 1)
    if listener is not None:
        runner.on_exit(listener.close)
    runner.on_exit(sock.close)
    runner.on_exit(partial(remove_state, config_path, replica=replica_id, pid=os.getpid()))
    runner.on_exit(partial(_leave, fleet, None))  # (the runner closes the history after)
    context, server = parts.context, parts.server

    async def faces() -> None:
        """The gateway, the API's event listeners, the replica's jobs, the follower and uvicorn."""
        async with parts.gateway, anyio.create_task_group() as tg:
            unsubscribe = context.attach()
            stop_sharing: Callable[[], None] | None = None
            try:
                if context.metrics is not None:
                    parts.host.events.on(context.metrics.record, ToolCallStarted, ToolCallFinished)
                if history is not None:
                    history.add_redactor(context.redact)  # the secrets of servers added or changed while it runs
                if fleet is not None:
                    tg.start_soon(fleet.run, name="mcpdeck replica heartbeat")
                if context.metrics is not None and context.metrics.shared is not None:
                    tg.start_soon(_flush_minutes, context.metrics, name="mcpdeck metrics to the store")
                if relay is not None:
                    await tg.start(partial(relay.run, parts.gateway.answer_relayed), name="mcpdeck relay")
                if options.follow_interval > 0:
                    await parts.follower.prime()
                    tg.start_soon(parts.follower.run, name="mcpdeck config follower")
                    if notices is not None:  # on PostgreSQL: the others say when they wrote the file
                        store.written.append(notices.notify)
                        notices.listen(parts.follower.wake)
                if broadcast is not None and listener is not None:  # on PostgreSQL: the console's live events
                    stop_sharing = share_events(parts.host, broadcast)
                    listener.start()
                # Before the first request: FastAPI builds the API's routes at the first request that looks
                # through them, blocking the event loop (a replica's gateway froze 1-1.9 s under load)
                await prepare_routes(parts.api)
                # What start-up made (the modules, the app and its routes) lives as long as the process: out of the
                # collector's full passes, which walked all of it holding the GIL (~0.2 s of CPU each, 0.3-1.4 s of
                # a loaded replica's wall time with every request of it waiting; bench/RESULTS.md)
                gc.freeze()
                write_state(parts.state)
                serving = anyio.Event()

                async def serve() -> None:
                    try:
                        await server.serve([sock])
                    finally:
                        serving.set()

                tg.start_soon(serve, name="mcpdeck http")
                if ready is not None:  # (the runner caught SIGINT and SIGTERM before anything started)
                    ready(parts.state, context.logins.code)
                await serving.wait()  # uvicorn ends when stopping (or by itself: it failed)
            finally:
                unsubscribe()
                if stop_sharing is not None:
                    stop_sharing()
                with anyio.CancelScope(shield=True), anyio.move_on_after(GRACE):
                    await context.chats.aclose()
                tg.cancel_scope.cancel()

    def stop_faces() -> None:
        """Stopping: end event streams, let requests in flight finish (uvicorn's ``GRACE``)."""
        context.stop()
        server.should_exit = True

    await runner.run(faces, stop_faces=stop_faces, stop=stop)


async def _flush_minutes(metrics: CallMetrics) -> None:
    """Write this replica's changed minutes to the store every heartbeat, and once more when it stops."""
    try:
        while True:
            await anyio.sleep(HEARTBEAT)
            metrics.flush()
    finally:
        metrics.flush()


def _leave(fleet: Replica | None, history: History | None) -> None:
    """Leave the fleet (this replica's row removed, its lock let go), then close the history."""
    try:
        if fleet is not None:
            fleet.leave()
    except Exception as error:  # the store went away: the others' reaper will find this replica gone
        logger.error("could not leave the fleet cleanly: %s", error)
    finally:
        if history is not None:
            history.close()


def _open_config(config_path: Path, replica: str) -> ConfigStore:
    """The config file's store, once it reads and no other ``serve`` runs for it with this replica id."""
    store = ConfigStore(config_path)
    store.read()  # a broken file stops us here, with its line
    running = read_state(config_path, replica)
    if running is not None:
        raise ConfigError(
            f"mcpdeck serve already runs for {config_path} as replica {replica!r} at {running.url} "
            f"(pid {running.pid}); stop it first, use its URL, or run this one as another replica "
            "(--replica-id or $MCPDECK_REPLICA_ID)"
        )
    return store


@dataclass(frozen=True)
class _Parts:
    """What one serve process is made of, put together before anything runs."""

    host: Host
    context: ApiContext
    follower: ConfigFollower
    gateway: Gateway
    server: uvicorn.Server
    state: ServeState
    api: ASGIApp


def _assemble(
    options: ServeOptions,
    store: ConfigStore,
    config_path: Path,
    sock: socket.socket,
    replica: str,
    relay: Relay | None = None,
) -> _Parts:
    """The host, the API's context, the config follower, the gateway and the HTTP server over ``sock``."""
    port: int = sock.getsockname()[1]
    token = options.token or secrets.token_urlsafe(32)
    chats = ChatRoom()  # the console answers the host's questions: approvals, elicitation, sampling
    host = Host(
        store=store,
        log_dir=options.log_dir,
        wait=False,
        traffic=Traffic(),
        approve=chats.asks.approve,
        elicitation=chats.asks.elicit,
        sampling=chats.sample,
        roots=list(options.roots) or None,
    )
    context = ApiContext(
        host=host, store=store, history=options.history, chats=chats, log_dir=options.log_dir, replica=replica
    )
    follower = ConfigFollower(host, store, interval=options.follow_interval or 0.5, paused=lambda: context.changing > 0)
    context.problems = lambda: follower.problems
    from mcpdeck.gateway import Gateway, GatewayApp

    # The gateway sits behind the one guard of the whole app (Host, Origin, token, body size): its
    # routes unguarded, no tokens of its own.
    every = options.host in ANY_ADDRESS
    hosts = allowed_hosts(options.host, port, options.allowed_hosts)
    gateway = Gateway(
        host,
        approval=options.approval,
        replica=replica,
        approvals=SessionApprovals(options.history.store, replica) if options.history is not None else None,
        relay=relay,
    )
    gateway_app = GatewayApp(gateway)
    shared = StoredMinutes(context.history) if context.history is not None else None
    context.metrics = CallMetrics(
        replica=replica,
        sessions=gateway_app.sessions_open,
        listening=gateway_app.listen_streams_open,
        clients_seen=gateway_app.clients_seen,
        shared=shared,
    )
    api = create_api(context)
    app = build_app(context, token=token, hosts=hosts, gateway=gateway_app, any_address=every, api=api)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=int(GRACE),
        timeout_keep_alive=KEEP_ALIVE,
        proxy_headers=False,
        server_header=False,
    )
    state = ServeState(
        pid=os.getpid(),
        url=url_of(options.host, port),
        host=options.host,
        port=port,
        token=token,
        config=str(config_path),
        started_at=datetime.now(UTC).isoformat(),
        version=__version__,
        replica=replica,
    )
    return _Parts(host, context, follower, gateway, quiet_server(config), state, api)
