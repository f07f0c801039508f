"""Opening one server's sessions: the transport its config names, and an SDK client on it.

An in-process server is handed to the client as it is. A stdio server's command is checked
and started (its stderr copied into its log). A remote server without ``type`` is tried over
streamable HTTP first, then SSE; an authorization error stops the fallback (another transport
would not authorize us either). Every session's era is chosen by ``negotiated`` (``_protocol``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Literal

import mcp_types as types
from mcp import Client, StdioServerParameters

from mcpdeck._sdk import Transport
from mcpdeck._sdk.child_process import StdioProcess
from mcpdeck._sdk.http_transports import http_transport, sse_transport
from mcpdeck._sdk.stdio import stdio_transport
from mcpdeck._sdk.transports import watched
from mcpdeck._util.version import __version__
from mcpdeck.auth import AuthorizeFunction, OAuthInteraction, TokenStore, build_auth, is_auth_error
from mcpdeck.config import (
    InProcessServer,
    InProcessServerConfig,
    RemoteServerConfig,
    StdioServerConfig,
    expand_server_config,
)
from mcpdeck.connection._context import ServerContext
from mcpdeck.connection._environment import child_environment, find_command
from mcpdeck.connection._errors import describe_error, missing_command, unreachable
from mcpdeck.connection._protocol import negotiated
from mcpdeck.connection._server_requests import ServerRequests
from mcpdeck.connection._session import Session
from mcpdeck.errors import ServerError
from mcpdeck.traffic import Traffic, tapped

__all__ = ["Opener"]

_CLIENT_INFO = types.Implementation(name="mcpdeck", version=__version__)


class Opener:
    """Opens sessions of one server (see the module docstring)."""

    def __init__(
        self,
        context: ServerContext,
        requests: ServerRequests,
        *,
        auth_store: TokenStore,
        oauth_interaction: OAuthInteraction | AuthorizeFunction | None,
        npm_registry: str | None,
        traffic: Traffic | None,
    ):
        self._context = context
        self._requests = requests
        self._auth_store = auth_store
        self._oauth_interaction = oauth_interaction  # None: never ask the user; a needed login fails the server
        self._npm_registry = npm_registry
        self._traffic = traffic

    async def run(self, session: Session, use: Callable[[Client], Awaitable[None]]) -> None:
        """Open ``session`` and ``use`` its client until that returns."""
        async with self._open(session) as client:
            await use(client)

    def _offers_roots(self) -> bool:
        # Roots only where someone has some: the server's own list, the host's (Host(roots=...)), or a
        # gateway client's; never by default, since a server may trade its command line's folders for them.
        return self._context.config.roots is not False and self._requests.offers_roots

    def _client(self, session: Session, server: Transport | InProcessServer, mode: Literal["auto", "legacy"]) -> Client:
        requests = self._requests
        offers_roots = self._offers_roots()
        session.offers_roots = offers_roots
        # A server that relays for the client (forwardCaller: another mcpdeck gateway) sees that client, where
        # a face has one: its name, and no elicitation or sampling it cannot answer (it then says so itself).
        shown = requests.presented if self._context.config.forward_caller else None
        session.presented = shown
        return Client(
            server,
            client_info=shown.client_info if shown is not None else _CLIENT_INFO,
            cache=None,
            message_handler=session.on_message,
            elicitation_callback=requests.elicitation if shown is None or shown.elicitation else None,
            sampling_callback=requests.sampling if shown is None or shown.sampling else None,
            list_roots_callback=requests.list_roots if offers_roots else None,
            logging_callback=requests.logging,
            log_level="info",
            mode=mode,
        )

    @asynccontextmanager
    async def _open(self, session: Session) -> AsyncGenerator[Client]:
        config = self._context.config
        if isinstance(config, InProcessServerConfig):
            # The SDK's in-process servers speak both eras: "auto" in the SDK is 2026-07-28 there.
            session.phase = "initializing"
            async with self._client(
                session, config.server, "auto" if config.protocol == "modern" else "legacy"
            ) as client:
                yield client
            return
        resolved = expand_server_config(self._context.name, config, self._context.environ)
        if isinstance(resolved, StdioServerConfig):
            async with self._open_stdio(session, resolved, config.target) as client:
                yield client
        else:
            async with self._open_remote(session, resolved) as client:
                yield client

    @asynccontextmanager
    async def _open_remote(self, session: Session, config: RemoteServerConfig) -> AsyncGenerator[Client]:
        name = self._context.name
        auth = build_auth(
            name, config, store=self._auth_store, interaction=self._oauth_interaction, environ=self._context.environ
        )
        kinds = [config.type] if config.type else ["http", "sse"]
        failures: list[tuple[str, Exception]] = []
        for kind in kinds:
            transport = (
                http_transport(
                    config.url, config.headers, session.note_http_error, auth=auth, max_message=config.message_limit
                )
                if kind == "http"
                else sse_transport(config.url, config.headers, auth=auth)
            )
            stack = AsyncExitStack()
            session.phase = f"connecting over {'streamable HTTP' if kind == 'http' else 'SSE'}"
            if self._traffic is not None:
                transport = tapped(transport, self._traffic, name)
            watching = watched(transport, session.ended, session.on_error)
            back_channel = kind != "http" or self._requests.back_channel_wanted(config.roots is not False)
            session.back_channel_left_out = not back_channel and self._context.config.protocol == "auto"
            try:
                client = await stack.enter_async_context(
                    negotiated(
                        self._context,
                        partial(self._client, session),
                        watching,
                        http_refused=lambda: session.last_http_status is not None,
                        back_channel=back_channel,
                    )
                )
            except Exception as error:
                await stack.aclose()
                if len(kinds) == 1 or is_auth_error(error):  # another transport won't authorize us
                    raise
                failures.append((kind, error))
                continue
            session.transport = kind
            async with stack:
                yield client
            return
        if all(unreachable(error) for _, error in failures):  # the same reason twice: said once
            raise ServerError(name, describe_error(failures[0][1]))
        reasons = "; ".join(f"{kind}: {describe_error(error)}" for kind, error in failures)
        raise ServerError(name, f"neither streamable HTTP nor SSE worked ({reasons})")

    @asynccontextmanager
    async def _open_stdio(self, session: Session, config: StdioServerConfig, shown: str) -> AsyncGenerator[Client]:
        """Start the child of ``config`` (expanded); ``shown`` is its command line as the log's header gives it
        (unexpanded: no secrets)."""
        name, log = self._context.name, self._context.log
        env = child_environment(
            config.env, npm_registry=config.npm_registry or self._npm_registry, environ=self._context.given_environ
        )
        if find_command(config.command, env["PATH"]) is None:
            raise ServerError(name, missing_command(config.command, env["PATH"]))
        params = StdioServerParameters(command=config.command, args=config.args, env=env, cwd=self._cwd(config.cwd))
        with log.stderr(name, shown) as errlog:
            session.phase = "initializing"
            process = session.process = StdioProcess()
            transport = stdio_transport(
                params,
                errlog,
                process,
                ended=session.ended,
                on_error=session.on_error,
                max_message=config.message_limit,
                on_stderr=log.write_stderr,
            )
            if self._traffic is not None:
                transport = tapped(transport, self._traffic, name)
            try:
                async with negotiated(self._context, partial(self._client, session), transport) as client:
                    yield client
            finally:
                if process.returncode is not None:
                    log.write(f"[mcpdeck] process {process.pid} {process.exit_text()}")

    def _cwd(self, cwd: str | None) -> Path | None:
        if cwd is None:
            return None
        folder = Path(cwd).expanduser()
        if not folder.is_dir():
            raise ServerError(self._context.name, f"the working directory {cwd!r} does not exist")
        return folder
