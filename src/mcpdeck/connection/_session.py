"""One session with a server: what it learns while it lives, thrown away when it ends.

The supervisor makes a ``Session`` for every attempt to connect; the opening code and the
transports report into it (stray lines on stdout, HTTP errors, a lost connection), and when
it has ended its ``end_reason`` says why, for the server's status and log.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable
from functools import partial

import anyio
import mcp_types as types
from mcp import Client, MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpdeck._sdk.child_process import StdioProcess
from mcpdeck._sdk.transports import MessageTooLargeError, NotAMessageError
from mcpdeck.callbacks import Presented
from mcpdeck.connection._context import ServerContext
from mcpdeck.connection._errors import describe_error
from mcpdeck.connection._flag import Flag
from mcpdeck.connection._server_lists import ServerLists

__all__ = ["Session"]

logger = logging.getLogger(__name__)


class _Ended(Flag):
    """``Session.ended``: setting it (a transport, a failed check, a request) also ends the session's serving."""

    __slots__ = ("_on_set",)

    def __init__(self, on_set: Callable[[], None]):
        super().__init__()
        self._on_set = on_set

    def set(self) -> None:
        if not self.is_set():
            super().set()
            self._on_set()


class Session:
    """One session's state. ``client`` is set while it is connected.

    Attributes:
        ended: Set when the session's connection is gone (the transport's read side ended, a
            health ping failed, a request found it closed).
        phase: What it is doing while it opens, for a startup timeout's message.
        client: The SDK client, from the moment the session is connected until it is over.
        connected: Whether it ever got connected.
        transport: The remote transport that worked (``http`` or ``sse``), if it was tried.
        process: The child of a stdio session.
        gone_reason: Why a request or a check found the session gone, when that says more than
            "the connection was lost".
        reconnect_at_once: Skip the first backoff delay (an expired HTTP session is no sign of a
            struggling server).
        give_up: It ended in a way a reconnect would only repeat.
        last_http_status: The last HTTP error status of this session.
        offers_roots: Whether its client offers the server roots (fixed when the client is made, as the
            handshake fixes a client's capabilities); None until then.
        back_channel_left_out: Whether it was opened with ``server/discover`` first because nobody could
            answer a server's question then (``auto`` over streamable HTTP; see ``_protocol``).
        presented: The client it presents itself as to a ``forwardCaller`` server (``ClientHandlers.presented``),
            when the client was made; None: mcpdeck itself.
    """

    def __init__(self, context: ServerContext, lists: ServerLists, *, health_interval: float):
        self._context = context
        self._lists = lists
        self._health_interval = health_interval
        self.ended = _Ended(self._stop_serving)
        self.phase = "starting"
        self.client: Client | None = None
        self.connected = False
        self.transport: str | None = None
        self.process: StdioProcess | None = None
        self.gone_reason: str | None = None
        self.reconnect_at_once = False
        self.give_up = False
        self.last_http_status: int | None = None
        self.offers_roots: bool | None = None
        self.back_channel_left_out = False
        self.answered = 0
        """Requests of the host's the server has answered in this session (results and errors alike)."""
        self._answered_at_check = 0  # ``answered`` at the last health check
        self.presented: Presented | None = None
        self._http_error: str | None = None  # the last HTTP error, for messages
        self._serving: anyio.CancelScope | None = None  # while ``serve`` runs
        self._first_stray: str | None = None  # lines on stdout that are not messages: the first,
        self._stray_count = 0  # and how many

    def gone(self, reason: str | None = None, *, at_once: bool = False) -> None:
        """The connection is gone. ``reason`` replaces the generic "connection lost"; ``at_once`` skips the
        first backoff delay."""
        if reason is not None and not self.ended.is_set():
            self.gone_reason, self.reconnect_at_once = reason, at_once
        self.ended.set()

    def over(self) -> None:
        """The session has ended: its client is no longer usable."""
        self.client = None

    # ----- what the transports and the SDK report ----------------------------------------

    async def on_message(self, message: types.ServerNotification | Exception) -> None:
        """The SDK client's message handler: notifications to the lists, transport errors to ``on_error``."""
        if isinstance(message, Exception):
            self.on_error(message)
        else:
            client = self.client
            self._lists.on_notification(message, client.protocol_version if client else None)
        await anyio.lowlevel.checkpoint()

    def note_http_error(self, status: int, url: str) -> None:
        """An HTTP error status the transport got (its message names it better than the SDK's)."""
        self._http_error = f"HTTP {status} from {url}"
        self.last_http_status = status

    def on_error(self, error: Exception) -> None:
        """An error a transport reports without ending the session (or one that ends it, but says why)."""
        name = self._context.name
        if isinstance(error, NotAMessageError):
            # Servers that print banners or debug output on stdout: one line for the user per
            # session, every line in the server's log (also what an SSE event brings that is
            # not a message).
            self._stray_count += 1
            if self._first_stray is None:
                self._first_stray = error.text
                where = self._context.log_path or "its log"
                logger.warning(
                    "server %r sent %s that is not an MCP message (ignored; see %s)", name, error.where, where
                )
            self._context.note(f"[mcpdeck] {error.where} that is not an MCP message ({error.reason}): {error.text!r}")
        elif isinstance(error, MessageTooLargeError):
            self.gone_reason, self.give_up = str(error), True
        else:
            logger.warning("server %r: transport error: %s", name, self._context.hide(describe_error(error)))

    # ----- serving -----------------------------------------------------------------------

    async def serve(self, client: Client, startup: anyio.CancelScope, on_connected: Callable[[], None]) -> None:
        """Declare the session connected (``on_connected``), then keep its lists fresh and check it until it ends.

        All in this (the supervisor's) task, which the session's end cancels. With resource
        subscriptions on a 2026-07-28 session, "connected" waits for the listen stream that
        carries them, so no update made right after is lost.
        """

        def ready() -> None:
            if self.client is None:
                startup.deadline = math.inf
                self.client, self.connected = client, True
                on_connected()

        legacy = client.protocol_version not in MODERN_PROTOCOL_VERSIONS
        interval = self._health_interval if legacy and self._health_interval > 0 else math.inf
        with anyio.CancelScope() as self._serving:
            if self.ended.is_set():
                self._serving.cancel()
            try:
                await self._lists.keep_fresh(
                    client,
                    ready,
                    reload_timeout=self._context.config.request_timeout,
                    tick=interval,
                    on_tick=partial(self._check_health, client),
                )
            finally:
                self._serving = None

    def _stop_serving(self) -> None:
        if self._serving is not None:
            self._serving.cancel()

    async def _check_health(self, client: Client) -> None:
        """A ping after a quiet health interval; a server that does not answer in time is treated as lost.

        A server that answered the host's requests since the last check is alive: it is not pinged. One
        that answers other requests while the ping waits is busy, not lost: the ping's time running out
        then ends nothing (a server answering 32 calls at once on a loaded machine can take longer than
        10 s to get to a ping). Pre-2026 sessions only: ping was removed in 2026-07-28, where every
        request stands alone.
        """
        before = self.answered
        if before != self._answered_at_check:
            self._answered_at_check = before
            return
        try:
            with anyio.fail_after(min(self._health_interval, 10.0)), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # ping is deprecated as of 2026-07-28
                await client.send_ping()  # pyright: ignore[reportDeprecated]
        except (TimeoutError, MCPError) as error:
            self._answered_at_check = self.answered
            if isinstance(error, TimeoutError) and self.answered != before:
                self._context.note("[mcpdeck] a health ping went unanswered while the server answered other requests")
                return
            reason = "did not answer a ping in time" if isinstance(error, TimeoutError) else describe_error(error)
            logger.warning("server %r %s; reconnecting", self._context.name, reason)
            self._context.note(f"[mcpdeck] health check failed: {reason}")
            self.gone_reason = f"health check failed: {reason}"
            self.ended.set()
        else:
            self._answered_at_check = self.answered

    # ----- why it ended ------------------------------------------------------------------

    def end_reason(self, failure: BaseException | None, *, timed_out: float | None) -> str:
        """Why the session ended, with the server's last stderr lines; also noted in its log.

        ``failure`` is what opening or serving raised; ``timed_out`` the startup timeout, if it
        ran out.
        """
        if failure is not None:
            reason = describe_error(failure)
            if self._http_error and self._http_error not in reason:
                reason = f"{self._http_error} ({reason})"
        elif timed_out is not None and not self.connected:
            advice = '(its "startupTimeout"; raise it if it needs longer)'
            reason = f"did not finish {self.phase} within {timed_out:g} s {advice}"
        elif self.gone_reason is not None:
            self._context.note(f"[mcpdeck] session ended: {self.gone_reason}")
            return self.gone_reason
        else:
            reason = "the connection was lost (the server exited or closed it)"
        if self._stray_count and not self.connected:
            count = self._stray_count
            lines = "a line that is not an MCP message" if count == 1 else f"{count} lines that are not MCP messages"
            reason += f"; it printed {lines} on stdout; first: {self._first_stray!r}"
        hint = self._context.log.hint()  # (before the note below, which it would quote)
        self._context.note(f"[mcpdeck] {'session ended' if self.connected else 'failed'}: {reason}")
        return reason + hint
