"""The supervisor's state machine: one long-lived task per server that runs its sessions.

The SDK requires a client to be entered and exited in the same task, and a client can't be
re-entered; so each server gets one supervisor task (``Supervisor.run``) that opens a fresh
session per connection, waits for it to end, and reacts to commands (reconnect, disconnect,
close) sent from any task::

    disabled ──enable──▶ connecting ──ok──▶ connected ──lost──▶ reconnecting ──ok──▶ connected
                              │                                         │ (backoff, N tries)
                              └──error/timeout──▶ failed ◀──gave up─────┘
    any ──disconnect──▶ stopped          any ──reconnect──▶ connecting

A session that was up and then lost is retried with backoff; one that never came up is not
(a missing command or a bad URL does not fix itself). Requests do not go through the
supervisor: they wait for it to settle (``ready``) and run in their caller's task.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

import anyio
from mcp import Client

from mcpdeck.connection._context import ServerContext
from mcpdeck.connection._flag import Flag
from mcpdeck.connection._opening import Opener
from mcpdeck.connection._server_lists import ServerLists
from mcpdeck.connection._session import Session
from mcpdeck.errors import ServerUnavailableError
from mcpdeck.events import Event, ServerStatusChanged
from mcpdeck.status import RetryPolicy, ServerState, ServerStatus

__all__ = ["Supervisor"]

logger = logging.getLogger(__name__)


class Supervisor:
    """The state of one server's connection and the task that moves it (see the module docstring).

    Attributes:
        state: The state now.
        want: False after ``disconnect``: stay stopped until told otherwise.
        error: Why it failed or is reconnecting; None once connected.
        error_at: When ``error`` was set.
        connected_at: When the current session got connected (kept while failed).
        session: The current session, or the last one until the next begins.
    """

    def __init__(
        self,
        context: ServerContext,
        lists: ServerLists,
        opener: Opener,
        *,
        retry: RetryPolicy,
        publish: Callable[[Event], None],
        want: bool = True,
    ):
        self._context = context
        self._lists = lists
        self._opener = opener
        self._retry = retry
        self._publish = publish
        self.state = ServerState.STOPPED
        self.want = want
        self.error: str | None = None
        self.error_at: datetime | None = None
        self.connected_at: datetime | None = None
        self.session: Session | None = None
        self._transport: str | None = None  # the remote transport that worked last
        self._closing = False
        self._commanded = False
        self._scope: anyio.CancelScope | None = None  # the current session's
        self._wake = Flag()
        self._settled = Flag()

    @property
    def client(self) -> Client | None:
        """The current session's client while it is connected."""
        return self.session.client if self.session is not None else None

    @property
    def transport(self) -> str | None:
        """The remote transport that worked (``http`` or ``sse``), this session's or the last one's."""
        current = self.session.transport if self.session is not None else None
        return current or self._transport

    def status(self) -> ServerStatus:
        """A snapshot of this server."""
        config, session, client = self._context.config, self.session, self.client
        process = session.process if session is not None else None
        return ServerStatus(
            name=self._context.name,
            state=self.state,
            transport=self.transport or config.transport,
            target=config.target,
            error=self.error,
            error_at=self.error_at,
            connected_at=self.connected_at,
            server_info=client.server_info if client else None,
            protocol_version=client.protocol_version if client else None,
            instructions=client.instructions if client else None,
            capabilities=client.server_capabilities if client else None,
            tool_count=len(self._lists.tools),
            log_path=self._context.log_path,
            pid=process.pid if client and process else None,
            warnings=tuple(self._context.hide(text) for text in self._lists.warnings.values()),
        )

    # ----- commands (from any task) -------------------------------------------------

    async def wait_settled(self) -> None:
        """Wait until the server is connected, failed, disabled or stopped."""
        await self._settled.wait()

    def command(self, *, want: bool | None = None, close: bool = False) -> None:
        """End the current session (or backoff wait) and let the loop decide again."""
        if want is not None:
            self.want = want
        if close:
            self._closing = True
        # Commands that come before the supervisor settles share one event: replacing an unset
        # one would leave the earlier callers waiting forever.
        if self._settled.is_set():
            self._settled = Flag()
        self._commanded = True
        if self.want and not self._closing and not self._context.config.disabled:
            # A reconnect: from now on requests wait for the next session, not the one being closed
            # (the loop, which would say so, has not run yet).
            self._set_state(ServerState.CONNECTING)
        if self._scope is not None:
            self._scope.cancel()
        self._wake.set()

    # ----- what requests wait for -------------------------------------------------------

    async def ready(self) -> tuple[Session, Client]:
        """The live session and its client, after waiting (within the caller's scope) for a (re)connect under way.

        Raises:
            ServerUnavailableError: Not connected when the server settled.
        """
        session = self.session
        ended = session is not None and session.ended.is_set()
        if session is not None and ended:
            self.lost(session)
        if self.state in (ServerState.CONNECTING, ServerState.RECONNECTING) or ended:
            await self._settled.wait()
        session, client = self.session, self.client
        if session is None or client is None or self.state is not ServerState.CONNECTED:
            raise ServerUnavailableError(self._context.name, self.unavailable_reason())
        return session, client

    def lost(self, session: Session, reason: str | None = None, *, at_once: bool = False) -> None:
        """A request found ``session`` gone, and the supervisor may not have run yet: make calls wait for what it
        does next (see ``Session.gone``). Nothing changes if a newer session has taken its place."""
        if session is not self.session:
            return
        session.gone(reason, at_once=at_once)
        if self.state is ServerState.CONNECTED and self._settled.is_set():
            self._settled = Flag()

    def unavailable_reason(self) -> str:
        """Why requests cannot be sent now, and what to do, e.g. ``is disabled; enable it with ...``."""
        match self.state:
            case ServerState.DISABLED:
                return f"is disabled; enable it with `mcpdeck enable {self._context.name}`"
            case ServerState.FAILED:
                return f"is not connected: {self.error}"
            case ServerState.STOPPED:
                return "is disconnected; reconnect it first"
            case _:
                return f"is {self.state.value}; try again when it is connected"

    # ----- the loop -----------------------------------------------------------------------

    async def run(self) -> None:
        """The supervisor loop; runs until ``command(close=True)``."""
        attempt = 0  # reconnect attempts since the last good session
        try:
            while not self._closing:
                self._wake = Flag()
                self._commanded = False
                disabled = self._context.config.disabled
                if disabled or not self.want:
                    attempt = 0
                    self._lists.clear()
                    self._set_state(ServerState.DISABLED if disabled else ServerState.STOPPED)
                    self._settled.set()
                    await self._wake.wait()
                    continue
                session, error = await self._run_session(reconnecting=attempt > 0)
                error = self._context.hide(error)
                if self._closing or self._commanded:
                    attempt = 0
                    continue
                if session.connected:
                    attempt = 0
                if (session.connected or attempt > 0) and attempt < self._retry.attempts and not session.give_up:
                    attempt += 1
                    await self._back_off(attempt, error, wait=not session.reconnect_at_once)
                    continue
                attempt = 0
                self._fail(error)
                self._settled.set()
                await self._wake.wait()
        finally:
            self._set_state(ServerState.STOPPED)
            self._settled.set()
            self._lists.detach()  # its callbacks refer to the host, which may now be let go

    async def _back_off(self, attempt: int, error: str, *, wait: bool = True) -> None:
        """Wait before reconnect ``attempt`` (a command cuts the wait short)."""
        delay = self._retry.delay(attempt) if wait else 0.0
        self.error, self.error_at = error, datetime.now(UTC)
        if self._settled.is_set():
            self._settled = Flag()  # callers now wait for the reconnect
        self._set_state(ServerState.RECONNECTING)
        logger.info("server %r: %s; reconnecting in %.1f s (attempt %d)", self._context.name, error, delay, attempt)
        with anyio.move_on_after(delay):
            await self._wake.wait()

    async def _run_session(self, *, reconnecting: bool) -> tuple[Session, str]:
        """One session: connect, list tools, serve until it ends or a command ends it. Returns it, and why it ended."""
        self._set_state(ServerState.RECONNECTING if reconnecting else ServerState.CONNECTING)
        self._context.log.new_session()
        session = self.session = Session(self._context, self._lists, health_interval=self._retry.health_interval)
        timeout = self._context.config.connect_timeout
        failure: BaseException | None = None
        with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
            self._scope = scope
            try:
                await self._opener.run(session, lambda client: self._serve(session, client, scope))
            except Exception as error:  # every failure of one server stays with that server
                failure = error
            finally:
                session.over()
                self._transport = session.transport or self._transport
                self._scope = None
        if failure is None and (self._closing or self._commanded):
            return session, "stopped by the host"  # (not a failure: the caller goes on with the command)
        timed_out = timeout if scope.cancelled_caught else None
        return session, session.end_reason(failure, timed_out=timed_out)

    async def _serve(self, session: Session, client: Client, startup: anyio.CancelScope) -> None:
        session.phase = "listing tools, resources and prompts"
        await self._lists.load_all(client)
        await self._lists.resubscribe(client)
        await session.serve(client, startup, self._connected)

    def _connected(self) -> None:
        self.connected_at = datetime.now(UTC)
        self.error = None
        self._set_state(ServerState.CONNECTED)
        self._settled.set()

    # ----- state ---------------------------------------------------------------------

    def _fail(self, error: str) -> None:
        self.error = error
        self.error_at = datetime.now(UTC)
        self._lists.clear()
        self._set_state(ServerState.FAILED)

    def _set_state(self, state: ServerState) -> None:
        previous = self.state
        if state is previous:
            return
        self.state = state
        if state is not ServerState.CONNECTED:
            self.connected_at = None if state is not ServerState.FAILED else self.connected_at
        self._publish(
            ServerStatusChanged(
                server=self._context.name,
                state=state,
                previous=previous,
                error=self.error if state is ServerState.FAILED else None,
            )
        )
