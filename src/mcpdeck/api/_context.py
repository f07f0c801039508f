"""What every endpoint works with: the host, its config file, the history, and the API's own bookkeeping."""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from anyio import CancelScope
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpdeck._observability.call_metrics import CallMetrics
from mcpdeck.api._cut import KeptResults
from mcpdeck.api._login import Logins
from mcpdeck.api._sessions import ChatRoom, model_from_config
from mcpdeck.auth import TokenStore
from mcpdeck.config import ConfigStore, InProcessServerConfig, McpConfig
from mcpdeck.events import ConfigChanged, ConfigReloaded, Event, ToolCallFinished, ToolCallStarted
from mcpdeck.history import History, Redactor, secrets_of
from mcpdeck.host import Host
from mcpdeck.providers import ChatModel, default_model

__all__ = ["ApiContext", "CallStats"]


@dataclass
class CallStats:
    """Tool calls made through a server since this process started."""

    calls: int = 0
    errors: int = 0
    last_call_at: datetime | None = None


@dataclass
class _Call:
    request_id: str
    scope: CancelScope
    host_call_id: str | None = None


_KEEP_IDS = 1024
_current_call: ContextVar[_Call | None] = ContextVar("mcpdeck_api_call", default=None)


@dataclass
class ApiContext:
    """The state the API shares between requests.

    Attributes:
        host: The running host.
        store: Its config file (None for a host given servers in code).
        history: The history database, if history is on.
        problems: What the config follower could not apply (``None``: the whole file), by server.
        shutdown: Set when the process is stopping; event streams end then.
        chats: The console's chats and the questions asked for the user (``chats.asks``).
        auth_store: Where sign-ins store OAuth tokens: the host's store (None: the default one).
        log_dir: Where the host writes server logs (None: the default), for a sign-in's own connect.
        sign_ins: The sign-ins waiting for a browser, by server (a new one cancels the old).
        logins: The console's login codes and sessions (the guard checks them; ``POST /api/login`` makes codes).
        kept: The whole results of the newest calls answered cut (``cut``), for ``/api/calls/{id}/result``.
        replica: This process's replica id in a fleet (``serve --replica-id``), if it has one.
        metrics: The host's calls counted (``GET /metrics``, ``GET /api/metrics``); None: not counted here.
    """

    host: Host
    store: ConfigStore | None = None
    history: History | None = None
    problems: Callable[[], dict[str | None, str]] = dict
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    shutdown: anyio.Event = field(default_factory=anyio.Event)
    stats: dict[str, CallStats] = field(default_factory=dict[str, CallStats])
    chats: ChatRoom = field(default_factory=ChatRoom)
    auth_store: TokenStore | None = None
    log_dir: Path | None = None
    sign_ins: dict[str, CancelScope] = field(default_factory=dict[str, CancelScope])
    logins: Logins = field(default_factory=Logins)
    kept: KeptResults = field(default_factory=KeptResults)
    replica: str | None = None
    metrics: CallMetrics | None = None
    _calls: dict[str, _Call] = field(default_factory=dict[str, _Call])
    _by_host_id: dict[str, str] = field(default_factory=dict[str, str])
    changing: int = 0
    """Requests changing the config file through the host right now (the follower waits for them)."""
    _redactor: Redactor | None = None
    _secrets: set[str] = field(default_factory=set[str])
    _feeds: set[MemoryObjectSendStream[Event]] = field(default_factory=set[MemoryObjectSendStream[Event]])

    def __post_init__(self) -> None:
        if self.chats.default_model is None:
            self.chats.default_model = self.make_default_model

    async def make_default_model(self) -> ChatModel | None:
        """The config's default model (``$MCPDECK_MODEL``, else its ``"model"``), made now; None if it names none.

        Raises:
            ProviderError: The model cannot be made (unknown provider, no key ...).
            ConfigError: The config's ``providers`` are malformed.
        """
        store = self.store
        raw: Mapping[str, Any] = (await anyio.to_thread.run_sync(store.document)).raw if store is not None else {}
        spec = default_model(os.environ, raw)
        if not spec:
            return None
        return model_from_config(raw, str(store.path) if store is not None else None, spec, os.environ)

    def attach(self) -> Callable[[], None]:
        """Start listening to the host's events (stats, call ids, the secrets to redact)."""
        return self.host.events.on(self._on_event, ToolCallStarted, ToolCallFinished, ConfigChanged, ConfigReloaded)

    def _on_event(self, event: Event) -> None:
        if isinstance(event, ToolCallStarted):
            # Published synchronously from inside `host.call_tool`, in the request's task, so the
            # context variable names the API call it belongs to.
            call = _current_call.get()
            if call is not None and call.host_call_id is None:
                call.host_call_id = event.call_id
                self._by_host_id[event.call_id] = call.request_id
                # Kept after the call ends (event streams read it late), the oldest forgotten first.
                while len(self._by_host_id) > _KEEP_IDS:
                    del self._by_host_id[next(iter(self._by_host_id))]
        elif isinstance(event, ToolCallFinished):
            stats = self.stats.setdefault(event.server, CallStats())
            stats.calls += 1
            stats.errors += bool(event.is_error or event.error)
            stats.last_call_at = event.at
        elif isinstance(event, ConfigChanged | ConfigReloaded):
            self._redactor = None

    # ----- event feeds ---------------------------------------------------------------------

    @contextmanager
    def feed(self, buffer: int = 1000) -> Generator[MemoryObjectReceiveStream[Event]]:
        """A stream of host events from now on; it ends (``EndOfStream``) when the process stops.

        Past ``buffer`` unread events, newer ones are dropped for this reader (the host never waits).
        """
        send, receive = anyio.create_memory_object_stream[Event](buffer)

        def push(event: Event) -> None:
            with suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                send.send_nowait(event)

        off = self.host.events.on(push)
        self._feeds.add(send)
        if self.shutdown.is_set():
            send.close()
        try:
            yield receive
        finally:
            off()
            self._feeds.discard(send)
            send.close()
            receive.close()

    def stop(self) -> None:
        """The process is stopping: end every event stream."""
        self.shutdown.set()
        for send in list(self._feeds):
            send.close()
        if self.host.traffic is not None:
            self.host.traffic.close_watchers()

    # ----- secrets -----------------------------------------------------------------------

    def redactor(self) -> Redactor:
        """Replaces the secrets of the configs this process has run with ``****``.

        The literal ones (env and header values, OAuth secrets) and the values ``${VAR}`` references
        bring in from the host's environment. Built again after every config change (``ConfigChanged``,
        ``ConfigReloaded``), keeping the secrets of servers since removed or changed: what they said
        may still be on its way out.
        """
        if self._redactor is None:
            servers: dict[str, Any] = {}
            for name in self.host.servers:
                try:
                    config = self.host.config_of(name)
                except Exception:  # an entry that never ran has no config
                    continue
                if not isinstance(config, InProcessServerConfig):  # its settings hold no secrets
                    servers[name] = config
            self._secrets |= secrets_of(McpConfig(servers=servers), self.host.environ)
            # A secret may also stand in JSON text with escapes.
            escaped = {_json_inner(s) for s in self._secrets}
            self._redactor = Redactor(self._secrets | escaped)
        return self._redactor

    def redact(self, text: str) -> str:
        """``text`` with the secrets of the configs as they are now replaced (see ``redactor``)."""
        return self.redactor()(text)

    # ----- calls in flight -----------------------------------------------------------------

    def request_id_of(self, host_call_id: str) -> str | None:
        """The id the API client gave the call the host knows as ``host_call_id``."""
        return self._by_host_id.get(host_call_id)

    def begin_call(self, request_id: str, scope: CancelScope) -> None:
        """Register a call about to be made in this task (so it can be cancelled by its id)."""
        call = _Call(request_id, scope)
        self._calls[request_id] = call
        _current_call.set(call)

    def end_call(self, request_id: str) -> None:
        """Forget a call that ended."""
        _current_call.set(None)
        self._calls.pop(request_id, None)

    def busy(self, request_id: str) -> bool:
        """Whether a call with this id is in flight."""
        return request_id in self._calls

    def cancel_call(self, call_id: str) -> bool:
        """Cancel a call in flight by the client's id or the host's; False if there is none."""
        request_id = self._by_host_id.get(call_id, call_id)
        call = self._calls.get(request_id)
        if call is None:
            return False
        call.scope.cancel()
        return True


def _json_inner(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)[1:-1]
