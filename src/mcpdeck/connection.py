"""One server: a supervisor task that owns its ``mcp.Client``.

The SDK requires a client to be entered and exited in the same task, and a client can't
be re-entered; so each server gets one long-lived supervisor task (``ServerConnection.run``)
that opens a fresh client per session, keeps its tool list, watches for the connection to
end, and reacts to commands (reconnect, disconnect, new config) sent from any task.

States::

    disabled ──enable──▶ connecting ──ok──▶ connected ──lost──▶ reconnecting ──ok──▶ connected
                              │                                         │ (backoff, N tries)
                              └──error/timeout──▶ failed ◀──gave up─────┘
    any ──disconnect──▶ stopped          any ──reconnect──▶ connecting

Calls (``call_tool``) run in the caller's task on the live session; the supervisor never
blocks them.
"""

from __future__ import annotations

import logging
import math
import os
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import httpx2
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client._transport import Transport
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.dispatcher import ProgressFnT
from mcp_types.jsonrpc import CONNECTION_CLOSED, INVALID_REQUEST, URL_ELICITATION_REQUIRED
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcpdeck._client_requests import ClientHandlers, ServerRequests
from mcpdeck._environment import child_environment, find_command
from mcpdeck._listed import ListedTool
from mcpdeck._lists import ListKind, ServerLists
from mcpdeck._masking import Redactor, mask_urls
from mcpdeck._probe import DISCOVER, PROBE_BOUND, ProbeWatch
from mcpdeck._server_log import ServerLog
from mcpdeck._stdio import StdioProcess, stdio_transport
from mcpdeck._transports import MessageTooLargeError, NotAMessageError, http_transport, sse_transport, watched
from mcpdeck._version import __version__
from mcpdeck.auth import AuthorizeFunction, OAuthInteraction, TokenStore, build_auth, is_auth_error
from mcpdeck.config import RemoteServerConfig, ServerConfig, StdioServerConfig, expand_server_config
from mcpdeck.config._expand import referenced_values
from mcpdeck.errors import (
    ConfigError,
    ServerCrashedError,
    ServerError,
    ServerTimeoutError,
    ServerUnavailableError,
    leaf_errors,
    protocol_error_text,
)
from mcpdeck.events import Event, ResourceUpdated, ServerStatusChanged
from mcpdeck.status import RetryPolicy, ServerState, ServerStatus
from mcpdeck.traffic import Traffic, tapped

__all__ = [
    "InProcessServer",
    "ProgressCallback",
    "RetryPolicy",
    "ServerConnection",
    "ServerState",
    "ServerStatus",
]

logger = logging.getLogger(__name__)

InProcessServer = Server[Any] | MCPServer
"""An SDK server object run inside this process (for tests and embedded tools)."""

_T = TypeVar("_T")

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]
"""``(progress, total, message)``, awaited for each progress notification of a call."""

_CLIENT_INFO = types.Implementation(name="mcpdeck", version=__version__)
_CONFIG_TYPES = (StdioServerConfig, RemoteServerConfig)


class _StartAgain(Exception):
    """A stdio server closed its pipe on the modern probe: start it again, with the handshake."""


def _session_expired(error: MCPError, last_http_status: int | None) -> bool:
    """Whether the server no longer knows the HTTP session: a 404 on a request that carried its id.

    The SDK client says "Session terminated" for a bare 404; a server that sends a
    JSON-RPC error body with its 404 (the SDK's own says "Session not found") has it
    passed through as is, so the status is what tells.
    """
    if error.code != INVALID_REQUEST:
        return False
    return error.message in ("Session terminated", "Session not found") or last_http_status == 404


def describe_error(error: BaseException) -> str:
    """One clear sentence for an error out of a transport, the SDK or our own checks."""
    leaves = [e for e in leaf_errors(error) if not isinstance(e, anyio.get_cancelled_exc_class())] or [error]
    first = next((e for e in leaves if not isinstance(e, MCPError | anyio.ClosedResourceError)), leaves[0])
    if isinstance(first, ServerError):
        return first.reason
    if isinstance(first, ConfigError):
        return str(first)
    if isinstance(first, MCPError):
        if first.code == CONNECTION_CLOSED:
            return "the server closed the connection"
        return protocol_error_text(first.code, first.message)
    if isinstance(first, httpx2.HTTPStatusError):
        return f"HTTP {first.response.status_code} from {first.request.url}"
    if isinstance(first, httpx2.ConnectError):
        return f"cannot connect: {first}"
    if isinstance(first, httpx2.TimeoutException):
        return "the HTTP request timed out"
    if isinstance(first, FileNotFoundError | PermissionError):
        return f"cannot start the command: {first.strerror}: {first.filename}"
    text = str(first)
    return f"{type(first).__name__}: {text}" if text else type(first).__name__


class _ProgressRelay:
    """Restarts a call's timeout on each progress notification, then passes it on."""

    __slots__ = ("_limit", "_progress", "_scope")

    def __init__(self, scope: anyio.CancelScope, limit: float, progress: ProgressCallback | None):
        self._scope = scope
        self._limit = limit
        self._progress = progress

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self._scope.deadline = anyio.current_time() + self._limit
        if self._progress is not None:
            await self._progress(progress, total, message)


def _missing_command(command: str, path: str) -> str:
    """Why a stdio server's command cannot be run: not on PATH, or (given as a path) missing or not executable."""
    if os.sep in command or (os.altsep is not None and os.altsep in command):
        target = Path(command).expanduser()
        if target.is_dir():
            return f"command {command!r} is a folder, not a program; give the program's path"
        if target.exists():
            return f"command {command!r} is not executable; make it so (chmod +x) or run it through its interpreter"
        return f"command {command!r} does not exist; check the path"
    return f"command {command!r} was not found on PATH; install it or give its full path (searched {path})"


class ServerConnection:
    """The supervisor of one server's connection. Created and driven by ``Host``."""

    def __init__(
        self,
        name: str,
        config: ServerConfig | InProcessServer,
        *,
        log_dir: Path,
        publish: Callable[[Event], None],
        on_change: Callable[[str, ListKind], None],
        handlers: ClientHandlers | None = None,
        npm_registry: str | None = None,
        environ: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
        auth_store: TokenStore | None = None,
        oauth_interaction: OAuthInteraction | AuthorizeFunction | None = None,
        traffic: Traffic | None = None,
        wanted: bool = True,
    ):
        self.name = name
        self._traffic = traffic
        self._retry = retry or RetryPolicy()
        self._auth_store = auth_store or TokenStore(environ=environ)
        self._oauth_interaction = oauth_interaction  # None: never ask the user; a needed login fails the server
        self._config = config
        self._log = ServerLog(log_dir / f"{name}.log")
        self._publish = publish
        self._lists = ServerLists(
            name,
            allows_tool=self._allows_tool,
            on_change=lambda kind: on_change(name, kind),
            on_resource_updated=lambda uri: publish(ResourceUpdated(server=name, uri=uri)),
            on_warning=self._list_warning,
        )
        self._requests = ServerRequests(
            name, handlers or ClientHandlers(), publish, self._write_log, roots=self._own_roots(config)
        )
        self._npm_registry = npm_registry
        self._environ = environ
        self._state = ServerState.STOPPED
        self._want = wanted  # False after disconnect(): stay stopped until told otherwise
        self._closing = False
        self._error: str | None = None
        self._error_at: datetime | None = None
        self._connected_at: datetime | None = None
        self._client: Client | None = None
        self._detected_transport: str | None = None
        self._scope: anyio.CancelScope | None = None
        self._commanded = False
        self._wake = anyio.Event()
        self._settled = anyio.Event()
        self._ended = anyio.Event()  # set when the current session's connection is gone
        self._phase = "starting"
        self._process: StdioProcess | None = None
        self._http_error: str | None = None  # the last HTTP error status of this session, for messages
        self._last_http_status: int | None = None
        self._gone_reason: str | None = None  # why a request found the session gone, if it knows better
        self._reconnect_at_once = False
        self._give_up = False  # the session ended in a way a reconnect would only repeat
        self._first_stray: str | None = None  # this session's lines on stdout that are not messages: the first,
        self._stray_count = 0  # and how many
        self._handshake_only = False  # learnt: this server does not understand the modern probe
        self._knows_probe = False  # learnt: it answered the probe once (a closed pipe then is no verdict on it)
        self._probe_log_at: int | None = None  # where the log stood when the probe went out
        self._probe_noise = 0  # lines the server wrote about the probe, left out of its log
        self._probe_refusal = False  # the server answered the probe with an error

    # ----- what callers read -------------------------------------------------------

    @property
    def config(self) -> ServerConfig | InProcessServer:
        """The config this connection runs (unexpanded)."""
        return self._config

    @property
    def state(self) -> ServerState:
        """The state now."""
        return self._state

    @property
    def tools(self) -> list[ListedTool]:
        """The server's tools after filters, as last listed (compact: see ``mcpdeck._listed``)."""
        return self._lists.tools

    @property
    def resources(self) -> list[types.Resource]:
        """The server's resources, as last listed."""
        return self._lists.resources

    @property
    def resource_templates(self) -> list[types.ResourceTemplate]:
        """The server's resource templates, as last listed."""
        return self._lists.templates

    @property
    def prompts(self) -> list[types.Prompt]:
        """The server's prompts, as last listed."""
        return self._lists.prompts

    @property
    def log_path(self) -> Path | None:
        """The server's log: its stderr (stdio), its MCP log messages, host notes. None in-process."""
        return self._log.path if isinstance(self._config, StdioServerConfig | RemoteServerConfig) else None

    def _write_log(self, line: str) -> None:
        """A host's note in the server's log, with what the expanded config brings in masked (see ``_hide``)."""
        if self.log_path is not None:
            self._log.write(self._hide(line))

    def _list_warning(self, method: str, text: str | None) -> None:
        """An optional list failed (the server stays connected; the list is asked for again on its change
        notice or the next connect), or works again."""
        if text is None:
            self._write_log(f"[mcpdeck] {method} works again")
            logger.info("server %r: %s works again", self.name, method)
        else:
            self._write_log(f"[mcpdeck] warning: {text}")
            logger.warning("server %r: %s", self.name, text)

    @property
    def offers_resources(self) -> bool:
        """Whether the server is connected and has the resources capability."""
        client = self._client
        if client is None or self._state is not ServerState.CONNECTED:
            return False
        return client.server_capabilities.resources is not None

    async def roots_changed(self) -> None:
        """Tell the server its roots changed (pre-2026 sessions; later ones ask per request)."""
        client = self._client
        config = self._config
        if (
            client is None
            or self._state is not ServerState.CONNECTED
            or client.protocol_version in MODERN_PROTOCOL_VERSIONS
            or (isinstance(config, StdioServerConfig | RemoteServerConfig) and config.roots is not None)
        ):
            return  # also not for a server with its own roots, or none: the host's did not change for it
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # roots notifications are deprecated as of 2026-07-28
                await client.send_roots_list_changed()  # pyright: ignore[reportDeprecated]
        except Exception as error:
            logger.info("server %r: could not notify roots change: %s", self.name, describe_error(error))

    def _allows_tool(self, tool: str) -> bool:
        config = self._config
        return not isinstance(config, _CONFIG_TYPES) or config.allows_tool(tool)

    @property
    def request_timeout(self) -> float:
        """The per-request timeout from the config (default 60 s)."""
        config = self._config
        return config.request_timeout if isinstance(config, _CONFIG_TYPES) else 60

    def status(self) -> ServerStatus:
        """A snapshot of this server."""
        client = self._client
        config = self._config
        if isinstance(config, StdioServerConfig | RemoteServerConfig):
            transport, target = self._detected_transport or config.transport, config.target
        else:
            transport, target = "in-process", type(config).__name__
        return ServerStatus(
            name=self.name,
            state=self._state,
            transport=transport,
            target=target,
            error=self._error,
            error_at=self._error_at,
            connected_at=self._connected_at,
            server_info=client.server_info if client else None,
            protocol_version=client.protocol_version if client else None,
            instructions=client.instructions if client else None,
            capabilities=client.server_capabilities if client else None,
            tool_count=len(self._lists.tools),
            log_path=self.log_path,
            pid=self._process.pid if client and self._process else None,
            warnings=tuple(self._hide(text) for text in self._lists.warnings.values()),
        )

    # ----- commands (from any task) -------------------------------------------------

    async def wait_settled(self) -> ServerStatus:
        """Wait until the server is connected, failed, disabled or stopped."""
        await self._settled.wait()
        return self.status()

    async def reconnect(self, config: ServerConfig | InProcessServer | None = None) -> ServerStatus:
        """Drop the current session (if any) and connect again, with ``config`` if given."""
        if config is not None:
            if (
                not isinstance(config, _CONFIG_TYPES)
                or not isinstance(self._config, _CONFIG_TYPES)
                or (config.target != self._config.target)
            ):
                self._handshake_only = self._knows_probe = False  # another server, maybe: probe it afresh
            self._config = config
            self._requests.set_roots(self._own_roots(config))
        self._want = True
        self._command()
        return await self.wait_settled()

    async def disconnect(self) -> ServerStatus:
        """Close the session and stay stopped until ``reconnect``."""
        self._want = False
        self._command()
        return await self.wait_settled()

    async def close(self) -> None:
        """End the supervisor for good."""
        self._closing = True
        self._command()

    def _command(self) -> None:
        # Commands that come before the supervisor settles share one event: replacing an unset
        # one would leave the earlier callers waiting forever.
        if self._settled.is_set():
            self._settled = anyio.Event()
        self._commanded = True
        if self._scope is not None:
            self._scope.cancel()
        self._wake.set()

    # ----- the supervisor ------------------------------------------------------------

    async def run(self) -> None:
        """The supervisor loop; runs until ``close``."""
        attempt = 0  # reconnect attempts since the last good session
        try:
            while not self._closing:
                self._wake = anyio.Event()
                self._commanded = False
                disabled = isinstance(self._config, StdioServerConfig | RemoteServerConfig) and self._config.disabled
                if disabled or not self._want:
                    attempt = 0
                    self._lists.clear()
                    self._set_state(ServerState.DISABLED if disabled else ServerState.STOPPED)
                    self._settled.set()
                    await self._wake.wait()
                    continue
                was_connected, error = await self._session(reconnecting=attempt > 0)
                error = self._hide(error)
                if self._closing or self._commanded:
                    attempt = 0
                    continue
                if was_connected:
                    attempt = 0
                # A session that was up and then lost is retried; one that never came up is not
                # (a missing command or a bad URL does not fix itself), unless it is a retry.
                if (was_connected or attempt > 0) and attempt < self._retry.attempts and not self._give_up:
                    attempt += 1
                    at_once, self._reconnect_at_once = self._reconnect_at_once, False
                    await self._back_off(attempt, error, wait=not at_once)
                    continue
                attempt = 0
                self._fail(error)
                self._settled.set()
                await self._wake.wait()
        finally:
            self._client = None
            self._set_state(ServerState.STOPPED)
            self._settled.set()
            self._lists.detach()  # its callbacks refer to the host, which may now be let go

    async def _back_off(self, attempt: int, error: str, *, wait: bool = True) -> None:
        """Wait before reconnect ``attempt`` (a command cuts the wait short)."""
        delay = self._retry.delay(attempt) if wait else 0.0
        self._error, self._error_at = error, datetime.now(UTC)
        if self._settled.is_set():
            self._settled = anyio.Event()  # callers now wait for the reconnect
        self._set_state(ServerState.RECONNECTING)
        logger.info("server %r: %s; reconnecting in %.1f s (attempt %d)", self.name, error, delay, attempt)
        with anyio.move_on_after(delay):
            await self._wake.wait()

    async def _session(self, *, reconnecting: bool = False) -> tuple[bool, str]:
        """One session: connect, list tools, serve until it ends or a command ends it.

        Returns whether it got connected, and why it ended.
        """
        self._set_state(ServerState.RECONNECTING if reconnecting else ServerState.CONNECTING)
        self._phase = "starting"
        self._log.new_session()
        self._http_error = None
        self._last_http_status = None
        self._gone_reason = None
        self._give_up = False
        self._first_stray, self._stray_count = None, 0
        self._process = None
        ended = self._ended = anyio.Event()
        connected = False
        timeout = self._connect_timeout()
        failure: BaseException | None = None
        with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
            self._scope = scope
            try:
                try:
                    await self._open_and_serve(ended, scope)
                except _StartAgain:
                    ended = self._ended = anyio.Event()
                    try:
                        await self._open_and_serve(ended, scope)
                    except Exception:
                        if self._client is None:  # it fails with the handshake too: the probe was not the cause
                            self._handshake_only = False
                        raise
            except Exception as error:  # every failure of one server stays with that server
                failure = error
            finally:
                connected = self._client is not None  # set once _serve declared the session connected
                self._client = None
                self._scope = None
        if failure is not None:
            reason = describe_error(failure)
            if self._http_error and self._http_error not in reason:
                reason = f"{self._http_error} ({reason})"
        elif self._closing or self._commanded:
            return connected, "stopped by the host"  # (not a failure: the caller goes on with the command)
        elif scope.cancelled_caught and not connected:
            advice = '(its "startupTimeout"; raise it if it needs longer)'
            reason = f"did not finish {self._phase} within {timeout:g} s {advice}"
        elif self._gone_reason is not None:
            self._write_log(f"[mcpdeck] session ended: {self._gone_reason}")
            return connected, self._gone_reason
        else:
            reason = "the connection was lost (the server exited or closed it)"
        if self._stray_count and not connected:
            count = self._stray_count
            lines = "a line that is not an MCP message" if count == 1 else f"{count} lines that are not MCP messages"
            reason += f"; it printed {lines} on stdout; first: {self._first_stray!r}"
        hint = self._log.hint()  # (before the note below, which it would quote)
        self._write_log(f"[mcpdeck] {'session ended' if connected else 'failed'}: {reason}")
        return connected, reason + hint

    async def _open_and_serve(self, ended: anyio.Event, scope: anyio.CancelScope) -> None:
        async with self._open(ended) as client:
            self._phase = "listing tools, resources and prompts"
            await self._lists.load_all(client)
            await self._lists.resubscribe(client)
            await self._serve(client, ended, scope)

    def _connect_timeout(self) -> float:
        config = self._config
        return config.connect_timeout if isinstance(config, StdioServerConfig | RemoteServerConfig) else 30.0

    @staticmethod
    def _own_roots(config: ServerConfig | InProcessServer) -> list[types.Root] | None:
        roots = config.roots if isinstance(config, StdioServerConfig | RemoteServerConfig) else None
        if not isinstance(roots, list):
            return None
        paths = [Path(r).expanduser().resolve() for r in roots]
        return [types.Root.model_validate({"uri": p.as_uri(), "name": p.name or str(p)}) for p in paths]

    def _client_for(self, server: Any, mode: Literal["auto", "legacy"] = "auto") -> Client:
        requests = self._requests
        config = self._config
        own = config.roots if isinstance(config, StdioServerConfig | RemoteServerConfig) else None
        # Roots only where someone asked: the server's own list, or the host's (Host(roots=...));
        # never by default, since a server may trade its command line's folders for them.
        offers_roots = own is not False and requests.offers_roots
        return Client(
            server,
            client_info=_CLIENT_INFO,
            cache=None,
            message_handler=self._on_message,
            elicitation_callback=requests.elicitation,
            sampling_callback=requests.sampling,
            list_roots_callback=requests.list_roots if offers_roots else None,
            logging_callback=requests.logging,
            log_level="info",
            mode=mode,
        )

    # ----- the protocol era ------------------------------------------------------------

    def _protocol(self) -> Literal["auto", "handshake", "modern"]:
        """How to open the next session: the config's ``protocol``, and what was learnt."""
        config = self._config
        protocol = config.protocol if isinstance(config, _CONFIG_TYPES) else "auto"
        return "handshake" if protocol == "auto" and self._handshake_only else protocol

    @asynccontextmanager
    async def _negotiated(self, transport: Transport, *, bounded: bool, stdio: bool) -> AsyncGenerator[Client]:
        """A client on ``transport``, its session opened the way ``_protocol`` says.

        ``auto`` lets the SDK probe ``server/discover`` and fall back to the handshake, with
        the probe bounded (``bounded``: stdio and SSE, where old servers stay silent). A
        server that did not understand the probe gets the handshake from now on; a stdio
        server that closed its pipe on it is started again (``_StartAgain``).
        """
        protocol = self._protocol()
        if protocol == "handshake":
            async with self._client_for(transport, "legacy") as client:
                yield client
            return
        probe = ProbeWatch(
            PROBE_BOUND if bounded and protocol == "auto" else None,
            on_sent=self._probe_sent,
            on_refused=self._probe_refused,
        )
        self._probe_log_at, self._probe_noise, self._probe_refusal = None, 0, False
        entered = False
        try:
            async with self._client_for(probe.wrap(transport)) as client:
                entered = True
                probe.finish()
                self._settle_era(client, probe, protocol)
                yield client
        except Exception:
            if entered or self._knows_probe or not (stdio and protocol == "auto" and probe.closed):
                raise
            self._handshake_only = True
            self._write_log(f"[mcpdeck] the server {probe.reason}; starting it again with the initialize handshake")
            logger.info("server %r %s; starting it again with the initialize handshake", self.name, probe.reason)
            raise _StartAgain from None

    def _settle_era(self, client: Client, probe: ProbeWatch, protocol: str) -> None:
        version = client.protocol_version
        if version in MODERN_PROTOCOL_VERSIONS or probe.understood:
            self._knows_probe = True
        if version in MODERN_PROTOCOL_VERSIONS:
            return
        if protocol == "modern":
            raise ServerError(
                self.name,
                f'speaks only the initialize handshake (protocol {version}) but its config says "protocol": '
                '"modern"; set it to "auto" or "handshake"',
            )
        if probe.understood is not False:
            return  # it knows the probe and chose the handshake (or an in-process server): nothing learnt
        if self._probe_refusal:
            # Its stderr reaches the log through a pipe mcpdeck reads: what it wrote about the
            # probe may have landed after the answer. A round trip later it has; cut again.
            self._probe_refused()
        self._handshake_only = True
        left_out = f"; {self._probe_noise} lines it wrote about it are left out" if self._probe_noise else ""
        note = (
            f"the server {probe.reason}; connected with the initialize handshake (protocol {version}), "
            f"which it gets from now on{left_out}"
        )
        self._write_log(f"[mcpdeck] {note}")
        logger.info("server %r: %s", self.name, note)

    def _probe_sent(self) -> None:
        self._probe_log_at = self._log.size() if self.log_path is not None else None

    def _probe_refused(self) -> None:
        """The server answered the probe with an error: what it wrote meanwhile about it is noise (SDK 1.x
        servers write a long validation report); it goes, and one line says what happened."""
        self._probe_refusal = True
        if self._probe_log_at is not None:
            self._probe_noise += self._log.cut_since(self._probe_log_at, markers=(DISCOVER, "validat"))

    @asynccontextmanager
    async def _open(self, ended: anyio.Event) -> AsyncGenerator[Client]:
        config = self._config
        if not isinstance(config, StdioServerConfig | RemoteServerConfig):
            self._phase = "initializing"
            async with self._client_for(config) as client:
                yield client
            return
        environ = os.environ if self._environ is None else self._environ
        resolved = expand_server_config(self.name, config, environ)
        if isinstance(resolved, StdioServerConfig):
            async with self._open_stdio(resolved, ended) as client:
                yield client
            return
        assert isinstance(resolved, RemoteServerConfig)
        auth = build_auth(
            self.name, resolved, store=self._auth_store, interaction=self._oauth_interaction, environ=environ
        )
        kinds = [resolved.type] if resolved.type else ["http", "sse"]
        errors: list[str] = []
        for kind in kinds:
            transport = (
                http_transport(
                    resolved.url, resolved.headers, self._note_http_error, auth=auth, max_message=resolved.message_limit
                )
                if kind == "http"
                else sse_transport(resolved.url, resolved.headers, auth=auth)
            )
            stack = AsyncExitStack()
            self._phase = f"connecting over {'streamable HTTP' if kind == 'http' else 'SSE'}"
            if self._traffic is not None:
                transport = tapped(transport, self._traffic, self.name)
            try:
                client = await stack.enter_async_context(
                    self._negotiated(watched(transport, ended, self._on_error), bounded=kind == "sse", stdio=False)
                )
            except Exception as error:
                await stack.aclose()
                if len(kinds) == 1 or is_auth_error(error):  # another transport won't authorize us
                    raise
                errors.append(f"{kind}: {describe_error(error)}")
                continue
            self._detected_transport = kind
            async with stack:
                yield client
            return
        raise ServerError(self.name, "neither streamable HTTP nor SSE worked (" + "; ".join(errors) + ")")

    @asynccontextmanager
    async def _open_stdio(self, config: StdioServerConfig, ended: anyio.Event) -> AsyncGenerator[Client]:
        env = child_environment(
            config.env, npm_registry=config.npm_registry or self._npm_registry, environ=self._environ
        )
        if find_command(config.command, env["PATH"]) is None:
            raise ServerError(self.name, _missing_command(config.command, env["PATH"]))
        params = StdioServerParameters(command=config.command, args=config.args, env=env, cwd=self._cwd(config.cwd))
        assert isinstance(self._config, StdioServerConfig)
        with self._log.stderr(self.name, self._config.target) as errlog:
            self._phase = "initializing"
            process = self._process = StdioProcess()
            transport = stdio_transport(
                params,
                errlog,
                process,
                ended=ended,
                on_error=self._on_error,
                max_message=config.message_limit,
                on_stderr=self._log.write_stderr,
            )
            if self._traffic is not None:
                transport = tapped(transport, self._traffic, self.name)
            try:
                async with self._negotiated(transport, bounded=True, stdio=True) as client:
                    yield client
            finally:
                if process.returncode is not None:
                    self._log.write(f"[mcpdeck] process {process.pid} {process.exit_text()}")

    def _cwd(self, cwd: str | None) -> Path | None:
        if cwd is None:
            return None
        folder = Path(cwd).expanduser()
        if not folder.is_dir():
            raise ServerError(self.name, f"the working directory {cwd!r} does not exist")
        return folder

    async def _serve(self, client: Client, ended: anyio.Event, startup: anyio.CancelScope) -> None:
        """Declare the session connected, then keep its lists fresh and check it until it ends.

        With resource subscriptions on a 2026-07-28 session, "connected" waits for the
        listen stream that carries them, so no update made right after is lost.
        """
        async with anyio.create_task_group() as tg:
            await tg.start(self._lists.keep_fresh, client)
            startup.deadline = math.inf
            self._client = client
            self._connected_at = datetime.now(UTC)
            self._error = None
            self._set_state(ServerState.CONNECTED)
            self._settled.set()
            if self._retry.health_interval > 0 and client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                tg.start_soon(self._check_health, client, ended)
            await ended.wait()
            tg.cancel_scope.cancel()

    async def _check_health(self, client: Client, ended: anyio.Event) -> None:
        """Ping now and then; a server that does not answer in time is treated as lost.

        Pre-2026 sessions only: ping was removed in 2026-07-28, where every request stands alone.
        """
        interval = self._retry.health_interval
        while True:
            await anyio.sleep(interval)
            try:
                with anyio.fail_after(min(interval, 10.0)), warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # ping is deprecated as of 2026-07-28
                    await client.send_ping()  # pyright: ignore[reportDeprecated]
            except (TimeoutError, MCPError) as error:
                reason = "did not answer a ping in time" if isinstance(error, TimeoutError) else describe_error(error)
                logger.warning("server %r %s; reconnecting", self.name, reason)
                self._write_log(f"[mcpdeck] health check failed: {reason}")
                self._gone_reason = f"health check failed: {reason}"
                ended.set()
                return

    async def _on_message(self, message: types.ServerNotification | Exception) -> None:
        if isinstance(message, Exception):
            self._on_error(message)
        else:
            client = self._client
            self._lists.on_notification(message, client.protocol_version if client else None)
        await anyio.lowlevel.checkpoint()

    def _note_http_error(self, status: int, url: str) -> None:
        self._http_error = f"HTTP {status} from {url}"
        self._last_http_status = status

    def _on_error(self, error: Exception) -> None:
        if isinstance(error, NotAMessageError):
            # Servers that print banners or debug output on stdout: one line for the user per
            # session, every line in the server's log (also what an SSE event brings that is
            # not a message).
            self._stray_count += 1
            if self._first_stray is None:
                self._first_stray = error.text
                logger.warning(
                    "server %r sent %s that is not an MCP message (ignored; see %s)",
                    self.name,
                    error.where,
                    self.log_path or "its log",
                )
            self._write_log(f"[mcpdeck] {error.where} that is not an MCP message ({error.reason}): {error.text!r}")
        elif isinstance(error, MessageTooLargeError):
            self._gone_reason, self._give_up = str(error), True
        else:
            logger.warning("server %r: transport error: %s", self.name, self._hide(describe_error(error)))

    def _hide(self, text: str) -> str:
        """``text`` (an error) with URL query strings and passwords, and the values the config's ``${VAR}``
        references bring in, masked: what is built from the expanded config must not show them."""
        environ = os.environ if self._environ is None else self._environ
        return Redactor(referenced_values({self.name: self._config}, environ))(mask_urls(text))

    # ----- calls ---------------------------------------------------------------------

    async def request(
        self,
        what: str,
        send: Callable[[Client, ProgressFnT], Awaitable[_T]],
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        method: str | None = None,
    ) -> _T:
        """Send one request (``send(client, progress_relay)``) with the host's rules for every request.

        ``method`` (``tools/call`` ...) names what a server that does not know it did not know.

        - A request made while the server is (re)connecting waits for it, within its timeout.
        - Progress from the server restarts the timeout, so a long job that keeps reporting
          is not cut off; a silent one is. Cancelling it (or its timeout) tells the server.
        - An HTTP session the server no longer knows (404) is replaced: the server is
          reconnected and the request sent once more (the server never ran it).

        Raises:
            ServerUnavailableError: Not connected.
            ServerTimeoutError: No answer (and no progress) within the timeout.
            ServerCrashedError: The connection was lost during the request.
            ServerError: The server answered with a protocol error, or an invalid result.
        """
        limit = timeout if timeout is not None else self.request_timeout
        # One scope is the whole timeout: the wait for a reconnect, both attempts, and the
        # restarts on progress (the SDK's own read timeout cannot be restarted).
        with anyio.CancelScope(deadline=anyio.current_time() + limit) as scope:
            relay = _ProgressRelay(scope, limit, progress)
            for attempt in (1, 2):
                client = self._client
                if client is None or self._state is not ServerState.CONNECTED or self._ended.is_set():
                    client = await self._ready_client()  # not connected now: wait for a reconnect, or fail
                try:
                    return await send(client, relay)
                except MCPError as error:
                    if error.code == CONNECTION_CLOSED:
                        if client is self._client:
                            self._session_gone()
                        message = f"the connection was lost during {what}{self._log.hint()}"
                        if self._gone_reason is not None:
                            message = f"{what} failed: {self._gone_reason}"
                        raise ServerCrashedError(self.name, self._hide(message)) from error
                    if _session_expired(error, self._last_http_status) and attempt == 1:
                        logger.info("server %r: its HTTP session expired; reconnecting", self.name)
                        if client is self._client:
                            self._session_gone("its HTTP session expired", at_once=True)
                        continue
                    text = protocol_error_text(error.code, error.message, method)
                    raise ServerError(self.name, self._hide(f"{what} failed: {text}")) from error
                except (ValidationError, RuntimeError) as error:
                    message = f"{what}: the server sent an invalid result: {error}"
                    raise ServerError(self.name, self._hide(message)) from error
        raise ServerTimeoutError(
            self.name, f'did not answer {what} within {limit:g} s; if it needs longer, raise "timeout" in its config'
        )

    async def _ready_client(self) -> Client:
        """The live client, after waiting (within the caller's scope) for a (re)connect under way."""
        if self._ended.is_set():
            self._session_gone()
        if self._state in (ServerState.CONNECTING, ServerState.RECONNECTING) or self._ended.is_set():
            await self._settled.wait()
        client = self._client
        if client is None or self._state is not ServerState.CONNECTED:
            raise ServerUnavailableError(self.name, self.unavailable_reason())
        return client

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any] | None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> types.CallToolResult:
        """Call ``tool`` (its original name) on this server; see ``request`` for the rules.

        When the server answers that the user must first open a page (URL elicitation),
        the elicitation handler is asked, and if the user accepts every page the call is
        sent once more.
        """
        what = f"the call to {tool!r}"

        def send(client: Client, relay: ProgressFnT) -> Awaitable[types.CallToolResult]:
            return client.call_tool(tool, arguments, progress_callback=relay)  # awaited by `request`: no frame here

        try:
            return await self.request(what, send, timeout=timeout, progress=progress, method="tools/call")
        except ServerError as error:
            cause = error.__cause__
            if not isinstance(cause, MCPError) or cause.code != URL_ELICITATION_REQUIRED:
                raise
            if not await self._requests.url_elicitations(cause.data):
                raise ServerError(self.name, f"{what} needs the user to open a page first, and they did not") from cause
        return await self.request(what, send, timeout=timeout, progress=progress, method="tools/call")

    async def read_resource(self, uri: str, *, timeout: float | None = None) -> types.ReadResourceResult:
        """Read a resource by URI."""
        return await self.request(
            f"reading {uri}", lambda client, _: client.read_resource(uri), timeout=timeout, method="resources/read"
        )

    async def get_prompt(
        self, prompt: str, arguments: dict[str, str] | None, *, timeout: float | None = None
    ) -> types.GetPromptResult:
        """Get a prompt (by its original name) with its arguments filled in."""
        return await self.request(
            f"getting prompt {prompt!r}",
            lambda client, _: client.get_prompt(prompt, arguments),
            timeout=timeout,
            method="prompts/get",
        )

    async def complete(
        self,
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: dict[str, str],
        context: dict[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> types.CompleteResult:
        """Ask the server to complete an argument of a prompt or resource template."""
        return await self.request(
            "completion",
            lambda client, _: client.complete(ref, argument, context),
            timeout=timeout,
            method="completion/complete",
        )

    async def subscribe(self, uri: str, subscribe: bool = True, *, timeout: float | None = None) -> None:
        """Subscribe to (or drop) updates of a resource; kept across reconnects."""
        caps = self._client.server_capabilities.resources if self._client else None
        if self._client is not None and not (caps and caps.subscribe):
            raise ServerError(self.name, "does not offer resource subscriptions")

        async def send(client: Client, _: ProgressFnT) -> None:
            await self._lists.subscribe(client, uri, subscribe)

        await self.request(
            f"subscribing to {uri}",
            send,
            timeout=timeout,
            method="resources/subscribe" if subscribe else "resources/unsubscribe",
        )

    async def set_log_level(self, level: types.LoggingLevel, *, timeout: float | None = None) -> None:
        """Ask the server to send log messages from ``level`` up; a server without logging is left alone."""
        client = self._client
        if client is None or client.server_capabilities.logging is None:
            return

        async def send(client: Client, _: ProgressFnT) -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # logging is deprecated as of 2026-07-28
                await client.set_logging_level(level)  # pyright: ignore[reportDeprecated]

        try:
            await self.request("setting the log level", send, timeout=timeout)
        except ServerError as error:
            self._write_log(f"[mcpdeck] could not set the log level to {level}: {error.reason}")

    def _session_gone(self, reason: str | None = None, *, at_once: bool = False) -> None:
        """The connection is gone, and the supervisor may not have run yet: make calls wait for what it does next.

        ``reason`` replaces the generic "connection lost"; ``at_once`` skips the first
        backoff delay (an expired HTTP session is no sign of a struggling server).
        """
        if reason is not None and not self._ended.is_set():
            self._gone_reason, self._reconnect_at_once = reason, at_once
        self._ended.set()
        if self._state is ServerState.CONNECTED and self._settled.is_set():
            self._settled = anyio.Event()

    def unavailable_reason(self) -> str:
        """Why requests cannot be sent now, and what to do, e.g. ``is disabled; enable it with ...``."""
        match self._state:
            case ServerState.DISABLED:
                return f"is disabled; enable it with `mcpdeck enable {self.name}`"
            case ServerState.FAILED:
                return f"is not connected: {self._error}"
            case ServerState.STOPPED:
                return "is disconnected; reconnect it first"
            case _:
                return f"is {self._state.value}; try again when it is connected"

    # ----- state ---------------------------------------------------------------------

    def _fail(self, error: str) -> None:
        self._error = error
        self._error_at = datetime.now(UTC)
        self._lists.clear()
        self._set_state(ServerState.FAILED)

    def _set_state(self, state: ServerState) -> None:
        previous = self._state
        if state is previous:
            return
        self._state = state
        if state is not ServerState.CONNECTED:
            self._connected_at = None if state is not ServerState.FAILED else self._connected_at
        self._publish(
            ServerStatusChanged(
                server=self.name,
                state=state.value,
                previous=previous.value,
                error=self._error if state is ServerState.FAILED else None,
            )
        )
