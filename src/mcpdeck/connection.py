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

import contextlib
import logging
import math
import os
import random
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx2
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp_types.jsonrpc import CONNECTION_CLOSED
from pydantic import ValidationError

from mcpdeck._environment import child_environment, find_command
from mcpdeck._stdio import StdioProcess, stdio_transport
from mcpdeck._transports import http_transport, sse_transport, watched
from mcpdeck._version import __version__
from mcpdeck.config import RemoteServerConfig, ServerConfig, StdioServerConfig, expand_server_config
from mcpdeck.errors import (
    ConfigError,
    ServerCrashedError,
    ServerError,
    ServerTimeoutError,
    ServerUnavailableError,
)
from mcpdeck.events import Event, ServerStatusChanged

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

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]
"""``(progress, total, message)``, awaited for each progress notification of a call."""

_MAX_TOOL_PAGES = 1000
_LOG_ROTATE_BYTES = 2 * 1024 * 1024
_CLIENT_INFO = types.Implementation(name="mcpdeck", version=__version__)


class ServerState(StrEnum):
    """Where a server's connection stands."""

    DISABLED = "disabled"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    FAILED = "failed"
    STOPPED = "stopped"


@dataclass(frozen=True)
class ServerStatus:
    """A snapshot of one server, for display and for callers.

    Attributes:
        name: The server's name.
        state: Its state now.
        transport: ``stdio``, ``http``, ``sse``, ``http|sse`` (not yet known) or ``in-process``.
        target: The command line (as configured, variables unexpanded) or the URL.
        error: Why it is not connected, when it failed.
        error_at: When that error happened.
        connected_at: When the current session started.
        server_info: Name and version the server gave.
        protocol_version: The MCP version negotiated.
        instructions: The server's instructions for the model, if any.
        capabilities: What the server offers.
        tool_count: Tools in the catalog from this server (after filters).
        log_path: The file its stderr (stdio servers) and host notes go to.
        pid: The server process's id (stdio servers, while connected).
    """

    name: str
    state: ServerState
    transport: str
    target: str
    error: str | None = None
    error_at: datetime | None = None
    connected_at: datetime | None = None
    server_info: types.Implementation | None = None
    protocol_version: str | None = None
    instructions: str | None = None
    capabilities: types.ServerCapabilities | None = None
    tool_count: int = 0
    log_path: Path | None = None
    pid: int | None = None

    def to_json(self) -> dict[str, Any]:
        """A stable JSON shape (used by ``--json`` output and the web API)."""
        return {
            "name": self.name,
            "state": self.state.value,
            "transport": self.transport,
            "target": self.target,
            "error": self.error,
            "errorAt": self.error_at.isoformat() if self.error_at else None,
            "connectedAt": self.connected_at.isoformat() if self.connected_at else None,
            "serverInfo": (
                {"name": self.server_info.name, "version": self.server_info.version} if self.server_info else None
            ),
            "protocolVersion": self.protocol_version,
            "instructions": self.instructions,
            "toolCount": self.tool_count,
            "logPath": str(self.log_path) if self.log_path else None,
            "pid": self.pid,
        }


def _leaves(error: BaseException) -> Iterator[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType]
            yield from _leaves(inner)  # pyright: ignore[reportUnknownArgumentType]
    else:
        yield error


def describe_error(error: BaseException) -> str:
    """One clear sentence for an error out of a transport, the SDK or our own checks."""
    leaves = [e for e in _leaves(error) if not isinstance(e, anyio.get_cancelled_exc_class())] or [error]
    first = next((e for e in leaves if not isinstance(e, MCPError | anyio.ClosedResourceError)), leaves[0])
    if isinstance(first, ServerError):
        return first.reason
    if isinstance(first, ConfigError):
        return str(first)
    if isinstance(first, MCPError):
        if first.code == CONNECTION_CLOSED:
            return "the server closed the connection"
        return f"{first.message} (MCP error {first.code})"
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


@dataclass(frozen=True)
class RetryPolicy:
    """How a lost connection is retried: exponential backoff with jitter.

    Attempt ``n`` waits ``initial * 2**(n-1)`` seconds, capped at ``maximum``, times a random
    factor in ``[1 - jitter, 1 + jitter]``. After ``attempts`` failed tries the server is failed.
    """

    attempts: int = 5
    initial: float = 1.0
    maximum: float = 30.0
    jitter: float = 0.2

    def delay(self, attempt: int) -> float:
        """Seconds to wait before reconnect attempt ``attempt`` (1-based)."""
        base = min(self.initial * 2 ** (attempt - 1), self.maximum)
        return base * random.uniform(1 - self.jitter, 1 + self.jitter)


class _ProgressRelay:
    """Restarts a call's timeout on each progress notification, then passes it on."""

    def __init__(self, scope: anyio.CancelScope, limit: float, progress: ProgressCallback | None):
        self._scope = scope
        self._limit = limit
        self._progress = progress

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self._scope.deadline = anyio.current_time() + self._limit
        if self._progress is not None:
            await self._progress(progress, total, message)


class ServerConnection:
    """The supervisor of one server's connection. Created and driven by ``Host``."""

    def __init__(
        self,
        name: str,
        config: ServerConfig | InProcessServer,
        *,
        log_dir: Path,
        publish: Callable[[Event], None],
        on_tools: Callable[[str, list[types.Tool]], None],
        npm_registry: str | None = None,
        environ: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
    ):
        self.name = name
        self._retry = retry or RetryPolicy()
        self._config = config
        self._log_dir = log_dir
        self._publish = publish
        self._on_tools = on_tools
        self._npm_registry = npm_registry
        self._environ = environ
        self._state = ServerState.STOPPED
        self._want = True  # False after disconnect(): stay stopped until told otherwise
        self._closing = False
        self._error: str | None = None
        self._error_at: datetime | None = None
        self._connected_at: datetime | None = None
        self._client: Client | None = None
        self._tools: list[types.Tool] = []
        self._detected_transport: str | None = None
        self._scope: anyio.CancelScope | None = None
        self._commanded = False
        self._wake = anyio.Event()
        self._settled = anyio.Event()
        self._tools_stale = anyio.Event()
        self._ended = anyio.Event()  # set when the current session's connection is gone
        self._phase = "starting"
        self._process: StdioProcess | None = None
        self._http_error: str | None = None  # the last HTTP error status of this session, for messages
        self._log_start: int | None = None  # where this session's stderr begins in the log (None: no log yet)

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
    def tools(self) -> list[types.Tool]:
        """The server's tools after filters, as last listed."""
        return self._tools

    @property
    def log_path(self) -> Path | None:
        """Where the server's stderr goes (stdio servers only)."""
        return self._log_dir / f"{self.name}.log" if isinstance(self._config, StdioServerConfig) else None

    @property
    def request_timeout(self) -> float:
        """The per-request timeout from the config (default 60 s)."""
        return self._config.request_timeout if isinstance(self._config, StdioServerConfig | RemoteServerConfig) else 60

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
            tool_count=len(self._tools),
            log_path=self.log_path,
            pid=self._process.pid if client and self._process else None,
        )

    # ----- commands (from any task) -------------------------------------------------

    async def wait_settled(self) -> ServerStatus:
        """Wait until the server is connected, failed, disabled or stopped."""
        await self._settled.wait()
        return self.status()

    async def reconnect(self, config: ServerConfig | InProcessServer | None = None) -> ServerStatus:
        """Drop the current session (if any) and connect again, with ``config`` if given."""
        if config is not None:
            self._config = config
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
                    self._set_tools([])
                    self._set_state(ServerState.DISABLED if disabled else ServerState.STOPPED)
                    self._settled.set()
                    await self._wake.wait()
                    continue
                was_connected, error = await self._session(reconnecting=attempt > 0)
                if self._closing or self._commanded:
                    attempt = 0
                    continue
                if was_connected:
                    attempt = 0
                # A session that was up and then lost is retried; one that never came up is not
                # (a missing command or a bad URL does not fix itself), unless it is a retry.
                if (was_connected or attempt > 0) and attempt < self._retry.attempts:
                    attempt += 1
                    await self._back_off(attempt, error)
                    continue
                attempt = 0
                self._fail(error)
                self._settled.set()
                await self._wake.wait()
        finally:
            self._client = None
            self._set_state(ServerState.STOPPED)
            self._settled.set()

    async def _back_off(self, attempt: int, error: str) -> None:
        """Wait before reconnect ``attempt`` (a command cuts the wait short)."""
        delay = self._retry.delay(attempt)
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
        self._log_start = None
        self._http_error = None
        self._process = None
        ended = self._ended = anyio.Event()
        connected = False
        timeout = self._connect_timeout()
        failure: BaseException | None = None
        with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
            self._scope = scope
            try:
                async with self._open(ended) as client:
                    self._phase = "listing tools"
                    await self._load_tools(client)
                    scope.deadline = math.inf
                    self._client = client
                    self._connected_at = datetime.now(UTC)
                    connected = True
                    self._error = None
                    self._set_state(ServerState.CONNECTED)
                    self._settled.set()
                    await self._serve(client, ended)
            except Exception as error:  # every failure of one server stays with that server
                failure = error
            finally:
                self._client = None
                self._scope = None
        if failure is not None:
            reason = describe_error(failure)
            if self._http_error and self._http_error not in reason:
                reason = f"{self._http_error} ({reason})"
            return connected, reason + self._log_hint()
        if scope.cancelled_caught and not connected:
            return connected, f"did not finish {self._phase} within {timeout:g} s{self._log_hint()}"
        return connected, "the connection was lost (the server exited or closed it)" + self._log_hint()

    def _connect_timeout(self) -> float:
        config = self._config
        return config.connect_timeout if isinstance(config, StdioServerConfig | RemoteServerConfig) else 30.0

    def _client_for(self, server: Any) -> Client:
        return Client(server, client_info=_CLIENT_INFO, cache=None, message_handler=self._on_message)

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
        kinds = [resolved.type] if resolved.type else ["http", "sse"]
        errors: list[str] = []
        for kind in kinds:
            transport = (
                http_transport(resolved.url, resolved.headers, self._note_http_error)
                if kind == "http"
                else sse_transport(resolved.url, resolved.headers)
            )
            stack = AsyncExitStack()
            self._phase = f"connecting over {'streamable HTTP' if kind == 'http' else 'SSE'}"
            try:
                client = await stack.enter_async_context(self._client_for(watched(transport, ended, self._on_error)))
            except Exception as error:
                await stack.aclose()
                if len(kinds) == 1:
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
            raise ServerError(
                self.name,
                f"command {config.command!r} was not found on PATH; install it or give its full path "
                f"(searched {env['PATH']})",
            )
        params = StdioServerParameters(command=config.command, args=config.args, env=env, cwd=self._cwd(config.cwd))
        with self._open_log() as errlog:
            self._phase = "initializing"
            self._process = StdioProcess()
            transport = watched(stdio_transport(params, errlog, self._process), ended, self._on_error)
            async with self._client_for(transport) as client:
                yield client

    def _cwd(self, cwd: str | None) -> Path | None:
        if cwd is None:
            return None
        folder = Path(cwd).expanduser()
        if not folder.is_dir():
            raise ServerError(self.name, f"the working directory {cwd!r} does not exist")
        return folder

    @contextlib.contextmanager
    def _open_log(self) -> Generator[TextIO]:
        path = self.log_path
        assert path is not None and isinstance(self._config, StdioServerConfig)
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_size > _LOG_ROTATE_BYTES:
                os.replace(path, path.with_suffix(".log.1"))
        with open(path, "a", encoding="utf-8", buffering=1) as log:
            stamp = datetime.now(UTC).isoformat(timespec="seconds")
            log.write(f"--- {stamp} mcpdeck starting {self.name}: {self._config.target}\n")
            self._log_start = log.tell()
            yield log

    def _log_hint(self) -> str:
        """The last lines the server wrote to stderr in this session, for error messages."""
        path, start = self.log_path, self._log_start
        if path is None or start is None:
            return ""
        try:
            with open(path, "rb") as log:
                end = log.seek(0, os.SEEK_END)
                log.seek(max(start, end - 16 * 1024))
                text = log.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        lines = [line.rstrip() for line in text.splitlines() if line.strip()]
        if not lines:
            return f" (log: {path})"
        return f"; stderr: {' | '.join(lines[-3:])[-500:]} (log: {path})"

    async def _load_tools(self, client: Client) -> None:
        if client.server_capabilities.tools is None:
            self._set_tools([])
            return
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        else:
            logger.warning("server %r: stopped listing tools after %d pages", self.name, _MAX_TOOL_PAGES)
        config = self._config
        seen: set[str] = set()
        kept: list[types.Tool] = []
        for tool in tools:
            if tool.name in seen:
                logger.warning("server %r lists tool %r twice; keeping the first", self.name, tool.name)
                continue
            seen.add(tool.name)
            if not isinstance(config, StdioServerConfig | RemoteServerConfig) or config.allows_tool(tool.name):
                kept.append(tool)
        self._set_tools(kept)

    async def _serve(self, client: Client, ended: anyio.Event) -> None:
        """Wait for the session to end, refreshing tools when the server says they changed."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._refresh_tools_on_change, client)
            caps = client.server_capabilities.tools
            if caps is not None and caps.list_changed:
                tg.start_soon(self._listen_for_changes, client)
            await ended.wait()
            tg.cancel_scope.cancel()

    async def _refresh_tools_on_change(self, client: Client) -> None:
        while True:
            await self._tools_stale.wait()
            self._tools_stale = anyio.Event()
            try:
                await self._load_tools(client)
            except Exception as error:
                logger.warning("server %r: could not reload tools: %s", self.name, describe_error(error))

    async def _listen_for_changes(self, client: Client) -> None:
        """On 2026-07-28 sessions change notifications come only to a ``subscriptions/listen`` stream."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _ in subscription:
                    self._tools_stale.set()
        except ListenNotSupportedError:
            pass  # an older protocol: notifications arrive through _on_message
        except Exception as error:
            logger.info("server %r: no change notifications: %s", self.name, describe_error(error))

    async def _on_message(self, message: types.ServerNotification | Exception) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_stale.set()
        elif isinstance(message, Exception):
            self._on_error(message)
        await anyio.lowlevel.checkpoint()

    def _note_http_error(self, status: int, url: str) -> None:
        self._http_error = f"HTTP {status} from {url}"

    def _on_error(self, error: Exception) -> None:
        logger.warning("server %r: transport error: %s", self.name, describe_error(error))

    # ----- calls ---------------------------------------------------------------------

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any] | None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> types.CallToolResult:
        """Call ``tool`` (its original name) on this server.

        Progress from the server restarts the timeout, so a long job that keeps reporting
        is not cut off; a silent one is.

        Raises:
            ServerUnavailableError: Not connected.
            ServerTimeoutError: No answer (and no progress) within the timeout.
            ServerCrashedError: The connection was lost during the call.
            ServerError: The server answered with a protocol error, or an invalid result.
        """
        limit = timeout if timeout is not None else self.request_timeout
        deadline = anyio.current_time() + limit
        if self._ended.is_set():
            self._session_gone()
        if self._state in (ServerState.CONNECTING, ServerState.RECONNECTING) or self._ended.is_set():
            with anyio.move_on_after(limit):  # a call made during a reconnect waits for it, within its timeout
                await self._settled.wait()
        client = self._client
        if client is None or self._state is not ServerState.CONNECTED:
            raise ServerUnavailableError(self.name, self._unavailable_reason())
        scope = anyio.CancelScope(deadline=deadline)

        on_progress = _ProgressRelay(scope, limit, progress)

        with scope:
            try:
                return await client.call_tool(tool, arguments, progress_callback=on_progress)
            except MCPError as error:
                if error.code == CONNECTION_CLOSED:
                    if client is self._client:
                        self._session_gone()
                    raise ServerCrashedError(
                        self.name, f"the connection was lost during the call to {tool!r}{self._log_hint()}"
                    ) from error
                raise ServerError(self.name, f"{tool!r} failed: {error.message} (MCP error {error.code})") from error
            except (ValidationError, RuntimeError) as error:
                raise ServerError(self.name, f"{tool!r} returned an invalid result: {error}") from error
        raise ServerTimeoutError(
            self.name,
            f'{tool!r} did not answer within {limit:g} s; if it needs longer, raise "timeout" in its config',
        )

    def _session_gone(self) -> None:
        """The connection is gone, and the supervisor may not have run yet: make calls wait for what it does next."""
        self._ended.set()
        if self._state is ServerState.CONNECTED and self._settled.is_set():
            self._settled = anyio.Event()

    def _unavailable_reason(self) -> str:
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

    def _set_tools(self, tools: list[types.Tool]) -> None:
        if not tools and not self._tools:
            return
        self._tools = tools
        self._on_tools(self.name, tools)

    def _fail(self, error: str) -> None:
        self._error = error
        self._error_at = datetime.now(UTC)
        self._set_tools([])
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
