"""``ServerConnection``: one server as ``Host`` sees it. What it reads, the commands it sends, its requests.

The parts behind it: ``Supervisor`` (the state machine and its task), ``Session`` (one live
session), ``Opener`` (transports and the protocol era) and ``_errors`` (error translation).
Requests (``call_tool`` ...) run in the caller's task on the live session; the supervisor
never blocks them.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp import Client, MCPError
from mcp.shared.dispatcher import ProgressFnT
from mcp_types.jsonrpc import CONNECTION_CLOSED, URL_ELICITATION_REQUIRED
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcpdeck._util.listed_tool import ListedTool
from mcpdeck.auth import AuthorizeFunction, OAuthInteraction, TokenStore
from mcpdeck.config import AnyServerConfig, InProcessServer, as_server_config
from mcpdeck.connection._context import ServerContext
from mcpdeck.connection._errors import describe_error, session_expired
from mcpdeck.connection._opening import Opener
from mcpdeck.connection._server_lists import ListKind, ServerLists
from mcpdeck.connection._server_log import ServerLogFile
from mcpdeck.connection._server_requests import ClientHandlers, ServerRequests
from mcpdeck.connection._session import Session
from mcpdeck.connection._supervisor import Supervisor
from mcpdeck.errors import NotOfferedError, ServerCrashedError, ServerError, ServerTimeoutError, protocol_error_text
from mcpdeck.events import CLIENT_META, Event, ResourceUpdated, current_client
from mcpdeck.status import RetryPolicy, ServerState, ServerStatus
from mcpdeck.traffic import Traffic

__all__ = ["ProgressCallback", "ServerConnection"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]
"""``(progress, total, message)``, awaited for each progress notification of a call."""


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


class ServerConnection:
    """The supervisor of one server's connection. Created and driven by ``Host``."""

    def __init__(
        self,
        name: str,
        config: AnyServerConfig | InProcessServer,
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
        """``wanted=False`` keeps the server stopped until ``reconnect``."""
        self.name = name
        config = as_server_config(name, config)
        context = self._context = ServerContext(name, config, ServerLogFile(log_dir / f"{name}.log"), environ)
        self._lists = ServerLists(
            name,
            allows_tool=lambda tool: context.config.allows_tool(tool),
            on_change=lambda kind: on_change(name, kind),
            on_resource_updated=lambda uri: publish(ResourceUpdated(server=name, uri=uri)),
            on_warning=context.list_warning,
        )
        self._requests = ServerRequests(
            name, handlers or ClientHandlers(), publish, context.note, roots=context.own_roots()
        )
        self._opener = Opener(
            context,
            self._requests,
            auth_store=auth_store or TokenStore(environ=environ),
            oauth_interaction=oauth_interaction,
            npm_registry=npm_registry,
            traffic=traffic,
        )
        self._supervisor = Supervisor(
            context, self._lists, self._opener, retry=retry or RetryPolicy(), publish=publish, want=wanted
        )

    # ----- what callers read -------------------------------------------------------

    @property
    def config(self) -> AnyServerConfig:
        """The config this connection runs (unexpanded)."""
        return self._context.config

    @property
    def state(self) -> ServerState:
        """The state now."""
        return self._supervisor.state

    @property
    def tools(self) -> list[ListedTool]:
        """The server's tools after filters, as last listed (compact: see ``mcpdeck._util.listed_tool``)."""
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
        return self._context.log_path

    @property
    def offers_resources(self) -> bool:
        """Whether the server is connected and has the resources capability."""
        client = self._supervisor.client
        if client is None or self.state is not ServerState.CONNECTED:
            return False
        return client.server_capabilities.resources is not None

    @property
    def request_timeout(self) -> float:
        """The per-request timeout from the config (default 60 s)."""
        return self._context.config.request_timeout

    def unavailable_reason(self) -> str:
        """Why requests cannot be sent now, and what to do, e.g. ``is disabled; enable it with ...``."""
        return self._supervisor.unavailable_reason()

    def status(self) -> ServerStatus:
        """A snapshot of this server."""
        return self._supervisor.status()

    # ----- commands (from any task) -------------------------------------------------

    async def run(self) -> None:
        """The supervisor loop; runs until ``close``."""
        await self._supervisor.run()

    async def wait_settled(self) -> ServerStatus:
        """Wait until the server is connected, failed, disabled or stopped."""
        await self._supervisor.wait_settled()
        return self.status()

    async def reconnect(self, config: AnyServerConfig | InProcessServer | None = None) -> ServerStatus:
        """Drop the current session (if any) and connect again, with ``config`` if given."""
        self.switch(config)
        return await self.wait_settled()

    def switch(self, config: AnyServerConfig | InProcessServer | None = None) -> None:
        """Drop the current session (if any) and start connecting again, with ``config`` if given; no wait."""
        if config is not None:
            config = as_server_config(self.name, config)
            self._context.config = config
            self._requests.set_roots(self._context.own_roots())
        self._supervisor.command(want=True)

    async def disconnect(self) -> ServerStatus:
        """Close the session and stay stopped until ``reconnect``."""
        self._supervisor.command(want=False)
        return await self.wait_settled()

    async def close(self) -> None:
        """End the supervisor for good."""
        self._supervisor.command(close=True)

    async def roots_changed(self, *, offer: bool = False) -> None:
        """Tell the server its roots changed (pre-2026 sessions; later ones ask per request).

        With ``offer``, a session opened without offering roots, to a server that would be offered
        some now, is ended and the server connects again, offering them (a client's capabilities are
        fixed when it connects). So is one to a ``forwardCaller`` server that would be shown another client
        now (``ClientHandlers.presented``: a gateway's stdio client, its name and what it can answer)."""
        session, client = self._supervisor.session, self._supervisor.client
        live = (ServerState.CONNECTING, ServerState.RECONNECTING, ServerState.CONNECTED)
        if offer and session is not None and self._context.config.forward_caller and session.offers_roots is not None:
            if session.presented != self._requests.presented and self.state in live:  # (its client was made)
                logger.info("server %r: connecting again as the client it relays for", self.name)
                self._supervisor.command(want=True)
                return
        if self._context.config.roots is not None:
            return  # a server with its own roots, or none: the host's did not change for it
        if offer and session is not None and session.offers_roots is False and self._requests.offers_roots:
            if self.state in (ServerState.CONNECTING, ServerState.RECONNECTING, ServerState.CONNECTED):
                logger.info("server %r: connecting again to offer it roots", self.name)
                self._supervisor.command(want=True)
            return
        if (
            client is None
            or session is None
            or not session.offers_roots
            or self.state is not ServerState.CONNECTED
            or client.protocol_version in MODERN_PROTOCOL_VERSIONS
        ):
            return
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # roots notifications are deprecated as of 2026-07-28
                await client.send_roots_list_changed()  # pyright: ignore[reportDeprecated]
        except Exception as error:
            logger.info("server %r: could not notify roots change: %s", self.name, describe_error(error))

    def answerers_changed(self) -> None:
        """Someone may answer the server's questions now (a router was given, roots are offered). A session
        opened without a back-channel because nobody could (``auto`` over streamable HTTP: ``server/discover``
        first, see ``_protocol``) is ended, and the server connects again with the handshake, so that its
        questions reach whoever answers them now."""
        session, client = self._supervisor.session, self._supervisor.client
        if session is None or not session.back_channel_left_out:
            return
        if client is not None and client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return  # it answered server/discover with an error: a session of the handshake era all the same
        if not self._requests.back_channel_wanted(self._context.config.roots is not False):
            return
        if self.state in (ServerState.CONNECTING, ServerState.RECONNECTING, ServerState.CONNECTED):
            logger.info("server %r: connecting again with the initialize handshake, for its questions", self.name)
            self._supervisor.command(want=True)

    # ----- requests ------------------------------------------------------------------------

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
        supervisor, hide = self._supervisor, self._context.hide
        limit = timeout if timeout is not None else self.request_timeout
        # One scope is the whole timeout: the wait for a reconnect, both attempts, and the
        # restarts on progress (the SDK's own read timeout cannot be restarted).
        with anyio.CancelScope(deadline=anyio.current_time() + limit) as scope, self._requests.running():
            relay = _ProgressRelay(scope, limit, progress)
            for attempt in (1, 2):
                session, client = supervisor.session, supervisor.client
                if (
                    session is None
                    or client is None
                    or self.state is not ServerState.CONNECTED
                    or session.ended.is_set()
                ):
                    session, client = await supervisor.ready()  # not connected now: wait for a reconnect, or fail
                try:
                    answer = await send(client, relay)
                except MCPError as error:
                    session.answered += 1  # an error is an answer too: the server is there
                    if session_expired(error, session.last_http_status) and attempt == 1:
                        logger.info("server %r: its HTTP session expired; reconnecting", self.name)
                        if client is supervisor.client:  # (not a session that ended meanwhile)
                            supervisor.lost(session, "its HTTP session expired", at_once=True)
                        continue
                    raise self._failure(what, error, method, session, client) from error
                except (ValidationError, RuntimeError) as error:
                    message = f"{what}: the server sent an invalid result: {error}"
                    raise ServerError(self.name, hide(message)) from error
                session.answered += 1
                return answer
        raise ServerTimeoutError(
            self.name, f'did not answer {what} within {limit:g} s; if it needs longer, raise "timeout" in its config'
        )

    def _failure(self, what: str, error: MCPError, method: str | None, session: Session, client: Client) -> ServerError:
        """What a request raises for an MCP error: the connection lost on the way, or the server's error."""
        hide = self._context.hide
        if error.code != CONNECTION_CLOSED:
            text = protocol_error_text(error.code, error.message, method)
            if session.back_channel_left_out and "back-channel" in error.message:
                text += (
                    "; it asked a question nobody here could answer (this host has no elicitation or sampling "
                    'handler): give it one, or set "protocol": "handshake" in the server\'s config'
                )
            return ServerError(self.name, hide(f"{what} failed: {text}"))
        if client is self._supervisor.client:  # (not a session that ended meanwhile)
            self._supervisor.lost(session)
        if session.gone_reason is not None:
            return ServerCrashedError(self.name, hide(f"{what} failed: {session.gone_reason}"))
        return ServerCrashedError(self.name, hide(f"the connection was lost during {what}{self._context.log.hint()}"))

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
        meta: types.RequestParamsMeta | None = None
        if self._context.config.forward_caller and (client_name := current_client.get()) is not None:
            meta = {CLIENT_META: client_name}  # (another mcpdeck gateway: its history names the client)

        def send(client: Client, relay: ProgressFnT) -> Awaitable[types.CallToolResult]:
            # awaited by `request`: no frame here
            return client.call_tool(tool, arguments, progress_callback=relay, meta=meta)

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
        client = self._supervisor.client
        caps = client.server_capabilities.resources if client else None
        if client is not None and not (caps and caps.subscribe):
            raise NotOfferedError(self.name, "does not offer resource subscriptions")

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
        client = self._supervisor.client
        if client is None or client.server_capabilities.logging is None:
            return

        async def send(client: Client, _: ProgressFnT) -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # logging is deprecated as of 2026-07-28
                await client.set_logging_level(level)  # pyright: ignore[reportDeprecated]

        try:
            await self.request("setting the log level", send, timeout=timeout)
        except ServerError as error:
            self._context.note(f"[mcpdeck] could not set the log level to {level}: {error.reason}")
